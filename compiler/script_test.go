package compiler_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/axpool/axpool/internal/axtest"
)

// TestScripts runs every case of every compiler/testdata/*.ax file with
// the one .ax harness (internal/axtest: its package doc lists the
// expectation keywords). Imports resolve against testdata/libs.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.ax"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.ax files")
	}
	cfg := axtest.Config{LibsDir: filepath.Join("testdata", "libs")}
	total := 0
	for _, file := range files {
		cases, err := axtest.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		total += len(cases)
		t.Run(filepath.Base(file), func(t *testing.T) {
			for _, c := range cases {
				t.Run(fmt.Sprintf("line%d", c.Line), func(t *testing.T) {
					t.Parallel()
					axtest.Run(t, cfg, c)
				})
			}
		})
	}
	t.Logf("%d script cases in %d files", total, len(files))
}
