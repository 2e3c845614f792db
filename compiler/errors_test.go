package compiler_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/compiler/syntax"
)

// TestErrorListRendering checks the rendering compiler.ErrorList shares
// with syntax.ErrorList (syntax.List), and that errors.As reaches both the
// list and its elements.
func TestErrorListRendering(t *testing.T) {
	e := func(line int, msg string) *compiler.Error {
		return &compiler.Error{Code: compiler.CodeUndefined, Severity: compiler.SeverityError, Msg: msg, File: "p.ax", Pos: syntax.Pos{Line: int32(line), Col: 5}}
	}
	l := compiler.ErrorList{e(1, "undefined name 'x'"), e(2, "undefined name 'y'"), e(3, "undefined name 'z'")}
	cases := []struct {
		list compiler.ErrorList
		want string
	}{
		{nil, "no errors"},
		{l[:1], "p.ax:1:5: E003 undefined name 'x'"},
		{l[:2], "p.ax:1:5: E003 undefined name 'x' (and 1 more error)"},
		{l, "p.ax:1:5: E003 undefined name 'x' (and 2 more errors)"},
	}
	for _, tc := range cases {
		if got := tc.list.Error(); got != tc.want {
			t.Errorf("%d errors: %q, want %q", len(tc.list), got, tc.want)
		}
	}
	if (compiler.ErrorList)(nil).Err() != nil || (compiler.ErrorList{}).Err() != nil {
		t.Error("Err of an empty list is not nil")
	}
	err := fmt.Errorf("compile: %w", l.Err())
	var first *compiler.Error
	if !errors.As(err, &first) || first != l[0] {
		t.Errorf("errors.As found %v, want the first error", first)
	}
	var list compiler.ErrorList
	if !errors.As(err, &list) || len(list) != 3 {
		t.Errorf("errors.As found list %v", list)
	}
}
