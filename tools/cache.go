package tools

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/axpool/axpool/internal/jsonenc"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/wire"
)

// cacheKeyVersion is the "v" of the object CacheKey hashes; raise it when
// the normalisation changes.
const cacheKeyVersion = 1

// CacheKey returns the digest under which the result of a call to tool with
// rawArgs may be cached (docs/tools.md §7): the SHA-256, in lower-case hex,
// of the compact JSON object
//
//	{"v":1,"runtime":RuntimeVersion(),"scope":scope,"tool":tool,"args":{…}}
//
// whose args are the call's arguments normalised so that equal calls hash
// equal: every parameter of the tool in spec order, an absent one with its
// default; the policy in its canonical form (policy.Policy.MarshalJSON:
// absent, null and "allow-all" are one policy); the effective wall-clock
// limit (the smaller of max_wall_ms and limits.max_wall_ms) as
// limits.max_wall_ms; strings and JSON Schemas re-encoded compactly. idempotency_key is left out. scope
// names what else the host's results depend on (its ceilings, ceiling
// policy, handlers, libs directory), so that two differently configured
// servers sharing a bus never share entries.
//
// ok is false — the call is never cached — for a tool that is not
// Cacheable, for arguments CheckArgs refuses, and for a policy that does
// not parse (the call is answered at once with invalid_policy anyway).
func CacheKey(tool string, rawArgs json.RawMessage, scope string) (digest string, ok bool) {
	spec, found := lookupSpec(tool)
	if !found || !spec.Cacheable {
		return "", false
	}
	obj, aerr := checkArgs(tool, rawArgs)
	if aerr != nil {
		return "", false
	}
	return cacheKey(spec, tool, obj, len(rawArgs), scope)
}

// CacheKeyChecked is CacheKey for arguments CheckArgs has already
// returned (the gateway's executing calls): they are split, not checked
// again. Arguments that are not such an object give a digest of their
// own or none, never another call's.
func CacheKeyChecked(tool string, checked json.RawMessage, scope string) (digest string, ok bool) {
	spec, found := lookupSpec(tool)
	if !found || !spec.Cacheable {
		return "", false
	}
	obj, ok := splitChecked(spec.Params, checked)
	if !ok {
		return "", false
	}
	return cacheKey(spec, tool, obj, len(checked), scope)
}

// splitChecked is the object checkArgs gives for its own output: the
// members as json.RawMessage, an object parameter with properties as a
// nested *wire.Object. ok is false for anything but a JSON object.
func splitChecked(params []Param, raw []byte) (*wire.Object, bool) {
	obj := wire.NewObjectSize(len(params)) // a member per parameter at most
	ok := true
	valid := wire.SplitObject(raw, func(key string, val json.RawMessage) {
		if p := findParam(params, key); p != nil && p.Type == ParamObject && p.Props != nil {
			inner, iok := splitChecked(p.Props, val)
			ok = ok && iok
			obj.Set(key, inner)
			return
		}
		obj.Set(key, val)
	})
	return obj, valid && ok
}

// cacheKey hashes the checked arguments obj of tool (CacheKey).
func cacheKey(spec *ToolSpec, tool string, obj *wire.Object, size int, scope string) (string, bool) {
	canon, ok := appendCanonical(make([]byte, 0, size+128), spec.Params, obj)
	if !ok {
		return "", false
	}
	return keyOf(scope, tool, canon), true
}

// appendCanonical appends to dst the canonical form of the checked
// arguments obj of params — canonicalArgs with mergeWall, as compact
// JSON: what CacheKey hashes, CanonicalArgs returns and Digest sums. ok
// is false, with dst unchanged, for a policy that does not parse (or, were
// it possible, an encoding error: the arguments are raw JSON and strings
// only), so no such call shares one canonical form.
func appendCanonical(dst []byte, params []Param, obj *wire.Object) ([]byte, bool) {
	norm, ok := canonicalArgs(params, obj)
	if !ok {
		return dst, false
	}
	mergeWall(norm)
	b, err := norm.AppendJSON(dst)
	if err != nil {
		return dst, false
	}
	return b, true
}

// keyOf is CacheKey's digest of the canonical arguments canon
// (appendCanonical's bytes) of tool: the same
// bytes cacheKey hashes, streamed into the hash.
func keyOf(scope, tool string, canon []byte) string {
	h := sha256.New()
	h.Write(keyPrefix(scope, tool))
	h.Write(canon)
	h.Write([]byte{'}'})
	var sum [sha256.Size]byte
	return hexString(h.Sum(sum[:0]))
}

// hexString is hex.EncodeToString of a SHA-256 sum, with one allocation
// (the string) instead of two.
func hexString(sum []byte) string {
	var buf [2 * sha256.Size]byte
	return string(hex.AppendEncode(buf[:0], sum))
}

// keyPrefixes holds keyPrefix's answers: one per scope and tool a
// process uses.
var keyPrefixes struct {
	sync.RWMutex
	m map[prefixID][]byte
}

type prefixID struct{ scope, tool string }

// keyPrefix is the start of the object CacheKey hashes, up to the args'
// value: {"v":1,"runtime":…,"scope":…,"tool":…,"args":
func keyPrefix(scope, tool string) []byte {
	id := prefixID{scope, tool}
	keyPrefixes.RLock()
	p, ok := keyPrefixes.m[id]
	keyPrefixes.RUnlock()
	if ok {
		return p
	}
	key := wire.NewObject().Set("v", cacheKeyVersion).Set("runtime", RuntimeVersion()).
		Set("scope", scope).Set("tool", tool).Set("args", nil)
	b, _ := key.MarshalJSON() // strings and an integer: cannot fail
	p = b[:len(b)-len("null}")]
	keyPrefixes.Lock()
	if keyPrefixes.m == nil {
		keyPrefixes.m = map[prefixID][]byte{}
	}
	keyPrefixes.m[id] = p
	keyPrefixes.Unlock()
	return p
}

// canonicalArgs is the normalised form of the checked arguments obj of
// params (CacheKey); ok is false for a policy that does not parse.
func canonicalArgs(params []Param, obj *wire.Object) (*wire.Object, bool) {
	out := wire.NewObjectSize(len(params))
	for i := range params {
		p := &params[i]
		if p.Name == idempotencyParam.Name {
			continue
		}
		v, given := obj.Get(p.Name)
		raw, _ := v.(json.RawMessage)
		switch p.Type {
		case ParamPolicy:
			if def := absentPolicyValue(); def != nil && (len(raw) == 0 || string(raw) == "null") {
				out.Set(p.Name, def)
				continue
			}
			pol, err := policy.ParseRunArg(raw)
			if err != nil {
				return nil, false
			}
			b, _ := pol.MarshalJSON() // never fails
			out.Set(p.Name, json.RawMessage(b))
			continue
		case ParamObject:
			if p.Props != nil {
				inner, _ := v.(*wire.Object)
				if inner == nil {
					inner = noMembers
				}
				norm, ok := canonicalArgs(p.Props, inner)
				if !ok {
					return nil, false
				}
				out.Set(p.Name, norm)
				continue
			}
		}
		switch {
		case given:
			out.Set(p.Name, canonicalJSON(raw))
		case p.Default != nil:
			out.Set(p.Name, p.Default)
		}
	}
	return out, true
}

// canonicalJSON re-encodes a checked JSON value: a string decoded (so
// that "a\u0062" and "ab" are one string, re-encoded by jsonenc), any other
// value compacted, object members in their order.
func canonicalJSON(raw json.RawMessage) any {
	if plainString(raw) {
		return raw // decoding and encoding it again gives the same bytes
	}
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	// jsonenc.AppendCompact gives json.Compact's bytes, in one pass.
	if b, ok := jsonenc.AppendCompact(nil, raw); ok {
		return json.RawMessage(b)
	}
	return raw
}

// absentPolicy is the canonical JSON of the policy of a call that gives
// none (policy.ParseRunArg(nil)).
var absentPolicy = sync.OnceValue(func() []byte {
	pol, err := policy.ParseRunArg(nil)
	if err != nil {
		return nil // cannot happen; canonicalArgs then parses each time
	}
	b, _ := pol.MarshalJSON() // never fails
	return b
})

// absentPolicyValue is absentPolicy as the value canonicalArgs sets (a
// json.RawMessage; nil when absentPolicy is), made into an interface
// value once rather than once per call.
var absentPolicyValue = sync.OnceValue(func() any {
	if def := absentPolicy(); def != nil {
		return json.RawMessage(def)
	}
	return nil
})

// noMembers is the checked form of an object parameter that is absent,
// as canonicalArgs reads it; read only.
var noMembers = wire.NewObject()

// plainString reports whether raw is a JSON string of printable ASCII
// without escapes: its encoding is already canonical.
func plainString(raw []byte) bool {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return false
	}
	for _, c := range raw[1 : len(raw)-1] {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// mergeWall applies "if both are given the smaller wins" (docs/tools.md §2)
// to a normalised boruna_run argument object: the effective wall-clock
// limit, from max_wall_ms, limits.max_wall_ms or both, is kept as
// limits.max_wall_ms alone, so the three ways of asking for one limit hash
// equal.
func mergeWall(args *wire.Object) {
	lv, _ := args.Get("limits")
	limits, _ := lv.(*wire.Object)
	if limits == nil {
		return
	}
	top, hasTop := args.Get("max_wall_ms")
	inner, hasInner := limits.Get("max_wall_ms")
	if !hasTop {
		return
	}
	args.Delete("max_wall_ms")
	wall, _ := strconv.ParseInt(string(top.(json.RawMessage)), 10, 64)
	if hasInner {
		n, _ := strconv.ParseInt(string(inner.(json.RawMessage)), 10, 64)
		wall = min(wall, n)
	}
	limits.Set("max_wall_ms", json.RawMessage(strconv.FormatInt(wall, 10)))
}

// RuntimeVersion identifies the build of the engines, for CacheKey: the
// module version and VCS revision of the build (debug.ReadBuildInfo), and,
// for a build of a modified or unversioned work tree (where those say
// nothing of the code), the executable's own identity — so a rebuilt
// binary never reads results cached by another build. That identity is
// the Go build ID the linker writes into an ELF executable (its
// .note.go.buildid note, " buildid:…"; it ends with a hash of the
// linked binary, so any change of code or flags changes it), read from
// the file's headers in microseconds; an executable without one (not
// ELF, or linked with -buildid=) is hashed whole instead (" exe:" and
// its SHA-256, ~35 ms for 50 MB). It is computed once per process.
func RuntimeVersion() string { return runtimeVersion() }

var runtimeVersion = sync.OnceValue(func() string {
	v := "axpool"
	exact := false
	if bi, ok := debug.ReadBuildInfo(); ok {
		v += " " + bi.Main.Version + " " + bi.GoVersion
		rev, modified := "", true
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if rev != "" {
			v += " " + rev
		}
		exact = (rev != "" && !modified) || (bi.Main.Version != "" && bi.Main.Version != "(devel)")
	}
	if !exact {
		if id := executableBuildID(); id != "" {
			v += " buildid:" + id
		} else {
			v += " exe:" + executableDigest()
		}
	}
	return v
})

// executableBuildID is the Go build ID of the running executable (the
// "Go" note of type 4 in its .note.go.buildid section), "" when it is not
// an ELF file, has no such note, or cannot be read.
func executableBuildID() string {
	path, err := os.Executable()
	if err != nil {
		return ""
	}
	return elfGoBuildID(path)
}

// elfGoBuildID reads the Go build ID note of the ELF file at path ("" if
// none). A note is namesz, descsz and type (4 bytes each, in the file's
// byte order), the name padded to 4 bytes, then the description.
func elfGoBuildID(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sec := f.Section(".note.go.buildid")
	if sec == nil || sec.Size > 4096 {
		return ""
	}
	note, err := sec.Data()
	if err != nil || len(note) < 16 {
		return ""
	}
	bo := f.ByteOrder
	namesz, descsz, typ := bo.Uint32(note), bo.Uint32(note[4:]), bo.Uint32(note[8:])
	const goBuildIDNote = 4
	if namesz != 4 || typ != goBuildIDNote || string(note[12:16]) != "Go\x00\x00" || uint64(descsz) > uint64(len(note)-16) {
		return ""
	}
	id := string(note[16 : 16+descsz])
	if !utf8.ValidString(id) || strings.ContainsAny(id, " \t\n\x00") {
		return ""
	}
	return id
}

// executableDigest is the SHA-256 in hex of the running executable, or
// "unknown" when it cannot be read.
func executableDigest() string {
	path, err := os.Executable()
	if err != nil {
		return "unknown"
	}
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "unknown"
	}
	return hex.EncodeToString(h.Sum(nil))
}
