package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/axpool/axpool/internal/datadir"
)

// dataDir is a directory of data that the binary also embeds: the std
// libraries (--libs-dir) and the App templates (--templates-dir). A
// command uses, in this order, the directory its flag names (which must
// exist), the directory of that name in the working directory when it is
// a folder of that kind (datadir.Dir.Recognizes), or the embedded copy
// written out under the user's cache directory (docs/operations.md
// "Libraries and templates").
type dataDir struct {
	flag string // the flag naming it: "libs-dir"
	datadir.Dir
}

var (
	libsData      = dataDir{flag: "libs-dir", Dir: datadir.Libs}
	templatesData = dataDir{flag: "templates-dir", Dir: datadir.Templates}
)

// register adds the flag to flags with the empty default that resolve
// replaces.
func (d dataDir) register(flags *pflag.FlagSet, p *string, what string) {
	flags.StringVar(p, d.flag, "", fmt.Sprintf("%s (default ./%s if it is an axpool %s, else the copy built into axpool)", what, d.Name, d.Kind))
}

// resolve returns the directory a command uses (datadir.Dir.Resolve):
// value when the flag was given, else ./Name or the embedded copy; the
// choice is logged on log when it is not nil.
func (d dataDir) resolve(flags *pflag.FlagSet, value string, log *slog.Logger) (string, error) {
	return d.Resolve(value, flags.Changed(d.flag), d.flag, log)
}

// resolveDataDirs replaces the value of the command's --libs-dir (when
// libsDir is not nil) and --templates-dir (when templatesDir is not nil)
// by the directory it uses (dataDir.resolve), logging the choice on log
// (the node and worker commands; nil for the others). An explicitly given
// directory that does not exist is a usage error naming the flag:
// `axpool run: --libs-dir /x: no such directory`; a built-in copy that
// can be written neither under the user's cache directory nor under the
// temporary directory fails with exit status 1.
func resolveDataDirs(cmd *cobra.Command, log *slog.Logger, libsDir, templatesDir *string) error {
	for _, r := range []struct {
		d dataDir
		p *string
	}{{libsData, libsDir}, {templatesData, templatesDir}} {
		if r.p == nil {
			continue
		}
		dir, err := r.d.resolve(cmd.Flags(), *r.p, log)
		if err != nil {
			code := exitUsage
			if !cmd.Flags().Changed(r.d.flag) { // the built-in copy could not be written
				code = exitFail
			}
			return printFail(cmd, code, "%s: %v", cmd.CommandPath(), err)
		}
		*r.p = dir
	}
	return nil
}
