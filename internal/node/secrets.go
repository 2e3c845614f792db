package node

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/axpool/axpool/internal/mask"
	"github.com/axpool/axpool/queue"
)

// A worker process — the one that runs programs — never holds a secret in
// its environment (docs/operations.md "Secrets"): the process that starts
// it (the single-node gateway, or the `axpool worker` that supervises its
// child) removes every secret from the child's environment and writes
// them, as JSON, to a pipe the child reads once at start and closes. A
// program that reached /proc/self/environ (an --fs-root holding /proc is
// refused anyway) would find none there.

// EnvSecretsFD names, in a worker process, the file descriptor of the pipe
// its secrets come on (a JSON array of "NAME=value" strings).
const EnvSecretsFD = "AXPOOL_SECRETS_FD"

// maxSecretsBytes bounds what a worker reads from its secrets pipe.
const maxSecretsBytes = 1 << 20

// pipedNames are the variables that always travel on the pipe, whatever
// their names: the NATS credentials and the LLM key.
var pipedNames = []string{queue.EnvNATSUser, queue.EnvNATSPassword, queue.EnvNATSToken, queue.EnvNATSCreds, LLMKeyEnv}

// splitSecrets splits env ("NAME=value" entries) into what a worker
// process's environment keeps and its secrets: the variables whose names
// look secret (mask.IsSecretName), those names lists (--secret-env) and
// pipedNames.
func splitSecrets(env, names []string) (keep, secrets []string) {
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if mask.IsSecretName(name) || slices.Contains(names, name) || slices.Contains(pipedNames, name) {
			secrets = append(secrets, kv)
		} else {
			keep = append(keep, kv)
		}
	}
	return keep, secrets
}

// withSecrets gives cmd the environment env without its secrets
// (splitSecrets with names) and the secrets on a pipe: its read end in
// cmd.ExtraFiles (the worker.Supervisor closes this process's copy once
// the child started), its descriptor in EnvSecretsFD. A goroutine writes
// the secrets and closes the write end; it ends when the child has read
// them or is gone. When the pipe cannot be made, EnvSecretsFD is "-1": the
// child exits at once saying so (it is restarted with backoff), rather
// than start without its credentials.
func withSecrets(cmd *exec.Cmd, env, names []string) error {
	keep, secrets := splitSecrets(env, names)
	cmd.Env = append(keep, EnvSecretsFD+"=-1")
	payload, err := json.Marshal(secrets)
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("secrets pipe: %w", err)
	}
	go func() {
		w.Write(payload) // EPIPE when the child is gone: nothing to do
		w.Close()
	}()
	cmd.ExtraFiles = append(cmd.ExtraFiles, r)
	cmd.Env[len(cmd.Env)-1] = EnvSecretsFD + "=" + strconv.Itoa(2+len(cmd.ExtraFiles))
	return nil
}

// secretEnv is what a worker process knows of its secrets: the entries of
// its secrets pipe, else its environment (a worker started by hand).
type secretEnv []string

// readSecrets reads the pipe EnvSecretsFD names, once, closes it and
// unsets the variable; with no such variable it returns nil (the secrets,
// if any, are in the environment). Errors: a descriptor that is not a
// number, a pipe that cannot be read or does not hold a JSON array of
// strings, or holds more than maxSecretsBytes.
func readSecrets() (secretEnv, error) {
	v, ok := os.LookupEnv(EnvSecretsFD)
	if !ok {
		return nil, nil
	}
	os.Unsetenv(EnvSecretsFD)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%s=%q: not a file descriptor", EnvSecretsFD, v)
	}
	f := os.NewFile(uintptr(fd), "secrets")
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSecretsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the secrets pipe: %w", err)
	}
	if len(data) > maxSecretsBytes {
		return nil, fmt.Errorf("the secrets pipe holds more than %d bytes", maxSecretsBytes)
	}
	var s secretEnv
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("the secrets pipe: %w", err)
	}
	return s, nil
}

// Getenv returns the value of name: the last entry of s for it, else the
// environment's.
func (s secretEnv) Getenv(name string) string {
	for i := len(s) - 1; i >= 0; i-- {
		if n, v, _ := strings.Cut(s[i], "="); n == name {
			return v
		}
	}
	return os.Getenv(name)
}

// lookup is Getenv that also reports whether name is set at all.
func (s secretEnv) lookup(name string) (string, bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if n, v, _ := strings.Cut(s[i], "="); n == name {
			return v, true
		}
	}
	return os.LookupEnv(name)
}

// credentials are the NATS credentials of s (queue.CredentialsFromEnv's
// variables).
func (s secretEnv) credentials() queue.Credentials {
	return queue.Credentials{User: s.Getenv(queue.EnvNATSUser), Password: s.Getenv(queue.EnvNATSPassword),
		Token: s.Getenv(queue.EnvNATSToken), CredsFile: s.Getenv(queue.EnvNATSCreds)}
}
