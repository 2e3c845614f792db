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
// returned: they are split, not checked again. Give it nothing else:
// arguments no check returned may share another call's key (a
// max_wall_ms that is not an integer of int64 reads as strconv.ParseInt
// reads it: "1", 1.5 and 1e400 as 0, as a limit of 0 does); anything but
// a JSON object gives none.
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
// arguments obj of params, as compact JSON, written member by member
// (appendCanonObject, the wall-clock limit merged by canonicalWall): what
// CacheKey hashes, CanonicalArgs returns and Digest sums. ok is false,
// with dst unchanged, for a policy that does not parse (or, were it
// possible, an encoding error: the arguments are raw JSON and strings
// only), so no such call shares one canonical form.
func appendCanonical(dst []byte, params []Param, obj *wire.Object) ([]byte, bool) {
	wall, merge, ok := canonicalWall(params, obj)
	if !ok {
		return dst, false
	}
	out, ok := appendCanonObject(dst, params, obj, merge, wall)
	if !ok {
		return dst, false
	}
	return out, true
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

// appendCanonObject appends the canonical form of the checked object obj
// (nil: no members) of params: every parameter in spec order but
// idempotency_key (appendCanonMember). With merge, a top-level object's
// effective wall-clock limit wall (canonicalWall) is written as
// limits.max_wall_ms and max_wall_ms is left out. ok is false for a
// policy that does not parse.
func appendCanonObject(dst []byte, params []Param, obj *wire.Object, merge bool, wall int64) ([]byte, bool) {
	dst = append(dst, '{')
	first := true
	for i := range params {
		p := &params[i]
		if p.Name == idempotencyParam.Name || merge && p.Name == maxWallParam.Name {
			continue
		}
		var mark int
		dst, mark = openMember(dst, first, p.Name)
		var wrote, ok bool
		if merge && isLimits(p) {
			dst, ok = appendCanonLimits(dst, p.Props, objectMember(obj, p.Name), wall)
			wrote = true
		} else {
			dst, wrote, ok = appendCanonMember(dst, p, obj)
		}
		switch {
		case !ok:
			return dst, false
		case !wrote:
			dst = dst[:mark]
		default:
			first = false
		}
	}
	return append(dst, '}'), true
}

// appendCanonLimits is appendCanonObject of the limits object (params,
// obj) of a call whose top-level max_wall_ms was given: its max_wall_ms
// is the smaller of its own and wall, in its place, or wall at the end
// when it has none.
func appendCanonLimits(dst []byte, params []Param, obj *wire.Object, wall int64) ([]byte, bool) {
	dst = append(dst, '{')
	first, merged := true, false
	for i := range params {
		p := &params[i]
		if p.Name == idempotencyParam.Name {
			continue
		}
		var mark int
		dst, mark = openMember(dst, first, p.Name)
		val := len(dst)
		var wrote, ok bool
		dst, wrote, ok = appendCanonMember(dst, p, obj)
		switch {
		case !ok:
			return dst, false
		case !wrote:
			dst = dst[:mark]
			continue
		}
		first = false
		if p.Name == maxWallParam.Name {
			n, _ := strconv.ParseInt(string(dst[val:]), 10, 64)
			dst = strconv.AppendInt(dst[:val], min(wall, n), 10)
			merged = true
		}
	}
	if !merged {
		dst, _ = openMember(dst, first, maxWallParam.Name)
		dst = strconv.AppendInt(dst, wall, 10)
	}
	return append(dst, '}'), true
}

// openMember appends to dst the start of an object's member name — a
// comma unless it is the first, the key, the colon — and returns dst and
// where the member starts (dst[:mark] drops it when no value follows).
func openMember(dst []byte, first bool, name string) (_ []byte, mark int) {
	mark = len(dst)
	if !first {
		dst = append(dst, ',')
	}
	dst = jsonenc.AppendString(dst, name)
	return append(dst, ':'), mark
}

// canonicalWall is the top-level max_wall_ms of the checked arguments obj
// of params, as an integer, when it is to be merged into limits
// (docs/tools.md §2: given both, the smaller wins): params have a limits
// object and the canonical form has a max_wall_ms. merge is false
// otherwise; ok is false when that value has no canonical form.
func canonicalWall(params []Param, obj *wire.Object) (wall int64, merge, ok bool) {
	var top *Param
	limits := false
	for i := range params {
		switch p := &params[i]; {
		case p.Name == maxWallParam.Name:
			top = p
		case isLimits(p):
			limits = true
		}
	}
	if top == nil || !limits {
		return 0, false, true
	}
	var buf [32]byte
	b, wrote, ok := appendCanonMember(buf[:0], top, obj)
	if !ok || !wrote {
		return 0, false, ok
	}
	// A checked integer; anything else (arguments CacheKeyChecked was
	// given that no check returned) reads as ParseInt reads it.
	wall, _ = strconv.ParseInt(string(b), 10, 64)
	return wall, true, true
}

// isLimits reports whether p is the limits object into which a top-level
// max_wall_ms is merged.
func isLimits(p *Param) bool {
	return p.Name == limitsParam.Name && p.Type == ParamObject && p.Props != nil
}

// objectMember is the checked object obj's member name as a nested
// object (nil when obj is nil, or the member is absent or not one).
func objectMember(obj *wire.Object, name string) *wire.Object {
	if obj == nil {
		return nil
	}
	v, _ := obj.Get(name)
	inner, _ := v.(*wire.Object)
	return inner
}

// appendCanonMember appends the canonical value of parameter p of the
// checked object obj (nil: no members): the policy in its canonical form
// (absent and null: the default policy's), an object with properties
// canonical in turn, a given value re-encoded (appendCanonJSON), an
// absent one as its default. wrote is false, with nothing appended, for
// an absent parameter without a default; ok is false for a policy that
// does not parse.
func appendCanonMember(dst []byte, p *Param, obj *wire.Object) (out []byte, wrote, ok bool) {
	var v any
	given := false
	if obj != nil {
		v, given = obj.Get(p.Name)
	}
	raw, _ := v.(json.RawMessage)
	switch p.Type {
	case ParamPolicy:
		if def := absentPolicy(); def != nil && (len(raw) == 0 || string(raw) == "null") {
			out, ok = appendRaw(dst, def)
			return out, true, ok
		}
		pol, err := policy.ParseRunArg(raw)
		if err != nil {
			return dst, false, false
		}
		b, _ := pol.MarshalJSON() // never fails
		out, ok = appendRaw(dst, b)
		return out, true, ok
	case ParamObject:
		if p.Props != nil {
			inner, _ := v.(*wire.Object)
			out, ok = appendCanonObject(dst, p.Props, inner, false, 0)
			return out, true, ok
		}
	}
	switch {
	case given:
		out, ok = appendCanonJSON(dst, raw)
		return out, true, ok
	case p.Default != nil:
		out, err := jsonenc.Append(dst, p.Default)
		return out, true, err == nil
	}
	return dst, false, true
}

// appendCanonJSON appends a checked JSON value re-encoded: a string
// decoded (so that "a\u0062" and "ab" are one string, re-encoded by
// jsonenc), any other value compacted, object members in their order.
func appendCanonJSON(dst []byte, raw json.RawMessage) ([]byte, bool) {
	if plainString(raw) {
		// Decoding and encoding it again gives the same bytes.
		return append(dst, raw...), true
	}
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return jsonenc.AppendString(dst, s), true
		}
	}
	return appendRaw(dst, raw)
}

// appendRaw appends raw as jsonenc.Append encodes a json.RawMessage
// (nil: null; compacted, or through encoding/json when jsonenc does not
// take it), without raw made into an interface value unless it must.
func appendRaw(dst []byte, raw json.RawMessage) ([]byte, bool) {
	if raw == nil {
		return append(dst, "null"...), true
	}
	if out, ok := jsonenc.AppendCompact(dst, raw); ok {
		return out, true
	}
	out, err := jsonenc.Append(dst, raw)
	return out, err == nil
}

// absentPolicy is the canonical JSON of the policy of a call that gives
// none (policy.ParseRunArg(nil)).
var absentPolicy = sync.OnceValue(func() []byte {
	pol, err := policy.ParseRunArg(nil)
	if err != nil {
		return nil // cannot happen; appendCanonMember then parses each time
	}
	b, _ := pol.MarshalJSON() // never fails
	return b
})

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
