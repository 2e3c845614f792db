package libs

import "embed"

// FS is the standard libraries as the binary ships them: for each library
// directory std-x, std-x/src/core.ax and std-x/package.ax.json (the tests
// stay in the repository). axpool uses it when no --libs-dir is given and
// the working directory has no libs directory (cmd/axpool writes it out
// once under the user's cache directory, docs/operations.md "Libraries and
// templates").
//
//go:embed std-*/src/core.ax std-*/package.ax.json
var FS embed.FS
