// Package templates holds the shipped App templates as data (README.md):
// each directory is one template, its template.json manifest and its
// app.ax.template source, read by tools/template. FS embeds them in the
// binary, which uses it when no --templates-dir is given and the working
// directory has no templates directory (cmd/axpool writes it out once
// under the user's cache directory: docs/operations.md "Libraries and
// templates"). The Go package only carries FS, this documentation and a
// test.
//
// Imports: nothing from the module.
package templates

import "embed"

// FS is every file of every template directory.
//
//go:embed */*
var FS embed.FS
