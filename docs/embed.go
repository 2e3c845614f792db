// Package docs embeds the user documentation of this directory (its *.md
// files) in the binary: the MCP gateway serves the pages agents need as
// resources, axpool://docs/language and the others (docs/tools.md §7
// "agent docs").
//
// Imports: nothing from the module.
package docs

import "embed"

// FS holds the *.md files of this directory, by base name
// ("language.md").
//
//go:embed *.md
var FS embed.FS
