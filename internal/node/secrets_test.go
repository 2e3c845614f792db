package node

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// envSecretsChild makes the test binary a worker stand-in that reads its
// secrets pipe and prints what it holds (TestMain).
const envSecretsChild = "AXPOOL_NODE_TEST_SECRETS_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(envSecretsChild) == "1" {
		os.Exit(secretsChild())
	}
	os.Exit(m.Run())
}

// childReport is what secretsChild prints.
type childReport struct {
	Secrets     []string // the pipe's entries
	ProcEnviron []string // /proc/self/environ: what a program reading it would see
	LLMKey      string   // secretEnv.Getenv(LLMKeyEnv)
	User, Pass  string   // the NATS credentials
	FDSet       bool     // EnvSecretsFD still set after readSecrets
	Err         string
}

func secretsChild() int {
	var r childReport
	s, err := readSecrets()
	if err != nil {
		r.Err = err.Error()
	}
	r.Secrets = s
	_, r.FDSet = os.LookupEnv(EnvSecretsFD)
	if b, err := os.ReadFile("/proc/self/environ"); err == nil {
		r.ProcEnviron = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	}
	r.LLMKey = s.Getenv(LLMKeyEnv)
	c := s.credentials()
	r.User, r.Pass = c.User, c.Password
	json.NewEncoder(os.Stdout).Encode(r)
	return 0
}

// runChild starts the test binary as a worker stand-in with cmd's
// environment and files, and decodes its report.
func runChild(t *testing.T, cmd *exec.Cmd) childReport {
	t.Helper()
	cmd.Env = append(cmd.Env, envSecretsChild+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, f := range cmd.ExtraFiles {
		f.Close() // as worker.Supervisor does
	}
	var r childReport
	if err := json.NewDecoder(out).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	return r
}

// A worker process gets its secrets on a pipe, never in its environment
// (issue 26, item 9: a program with --fs-root / read the LLM key and the
// NATS password from /proc/self/environ).
func TestWorkerSecretsPipe(t *testing.T) {
	const key, pw, tok, named = "sk-llm-key-0123456789", "nats-password-9876543210", "ghp_token_abcdefghij", "named-secret-value"
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=/home/op", "PLAIN=kept",
		LLMKeyEnv + "=" + key, "AXPOOL_NATS_USER=axpool", "AXPOOL_NATS_PASSWORD=" + pw,
		"GITHUB_TOKEN=" + tok, "MY_DB_URL=" + named}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := withSecrets(cmd, env, []string{"MY_DB_URL"}); err != nil {
		t.Fatal(err)
	}
	r := runChild(t, cmd)
	if r.Err != "" || r.FDSet {
		t.Fatalf("child: err %q, %s still set: %v", r.Err, EnvSecretsFD, r.FDSet)
	}
	wantSecrets := []string{LLMKeyEnv + "=" + key, "AXPOOL_NATS_USER=axpool", "AXPOOL_NATS_PASSWORD=" + pw, "GITHUB_TOKEN=" + tok, "MY_DB_URL=" + named}
	if !slices.Equal(r.Secrets, wantSecrets) {
		t.Errorf("the pipe held %q, want %q", r.Secrets, wantSecrets)
	}
	if r.LLMKey != key || r.User != "axpool" || r.Pass != pw {
		t.Errorf("the child's LLM key %q, NATS user %q password %q", r.LLMKey, r.User, r.Pass)
	}
	if len(r.ProcEnviron) == 0 {
		t.Skip("no /proc/self/environ")
	}
	all := strings.Join(r.ProcEnviron, "\n")
	for _, s := range []string{key, pw, tok, named, LLMKeyEnv, "AXPOOL_NATS_PASSWORD", "GITHUB_TOKEN", "MY_DB_URL", "AXPOOL_NATS_USER"} {
		if strings.Contains(all, s) {
			t.Errorf("/proc/self/environ of the worker holds %q:\n%s", s, all)
		}
	}
	for _, kept := range []string{"PLAIN=kept", "HOME=/home/op"} {
		if !slices.Contains(r.ProcEnviron, kept) {
			t.Errorf("/proc/self/environ lost %q:\n%s", kept, all)
		}
	}
}

// A worker started by hand (no pipe) takes its secrets from its
// environment; a broken pipe variable is an error, never a start without
// credentials.
func TestWorkerSecretsWithoutPipe(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{LLMKeyEnv + "=from-env-key-123", "AXPOOL_NATS_PASSWORD=from-env-pw-123"}
	if r := runChild(t, cmd); r.Err != "" || r.Secrets != nil || r.LLMKey != "from-env-key-123" || r.Pass != "from-env-pw-123" {
		t.Errorf("without a pipe: %+v", r)
	}
	for v, want := range map[string]string{
		"-1": `AXPOOL_SECRETS_FD="-1": not a file descriptor`,
		"x":  `AXPOOL_SECRETS_FD="x": not a file descriptor`,
		"9":  "read the secrets pipe: read secrets: bad file descriptor",
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = []string{EnvSecretsFD + "=" + v}
		if r := runChild(t, cmd); r.Err != want {
			t.Errorf("%s=%s: %q, want %q", EnvSecretsFD, v, r.Err, want)
		}
	}
	cmd = exec.Command(os.Args[0], "-test.run=^$")
	r, w, _ := os.Pipe()
	fmt.Fprint(w, `{"not":"an array"}`)
	w.Close()
	cmd.ExtraFiles = []*os.File{r}
	cmd.Env = []string{EnvSecretsFD + "=3"}
	if rep := runChild(t, cmd); rep.Err != "the secrets pipe: json: cannot unmarshal object into Go value of type node.secretEnv" {
		t.Errorf("a pipe without an array: %q", rep.Err)
	}
}
