package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/compiler/syntax"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/vm"
)

// `axpool compile FILE`, `axpool ast FILE`, `axpool disasm FILE`: the
// compiler's developer commands. Compile errors go to stderr as
// `file:line:col: E00N msg`, one per line, with exit status 1; usage errors
// exit 2.

var compileFlags struct {
	libsDir string
}

func init() {
	compileCmd := &cobra.Command{
		Use:   "compile FILE",
		Short: "Compile an .ax program and print a summary of the module",
		Long: `Compile an .ax program (and the libraries it imports) and print a summary:
the module's functions with their signatures, types, constants and entry point.
Warnings are printed on stderr; errors make the command exit 1.`,
		Args: oneFile,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := compileFile(cmd, args[0])
			if err != nil {
				return err
			}
			vm.WriteSummary(cmd.OutOrStdout(), m)
			return nil
		},
	}
	disasmCmd := &cobra.Command{
		Use:   "disasm FILE",
		Short: "Compile an .ax program and print its bytecode",
		Args:  oneFile,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := compileFile(cmd, args[0])
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), vm.Disassemble(m))
			return nil
		},
	}
	astCmd := &cobra.Command{
		Use:   "ast FILE",
		Short: "Parse an .ax file and print its syntax tree as JSON",
		Long: `Parse an .ax file (no type check) and print its syntax tree as JSON with a
2-space indent: the tree boruna_ast returns in "ast" (every node with "node",
"pos", "end" and its fields), at any depth.

A tree whose text is over 102,400 bytes (a long operator chain makes one of
hundreds of gigabytes) is cut as boruna_ast cuts it: its first 102,400 bytes
(on a rune boundary), then a line
  ... truncated: printed N of M bytes (the boruna_ast limit)
with M the length of the whole text.`,
		Args: oneFile,
		RunE: runAST,
	}
	for _, c := range []*cobra.Command{compileCmd, disasmCmd} {
		libsData.register(c.Flags(), &compileFlags.libsDir, libsDirUsage)
	}
	rootCmd.AddCommand(compileCmd, disasmCmd, astCmd)
}

// compileFile compiles path, printing diagnostics on the command's stderr.
func compileFile(cmd *cobra.Command, path string) (*vm.Module, error) {
	src, err := ReadSourceFile(path)
	if err != nil {
		return nil, err
	}
	if err := resolveDataDirs(cmd, nil, &compileFlags.libsDir, nil); err != nil {
		return nil, err
	}
	opts := compiler.Options{
		File:       path,
		LibsDir:    compileFlags.libsDir,
		ModuleName: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)),
	}
	stderr := cmd.ErrOrStderr()
	p := compiler.Analyze(src, opts)
	for _, d := range p.Diagnostics {
		if d.Severity == compiler.SeverityWarning {
			fmt.Fprintf(stderr, "%s (warning)\n", d.Error())
		}
	}
	m, errs := p.Compile()
	if errs != nil {
		for _, e := range errs {
			fmt.Fprintln(stderr, e.Error())
		}
		return nil, silentExit(exitFail)
	}
	return m, nil
}

func runAST(cmd *cobra.Command, args []string) error {
	path := args[0]
	src, err := ReadSourceFile(path)
	if err != nil {
		return err
	}
	f, errs := syntax.Parse(path, src)
	if errs != nil {
		for _, e := range errs {
			fmt.Fprintln(cmd.ErrOrStderr(), e.Error())
		}
		return silentExit(exitFail)
	}
	ast, size, err := tools.ASTText(f)
	if err != nil {
		return fail(exitFail, "error: %v", err)
	}
	out := cmd.OutOrStdout()
	if size > int64(len(ast)) {
		_, err = fmt.Fprintf(out, "%s\n... truncated: printed %d of %d bytes (the boruna_ast limit)\n", ast, len(ast), size)
	} else {
		_, err = fmt.Fprintf(out, "%s\n", ast)
	}
	if err != nil {
		return fail(exitFail, "error: %v", err)
	}
	return nil
}
