package tools

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/axpool/axpool/internal/jsonenc"
	"github.com/axpool/axpool/tools/toolwire"
	"github.com/axpool/axpool/wire"
)

// Args are one call's arguments, parsed and checked once (Check) and
// passed on in that form: the gateway, the dispatcher's idempotency key
// and result cache, and the worker's watchdog and engine all read them
// without parsing or checking them again. An Args is immutable and safe
// for concurrent use; the engine that runs it keeps its notes (Report)
// apart.
type Args struct {
	tool string
	spec *ToolSpec    // nil for an opaque call (Opaque)
	obj  *wire.Object // the checked arguments (checkArgs), split
	key  string       // idempotency_key, "" when absent
	size int          // the bytes of the arguments as sent: room for json

	// json is obj as compact JSON, made on first use (JSON): the worker,
	// which has the job's arguments as sent, never asks for it. An
	// opaque call's, as given.
	jsonOnce sync.Once
	json     json.RawMessage

	restOnce sync.Once
	rest     json.RawMessage // json without idempotency_key

	// canon is the canonical form of the call (appendCanonical; nil
	// when the policy does not parse),
	// made once for both CacheKey and Digest.
	canonOnce sync.Once
	canon     []byte

	// cacheKey is CacheKey's last answer with its scope: a batch item's
	// key is asked for by its cache lookup and again by its call.
	cacheKey atomic.Pointer[scopedKey]
}

// scopedKey is a cache key and the scope it was made for.
type scopedKey struct{ scope, digest string }

// Check parses and checks raw as the arguments of tool (CheckArgs: the
// same refusals, *ArgError) and returns them in their checked form.
func Check(tool string, raw json.RawMessage) (*Args, error) {
	obj, aerr := checkArgs(tool, raw)
	if aerr != nil {
		return nil, aerr
	}
	spec, _ := lookupSpec(tool)
	return newArgs(tool, spec, obj, len(raw)), nil
}

// CheckMembers is Check of the arguments obj, a JSON object already split
// into its members (a batch item's, wire.SplitObject's values: raw JSON,
// or values obj.MarshalJSON encodes), without encoding it and parsing it
// again: the same refusals (the same messages; a policy's size is that of
// its compact JSON, as in the encoding) and the same Args as
// Check(tool, obj.MarshalJSON()). An error that is no *ArgError is
// MarshalJSON's (a value it cannot encode).
func CheckMembers(tool string, obj *wire.Object) (*Args, error) {
	spec, ok := lookupSpec(tool)
	if !ok {
		return nil, &ArgError{Kind: ArgUnknownTool, Tool: tool, Msg: UnknownToolMessage(tool)}
	}
	// The values as MarshalJSON encodes them (compact), in one buffer:
	// the members parseMembers would split from that encoding.
	size := 2 // {}
	for k, v := range obj.All() {
		size += len(k) + 4 // "k":,
		if raw, ok := v.(json.RawMessage); ok {
			size += len(raw)
		}
	}
	buf := make([]byte, 0, size)
	var room [16]member // a call's arguments: on the stack
	ms := members(room[:0])
	for k, v := range obj.All() {
		start := len(buf)
		var err error
		if buf, err = appendMemberValue(buf, v); err != nil {
			return nil, fmt.Errorf("wire: field %q: %w", k, err)
		}
		ms = append(ms, member{k, buf[start:len(buf):len(buf)]})
	}
	checked, aerr := checkMembers(spec, tool, ms)
	if aerr != nil {
		return nil, aerr
	}
	return newArgs(tool, spec, checked, size), nil
}

// appendMemberValue appends v as wire.Object.AppendJSON encodes a
// member's value.
func appendMemberValue(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case json.RawMessage:
		if out, ok := appendRaw(dst, x); ok {
			return out, nil
		}
		return jsonenc.Append(dst, x) // its error
	case *wire.Object:
		if x == nil {
			return append(dst, "null"...), nil
		}
		return x.AppendJSON(dst)
	case wire.Outcome:
		return jsonenc.AppendString(dst, string(x)), nil
	}
	return jsonenc.Append(dst, v)
}

// newArgs is the Args of the checked arguments obj of tool, size bytes as
// sent.
func newArgs(tool string, spec *ToolSpec, obj *wire.Object, size int) *Args {
	a := &Args{tool: tool, spec: spec, obj: obj, size: size}
	if v, ok := obj.Get(idempotencyParam.Name); ok {
		_ = json.Unmarshal(v.(json.RawMessage), &a.key) // a string: checked
	}
	return a
}

// Opaque wraps arguments that are not a tool's (a named script's job,
// scripts.JobKind): JSON returns them as they are; they have no
// idempotency key and no cache key, and they cannot be run by CallArgs.
func Opaque(tool string, raw json.RawMessage) *Args {
	return &Args{tool: tool, json: raw}
}

// Tool returns the tool the arguments are for.
func (a *Args) Tool() string { return a.tool }

// JSON returns the checked arguments as compact JSON (CheckArgs' output),
// or an opaque call's as given.
func (a *Args) JSON() json.RawMessage {
	if a.obj == nil {
		return a.json
	}
	a.jsonOnce.Do(func() {
		// Raw JSON values and strings only: cannot fail.
		a.json, _ = a.obj.AppendJSON(make([]byte, 0, a.size))
	})
	return a.json
}

// Key returns the idempotency_key argument, "" when there is none.
func (a *Args) Key() string { return a.key }

// Rest returns JSON without its idempotency_key member (JSON itself when
// it has none).
func (a *Args) Rest() json.RawMessage {
	if a.obj == nil {
		return a.json
	}
	if _, ok := a.obj.Get(idempotencyParam.Name); !ok {
		return a.JSON()
	}
	a.restOnce.Do(func() {
		o := wire.NewObject()
		for _, k := range a.obj.Keys() {
			if k != idempotencyParam.Name {
				v, _ := a.obj.Get(k)
				o.Set(k, v)
			}
		}
		a.rest, _ = o.MarshalJSON() // raw JSON values and strings only
	})
	return a.rest
}

// CacheKey is CacheKey's digest of the call, from the checked form: ok is
// false for a tool that is not Cacheable, an opaque call, or a policy that
// does not parse.
func (a *Args) CacheKey(scope string) (digest string, ok bool) {
	if a.spec == nil || !a.spec.Cacheable {
		return "", false
	}
	if k := a.cacheKey.Load(); k != nil && k.scope == scope {
		return k.digest, true
	}
	canon := a.canonical()
	if canon == nil {
		return "", false
	}
	digest = keyOf(scope, a.tool, canon)
	a.cacheKey.Store(&scopedKey{scope, digest})
	return digest, true
}

// canonical is the call's canonical form (CanonicalArgs' output), made on
// first use; nil for an opaque call or a policy that does not parse.
func (a *Args) canonical() []byte {
	if a.spec == nil {
		return nil
	}
	a.canonOnce.Do(func() {
		// Not ok: the call has no canonical form (nil: not cacheable),
		// never an empty one that every such call would share as its
		// cache key.
		if canon, ok := appendCanonical(make([]byte, 0, 256), a.spec.Params, a.obj); ok {
			a.canon = canon
		}
	})
	return a.canon
}

// Digest is the SHA-256 of the call's arguments without its idempotency
// key, normalised as the result cache compares calls (CanonicalArgs:
// member order, defaults given or not, the wall-clock limit's two
// spellings do not count), in lower-case hex: what an idempotency key
// compares.
//
// The canonical form is the one CacheKey hashes, made once for both.
func (a *Args) Digest() string {
	b := a.canonical()
	if b == nil {
		b = a.Rest()
	}
	sum := sha256.Sum256(b)
	return hexString(sum[:])
}

// WallLimit is WallLimit for the checked call (the ceiling for an opaque
// one, as WallLimit answers an unknown tool).
func (a *Args) WallLimit(env *Env) time.Duration {
	if a.spec == nil {
		return wallLimit(env, a.tool, nil) // the ceiling
	}
	return wallLimit(env, a.tool, &args{obj: a.obj})
}

// CallArgs is CallReport for arguments Check returned: they are not
// checked again. An opaque call is answered invalid_args.
func CallArgs(ctx context.Context, env *Env, a *Args, progress ProgressFunc) (resp *wire.Object, rep Report) {
	defer toolwire.Recover(a.tool, &resp)
	if env == nil {
		env = &Env{}
	}
	eng, ok := engines[a.tool]
	switch {
	case a.spec == nil:
		return wire.InvalidArgs(wire.KindInvalidArgs, fmt.Sprintf("unknown tool %q", a.tool)), Report{}
	case !ok:
		return wire.InvalidArgs(wire.KindInvalidArgs, fmt.Sprintf("tool %q runs other tools' calls and is served by the gateway", a.tool)), Report{}
	}
	ea := &args{obj: a.obj}
	resp = eng(ctx, env, ea, progress)
	rep.Deterministic = a.spec.Cacheable && !ea.effects && repeatable(resp)
	return resp, rep
}
