package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/axpool/axpool/tools/template"
	"github.com/axpool/axpool/wire"
)

// `axpool template list` and `axpool template apply` (docs/tools.md §2,
// reference/tooling-reference-impl.md §3). Exit status: 0 success, 1
// template error or failed validation, 2 usage (including an argument that
// is not key=value or does not fit its declared type).

var templateCmd = &cobra.Command{
	Use:   "template",
	Short: "List and render App templates",
}

var (
	templateDir      string
	templateListJSON bool
	templateApply    struct {
		validate bool
		libsDir  string
		output   string
		json     bool
	}
)

var templateListCmd = &cobra.Command{
	Use:   "list [--templates-dir D] [--json]",
	Short: "List the templates in the templates directory",
	Long: `List the templates in the templates directory (default: ./templates):
name, version, description, arguments (* = required) and capabilities.

With --json, prints the boruna_template_list response on stdout.`,
	Args: noArgs,
	RunE: func(cmd *cobra.Command, args []string) error {
		if err := resolveDataDirs(cmd, nil, nil, &templateDir); err != nil {
			return err
		}
		if err := template.CheckFiles(templateDir, "", MaxTemplateFileBytes); err != nil {
			return templateFileError(cmd, templateListJSON, err)
		}
		if templateListJSON {
			return printEnvelope(cmd, template.ListTool(templateDir))
		}
		ms, err := template.List(templateDir)
		if err != nil {
			return fail(exitFail, "error: %v", err)
		}
		out := cmd.OutOrStdout()
		for _, m := range ms {
			fmt.Fprintf(out, "%s %s - %s\n", m.Name, m.Version, m.Description)
			var args []string
			for _, n := range m.ArgNames() {
				a := m.Args[n]
				s := n + " (" + a.Type
				if a.Required {
					s += ", required"
				} else if a.Default != nil {
					s += ", default " + string(a.Default)
				}
				args = append(args, s+")")
			}
			fmt.Fprintf(out, "  args: %s\n", strings.Join(args, ", "))
			if len(m.Capabilities) > 0 {
				fmt.Fprintf(out, "  capabilities: %s\n", strings.Join(m.Capabilities, ", "))
			}
		}
		if len(ms) == 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), "no templates in %s\n", templateDir)
		}
		return nil
	},
}

var templateApplyCmd = &cobra.Command{
	Use:   "apply NAME [key=value ...] [--templates-dir D] [--validate] [-o FILE]",
	Short: "Render a template with key=value arguments",
	Long: `Render template NAME with key=value arguments and print the .ax source
(or write it to FILE with -o).

With --validate the rendered source is also compiled (imports resolve
against --libs-dir); a compile error is printed on stderr and the exit
status is 1. With --json, prints the boruna_template_apply response on
stdout instead of the source.`,
	Args: positional(1, -1, "a template NAME argument, then key=value arguments"),
	RunE: func(cmd *cobra.Command, args []string) error {
		name, kv := args[0], args[1:]
		if err := resolveDataDirs(cmd, nil, &templateApply.libsDir, &templateDir); err != nil {
			return err
		}
		if _, err := template.ParseArgs(kv); err == nil { // a bad argument is reported first
			if err := template.CheckFiles(templateDir, name, MaxTemplateFileBytes); err != nil {
				return templateFileError(cmd, templateApply.json, err)
			}
		}
		if templateApply.json {
			out := template.ApplyTool(templateDir, name, kv, templateApply.validate, templateApply.libsDir)
			if err := printEnvelope(cmd, out); err != nil {
				return err
			}
			if v, ok := out.Get("validation"); ok {
				if passed, _ := v.(*wire.Object).Get("passed"); passed != true {
					return silentExit(exitFail)
				}
			}
			return nil
		}
		values, err := template.ParseArgs(kv)
		if err != nil {
			return fail(exitUsage, "error: %v", err)
		}
		r, err := template.Apply(templateDir, name, values)
		if err != nil {
			var te *template.Error
			if errors.As(err, &te) && te.Code == template.ErrArgValue {
				return fail(exitUsage, "error: %v", err)
			}
			return fail(exitFail, "error: %v", err)
		}
		if templateApply.output != "" {
			if err := os.WriteFile(templateApply.output, []byte(r.Source), 0o644); err != nil {
				return fail(exitFail, "error: %v", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", templateApply.output)
		} else {
			fmt.Fprint(cmd.OutOrStdout(), r.Source)
		}
		if templateApply.validate {
			if err := template.Validate(r, templateApply.libsDir); err != nil {
				return fail(exitFail, "validation failed: template output does not compile: %v", err)
			}
			fmt.Fprintln(cmd.ErrOrStderr(), "validation passed")
		}
		return nil
	},
}

// templateFileError reports a template file over MaxTemplateFileBytes, as
// a template_error response with --json, and exits 1.
func templateFileError(cmd *cobra.Command, asJSON bool, err error) error {
	if asJSON {
		return printEnvelope(cmd, wire.Envelope(false).
			Set("error_kind", wire.KindTemplateError).
			Set("message", err.Error()))
	}
	return fail(exitFail, "error: %v", err)
}

// printEnvelope prints a tool response as pretty JSON and turns
// success:false into exit status 1.
func printEnvelope(cmd *cobra.Command, out *wire.Object) error {
	text, err := out.Pretty()
	if err != nil {
		return fail(exitFail, "error: %v", err)
	}
	fmt.Fprintln(cmd.OutOrStdout(), string(text))
	if ok, _ := out.Get("success"); ok != true {
		return silentExit(exitFail)
	}
	return nil
}

func init() {
	templatesData.register(templateCmd.PersistentFlags(), &templateDir, templatesDirUsage)
	templateListCmd.Flags().BoolVar(&templateListJSON, "json", false, "print the boruna_template_list JSON response")
	f := templateApplyCmd.Flags()
	f.BoolVar(&templateApply.validate, "validate", false, "compile the rendered source")
	libsData.register(f, &templateApply.libsDir, libsDirUsage+" (with --validate)")
	f.StringVarP(&templateApply.output, "output", "o", "", "write the source to `FILE` instead of stdout")
	f.BoolVar(&templateApply.json, "json", false, "print the boruna_template_apply JSON response")
	templateCmd.AddCommand(templateListCmd, templateApplyCmd)
	rootCmd.AddCommand(templateCmd)
}
