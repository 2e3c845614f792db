package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/axpool/axpool/internal/datadir"
)

// dataDir is a directory of data that the binary also embeds: the std
// libraries (--libs-dir) and the App templates (--templates-dir). A
// command uses, in this order, the directory its flag names (which must
// exist), the directory of that name in the working directory, or the
// embedded copy written out under the user's cache directory
// (docs/operations.md "Libraries and templates").
type dataDir struct {
	flag string // the flag naming it: "libs-dir"
	datadir.Dir
}

var (
	libsData      = dataDir{flag: "libs-dir", Dir: datadir.Libs}
	templatesData = dataDir{flag: "templates-dir", Dir: datadir.Templates}
)

// dataDirDefault is the default text of the --libs-dir and
// --templates-dir flags.
const dataDirDefault = "./%s if it exists, else the copy built into axpool"

// usage returns the help text of the flag with its default.
func (d dataDir) usage(what string) string {
	return what + " (default " + fmt.Sprintf(dataDirDefault, d.Name) + ")"
}

// register adds the flag to fs with the empty default that resolve
// replaces.
func (d dataDir) register(flags *pflag.FlagSet, p *string, what string) {
	flags.StringVar(p, d.flag, "", d.usage(what))
}

// resolve returns the directory a command uses (datadir.Dir.Resolve):
// value when the flag was given, else ./Name or the embedded copy.
func (d dataDir) resolve(flags *pflag.FlagSet, value string) (string, error) {
	f := flags.Lookup(d.flag)
	return d.Resolve(value, f != nil && f.Changed, d.flag)
}

// resolveDataDirs replaces the value of the command's --libs-dir (when
// libsDir is not nil) and --templates-dir (when templatesDir is not nil)
// by the directory it uses (dataDir.resolve). An explicitly given
// directory that does not exist is a usage error naming the flag:
// `axpool run: --libs-dir /x: no such directory`.
func resolveDataDirs(cmd *cobra.Command, libsDir, templatesDir *string) error {
	for _, r := range []struct {
		d dataDir
		p *string
	}{{libsData, libsDir}, {templatesData, templatesDir}} {
		if r.p == nil {
			continue
		}
		dir, err := r.d.resolve(cmd.Flags(), *r.p)
		if err != nil {
			return printFail(cmd, exitUsage, "%s: %v", cmd.CommandPath(), err)
		}
		*r.p = dir
	}
	return nil
}
