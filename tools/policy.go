package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"

	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/wire"
)

// CapabilityVersion is the contract version of every capability
// (reference §5.1).
const CapabilityVersion = "1"

// Capability report identity (reference §3.13): the capability set is the
// reference's, so its name and version are reported unchanged.
const (
	capabilitySetName    = "boruna"
	capabilitySetVersion = "3.2.0"
)

// CapabilitySetHash returns the capability_set_hash: "sha256:" and the
// lower-case hex SHA-256 of `name\tversion\n` for each canonical capability
// in name order (reference §3.13). The value is locked by a golden test.
func CapabilitySetHash() string {
	h := sha256.New()
	for _, name := range capabilityNames() {
		h.Write([]byte(name + "\t" + CapabilityVersion + "\n"))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func capabilityNames() []string {
	var names []string
	for _, c := range policy.All() {
		names = append(names, c.String())
	}
	slices.Sort(names)
	return names
}

// capabilityListTool is boruna_capability_list:
// {success, protocol_version, name, version, capabilities:[{name, version}]
// (sorted by name), capability_set_hash}. With env.Granted each capability
// also says granted:true, or granted:false and grant_flag, the flag that
// would grant it (docs/tools.md "boruna_capability_list").
func capabilityListTool(_ context.Context, env *Env, _ *args, _ ProgressFunc) *wire.Object {
	caps := make([]*wire.Object, 0, policy.NumCapabilities)
	for _, name := range capabilityNames() {
		o := wire.NewObject().Set("name", name).Set("version", CapabilityVersion)
		if env.Granted != nil {
			c, _ := policy.ParseCapability(name)
			ok, flag := env.Granted(c)
			o.Set("granted", ok)
			if !ok {
				o.Set("grant_flag", flag)
			}
		}
		caps = append(caps, o)
	}
	return wire.Envelope(true).
		Set("name", capabilitySetName).
		Set("version", capabilitySetVersion).
		Set("capabilities", caps).
		Set("capability_set_hash", CapabilitySetHash())
}

// policyValidateTool is boruna_policy_validate (reference §3.14): the strict
// validator only (no shorthands). Always success:true:
// {ok:true, schema_version:1} or {ok:false, schema_version:1,
// errors:[{error_kind, message, path|field|found|hint…}]}.
func policyValidateTool(_ context.Context, _ *Env, a *args, _ ProgressFunc) *wire.Object {
	_, err := policy.Parse([]byte(a.str("policy_json", "")))
	o := wire.Envelope(true).Set("ok", err == nil).Set("schema_version", policy.SchemaVersion)
	if err != nil {
		o.Set("errors", []*wire.Object{policyErrorObject(err)})
	}
	return o
}

// policyErrorObject renders a policy error as {error_kind, message, extras}.
func policyErrorObject(err error) *wire.Object {
	var ve *policy.ValidationError
	if !errors.As(err, &ve) {
		return wire.NewObject().Set("error_kind", policy.KindParseError).Set("message", err.Error())
	}
	d := ve.Details()
	o := wire.NewObject()
	for _, k := range ve.DetailKeys() {
		o.Set(k, d[k])
	}
	return o
}

// PolicySchemaJSON returns policy.schema.json, the JSON Schema of the
// object form of the policy argument (policy.SchemaJSON; docs/tools.md §3),
// for the gateway's input schemas.
func PolicySchemaJSON() []byte { return policy.SchemaJSON() }
