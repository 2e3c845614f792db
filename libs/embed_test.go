package libs_test

import (
	"io/fs"
	"os"
	"slices"
	"testing"

	"github.com/axpool/axpool/libs"
)

// TestFSHoldsEveryLibrary checks that FS holds core.ax and package.ax.json
// of every library directory, byte for byte, and nothing else.
func TestFSHoldsEveryLibrary(t *testing.T) {
	var want []string
	for _, dir := range libDirs(t) {
		want = append(want, dir+"/package.ax.json", dir+"/src/core.ax")
	}
	var got []string
	err := fs.WalkDir(libs.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		got = append(got, path)
		disk, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if b, _ := fs.ReadFile(libs.FS, path); string(b) != string(disk) {
			t.Errorf("%s: embedded copy differs", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("embedded %v\nwant %v", got, want)
	}
}
