package version

import (
	"runtime"
	"testing"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		in   Info
		want string
	}{
		{Info{Version: "dev", Go: "go1.26.0"}, "dev (no revision, go1.26.0)"},
		{Info{Version: "v1.2.0", Revision: "0123456789abcdef0123456789abcdef01234567", Go: "go1.26.1"},
			"v1.2.0 (revision 0123456789abcdef0123456789abcdef01234567, go1.26.1)"},
		{Info{Version: "dev", Revision: "abc", Modified: true, Go: "go1.26.0"}, "dev (revision abc, modified, go1.26.0)"},
	} {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Read in a test binary: no module version (a work tree), the running Go;
// whether a revision is stamped depends on -buildvcs and is not assumed.
func TestRead(t *testing.T) {
	i := Read()
	if i.Version != "dev" || i.Go != runtime.Version() {
		t.Fatalf("Read() = %+v", i)
	}
	if i.Revision == "" && i.Modified {
		t.Fatalf("modified without a revision: %+v", i)
	}
}
