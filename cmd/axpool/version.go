package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/axpool/axpool/internal/version"
)

// `axpool version` and `axpool --version`: the module version, the VCS
// revision and the Go version of this binary (internal/version; the same
// text is the MCP serverInfo.version).

var versionCmd = &cobra.Command{
	Use:   "version",
	Short: "Print the version, VCS revision and Go version of this binary",
	Long: `Print one line: "axpool <version> (revision <commit>[, modified], <go version>)".
The version is the module version of a released build, "dev" for a build
from a work tree; "no revision" replaces the revision in a build made
without VCS information (go build -buildvcs=false). MCP clients see the same
text, without "axpool ", as serverInfo.version.`,
	Args: noArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		fmt.Fprintln(cmd.OutOrStdout(), versionLine())
		return nil
	},
}

// versionLine is the output of `axpool version`.
func versionLine() string { return "axpool " + version.Read().String() }

func init() {
	rootCmd.AddCommand(versionCmd)
	rootCmd.Version = version.Read().String()
	rootCmd.SetVersionTemplate("axpool {{.Version}}\n")
}
