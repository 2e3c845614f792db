package scripts

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/internal/limitread"
	"github.com/axpool/axpool/internal/spell"
	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/tools/typed"
	"github.com/axpool/axpool/vm"
)

// Script is one loaded, registered script (docs/scripts.md). A Script is
// immutable once loaded and shared between catalogues.
type Script struct {
	// Name is the tool name: the path below the directory without ".ax",
	// "/" written "__" ("ops/deploy.ax" → "ops__deploy").
	Name string
	// Path is the file's path relative to the directory, with "/".
	Path string
	// Source is the file's content as loaded; Digest its SHA-256 (hex).
	Source []byte
	Digest string
	// Description is the composed tool description (comment block,
	// "Returns:" trailer), at most MaxDescriptionBytes (+ the truncation
	// marker). Not masked: the gateway masks what it sends.
	Description string
	// Params are main's parameters, in order.
	Params []*Param
	// Caps are the capabilities main declares: the most a run may use.
	Caps []policy.Capability
	// Confirm is the `confirm` question; "" when the script is not
	// destructive.
	Confirm string
	// Private scripts (a "_" file or folder name, or `//! private`) are
	// never tools; they can be failure hooks or the context script.
	Private bool
	// Context marks the context script (`//! context`).
	Context bool
	// OnFailure names the failure hook ("" for none).
	OnFailure string
	// TimeoutMs is the script's own wall-clock limit (0: none).
	TimeoutMs int64
	// Task says whether a call may, must or must not run as an MCP task
	// (`//! task required|optional|never`; TaskOptional when absent).
	Task TaskSupport
	// Policy is the sidecar NAME.policy.json, nil when there is none.
	// PolicyJSON is its normalised JSON.
	Policy     *policy.Policy
	PolicyJSON json.RawMessage
	// HookArgs reports that main is (failed: String, error: String): as a
	// failure hook it gets the failed script's name and message.
	HookArgs bool
}

// Annotations are the MCP tool hints, derived from what the script
// declares, never claimed by its author (docs/scripts.md "Annotations").
type Annotations struct {
	ReadOnly, Destructive, Idempotent, OpenWorld bool
}

// Annotations derives the hints: destructive = has `confirm`; open-world
// = declares net.fetch or llm.call; read-only = not destructive and
// declares none of fs.write, db.query, net.fetch, llm.call; idempotent =
// declares nothing beyond ui.render.
func (s *Script) Annotations() Annotations {
	a := Annotations{Destructive: s.Confirm != "", Idempotent: true}
	writes := false
	for _, c := range s.Caps {
		switch c {
		case policy.NetFetch, policy.LlmCall:
			a.OpenWorld, writes = true, true
		case policy.FsWrite, policy.DbQuery:
			writes = true
		}
		if c != policy.UiRender {
			a.Idempotent = false
		}
	}
	a.ReadOnly = !a.Destructive && !writes
	return a
}

// Diagnostic is a static problem of a script file (or of its sidecar
// policy): `file:line:col: message`, File being the path as found under
// the directory the catalogue was loaded from.
type Diagnostic struct {
	File      string
	Line, Col int
	Msg       string
}

// String renders d as `file:line:col: message`.
func (d Diagnostic) String() string {
	return d.File + ":" + strconv.Itoa(d.Line) + ":" + strconv.Itoa(d.Col) + ": " + d.Msg
}

// Failure is a script file that was not registered, with its errors.
type Failure struct {
	// Name is the tool name the file would have had; Path its path
	// relative to the directory.
	Name, Path  string
	Diagnostics []Diagnostic
}

// Catalogue is the set of scripts loaded from one directory. It is
// immutable; a reload builds a new one (Load with Options.Previous).
type Catalogue struct {
	// Dir is the directory as given to Load.
	Dir string
	// Tools are the registered public scripts, sorted by name.
	Tools []*Script
	// Context is the context script, nil when there is none.
	Context *Script
	// Failed lists the files that were not registered, sorted by path.
	Failed []Failure
	// Diagnostics holds every static problem, sorted by file and
	// position (those of Failed included).
	Diagnostics []Diagnostic
	// Compiled is the number of files this load compiled (the others were
	// unchanged since Options.Previous).
	Compiled int

	all   map[string]*Script // every registered script, private ones too
	units map[string]*unit   // by path, for the next load
	libs  string
}

// Lookup returns the public script called name (a tool).
func (c *Catalogue) Lookup(name string) (*Script, bool) {
	s, ok := c.all[name]
	if !ok || s.Private || s.Context {
		return nil, false
	}
	return s, true
}

// Script returns the registered script called name, private ones
// included (failure hooks, the context script).
func (c *Catalogue) Script(name string) (*Script, bool) {
	s, ok := c.all[name]
	return s, ok
}

// Names returns the names of the public scripts, sorted.
func (c *Catalogue) Names() []string {
	out := make([]string, len(c.Tools))
	for i, s := range c.Tools {
		out[i] = s.Name
	}
	return out
}

// ToolsVersion identifies what the catalogue offers as tools: each public
// script's name and digest (so its description, schema and annotations)
// and sidecar policy. Two loads with equal ToolsVersion list the same
// tools.
func (c *Catalogue) ToolsVersion() string {
	var b strings.Builder
	for _, s := range c.Tools {
		fmt.Fprintf(&b, "%s %s %s\n", s.Name, s.Digest, s.PolicyJSON)
	}
	return b.String()
}

// Version identifies the whole catalogue: every registered script (private
// ones too) and every diagnostic.
func (c *Catalogue) Version() string {
	var b strings.Builder
	for _, name := range sortedKeys(c.all) {
		s := c.all[name]
		fmt.Fprintf(&b, "%s %s %s %t\n", s.Name, s.Digest, s.PolicyJSON, s == c.Context)
	}
	for _, d := range c.Diagnostics {
		b.WriteString(d.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// Suggest returns the public script name nearest to name, when one is
// clearly nearest (the project's did-you-mean rule).
func (c *Catalogue) Suggest(name string) (string, bool) {
	if len(name) > 2*maxShownValue {
		return "", false
	}
	return spell.Nearest(name, c.Names())
}

// Options configure Load.
type Options struct {
	// LibsDir resolves `import "std-x"` in scripts.
	LibsDir string
	// Previous is the catalogue of an earlier load of the same directory:
	// files whose content is unchanged are not compiled again.
	Previous *Catalogue
}

// namePattern is what a tool name must match (docs/scripts.md).
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// reservedPrefixes are the tool-name prefixes of the built-in tools.
var reservedPrefixes = []string{"boruna_", "axpool_"}

// unit is the result of analysing one file, reused while its content is
// unchanged.
type unit struct {
	path   string // relative, "/"
	digest string
	script *Script // nil when the file has errors
	diags  []Diagnostic
	// onFailurePos locates the on_failure directive (cross-file checks).
	onFailurePos lineCol
	mainPos      lineCol
	hookShapeOK  bool // main is () or (failed: String, error: String)
	noParams     bool
}

// Load reads every DIR/**/*.ax file into a catalogue (docs/scripts.md).
// A file with a problem is not registered and is reported in Failed and
// Diagnostics; the error is only for a directory that cannot be read.
// Sidecar policies (NAME.policy.json next to NAME.ax) are read on every
// load; scripts are compiled only when new or changed.
func Load(dir string, opts Options) (*Catalogue, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("scripts directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("scripts directory %s is not a directory", dir)
	}
	var files, sidecars []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // an unreadable subdirectory: skipped
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, rerr := filepath.Rel(dir, p)
		if rerr != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		switch {
		case strings.HasSuffix(rel, ".policy.json"):
			sidecars = append(sidecars, rel)
		case strings.HasSuffix(rel, ".ax"):
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scripts directory: %w", err)
	}
	sort.Strings(files)
	c := &Catalogue{Dir: dir, all: map[string]*Script{}, units: map[string]*unit{}, libs: opts.LibsDir}
	var prev map[string]*unit
	if opts.Previous != nil && opts.Previous.Dir == dir && opts.Previous.libs == opts.LibsDir {
		prev = opts.Previous.units
	}

	// Read and hash every file; compile the new and changed ones in
	// parallel.
	units := make([]*unit, len(files))
	sources := make([][]byte, len(files))
	var todo []int
	for i, rel := range files {
		src, rerr := readLimited(filepath.Join(dir, filepath.FromSlash(rel)), compiler.MaxSourceSize)
		if rerr != nil {
			units[i] = &unit{path: rel, diags: []Diagnostic{{File: c.display(rel), Line: 1, Col: 1, Msg: rerr.Error()}}}
			continue
		}
		sum := sha256.Sum256(src)
		digest := hex.EncodeToString(sum[:])
		if u, ok := prev[rel]; ok && u.digest == digest {
			units[i] = u
			continue
		}
		sources[i] = src
		units[i] = &unit{path: rel, digest: digest}
		todo = append(todo, i)
	}
	c.Compiled = len(todo)
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), max(len(todo), 1)) {
		wg.Go(func() {
			for i := range next {
				c.analyze(units[i], sources[i], opts.LibsDir)
			}
		})
	}
	for _, i := range todo {
		next <- i
	}
	close(next)
	wg.Wait()

	c.link(units, sidecars)
	return c, nil
}

// readLimited reads a file of at most limit bytes.
func readLimited(path string, limit int64) ([]byte, error) {
	data, err := limitread.File(path, limit)
	if errors.Is(err, limitread.ErrTooLarge) {
		return nil, fmt.Errorf("script exceeds the 1 MB source limit (more than %d bytes)", limit)
	}
	return data, err
}

// display is the file name diagnostics show: the path under Dir.
func (c *Catalogue) display(rel string) string {
	return filepath.Join(c.Dir, filepath.FromSlash(rel))
}

// nameOf maps a relative path to its tool name.
func nameOf(rel string) string {
	return strings.ReplaceAll(strings.TrimSuffix(rel, ".ax"), "/", "__")
}

// isPrivatePath reports whether a file or one of its folders starts with
// "_".
func isPrivatePath(rel string) bool {
	for part := range strings.SplitSeq(rel, "/") {
		if strings.HasPrefix(part, "_") {
			return true
		}
	}
	return false
}

// noMainMessage is the error of a script without main.
const noMainMessage = "script has no `fn main`: a script runs its main, whose parameters are the tool's arguments"

// compileMain compiles a script's source to a module and returns its
// main (nil when there is none) and the compile errors (warnings left
// out; the module is nil when there are errors). A script's main may
// take parameters: it is compiled as a program, not as a boruna_run
// script (compiler.Options.Script).
func compileMain(src []byte, file, name, libsDir string) (*vm.Module, *compiler.FuncInfo, compiler.ErrorList) {
	p := compiler.Analyze(src, compiler.Options{File: file, LibsDir: libsDir, ModuleName: name})
	if errs := p.Errors(); errs != nil {
		return nil, p.Func("main"), errs
	}
	m, errs := p.Compile()
	return m, p.Func("main"), errs
}

// analyze compiles one file and reads its signature and directives
// (everything that depends on this file alone).
func (c *Catalogue) analyze(u *unit, src []byte, libsDir string) {
	file := c.display(u.path)
	diag := func(p lineCol, format string, args ...any) {
		u.diags = append(u.diags, Diagnostic{File: file, Line: p.line, Col: p.col, Msg: fmt.Sprintf(format, args...)})
	}
	name := nameOf(u.path)
	switch {
	case !namePattern.MatchString(name):
		diag(lineCol{1, 1}, "script name %q (from its path) must match ^[A-Za-z0-9_-]{1,64}$; rename the file", text.Cut(name, 2*maxShownValue))
	case hasReservedPrefix(name):
		diag(lineCol{1, 1}, "script name %q must not start with boruna_ or axpool_ (built-in tool names); rename the file", name)
	}

	_, main, errs := compileMain(src, file, name, libsDir)
	for _, e := range errs {
		u.diags = append(u.diags, compileDiag(e))
	}
	if main == nil {
		if len(errs) == 0 {
			diag(lineCol{1, 1}, "%s", noMainMessage)
		}
		return
	}
	mp := main.Decl.Name.Pos()
	u.mainPos = lineCol{int(mp.Line), int(mp.Col)}
	start := main.Decl.Pos()
	d := parseBlock(src, int(start.Line), diag)

	s := &Script{
		Name: name, Path: u.path, Source: src, Digest: u.digest,
		Description: composeDescription(d),
		Caps:        main.Caps, Confirm: d.confirm,
		Private:   d.private || isPrivatePath(u.path),
		Context:   d.context,
		OnFailure: d.onFailure, TimeoutMs: d.timeoutMs, Task: cmp.Or(d.task, TaskOptional),
	}
	u.onFailurePos = d.onFailurePos
	s.Params = paramsOf(main, d.params, diag)
	for pname, pos := range d.paramPos {
		if !slices.Contains(main.ParamNames, pname) {
			msg := fmt.Sprintf("directive \"param\" names %q, which is not a parameter of main", pname)
			if sug, ok := spell.Nearest(pname, main.ParamNames); ok {
				msg += fmt.Sprintf(" (did you mean %q?)", sug)
			} else if len(main.ParamNames) == 0 {
				msg += " (main takes no parameters)"
			} else {
				msg += " (parameters: " + strings.Join(main.ParamNames, ", ") + ")"
			}
			diag(pos, "%s", msg)
		}
	}
	u.noParams = len(main.Params) == 0
	s.HookArgs = len(main.Params) == 2 && main.ParamNames[0] == "failed" && main.ParamNames[1] == "error" &&
		main.Params[0].Kind() == compiler.KindString && main.Params[1].Kind() == compiler.KindString
	u.hookShapeOK = u.noParams || s.HookArgs
	if s.Context {
		if !u.noParams {
			diag(u.mainPos, "the context script's main must take no parameters (it runs once at server start)")
		}
		if s.Confirm != "" {
			diag(u.mainPos, "the context script cannot be destructive (confirm): it runs at every server start")
		}
	}
	if len(u.diags) == 0 {
		u.script = s
	}
}

// paramsOf converts main's parameters (descs: the `param` descriptions);
// a type a script cannot take is reported at the parameter's type.
func paramsOf(main *compiler.FuncInfo, descs map[string]string, diag func(p lineCol, format string, args ...any)) []*Param {
	var out []*Param
	conv := typed.NewConverter("main", "a script parameter")
	for i, pname := range main.ParamNames {
		t, terr := conv.TypeOf(main.Params[i], pname)
		if terr != nil {
			tp := main.Decl.Params[i].Type.Pos()
			diag(lineCol{int(tp.Line), int(tp.Col)}, "%s", terr.Error())
			continue
		}
		out = append(out, &Param{Name: pname, Type: t, Description: descs[pname]})
	}
	return out
}

func hasReservedPrefix(name string) bool {
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// compileDiag converts a compiler diagnostic (its file is the display
// path already, or a library's).
func compileDiag(e *compiler.Error) Diagnostic {
	return Diagnostic{File: e.File, Line: int(e.Pos.Line), Col: int(e.Pos.Col), Msg: e.Code + " " + e.Msg}
}

// link does the checks across files (names, failure hooks, the context
// script), reads the sidecar policies and builds the catalogue.
func (c *Catalogue) link(units []*unit, sidecars []string) {
	byName := map[string][]*unit{}
	for _, u := range units {
		c.units[u.path] = u
		byName[nameOf(u.path)] = append(byName[nameOf(u.path)], u)
	}
	extra := map[*unit][]Diagnostic{} // per-load problems (not cached)
	add := func(u *unit, p lineCol, format string, args ...any) {
		extra[u] = append(extra[u], Diagnostic{File: c.display(u.path), Line: p.line, Col: p.col, Msg: fmt.Sprintf(format, args...)})
	}
	for name, us := range byName {
		if len(us) < 2 {
			continue
		}
		for _, u := range us {
			var others []string
			for _, o := range us {
				if o != u {
					others = append(others, o.path)
				}
			}
			add(u, lineCol{1, 1}, "script name %q is also the name of %s; rename one of them", name, strings.Join(others, ", "))
		}
	}

	// Sidecar policies.
	policies := map[string]*policy.Policy{}
	policyJSON := map[string]json.RawMessage{}
	for _, rel := range sidecars {
		axRel := strings.TrimSuffix(rel, ".policy.json") + ".ax"
		u := c.units[axRel]
		file := c.display(rel)
		if u == nil {
			c.Diagnostics = append(c.Diagnostics, Diagnostic{File: file, Line: 1, Col: 1,
				Msg: fmt.Sprintf("policy file for a script that does not exist (%s)", filepath.Base(axRel))})
			continue
		}
		data, err := policy.ReadFile(filepath.Join(c.Dir, filepath.FromSlash(rel)))
		var p *policy.Policy
		if err == nil {
			p, err = policy.Parse(data)
		}
		if err != nil {
			msg := err.Error()
			var ve *policy.ValidationError
			if errors.As(err, &ve) && ve.Kind == policy.KindUnknownField && ve.Hint != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", ve.Hint)
			}
			extra[u] = append(extra[u], Diagnostic{File: file, Line: 1, Col: 1, Msg: msg})
			continue
		}
		b, _ := p.MarshalJSON()
		policies[axRel], policyJSON[axRel] = p, b
	}

	// Scripts that passed their own checks.
	ok := map[string]*unit{}
	for _, u := range units {
		if u.script != nil && len(extra[u]) == 0 {
			ok[u.script.Name] = u
		}
	}
	var ctx *unit
	for _, u := range units {
		s := u.script
		if s == nil || ok[s.Name] != u {
			continue
		}
		if s.OnFailure != "" {
			switch h, found := ok[s.OnFailure]; {
			case s.OnFailure == s.Name:
				add(u, u.onFailurePos, "a script cannot be its own failure hook")
			case !found && byName[s.OnFailure] == nil:
				msg := fmt.Sprintf("on_failure names %q, but there is no such script", s.OnFailure)
				if sug, ok2 := spell.Nearest(s.OnFailure, sortedKeys(byName)); ok2 {
					msg += fmt.Sprintf(" (did you mean %q?)", sug)
				}
				add(u, u.onFailurePos, "%s", msg)
			case found && !h.hookShapeOK:
				add(u, u.onFailurePos, "failure hook %q must take no parameters or (failed: String, error: String)", s.OnFailure)
			}
		}
		if s.Context {
			if ctx != nil {
				add(u, u.mainPos, "only one script may be the context script; %s already is", ctx.path)
			} else {
				ctx = u
			}
		}
	}

	for _, u := range units {
		diags := append(append([]Diagnostic(nil), u.diags...), extra[u]...)
		if u.script == nil || len(extra[u]) > 0 {
			c.Failed = append(c.Failed, Failure{Name: nameOf(u.path), Path: u.path, Diagnostics: diags})
			c.Diagnostics = append(c.Diagnostics, diags...)
			continue
		}
		s := *u.script
		s.Policy, s.PolicyJSON = policies[u.path], policyJSON[u.path]
		c.all[s.Name] = &s
		if u == ctx {
			c.Context = &s
		}
		if !s.Private && !s.Context {
			c.Tools = append(c.Tools, &s)
		}
	}
	sort.Slice(c.Tools, func(i, j int) bool { return c.Tools[i].Name < c.Tools[j].Name })
	sort.SliceStable(c.Diagnostics, func(i, j int) bool {
		a, b := c.Diagnostics[i], c.Diagnostics[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TaskSupport is a script's `//! task` directive (docs/scripts.md): whether
// a call runs as an MCP task (docs/tools.md §7 "Tasks").
type TaskSupport string

// The values of TaskSupport.
const (
	// TaskRequired: every call is a task; a client that did not negotiate
	// tasks is refused (-32021).
	TaskRequired TaskSupport = "required"
	// TaskOptional: a call is a task when the client negotiated tasks (the
	// default).
	TaskOptional TaskSupport = "optional"
	// TaskNever: a call always answers at once.
	TaskNever TaskSupport = "never"
)
