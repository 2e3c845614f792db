// Package syntax is the front end of the .ax compiler: the lexer
// (scanner.go, token.go), the recursive-descent parser (parser.go), the
// abstract syntax tree (ast.go) and the memory it lives in (arena.go), its
// JSON encoding for `axpool ast` and the boruna_ast tool (json.go), and
// what other languages have and .ax does not (foreign.go): the notes of
// lexer and parser messages (`|x| x * 2`, `(1, 2)`, `fn id<T>`, `x += 2`)
// and Foreign, the one table of names from other languages (println, max,
// and, …) that the type checker also consults for an undefined name.
//
// The accepted language is the union of the formal .ax 1.0 syntax and the
// syntax the reference implementation accepts (docs/language.md "Syntax").
// Notable rules:
//
//   - A newline ends a statement when the expression before it is complete;
//     a line that begins with a binary operator (`+ - * / % ++ == != < <= >
//     >= && ||`) or `.` continues the previous expression, while a line that
//     begins with `(` starts a new statement. Inside ( ) and [ ] and record
//     or map literals, newlines do not end expressions. Several statements
//     may share a line; `;` is an optional separator.
//   - An upper-case name followed by `{` on the same line is a record literal,
//     except in the head of if/while/for/match and in requires/ensures
//     clauses (parenthesise a literal there).
//   - A `{` in expression position is a map literal when its first content
//     is `expr :`, an empty map when it is `{}`, and a block otherwise; at
//     the start of a statement and as a match-arm body, `{}` is an empty
//     block.
//   - Comparisons are non-associative (`a < b < c` is an error).
//   - Nesting is bounded by MaxNesting; chains of binary operators and
//     `else if` chains are not nesting and may be as long as the source.
//     Passes over the tree follow BinaryExpr.X and IfExpr.Else (to an
//     IfExpr) in loops and may recurse on every other link.
//
// Errors are *Error values with codes E001 (lexer) and E002 (parser),
// collected in a sorted ErrorList (docs/language.md "Compile errors").
//
// This package knows nothing of types, bytecode, the VM, NATS or MCP.
//
// Imports: internal/arena, internal/jsonenc, internal/source,
// internal/spell and internal/text.
package syntax
