package mask

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestIsSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"GITHUB_TOKEN": true, "db_password": true, "MY_SECRET": true, "OPENAI_API_KEY": true,
		"AWS_ACCESS_KEY_ID": true, "SSH_PRIVATE_KEY": true, "APIKEY": true, "X_CREDENTIALS": true,
		"BASIC_AUTH": true, "PASSWD": true,
		"SSH_AUTH_SOCK": false, "GIT_AUTHOR_NAME": false, "XAUTHORITY": false, "HOME": false, "PATH": false,
	} {
		if got := IsSecretName(name); got != want {
			t.Errorf("IsSecretName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestMaskerString(t *testing.T) {
	m := New([]string{
		"API_TOKEN=abcd1234",
		"SHORT_SECRET=abc", // under 4 bytes: never masked
		"MULTI_PASSWORD=line-one\nxy\r\nline-two\r",
		"LONG_SECRET=abcd1234EXTRA", // overlaps API_TOKEN: the longest wins
		"HOME=/root",
		"NOEQUALS",
	})
	for in, want := range map[string]string{
		"token abcd1234 here":    "token *** here",
		"abcd1234EXTRA":          "***",
		"abc stays":              "abc stays",
		"line-one, line-two, xy": "***, ***, xy",
		"/root is not secret":    "/root is not secret",
		"abcd1234abcd1234":       "***", // two runs side by side: one stretch
		"":                       "",
	} {
		if got := m.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	var nilMasker *Masker
	if nilMasker.String("abcd1234") != "abcd1234" || !nilMasker.Empty() {
		t.Error("nil masker must mask nothing")
	}
}

func TestMaskerJSON(t *testing.T) {
	m := New([]string{"API_TOKEN=s3cr\"et<>", "PIN_SECRET=12345678"})
	in := `{"success":true,"protocol_version":1,"result":"x s3cr\"et<> y","list":[1,"s3cr\"et<>",{"s3cr\"et<>":null}],"steps":12345678,"n":12,"f":true}`
	got := string(m.JSON([]byte(in)))
	want := `{"success":true,"protocol_version":1,"result":"x *** y","list":[1,"***",{"***":null}],"steps":"***","n":12,"f":true}`
	if got != want {
		t.Fatalf("JSON =\n%s\nwant\n%s", got, want)
	}
	if !json.Valid([]byte(got)) {
		t.Fatal("masked JSON is invalid")
	}
	// Nothing to mask: the same bytes come back.
	clean := []byte(`{"success":true,"result":"<b>"}`)
	if out := m.JSON(clean); &out[0] != &clean[0] {
		t.Fatal("clean document was copied")
	}
	// A digit run inside a number that is not the secret stays a number.
	if got := string(m.JSON([]byte(`{"a":1234567,"b":"123456789"}`))); got != `{"a":1234567,"b":"***9"}` {
		t.Fatalf("got %s", got)
	}
}

// Values under MinSecretLen (8) bytes are never masked, whatever their
// name (docs/tools.md §4): a port number is not corrupted, and a program
// returning every 4-digit string cannot find a PIN by which one is masked.
// --secret-env names more secrets.
func TestMaskerShortValuesAndNamedSecrets(t *testing.T) {
	m := New([]string{"OAUTH_CALLBACK_PORT=8080", "APP_PIN_SECRET=7351", "SEVEN_TOKEN=1234567",
		"DB_URL=postgres://u:pw@db/app", "SHORT_NAMED=abc", "PLAIN=not-a-secret-1"}, "DB_URL", "SHORT_NAMED")
	for in, want := range map[string]string{
		"8080":                          "8080",
		"7351":                          "7351",
		"1234567":                       "1234567",
		"at postgres://u:pw@db/app now": "at *** now",
		"abc":                           "abc",
		"not-a-secret-1 is not named":   "not-a-secret-1 is not named",
	} {
		if got := m.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	pins := make([]string, 10000)
	for i := range pins {
		pins[i] = fmt.Sprintf("%04d", i)
	}
	doc, _ := json.Marshal(map[string]any{"success": true, "result": pins, "port": 8080})
	if got := m.JSON(doc); !bytes.Equal(got, doc) {
		t.Fatalf("masking changed a document of all 4-digit strings and port 8080")
	}
}

func FuzzMaskerJSON(f *testing.F) {
	f.Add(`{"a":"abcd1234","b":[1,2,{"c":"xabcd1234x"}]}`)
	f.Add(`[1, 2, "abcd1234"]`)
	f.Add(`"abcd1234"`)
	m := New([]string{"X_TOKEN=abcd1234", "Y_SECRET=12345678"})
	f.Fuzz(func(t *testing.T, doc string) {
		out := m.JSON([]byte(doc))
		if json.Valid([]byte(doc)) && !json.Valid(out) {
			t.Fatalf("valid %q masked to invalid %q", doc, out)
		}
	})
}

// No MinSecretLen bytes of a secret survive, whatever part of it a text
// holds (issue 26, item 3: an LLM endpoint's HTTP 400 body echoing the
// Authorization header, clipped to 1 KiB before masking, showed 64 of an
// 80-character key).
func TestMaskerRuns(t *testing.T) {
	key := "sk-proj-" + strings.Repeat("Ab3dEf7h", 9) // 80 bytes
	m := Values(key)
	body := strings.Repeat("p", 1024-64-len(" auth=Bearer ")) + " auth=Bearer " + key
	clipped := body[:1024] // the key's first 64 bytes
	if got, want := m.String(clipped), strings.Repeat("p", 1024-64-len(" auth=Bearer "))+" auth=Bearer ***"; got != want {
		t.Errorf("clipped body: %q", got[len(got)-40:])
	}
	for a := 0; a < len(key); a++ {
		for b := a + MinSecretLen; b <= len(key); b++ {
			in := "x " + key[a:b] + " y"
			out := m.String(in)
			if out != "x *** y" {
				t.Fatalf("String(%q) = %q, want %q", in, out, "x *** y")
			}
			doc, _ := json.Marshal(map[string]string{"message": in})
			if got := string(m.JSON(doc)); got != `{"message":"x *** y"}` {
				t.Fatalf("JSON(%s) = %s", doc, got)
			}
		}
	}
	// Seven bytes are not a run; a secret split by other text is two.
	for in, want := range map[string]string{
		key[:7] + " " + key[7:14]:     key[:7] + " " + key[7:14],
		key[:10] + "…" + key[40:50]:   "***…***",
		"nothing here, " + key[70:77]: "nothing here, " + key[70:77],
	} {
		if got := m.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

// BenchmarkMaskerString: a megabyte with no secret in it, against two
// secrets (the gateway masks every result).
func BenchmarkMaskerString(b *testing.B) {
	m := New([]string{"X_TOKEN=sk-proj-" + strings.Repeat("Ab3dEf7h", 9), "AXPOOL_NATS_PASSWORD=9f8e7d6c5b4a39281706"})
	s := strings.Repeat(`{"name":"ada","score":3.5,"note":"lorem ipsum dolor sit amet"},`, 1<<20/64)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		m.String(s)
	}
}

// A Masker's Writer masks each write; an empty Masker's is w itself.
func TestMaskerWriter(t *testing.T) {
	var out strings.Builder
	if w := Values().Writer(&out); w != io.Writer(&out) {
		t.Errorf("an empty Masker's Writer is %T, want w itself", w)
	}
	const secret = "s3cr3t-value-0123"
	w := Values(secret).Writer(&out)
	for _, line := range []string{"the token is " + secret + "\n", "no secret\n", secret[:8] + "|" + secret[8:] + "\n"} {
		n, err := fmt.Fprint(w, line)
		if n != len(line) || err != nil {
			t.Errorf("Write(%q) = %d, %v; want %d, nil", line, n, err, len(line))
		}
	}
	if got, want := out.String(), "the token is ***\nno secret\n***|***\n"; got != want {
		t.Errorf("written %q, want %q", got, want)
	}
	if n, err := Values(secret).Writer(failWriter{}).Write([]byte("x")); n != 0 || err != errFail {
		t.Errorf("Write to a failing writer = %d, %v; want 0, %v", n, err, errFail)
	}
}

var errFail = errors.New("write failed")

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errFail }

// BenchmarkMaskerJSON: a batch item's result envelope (~300 bytes) that
// mentions no secret, against two secrets: what every answer pays.
func BenchmarkMaskerJSON(b *testing.B) {
	m := New([]string{"X_TOKEN=sk-proj-" + strings.Repeat("Ab3dEf7h", 9), "AXPOOL_NATS_PASSWORD=9f8e7d6c5b4a39281706"})
	env := []byte(`{"success":true,"protocol_version":1,"result":0,"steps":2,"ui_output":[],"random_seed":7884572891471091,"outcome":"ok","retryable":false,"job_id":"3390900e-d1e1-4dc2-b1db-8551cb33c545","queue_ms":25,"run_ms":0,"worker":"vm-16708-e46d2f","run_digest":"5e3d66816a2deadaf1cf88c76c8be875f7687bb7393e87d37d45b32cbaab664c","cached":true}`)
	b.SetBytes(int64(len(env)))
	b.ReportAllocs()
	for b.Loop() {
		if out := m.JSON(env); len(out) != len(env) {
			b.Fatal("masked")
		}
	}
}

// TestNextFindsEveryRun: next, which passes over windows by their pairs
// of bytes, finds every window that looking at each position in turn
// (secretAt) finds, on random texts against random secrets drawn from a
// small alphabet, so that runs and near misses are frequent; String and
// JSON's look (mentions) agree with it.
func TestNextFindsEveryRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = `ab"\c` + "\x00\xff\n"
	randText := func(n, letters int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(letters)]
		}
		return string(b)
	}
	for trial := range 3000 {
		letters := 2 + rng.IntN(len(alphabet)-1)
		var secrets []string
		for range 1 + rng.IntN(3) {
			secrets = append(secrets, randText(MinSecretLen+rng.IntN(24), letters))
		}
		m := Values(secrets...)
		if m.Empty() {
			continue
		}
		text := randText(rng.IntN(400), letters)
		if rng.IntN(2) == 0 && len(text) > 0 { // a piece of a secret inside
			sec := secrets[0]
			a := rng.IntN(len(sec))
			at := rng.IntN(len(text))
			text = text[:at] + sec[a:] + text[at:]
		}
		got, want := nextRuns(m, text)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: secrets %q, text %q: next finds %v, secretAt %v", trial, secrets, text, got, want)
		}
		if m.mentions([]byte(text)) != (len(want) > 0) {
			t.Fatalf("trial %d: mentions(%q) = %v, want %v", trial, text, !(len(want) > 0), len(want) > 0)
		}
	}
}

// nextRuns returns the positions of text at which a run of a secret of m
// starts, as Masker.next finds them (got) and as secretAt at every
// position does (want).
func nextRuns(m *Masker, text string) (got, want []int) {
	for i := 0; i+MinSecretLen <= len(text); i++ {
		if m.secretAt(text, i) {
			want = append(want, i)
		}
	}
	for i := m.next(text, 0); i >= 0; i = m.next(text, i+1) {
		got = append(got, i)
	}
	return got, want
}
