package policy

import _ "embed"

//go:embed policy.schema.json
var schemaJSON []byte

// SchemaJSON returns the JSON Schema (Draft 2020-12) of the policy object
// form, policy.schema.json. A document is valid under it exactly when Parse
// accepts it, except for what a schema cannot see: Parse also refuses a
// repeated member name and skips one leading byte order mark. The returned
// slice is a copy.
func SchemaJSON() []byte { return append([]byte(nil), schemaJSON...) }
