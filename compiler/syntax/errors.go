package syntax

import (
	"fmt"
	"sort"
	"strings"
)

// Error codes produced by this package (docs/language.md "Compile errors").
const (
	CodeLexer  = "E001" // lexer: bad character, literal or escape
	CodeParser = "E002" // parser: unexpected token, invalid construct, nesting too deep
)

// Error is one lexer (E001) or parser (E002) error.
//
// Pos is the position of the offending token; End is the position just after
// it (the zero Pos when unknown). Error() renders `file:line:col: E002 msg`,
// the form the CLI prints.
type Error struct {
	Code string // CodeLexer or CodeParser
	Msg  string // e.g. "expected '}', found end of file"
	File string // file name as given to Parse
	Pos  Pos
	End  Pos
}

// Error renders e as `file:line:col: CODE msg`. The file part is omitted when
// File is empty and the position part when Pos is unknown.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(":")
	}
	if e.Pos.IsValid() {
		fmt.Fprintf(&b, "%d:%d:", e.Pos.Line, e.Pos.Col)
	}
	if b.Len() > 0 {
		b.WriteString(" ")
	}
	b.WriteString(e.Code)
	b.WriteString(" ")
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is the lexer and parser's list of errors, sorted by position
// (Sort). A nil ErrorList means success. It implements error as List
// does; errors.As finds the individual *Error values through Unwrap.
type ErrorList []*Error

// Len, Less and Swap implement sort.Interface (by File, then Pos).
func (l ErrorList) Len() int      { return len(l) }
func (l ErrorList) Swap(i, j int) { l[i], l[j] = l[j], l[i] }
func (l ErrorList) Less(i, j int) bool {
	a, b := l[i], l[j]
	if a.File != b.File {
		return a.File < b.File
	}
	if a.Pos != b.Pos {
		return a.Pos.Before(b.Pos)
	}
	return a.Msg < b.Msg
}

// Sort sorts the list by file and position (stable for equal positions).
func (l ErrorList) Sort() { sort.Stable(l) }

// Error renders the list as List.Error does.
func (l ErrorList) Error() string { return List[*Error](l).Error() }

// Err returns l as an error, or nil when l is empty.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Unwrap returns the individual errors, so that errors.As(err, &*Error)
// finds the first one.
func (l ErrorList) Unwrap() []error { return List[*Error](l).Unwrap() }

// List is a list of compile errors of one type, kept in the order of their
// positions, used as one error: the rendering shared by ErrorList and
// compiler.ErrorList (= List[*compiler.Error]). A nil List means success.
type List[E error] []E

// Error renders the first error, followed by "(and N more errors)" when
// there are more: `f.ax:1:5: E002 msg (and 2 more errors)`; an empty list
// renders "no errors".
func (l List[E]) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	case 2:
		return l[0].Error() + " (and 1 more error)"
	}
	return fmt.Sprintf("%s (and %d more errors)", l[0].Error(), len(l)-1)
}

// Err returns l as an error, or nil when l is empty.
func (l List[E]) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Unwrap returns the individual errors, so that errors.As finds the first
// one of a type.
func (l List[E]) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}
