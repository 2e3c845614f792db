package template

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// File names inside a template directory.
const (
	ManifestFile = "template.json"
	SourceFile   = "app.ax.template"
)

// MaxSourceBytes bounds a rendered source: the compiler refuses larger
// sources (docs/language.md "Limits every run has").
const MaxSourceBytes = 1 << 20

// Manifest is a parsed template.json. Every field is required in the file
// except ArgSpec.Default; unknown fields are ignored.
type Manifest struct {
	Name         string
	Version      string
	Description  string
	Dependencies []string // std library names, informational
	Capabilities []string // capabilities the rendered app uses
	Args         map[string]ArgSpec
	// Dir is the template's directory name under the templates directory:
	// the name Apply takes.
	Dir string
}

// ArgNames returns the argument names in ascending order.
func (m *Manifest) ArgNames() []string {
	names := make([]string, 0, len(m.Args))
	for n := range m.Args {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ArgSpec describes one template argument.
type ArgSpec struct {
	// Type is a label ("string", "int"); "int" values must be base-10
	// integers.
	Type        string
	Required    bool
	Description string
	// Default is the JSON default value, nil when absent or null. Apply
	// substitutes a string default as is and any other value as its
	// compact JSON text (1000, true).
	Default json.RawMessage
}

// Rendered is the result of Apply.
type Rendered struct {
	TemplateName string // the manifest's name
	OutputFile   string // "<requested name>_app.ax"
	Source       string
	Dependencies []string
	Capabilities []string
}

// ErrorCode classifies an Error.
type ErrorCode int

// Error codes. ErrArgFormat and ErrArgValue are reported on the wire as
// error_kind "invalid_args", every other code as "template_error".
const (
	ErrDirMissing   ErrorCode = iota + 1 // the templates directory does not exist
	ErrDirRead                           // the templates directory cannot be read
	ErrInvalidName                       // unsafe template name
	ErrNotFound                          // no such template
	ErrManifest                          // template.json unreadable or malformed
	ErrMissingArg                        // a required argument is missing
	ErrTemplateFile                      // app.ax.template missing or unreadable
	ErrTooLarge                          // the rendered source exceeds MaxSourceBytes
	ErrArgFormat                         // an argument is not key=value
	ErrArgValue                          // an argument value does not fit its declared type
)

// Error is a template failure. Msg is the complete message sent on the
// wire; Err, when set, is the underlying cause.
type Error struct {
	Code ErrorCode
	Msg  string
	Err  error
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

func newError(code ErrorCode, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// List reads every immediate sub-directory of dir that holds a
// template.json and returns the manifests sorted by name (then directory).
// Sub-directories without a manifest, and entries that resolve outside
// dir, are skipped. Errors (*Error): ErrDirMissing ("templates directory
// not found: <dir>"), ErrDirRead ("read templates dir: …"), ErrManifest for
// the first unreadable ("read <path>: …") or malformed ("parse <path>: …")
// manifest.
func List(dir string) ([]Manifest, error) {
	root, err := openRoot(dir)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, newError(ErrDirRead, err, "read templates dir: %v", err)
	}
	var out []Manifest
	for _, e := range entries {
		path := filepath.Join(dir, e.Name(), ManifestFile)
		if ok, err := root.contains(path); err != nil || !ok {
			continue // absent, or resolves outside dir
		}
		if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, newError(ErrManifest, err, "read %s: %v", path, err)
		}
		m, err := parseManifest(data)
		if err != nil {
			return nil, newError(ErrManifest, err, "parse %s: %v", path, err)
		}
		m.Dir = e.Name()
		out = append(out, *m)
	}
	slices.SortStableFunc(out, func(a, b Manifest) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Dir, b.Dir)
	})
	return out, nil
}

// Apply renders template name from dir with args (key → value).
// Checks, in order: the name (ErrInvalidName "invalid template name
// '<n>'"), the directory (ErrDirMissing), the template (ErrNotFound
// "template '<n>' not found"), the manifest (ErrManifest "read template
// manifest: …" / "parse template manifest: …"), required arguments in
// name order (ErrMissingArg "missing required argument: <k>"), "int"
// arguments in name order (ErrArgValue "argument '<k>' must be an integer,
// got: <v>"), the source file (ErrTemplateFile "template file not found:
// app.ax.template" / "read template: …"), the size of the result
// (ErrTooLarge).
//
// Every placeholder {{key}} whose key is supplied, or declared with a
// default, is replaced in one pass; other placeholders stay as written.
// See the package documentation for escaping.
func Apply(dir, name string, args map[string]string) (Rendered, error) {
	if !validName(name) {
		return Rendered{}, invalidName(name)
	}
	root, err := openRoot(dir)
	if err != nil {
		return Rendered{}, err
	}
	tdir := filepath.Join(dir, name)
	manifestPath := filepath.Join(tdir, ManifestFile)
	if err := root.check(name, tdir); err != nil {
		return Rendered{}, err
	}
	if st, err := os.Stat(tdir); err != nil || !st.IsDir() {
		return Rendered{}, newError(ErrNotFound, err, "template '%s' not found", name)
	}
	if err := root.check(name, manifestPath); err != nil {
		return Rendered{}, err
	}
	data, err := os.ReadFile(manifestPath)
	if errors.Is(err, fs.ErrNotExist) {
		return Rendered{}, newError(ErrNotFound, err, "template '%s' not found", name)
	}
	if err != nil {
		return Rendered{}, newError(ErrManifest, err, "read template manifest: %v", err)
	}
	m, err := parseManifest(data)
	if err != nil {
		return Rendered{}, newError(ErrManifest, err, "parse template manifest: %v", err)
	}
	argNames := m.ArgNames()
	for _, k := range argNames {
		if _, ok := args[k]; !ok && m.Args[k].Required {
			return Rendered{}, newError(ErrMissingArg, nil, "missing required argument: %s", k)
		}
	}
	values := make(map[string]string, len(args)+len(m.Args))
	for k, v := range args {
		values[k] = v
	}
	for _, k := range argNames {
		if _, ok := values[k]; !ok && m.Args[k].Default != nil {
			values[k] = defaultText(m.Args[k].Default)
		}
	}
	for _, k := range argNames {
		v, ok := values[k]
		if ok && isIntType(m.Args[k].Type) && !isInt(v) {
			return Rendered{}, newError(ErrArgValue, nil, "argument '%s' must be an integer, got: %s", k, v)
		}
	}
	srcPath := filepath.Join(tdir, SourceFile)
	if err := root.check(name, srcPath); err != nil {
		return Rendered{}, err
	}
	text, err := os.ReadFile(srcPath)
	if errors.Is(err, fs.ErrNotExist) {
		return Rendered{}, newError(ErrTemplateFile, err, "template file not found: %s", SourceFile)
	}
	if err != nil {
		return Rendered{}, newError(ErrTemplateFile, err, "read template: %v", err)
	}
	src, ok := render(text, values, MaxSourceBytes)
	if !ok {
		return Rendered{}, newError(ErrTooLarge, nil, "rendered template exceeds %d bytes", MaxSourceBytes)
	}
	return Rendered{
		TemplateName: m.Name,
		OutputFile:   name + "_app.ax",
		Source:       src,
		Dependencies: m.Dependencies,
		Capabilities: m.Capabilities,
	}, nil
}

func invalidName(name string) *Error {
	return newError(ErrInvalidName, nil, "invalid template name '%s'", name)
}

// validName reports whether name is a plain directory name.
func validName(name string) bool {
	return name != "" && name != "." &&
		!strings.ContainsAny(name, "/\\\x00") && !strings.Contains(name, "..") &&
		!filepath.IsAbs(name) && filepath.VolumeName(name) == ""
}

// root is a templates directory resolved through symlinks.
type root struct {
	real string
}

func openRoot(dir string) (*root, error) {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, newError(ErrDirMissing, err, "templates directory not found: %s", dir)
	}
	if err != nil {
		return nil, newError(ErrDirRead, err, "read templates dir: %v", err)
	}
	if !st.IsDir() {
		return nil, newError(ErrDirRead, nil, "read templates dir: %s is not a directory", dir)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, newError(ErrDirRead, err, "read templates dir: %v", err)
	}
	return &root{real: real}, nil
}

// contains reports whether path exists and resolves, through symlinks,
// to a location inside the root.
func (r *root) contains(path string) (bool, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false, err
	}
	rel, err := filepath.Rel(r.real, real)
	if err != nil {
		return false, nil
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel), nil
}

// check refuses a path of template name that exists but resolves outside
// the root. A path that does not exist passes; the caller reports it.
func (r *root) check(name, path string) error {
	ok, err := r.contains(path)
	if err != nil || ok {
		return nil
	}
	return invalidName(name)
}

// defaultText renders a manifest default: a JSON string as its value,
// anything else as its compact JSON text.
func defaultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return buf.String()
	}
	return string(raw)
}

func isIntType(t string) bool { return t == "int" || t == "integer" }

// isInt reports whether v is a base-10 integer that fits an .ax Int
// (i64), with an optional leading sign.
func isInt(v string) bool {
	_, err := strconv.ParseInt(v, 10, 64)
	return err == nil
}

// ParseArgs splits each "key=value" at its first '='. The value may contain
// '='; the key may be empty; a later duplicate key wins. An argument
// without '=' is an *Error with code ErrArgFormat and message
// "argument must be key=value format, got: <arg>".
func ParseArgs(args []string) (map[string]string, error) {
	out := make(map[string]string, len(args))
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return nil, newError(ErrArgFormat, nil, "argument must be key=value format, got: %s", a)
		}
		out[k] = v
	}
	return out, nil
}
