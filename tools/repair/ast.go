package repair

import (
	"reflect"
	"sort"

	"github.com/axpool/axpool/compiler/syntax"
)

// isNil reports whether n is nil or a typed nil pointer.
func isNil(n syntax.Node) bool {
	if n == nil {
		return true
	}
	v := reflect.ValueOf(n)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// children returns the direct sub-nodes of n in source order (nil ones
// left out). Type expressions and identifiers are included so that a
// position can be found on any node.
func children(n syntax.Node) []syntax.Node {
	var out []syntax.Node
	add := func(ns ...syntax.Node) {
		for _, c := range ns {
			if !isNil(c) {
				out = append(out, c)
			}
		}
	}
	switch x := n.(type) {
	case *syntax.File:
		for _, it := range x.Items {
			add(it)
		}
	case *syntax.FnDecl:
		add(x.Name)
		for _, p := range x.Params {
			add(p)
		}
		add(x.Result)
		for _, c := range x.Caps {
			add(c)
		}
		for _, e := range x.Requires {
			add(e)
		}
		for _, e := range x.Ensures {
			add(e)
		}
		add(x.Body)
	case *syntax.Param:
		add(x.Name, x.Type)
	case *syntax.RecordDecl:
		add(x.Name)
		for _, f := range x.Fields {
			add(f)
		}
	case *syntax.FieldDecl:
		add(x.Name, x.Type)
	case *syntax.EnumDecl:
		add(x.Name)
		for _, v := range x.Variants {
			add(v)
		}
	case *syntax.VariantDecl:
		add(x.Name, x.Payload)
		for _, f := range x.Fields {
			add(f)
		}
	case *syntax.NamedType:
		add(x.Name)
		for _, a := range x.Args {
			add(a)
		}
	case *syntax.FnType:
		for _, a := range x.Params {
			add(a)
		}
		add(x.Result)
	case *syntax.LetStmt:
		add(x.Name, x.Type, x.Value)
	case *syntax.AssignStmt:
		add(x.Target, x.Value)
	case *syntax.WhileStmt:
		add(x.Cond, x.Body)
	case *syntax.ForStmt:
		add(x.Var, x.Iter, x.Body)
	case *syntax.ReturnStmt:
		add(x.Value)
	case *syntax.ExprStmt:
		add(x.X)
	case *syntax.Block:
		for _, s := range x.Stmts {
			add(s)
		}
	case *syntax.TagExpr:
		add(x.X)
	case *syntax.BinaryExpr:
		add(x.X, x.Y)
	case *syntax.UnaryExpr:
		add(x.X)
	case *syntax.ParenExpr:
		add(x.X)
	case *syntax.CallExpr:
		add(x.Fn)
		for _, a := range x.Args {
			add(a)
		}
	case *syntax.FieldExpr:
		add(x.X, x.Name)
	case *syntax.IfExpr:
		add(x.Cond, x.Then, x.Else)
	case *syntax.MatchExpr:
		add(x.Subject)
		for _, a := range x.Arms {
			add(a)
		}
	case *syntax.MatchArm:
		add(x.Pattern, x.Body)
	case *syntax.FieldInit:
		add(x.Name, x.Value)
	case *syntax.RecordLit:
		add(x.Type, x.Spread)
		for _, f := range x.Fields {
			add(f)
		}
	case *syntax.EnumLit:
		add(x.Enum, x.Variant, x.Payload)
		for _, f := range x.Fields {
			add(f)
		}
	case *syntax.ListLit:
		for _, e := range x.Elems {
			add(e)
		}
	case *syntax.MapEntry:
		add(x.Key, x.Value)
	case *syntax.MapLit:
		for _, e := range x.Entries {
			add(e)
		}
	case *syntax.EmitExpr:
		add(x.X)
	case *syntax.SpawnExpr:
		add(x.Fn)
	case *syntax.SendExpr:
		add(x.Target, x.Msg)
	case *syntax.BlockExpr:
		add(x.Block)
	case *syntax.TagPattern:
		add(x.Sub)
	case *syntax.VariantPattern:
		add(x.Enum, x.Variant, x.Payload)
		for _, f := range x.Fields {
			add(f)
		}
	case *syntax.FieldPattern:
		add(x.Name, x.Pattern)
	case *syntax.LitPattern:
		add(x.Value)
	}
	return out
}

// maxWalkDepth bounds the recursion of resolver (patches.go), which
// recurses only on real nesting (syntax.MaxNesting): binary and `else if`
// chains, which may be as long as the source, are followed in loops.
const maxWalkDepth = 10000

// walk calls f for n and every node below it, in source order (depth
// first), with the chain of ancestors (outermost first, n excluded; f must
// copy it to keep it). f returns false to skip n's children. Trees may be
// as deep as the source is long (a chain `1 + 1 + …` nests one BinaryExpr
// per operator): walk keeps its own stack instead of recursing.
func walk(n syntax.Node, f func(n syntax.Node, parents []syntax.Node) bool) {
	walkWith(n, children, f)
}

// walkWith is walk visiting, below each node, the nodes kids returns.
func walkWith(n syntax.Node, kids func(syntax.Node) []syntax.Node, f func(n syntax.Node, parents []syntax.Node) bool) {
	if isNil(n) {
		return
	}
	type item struct {
		n     syntax.Node
		depth int // number of ancestors
	}
	var parents []syntax.Node
	stack := []item{{n, 0}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		// The ancestors of it are parents[:it.depth]: the nodes on the
		// path to it were visited last at their depths.
		parents = parents[:it.depth]
		if !f(it.n, parents) {
			continue
		}
		parents = append(parents, it.n)
		cs := kids(it.n)
		for i := len(cs) - 1; i >= 0; i-- {
			stack = append(stack, item{cs[i], it.depth + 1})
		}
	}
}

// kids are the children of one node (children) and whether they can be
// binary-searched by position: every span valid and the spans in order
// without overlap.
type kids struct {
	nodes  []syntax.Node
	sorted bool
}

// childCache memoises children for findAt. Only the nodes on the paths
// findAt descends are cached, so it holds at most the tree once.
type childCache map[syntax.Node]*kids

func (c childCache) of(n syntax.Node) *kids {
	if k, ok := c[n]; ok {
		return k
	}
	k := &kids{nodes: children(n), sorted: true}
	var prevEnd syntax.Pos
	for _, ch := range k.nodes {
		p, e := ch.Pos(), ch.End()
		if !p.IsValid() || !e.IsValid() || e.Before(p) || p.Before(prevEnd) {
			k.sorted = false
			break
		}
		prevEnd = e
	}
	c[n] = k
	return k
}

// around returns the children of n that may contain pos: of children in
// position order only the first one ending after pos (binary search),
// else all of them.
func (c childCache) around(n syntax.Node, pos syntax.Pos) []syntax.Node {
	k := c.of(n)
	if !k.sorted {
		return k.nodes
	}
	i := sort.Search(len(k.nodes), func(i int) bool { return pos.Before(k.nodes[i].End()) })
	return k.nodes[i:min(i+1, len(k.nodes))]
}

// findAt returns the first node of type T whose start is pos (and that
// accept, when non-nil, accepts), with its ancestors, searching only the
// subtrees that contain pos. Children in position order are
// binary-searched (c memoises them), so a call costs about the depth of
// pos times log(fan-out) rather than a walk of a long block or list: 1,000
// diagnostics in one function of 50,000 statements stay fast.
func findAt[T syntax.Node](c childCache, root syntax.Node, pos syntax.Pos, accept func(T) bool) (T, []syntax.Node) {
	var found T
	var chain []syntax.Node
	done := false
	walkWith(root, func(n syntax.Node) []syntax.Node { return c.around(n, pos) }, func(n syntax.Node, parents []syntax.Node) bool {
		if done {
			return false
		}
		if n.Pos().IsValid() && n.End().IsValid() && (pos.Before(n.Pos()) || !pos.Before(n.End())) {
			if _, isFile := n.(*syntax.File); !isFile {
				return false
			}
		}
		if x, ok := n.(T); ok && n.Pos() == pos && (accept == nil || accept(x)) {
			found, chain, done = x, append([]syntax.Node(nil), parents...), true
			return false
		}
		return true
	})
	return found, chain
}

// enclosingFn returns the user function whose span contains pos, or nil.
func enclosingFn(f *syntax.File, pos syntax.Pos) *syntax.FnDecl {
	if f == nil {
		return nil
	}
	for _, it := range f.Items {
		fn, ok := it.(*syntax.FnDecl)
		if !ok || fn == nil {
			continue
		}
		if !pos.Before(fn.Pos()) && pos.Before(fn.End()) {
			return fn
		}
	}
	return nil
}

// patternBinds reports whether p binds any name.
func patternBinds(p syntax.Pattern) bool {
	binds := false
	walk(p, func(n syntax.Node, _ []syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.BindingPattern:
			binds = true
		case *syntax.FieldPattern:
			if x.Pattern == nil {
				binds = true
			}
		}
		return !binds
	})
	return binds
}

// patternNames appends the names p binds.
func patternNames(p syntax.Pattern, out []string) []string {
	walk(p, func(n syntax.Node, _ []syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.BindingPattern:
			out = append(out, x.Name)
		case *syntax.FieldPattern:
			if x.Pattern == nil && x.Name != nil {
				out = append(out, x.Name.Name)
			}
		}
		return true
	})
	return out
}
