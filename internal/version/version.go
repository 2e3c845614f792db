// Package version reads what a build of axpool knows about itself from
// runtime/debug's build information: the module version, the VCS revision
// and the Go version (docs/operations.md "Version"). `axpool version`,
// `axpool --version` and the MCP serverInfo.version print it.
//
// A build from a work tree has the module version "(devel)", printed as
// "dev"; a build with -buildvcs=false (CI) or outside a repository has no
// revision. Nothing here requires either.
//
// Imports: nothing from the module.
package version

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Info is what a binary knows about its build.
type Info struct {
	// Version is the main module's version ("v1.2.0", a pseudo-version),
	// or "dev" for a build from a work tree.
	Version string
	// Revision is the VCS commit the binary was built from ("" when not
	// stamped), and Modified reports uncommitted changes at build time.
	Revision string
	Modified bool
	// Go is the Go toolchain version, e.g. "go1.26.0".
	Go string
}

// Read returns the running binary's Info.
func Read() Info {
	info := Info{Version: "dev", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		info.Version = v
	}
	if bi.GoVersion != "" {
		info.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String is the one-line form: "dev (revision 1a2b…, modified, go1.26.0)",
// "v1.2.0 (revision 1a2b…, go1.26.0)" or, without a revision,
// "dev (no revision, go1.26.0)". It is serverInfo.version of the MCP
// gateway and, after "axpool ", the output of `axpool version`.
func (i Info) String() string {
	var b strings.Builder
	b.WriteString(i.Version)
	b.WriteString(" (")
	if i.Revision == "" {
		b.WriteString("no revision")
	} else {
		b.WriteString("revision ")
		b.WriteString(i.Revision)
		if i.Modified {
			b.WriteString(", modified")
		}
	}
	b.WriteString(", ")
	b.WriteString(i.Go)
	b.WriteString(")")
	return b.String()
}
