package compiler

import (
	"strings"
	"testing"

	"github.com/axpool/axpool/vm"
)

// TestBuiltinSynonyms checks that every synonym leads to a built-in and
// is not one itself, and that family listings stay within maxListed lines.
func TestBuiltinSynonyms(t *testing.T) {
	for guess, target := range builtinSynonyms {
		if !vm.IsBuiltinName(target) {
			t.Errorf("synonym %s → %s: no such built-in", guess, target)
		}
		if vm.IsBuiltinName(guess) {
			t.Errorf("synonym %s is a built-in's name", guess)
		}
		if w, _ := builtinFamily(guess); w == "" {
			t.Errorf("synonym %s is of no family", guess)
		}
	}
	for w, refs := range families {
		if n := strings.Count(listBuiltins(refs), "\n"); n > maxListed {
			t.Errorf("family %s lists %d lines", w, n)
		}
	}
	for k := range kindFamilies {
		if n := strings.Count(noMethods(k, "x"), "\n"); n > maxListed+1 {
			t.Errorf("kind %v lists %d lines", k, n)
		}
	}
}
