package handlers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/worker/handlers"
)

func readSrc(path string) string {
	return fmt.Sprintf("fn main() -> Result<String, String> !{fs.read} { fs_read(%s) }", axString(path))
}

func writeSrc(path, content string) string {
	return fmt.Sprintf("fn main() -> Result<Unit, String> !{fs.write} { fs_write(%s, %s) }", axString(path), axString(content))
}

// fsRoot returns a root directory with a file, a link out of it, a link to
// /dev/zero and a FIFO, next to a secret the program must not reach.
func fsRoot(t *testing.T) (root, outside string) {
	dir := t.TempDir()
	root = filepath.Join(dir, "root")
	outside = filepath.Join(dir, "secret.txt")
	must(t, os.Mkdir(root, 0o755))
	must(t, os.WriteFile(outside, []byte("top secret"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello, file"), 0o644))
	must(t, os.Symlink(outside, filepath.Join(root, "out")))
	must(t, os.Symlink("../secret.txt", filepath.Join(root, "out-rel")))
	must(t, os.Symlink("/dev/zero", filepath.Join(root, "zero")))
	must(t, os.Symlink("hello.txt", filepath.Join(root, "in")))
	must(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	return root, outside
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestFiles(t *testing.T) {
	root, outside := fsRoot(t)
	set := live(t, handlers.Grants{FSRoot: root}, handlers.Options{})
	if got := okValue(t, run(t, set, readSrc("hello.txt"), "")); got != "hello, file" {
		t.Errorf("read = %q", got)
	}
	if got := okValue(t, run(t, set, readSrc("in"), "")); got != "hello, file" {
		t.Errorf("read through a link inside the root = %q", got)
	}
	m := run(t, set, writeSrc("sub/dir/new.txt", "written"), "")
	if r, _ := m["result"].(map[string]any); m["success"] != true || r["result"] != "Ok" {
		t.Fatalf("write: %v", m)
	}
	if b, err := os.ReadFile(filepath.Join(root, "sub/dir/new.txt")); err != nil || string(b) != "written" {
		t.Errorf("written file = %q, %v", b, err)
	}
	if got := errValue(t, run(t, set, readSrc("missing.txt"), "")); got != `fs_read: "missing.txt": no such file or directory` {
		t.Errorf("missing = %q", got)
	}
	if got := errValue(t, run(t, set, readSrc("sub"), "")); got != `fs_read: "sub" is a directory` {
		t.Errorf("directory = %q", got)
	}

	refusals := []struct{ src, want string }{
		{readSrc("../secret.txt"), `capability denied: fs.read (path "../secret.txt" leaves the server's --fs-root)`},
		{readSrc("sub/../../secret.txt"), `capability denied: fs.read (path "sub/../../secret.txt" leaves the server's --fs-root)`},
		{readSrc(outside), fmt.Sprintf(`capability denied: fs.read (path %q is absolute; paths are relative to the server's --fs-root)`, outside)},
		{readSrc("/dev/zero"), `capability denied: fs.read (path "/dev/zero" is absolute; paths are relative to the server's --fs-root)`},
		{readSrc("out"), `capability denied: fs.read (path "out" leaves the server's --fs-root)`},
		{readSrc("out-rel"), `capability denied: fs.read (path "out-rel" leaves the server's --fs-root)`},
		{readSrc("zero"), `capability denied: fs.read (path "zero" leaves the server's --fs-root)`},
		{readSrc("fifo"), `capability denied: fs.read ("fifo" is not a regular file (named pipe))`},
		{writeSrc("fifo", "x"), `capability denied: fs.write ("fifo" is not a regular file (named pipe))`},
		{writeSrc("../escape.txt", "x"), `capability denied: fs.write (path "../escape.txt" leaves the server's --fs-root)`},
		{writeSrc("out", "overwritten"), `capability denied: fs.write (path "out" leaves the server's --fs-root)`},
		{writeSrc("", "x"), `capability denied: fs.write (empty path)`},
	}
	for _, r := range refusals {
		c := "fs.read"
		if strings.Contains(r.src, "fs_write") {
			c = "fs.write"
		}
		if got := deniedMsg(t, run(t, set, r.src, ""), c); got != r.want {
			t.Errorf("%s:\n got %q\nwant %q", r.src, got, r.want)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "top secret" {
		t.Errorf("the file outside the root changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(root), "escape.txt")); err == nil {
		t.Error("fs_write created a file outside the root")
	}
}

func TestFilesGrants(t *testing.T) {
	root, _ := fsRoot(t)
	none := live(t, handlers.Grants{}, handlers.Options{})
	if got := deniedMsg(t, run(t, none, readSrc("hello.txt"), ""), "fs.read"); got != "capability denied: fs.read (not granted by this server; see --fs-root)" {
		t.Errorf("no root: %q", got)
	}
	ro := live(t, handlers.Grants{FSRoot: root, FSReadOnly: true}, handlers.Options{})
	if got := okValue(t, run(t, ro, readSrc("hello.txt"), "")); got != "hello, file" {
		t.Errorf("read-only read = %q", got)
	}
	if got := deniedMsg(t, run(t, ro, writeSrc("x.txt", "x"), ""), "fs.write"); got != "capability denied: fs.write (not granted by this server; see --fs-root without --fs-read-only)" {
		t.Errorf("read-only write: %q", got)
	}
}

// A file larger than the run's memory is refused before it is read; a
// run writes at most its memory limit in all.
func TestFilesSizes(t *testing.T) {
	root, _ := fsRoot(t)
	must(t, os.WriteFile(filepath.Join(root, "big.bin"), make([]byte, 3<<20), 0o644))
	set := live(t, handlers.Grants{FSRoot: root}, handlers.Options{})
	m := run(t, set, readSrc("big.bin"), `"limits":{"max_memory_mb":2}`)
	if m["outcome"] != "memory_limit" || m["message"] != "memory limit of 2 MB exceeded" {
		t.Errorf("big read: %v", m)
	}
	// A run writes at most its memory limit in all (the event log, which
	// holds each write's content, usually stops it first): 4,096 bytes to
	// create q.txt and 4 for its content, 4 again to overwrite it.
	h, done := set.ForRun(vm.RunInfo{MaxMemory: handlers.EntryCost + 10})
	defer done()
	for i, want := range []string{`{"result":"Ok","value":null}`, `{"result":"Ok","value":null}`,
		`{"result":"Err","value":"fs_write: \"q.txt\": 4 bytes exceed what this run may still write (2 bytes; a run writes at most its memory limit)"}`} {
		v, err := h.Call(context.Background(), vm.EFsWrite, []vm.Value{vm.Str("q.txt"), vm.Str("four")})
		if b, _ := v.MarshalJSON(); err != nil || string(b) != want {
			t.Errorf("write %d = %s, %v; want %s", i+1, b, err, want)
		}
	}
}

// Creating files and directories costs the run's write quota
// (handlers.EntryCost each), whatever their size (issue 26, item 8:
// 100,000 empty files or a 3,000-deep directory chain per run).
func TestFilesEntryCost(t *testing.T) {
	root := t.TempDir()
	set := live(t, handlers.Grants{FSRoot: root}, handlers.Options{})
	// Empty files until the quota refuses one: 16 MB / 4,096 bytes.
	const files = `fn main() -> Result<Int, String> !{fs.write} {
  let mut i = 0
  let mut err = ""
  while i < 100000 && err == "" {
    match fs_write("f" ++ int_to_string(i), "") { Ok(_) => { i = i + 1 }, Err(e) => { err = e } }
  }
  if err == "" { Ok(i) } else { Err(int_to_string(i) ++ " files, then: " ++ err) }
}`
	if got := errValue(t, run(t, set, files, `"limits":{"max_memory_mb":16}`)); got !=
		`4096 files, then: fs_write: "f4096": 0 bytes and 1 new file or directory (4096 bytes) exceed what this run may still write (0 bytes; a run writes at most its memory limit)` {
		t.Errorf("empty files: %q", got)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 4096 {
		t.Errorf("%d files created, want 4096", len(entries))
	}

	// A 3,000-deep chain costs 3,001 entries: refused whole under 4 MB
	// (the message quotes the path's first 300 bytes), written with 12 MB
	// to spare; ".." does not hide directories from the count.
	chain := strings.Repeat("d/", 3000) + "leaf.txt"
	want := `fs_write: "` + chain[:300] + `…": 1 bytes and 3001 new files or directories (4096 bytes each) exceed what this run may still write (4194304 bytes; a run writes at most its memory limit)`
	deep := t.TempDir()
	dset := live(t, handlers.Grants{FSRoot: deep}, handlers.Options{})
	if got := errValue(t, run(t, dset, writeSrc(chain, "x"), `"limits":{"max_memory_mb":4}`)); got != want {
		t.Errorf("deep chain under 4 MB:\n got %q\nwant %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(deep, "d")); err == nil {
		t.Error("the refused chain created a directory")
	}
	h, done := dset.ForRun(vm.RunInfo{MaxMemory: 3001*handlers.EntryCost + 1 + handlers.EntryCost + 1 + 1 + 100})
	defer done()
	for i, c := range []struct {
		path string
		want string
	}{
		{chain, `{"result":"Ok","value":null}`},
		{"d/d/other.txt", `{"result":"Ok","value":null}`}, // one new file
		{chain, `{"result":"Ok","value":null}`},           // nothing new
		{"e/f/g.txt", `{"result":"Err","value":"fs_write: \"e/f/g.txt\": 1 bytes and 3 new files or directories (4096 bytes each) exceed what this run may still write (100 bytes; a run writes at most its memory limit)"}`},
		{"d/../n1/n2/x.txt", `{"result":"Err","value":"fs_write: \"d/../n1/n2/x.txt\": 1 bytes and 3 new files or directories (4096 bytes each) exceed what this run may still write (100 bytes; a run writes at most its memory limit)"}`},
		{"d/../d/d/../d/x.txt", `{"result":"Err","value":"fs_write: \"d/../d/d/../d/x.txt\": 1 bytes and 1 new file or directory (4096 bytes) exceed what this run may still write (100 bytes; a run writes at most its memory limit)"}`},
		{"d/d/d", `{"result":"Err","value":"fs_write: \"d/d/d\" is a directory"}`},
	} {
		v, err := h.Call(context.Background(), vm.EFsWrite, []vm.Value{vm.Str(c.path), vm.Str("x")})
		if b, _ := v.MarshalJSON(); err != nil || string(b) != c.want {
			t.Errorf("write %d (%.20s…) = %s, %v; want %s", i+1, c.path, b, err, c.want)
		}
	}
}

// Counting the missing directories of a deep path holds a bounded number
// of descriptors: with the process limited to 128 open files, a write into
// an existing 600-deep chain creates one file (4,096 bytes of a 1 MiB
// quota). Counting with one open directory per level ran out of
// descriptors at about level 120 — the worker's other runs with it — and
// took the ~480 levels it could not open for new directories: an Err
// asking for 1.9 MB.
func TestFilesDeepPathDescriptors(t *testing.T) {
	root := t.TempDir()
	chain := strings.Repeat("d/", 600)
	must(t, os.MkdirAll(filepath.Join(root, chain), 0o755))
	set := live(t, handlers.Grants{FSRoot: root}, handlers.Options{})
	var old syscall.Rlimit
	must(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old))
	low := old
	low.Cur = 128
	must(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low))
	m := run(t, set, writeSrc(chain+"leaf.txt", "x"), `"limits":{"max_memory_mb":1}`)
	must(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old))
	if r, _ := m["result"].(map[string]any); m["success"] != true || r["result"] != "Ok" {
		t.Fatalf("write into a 600-deep chain: %v", m)
	}
	if b, err := os.ReadFile(filepath.Join(root, chain, "leaf.txt")); err != nil || string(b) != "x" {
		t.Errorf("leaf.txt = %q, %v", b, err)
	}
}

// An --fs-root holding /proc or /sys, inside them, or holding axpool's own
// data is refused at start (issue 26, item 9: with --fs-root / a program
// read the LLM key and the NATS password from /proc/self/environ).
func TestFSRootRefused(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "data", "app.db")
	must(t, os.MkdirAll(filepath.Dir(db), 0o755))
	must(t, os.Symlink("/", filepath.Join(dir, "slash")))
	own := []handlers.OwnPath{{What: "the --db file", Path: db}, {What: "the libraries (--libs-dir)", Path: filepath.Join(dir, "libs")}}
	const fix = "; give a directory that holds only what programs may read and write"
	for root, want := range map[string]string{
		"/":                           "--fs-root / contains /proc (every process's environment, command line and memory, this worker's secrets included)" + fix,
		filepath.Join(dir, "slash"):   "--fs-root " + filepath.Join(dir, "slash") + " contains /proc (every process's environment, command line and memory, this worker's secrets included)" + fix,
		"/proc/self":                  "--fs-root /proc/self is inside /proc (every process's environment, command line and memory, this worker's secrets included)" + fix,
		"/sys/kernel":                 "--fs-root /sys/kernel is inside /sys (the kernel's and the devices' settings)" + fix,
		dir:                           "--fs-root " + dir + " contains the --db file (" + db + "): programs could read or change it" + fix,
		filepath.Join(dir, "data"):    "--fs-root " + filepath.Join(dir, "data") + " contains the --db file (" + db + "): programs could read or change it" + fix,
		filepath.Join(dir, "data/.."): "--fs-root " + filepath.Join(dir, "data/..") + " contains the --db file (" + db + "): programs could read or change it" + fix,
	} {
		_, err := handlers.NewLive(handlers.Grants{FSRoot: root}, handlers.Options{OwnData: own})
		if err == nil || err.Error() != want {
			t.Errorf("--fs-root %s: %v\nwant %s", root, err, want)
		}
	}
	// A directory beside them is fine.
	files := filepath.Join(dir, "files")
	must(t, os.Mkdir(files, 0o755))
	live(t, handlers.Grants{FSRoot: files}, handlers.Options{OwnData: own})
}

// A device is refused before it is opened: opening one acts on it. The
// device here has no driver (major 240, for local use), so opening it
// fails: the open gave Err("fs_read: \"dev\": no such device or
// address") instead of the refusal. Needs CAP_MKNOD.
func TestFilesDeviceNotOpened(t *testing.T) {
	root, _ := fsRoot(t)
	if err := syscall.Mknod(filepath.Join(root, "dev"), syscall.S_IFCHR|0o666, 240<<8); err != nil {
		t.Skipf("mknod: %v", err)
	}
	set := live(t, handlers.Grants{FSRoot: root}, handlers.Options{})
	for _, c := range []struct{ src, capability, want string }{
		{readSrc("dev"), "fs.read", `capability denied: fs.read ("dev" is not a regular file (character device))`},
		{writeSrc("dev", "x"), "fs.write", `capability denied: fs.write ("dev" is not a regular file (character device))`},
	} {
		if got := deniedMsg(t, run(t, set, c.src, ""), c.capability); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.src, got, c.want)
		}
	}
}

// A file on a kernel pseudo file system is refused once open, wherever it
// is mounted (checkFileSystem); the root's check cannot see a mount inside
// it. Unprivileged, the test cannot mount proc in a root: it reads through
// a root opened on /proc/self directly, which NewLive would refuse.
func TestFSPseudoFileSystem(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	h, done := handlers.FilesForTest(t, "/proc/self")
	defer done()
	for _, c := range []struct {
		e    vm.Effect
		args []vm.Value
		want string
	}{
		{vm.EFsRead, []vm.Value{vm.Str("environ")}, `capability denied: fs.read ("environ" is on the kernel's proc file system)`},
		{vm.EFsRead, []vm.Value{vm.Str("cmdline")}, `capability denied: fs.read ("cmdline" is on the kernel's proc file system)`},
		{vm.EFsWrite, []vm.Value{vm.Str("comm"), vm.Str("pwned")}, `capability denied: fs.write ("comm" is on the kernel's proc file system)`},
	} {
		_, err := h.Call(context.Background(), c.e, c.args)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s %v: %v, want %s", c.e.Name(), c.args, err, c.want)
		}
	}
	if comm, _ := os.ReadFile("/proc/self/comm"); strings.Contains(string(comm), "pwned") {
		t.Errorf("the write reached /proc/self/comm: %q", comm)
	}
}
