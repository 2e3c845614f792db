package repair

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteText writes diagnostics as `axpool check` prints them: one line
// each, "[ID] FILE:LINE:COL: msg" (the severity before a message that is
// not an error), then each patch as "  fix(ID): description [confidence:
// c]"; "no diagnostics" when there are none.
func WriteText(w io.Writer, ds []Diagnostic) {
	if len(ds) == 0 {
		fmt.Fprintln(w, "no diagnostics")
		return
	}
	for i := range ds {
		d := &ds[i]
		msg := d.Message
		if !d.IsError() {
			msg = d.Severity + ": " + msg
		}
		if l := d.Location; l != nil {
			fmt.Fprintf(w, "[%s] %s:%d:%d: %s\n", d.ID, l.File, l.Line, l.Col, msg)
		} else {
			fmt.Fprintf(w, "[%s] %s\n", d.ID, msg)
		}
		for _, p := range d.Patches {
			fmt.Fprintf(w, "  fix(%s): %s [confidence: %s]\n", p.ID, p.Description, p.Confidence)
		}
	}
}

// WriteFile replaces path with data through a temporary file in the
// same directory, keeping path's permission bits: `axpool repair --write`
// applies a repair with it. Errors: the directory's or the rename's.
func WriteFile(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".axpool-repair-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(name)
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(name)
		return err
	}
	if err := os.Chmod(name, mode); err != nil {
		os.Remove(name)
		return err
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return err
	}
	return nil
}
