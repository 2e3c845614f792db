package limitread

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRead: at the limit the data comes back; one byte over is
// ErrTooLarge; an endless source is read only to limit+1 bytes.
func TestRead(t *testing.T) {
	if got, err := Read(strings.NewReader("abcd"), 4); err != nil || string(got) != "abcd" {
		t.Errorf("Read(4 bytes, 4) = %q, %v", got, err)
	}
	if got, err := Read(strings.NewReader("abcde"), 4); !errors.Is(err, ErrTooLarge) || got != nil {
		t.Errorf("Read(5 bytes, 4) = %q, %v; want ErrTooLarge", got, err)
	}
	if _, err := File("/dev/zero", 1<<10); !errors.Is(err, ErrTooLarge) {
		t.Errorf("File(/dev/zero) err = %v; want ErrTooLarge", err)
	}
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("xyz"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := File(p, 3); err != nil || string(got) != "xyz" {
		t.Errorf("File = %q, %v", got, err)
	}
	var pe *os.PathError
	if _, err := File(filepath.Join(t.TempDir(), "missing"), 3); !errors.As(err, &pe) {
		t.Errorf("File(missing) err = %v; want *os.PathError", err)
	}
}
