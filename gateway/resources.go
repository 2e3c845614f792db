package gateway

// URIs of the agent docs served as MCP resources (docs/tools.md §7 "agent
// docs").
const (
	// LanguageDocURI is the .ax language guide (docs/language.md).
	LanguageDocURI = "axpool://docs/language"
)
