// Package examples embeds the runnable examples of this directory in the
// binary: the MCP gateway serves each file as the resource
// axpool://examples/<path> (docs/tools.md §7 "agent docs").
//
// Imports: nothing from the module.
package examples

import "embed"

// FS holds the examples (*.ax, their expected *.out, README.md, policies/,
// workflows/, scripts/ and graded/), by slash path relative to this directory
// ("hello.ax", "policies/clock-and-random.json").
//
//go:embed *.ax *.out README.md policies workflows all:scripts graded
var FS embed.FS
