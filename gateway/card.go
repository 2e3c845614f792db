package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
)

// ServerCardPath is where the HTTP transport serves its server card
// (SEP-2127), without a token: the card holds no secret, and a client
// reads it before it has one. EndpointPath + "/server-card" (the
// location the card's schema recommends) serves the same card.
const ServerCardPath = "/.well-known/mcp/server-card"

// Server card fields (docs/tools.md §4 "Server card").
const (
	// ServerCardSchema is the $schema of the card.
	ServerCardSchema = "https://static.modelcontextprotocol.io/schemas/v2/server-card.schema.json"
	// ServerCardName is the card's reverse-DNS name.
	ServerCardName = "io.github.axpool/axpool"
	// ServerCardDescription is the card's description (at most 100
	// characters, as the schema requires).
	ServerCardDescription = "Runs sandboxed .ax programs and named scripts for AI agents, as jobs on a pool of workers."
	// MetaExtensions and MetaTransports are the card's _meta keys for the
	// extensions the server offers (as under capabilities.extensions) and
	// its transports ("stdio" for axpool mcp, "streamable-http").
	MetaExtensions = "io.github.axpool/extensions"
	MetaTransports = "io.github.axpool/transports"
)

// ServerCard is the SEP-2127 card of a server (schema v2): identity, the
// Streamable HTTP remote with the protocol revisions it serves, and in
// _meta the extensions and transports.
type ServerCard struct {
	Schema      string         `json:"$schema"`
	Name        string         `json:"name"`
	Version     string         `json:"version"`
	Description string         `json:"description"`
	Title       string         `json:"title"`
	Remotes     []CardRemote   `json:"remotes"`
	Meta        map[string]any `json:"_meta"`
}

// CardRemote is one remote of a ServerCard.
type CardRemote struct {
	Type                      string       `json:"type"` // "streamable-http"
	URL                       string       `json:"url"`
	Headers                   []CardHeader `json:"headers"`
	SupportedProtocolVersions []string     `json:"supportedProtocolVersions"`
}

// CardHeader is a header a remote needs (a KeyValueInput of the schema).
type CardHeader struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	IsRequired  bool   `json:"isRequired"`
	IsSecret    bool   `json:"isSecret"`
}

// ServerCard returns the card of g served at url (the MCP endpoint's
// absolute URL, such as "http://127.0.0.1:8765/mcp").
func (g *Server) ServerCard(url string) ServerCard {
	ext := map[string]any{}
	for _, e := range g.extensions {
		ext[e] = map[string]any{}
	}
	return ServerCard{
		Schema: ServerCardSchema, Name: ServerCardName, Version: g.cfg.Version,
		Description: ServerCardDescription, Title: ServerName,
		Remotes: []CardRemote{{
			Type: "streamable-http", URL: url,
			Headers: []CardHeader{{Name: "Authorization", Description: "Bearer <token>: the content of one of the server's token files (--token-file)",
				IsRequired: true, IsSecret: true}},
			// What server/discover lists and initialize accepts (mcp-go's
			// revisions: mcpver.Versions and 2024-11-05).
			SupportedProtocolVersions: slices.Clone(mcp.ValidProtocolVersions),
		}},
		Meta: map[string]any{MetaExtensions: ext, MetaTransports: []string{"stdio", "streamable-http"}},
	}
}

// isCardPath reports whether p is a path of the server card.
func isCardPath(p string) bool { return p == ServerCardPath || p == EndpointPath+"/server-card" }

// serveCard answers GET or HEAD of the server card (JSON, cacheable for an
// hour); other methods get 405.
func (h *HTTPServer) serveCard(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(h.g.ServerCard(scheme + "://" + r.Host + EndpointPath)); err != nil {
		// Only strings, booleans, lists and maps of them: cannot fail.
		http.Error(w, "cannot encode the server card", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(b.Bytes())
	}
}
