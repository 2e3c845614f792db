package tools

import "encoding/json"

// CanonicalArgs returns the arguments raw of tool in the normalised form
// the result cache hashes (CacheKey, docs/tools.md §7), for any tool,
// cacheable or not: every parameter in spec order, an absent one with its
// default, the policy in its canonical form, the effective wall-clock
// limit as limits.max_wall_ms, strings re-encoded; idempotency_key left
// out. Two calls with equal CanonicalArgs are the same call, however their
// members are ordered or spelled — what an idempotency key compares. ok is
// false for arguments CheckArgs refuses or a policy that does not parse.
func CanonicalArgs(tool string, raw json.RawMessage) (canon []byte, ok bool) {
	spec, found := lookupSpec(tool)
	if !found {
		return nil, false
	}
	obj, aerr := checkArgs(tool, raw)
	if aerr != nil {
		return nil, false
	}
	return appendCanonical(nil, spec.Params, obj)
}
