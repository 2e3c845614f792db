package queue

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// deadPID runs and reaps a short process and returns its pid, which then
// names no process (barring pid reuse within the test).
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestStoreDirPID(t *testing.T) {
	for name, want := range map[string]int{
		"axpool-nats-123-456":          123,
		"axpool-nats-1-x":              1,
		"axpool-nats-123456789":        0, // older pid-less name
		"axpool-nats-123-":             0,
		"axpool-nats--456":             0,
		"axpool-nats-0-456":            0,
		"axpool-nats-12a-456":          0,
		"axpool-nats-+12-456":          0,
		"axpool-nats-99999999999-1":    0, // more than 10 digits
		"other-123-456":                0,
		"axpool-nats-2147483647-1":     2147483647,
		"axpool-nats-2147483648-1":     0, // beyond pid_t
		"axpool-nats-4294967296000-12": 0,
	} {
		got, ok := storeDirPID(name)
		if got != want || ok != (want != 0) {
			t.Errorf("storeDirPID(%q) = %d, %v; want %d", name, got, ok, want)
		}
	}
}

// TestSweepStaleStoreDirs: of real directories under a private parent,
// only the one named for a dead pid, owned by this uid, is removed.
func TestSweepStaleStoreDirs(t *testing.T) {
	parent := t.TempDir()
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	dead := deadPID(t)

	mk := func(name string) string {
		p := filepath.Join(parent, name)
		if err := os.MkdirAll(filepath.Join(p, "jetstream"), 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	deadDir := mk(fmt.Sprintf("axpool-nats-%d-111", dead))
	keep := []string{
		mk(fmt.Sprintf("axpool-nats-%d-222", live.Process.Pid)), // live pid
		mk(fmt.Sprintf("axpool-nats-%d-333", os.Getpid())),      // this process
		mk("axpool-nats-444"),                                   // unparsable (older name)
		mk(fmt.Sprintf("other-%d-555", dead)),                   // another prefix
	}
	// A dead pid's dir owned by another uid (the test runs as root when it
	// can chown; otherwise this dir is a plain keep case by being live).
	otherUID := mk(fmt.Sprintf("axpool-nats-%d-666", dead))
	if os.Getuid() == 0 {
		if err := os.Chown(otherUID, 54321, 54321); err != nil {
			t.Fatal(err)
		}
	} else {
		os.Remove(filepath.Join(otherUID, "jetstream"))
		os.Remove(otherUID)
		otherUID = mk(fmt.Sprintf("axpool-nats-%d-666", live.Process.Pid))
	}
	keep = append(keep, otherUID)
	// A symlink and a plain file named for the dead pid are not followed
	// or removed.
	target := mk("target")
	link := filepath.Join(parent, fmt.Sprintf("axpool-nats-%d-777", dead))
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(parent, fmt.Sprintf("axpool-nats-%d-888", dead))
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	keep = append(keep, filepath.Join(target, "jetstream"), link, file)

	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	removed := sweepStaleStoreDirs(parent, log)
	if !slices.Equal(removed, []string{deadDir}) {
		t.Errorf("removed %v, want [%s]", removed, deadDir)
	}
	if _, err := os.Lstat(deadDir); !os.IsNotExist(err) {
		t.Errorf("dead pid's dir still there: %v", err)
	}
	for _, p := range keep {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	if !strings.Contains(logs.String(), fmt.Sprintf("msg=\"queue: removed a stale embedded store of a dead process\" dir=%s pid=%d", deadDir, dead)) {
		t.Errorf("log = %s", logs.String())
	}
	// A second sweep finds nothing more.
	if again := sweepStaleStoreDirs(parent, slog.New(slog.NewTextHandler(io.Discard, nil))); len(again) != 0 {
		t.Errorf("second sweep removed %v", again)
	}
}

// TestStartEmbeddedSweepsAndNamesStore: StartEmbedded removes a dead
// process's store and names its own axpool-nats-<pid>-<random>.
func TestStartEmbeddedSweepsAndNamesStore(t *testing.T) {
	parent := t.TempDir()
	stale := filepath.Join(parent, fmt.Sprintf("axpool-nats-%d-1", deadPID(t)))
	if err := os.Mkdir(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	e, err := StartEmbedded(EmbeddedOptions{TempDir: parent, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale store not removed: %v", err)
	}
	name := filepath.Base(e.StoreDir())
	if pid, ok := storeDirPID(name); !ok || pid != os.Getpid() || filepath.Dir(e.StoreDir()) != parent {
		t.Errorf("store dir %s: pid %d, %v", e.StoreDir(), pid, ok)
	}
}

// TestStoreDirUnusable: a store directory that cannot hold a store is
// refused before the server starts, with a *StoreDirError that says why,
// and nothing is created in it. A "jetstream" entry that is a file made
// the server refuse JetStream, which StartEmbedded learned only from its
// 10 s wait ("embedded server not ready after 10s", axpool.lock left
// behind); a dangling symbolic link was reported as "mkdir …: file
// exists".
func TestStoreDirUnusable(t *testing.T) {
	base := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	at := func(name string) string { return filepath.Join(base, name) }
	must(os.WriteFile(at("file"), []byte("x"), 0o600))
	must(os.Symlink("nowhere", at("dangling")))
	must(os.Symlink("loop2", at("loop1")))
	must(os.Symlink("loop1", at("loop2")))
	must(os.Mkdir(at("jsfile"), 0o700))
	must(os.WriteFile(at("jsfile/jetstream"), []byte("x"), 0o600))
	must(os.Mkdir(at("jslink"), 0o700))
	must(os.Symlink("nowhere", at("jslink/jetstream")))
	must(os.Mkdir(at("locklink"), 0o700))
	must(os.Symlink("../locktarget", at("locklink/axpool.lock")))
	for _, tc := range []struct{ dir, reason string }{
		{at("file"), "not a directory"},
		{at("file/sub"), "a part of its path is not a directory"},
		{at("dangling"), `a symbolic link to "nowhere", which does not exist`},
		{at("loop1"), `a symbolic link to "loop2" that cannot be followed: too many levels of symbolic links`},
		{at("jsfile"), `its entry "jetstream", where JetStream keeps its store, is not a directory`},
		{at("jslink"), `its entry "jetstream", where JetStream keeps its store, is not a directory`},
		{at("locklink"), "its lock file axpool.lock is a symbolic link"},
	} {
		e, err := StartEmbedded(EmbeddedOptions{StoreDir: tc.dir, TempDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if e != nil {
			e.Close()
		}
		var sde *StoreDirError
		if !errors.As(err, &sde) || sde.Dir != tc.dir || sde.Reason != tc.reason {
			t.Errorf("StartEmbedded(%s) = %v; want a StoreDirError %q", tc.dir, err, tc.reason)
			continue
		}
		if want := fmt.Sprintf("queue: store dir %q: %s", tc.dir, tc.reason); err.Error() != want {
			t.Errorf("error = %q, want %q", err, want)
		}
	}
	names, err := os.ReadDir(at("jsfile"))
	if err != nil || len(names) != 1 || names[0].Name() != "jetstream" {
		t.Errorf("jsfile holds %v (%v), want only jetstream: no lock file", names, err)
	}
	must(os.MkdirAll(at("store/jetstream"), 0o700))
	for dir, want := range map[string]bool{"store": true, "jsfile": false, "jslink": false, "file": false, "dangling": false, "absent": false} {
		if got := HoldsStore(at(dir)); got != want {
			t.Errorf("HoldsStore(%s) = %v, want %v", dir, got, want)
		}
	}
	for _, target := range []string{"nowhere", "locktarget"} {
		if _, err := os.Lstat(at(target)); !os.IsNotExist(err) {
			t.Errorf("the dangling link's target %s was created: %v", target, err)
		}
	}
}

// TestWaitReadyFatal: a server that reports a fatal error while it starts
// (it then never accepts connections) ends StartEmbedded's wait at once:
// "Can't start JetStream: …" with a store directory of the caller's is a
// *StoreDirError, anything else an error that quotes it. Before, the wait
// ran its whole 10 s and said only "not ready after 10s". The server is
// real but not started, so it is never ready.
func TestWaitReadyFatal(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ msg, storeDir, want string }{
		{"Can't start JetStream: storage directory is not writable", "/cache", `queue: store dir "/cache": JetStream cannot keep its store there: storage directory is not writable`},
		{"Can't start JetStream: storage directory is not writable", "", "queue: embedded server: Can't start JetStream: storage directory is not writable"},
		{"Error listening on port: 127.0.0.1:1, \"address in use\"", "/cache", `queue: embedded server: Error listening on port: 127.0.0.1:1, "address in use"`},
	} {
		fatal := make(chan string, 1)
		log := &slogAdapter{log: slog.New(slog.NewTextHandler(io.Discard, nil)), fatal: fatal}
		log.Fatalf("%s", tc.msg)
		log.Fatalf("a second fatal error is dropped") // the channel holds one
		err := waitReady(ns, fatal, tc.storeDir)
		if err == nil || err.Error() != tc.want {
			t.Errorf("waitReady after %q = %v, want %q", tc.msg, err, tc.want)
		}
		var sde *StoreDirError
		if errors.As(err, &sde) != (tc.storeDir != "" && strings.HasPrefix(tc.msg, "Can't start JetStream")) {
			t.Errorf("waitReady after %q = %T, StoreDirError only for JetStream with a store directory", tc.msg, err)
		}
	}
}
