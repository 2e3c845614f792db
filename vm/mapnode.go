package vm

import "iter"

// Maps are persistent AVL trees keyed by string (path copying): lookups,
// map_set and map_remove are O(log n) and share every untouched node with
// the original map, so building a map in a loop is O(n log n), not O(n²).
// Iteration is in key order (docs/language.md "Map iteration order is
// key-sorted"). Each node caches its subtree's entry count, logical size
// and maximum value depth, so a map's MemSize and Depth stay O(1).

type mnode struct {
	key         string
	val         Value
	left, right *mnode
	count       int32
	height      int8
	vsize       int64 // logical bytes of the subtree's entries
}

// nodeSize approximates an mnode's own bytes.
const nodeSize = 96

func entrySize(key string, val Value) int64 {
	return nodeSize + int64(len(key)) + val.heapSize()
}

func (n *mnode) h() int8 {
	if n == nil {
		return 0
	}
	return n.height
}

func (n *mnode) cnt() int32 {
	if n == nil {
		return 0
	}
	return n.count
}

func (n *mnode) vs() int64 {
	if n == nil {
		return 0
	}
	return n.vsize
}

func mknode(key string, val Value, l, r *mnode) *mnode {
	return &mnode{key: key, val: val, left: l, right: r,
		count: 1 + l.cnt() + r.cnt(), height: 1 + max(l.h(), r.h()),
		vsize: entrySize(key, val) + l.vs() + r.vs()}
}

// balance builds a node from (key, val, l, r) whose subtrees differ in
// height by at most 2, rotating as needed.
func balance(key string, val Value, l, r *mnode) *mnode {
	hl, hr := l.h(), r.h()
	switch {
	case hl > hr+1:
		if l.left.h() >= l.right.h() {
			return mknode(l.key, l.val, l.left, mknode(key, val, l.right, r))
		}
		lr := l.right
		return mknode(lr.key, lr.val, mknode(l.key, l.val, l.left, lr.left), mknode(key, val, lr.right, r))
	case hr > hl+1:
		if r.right.h() >= r.left.h() {
			return mknode(r.key, r.val, mknode(key, val, l, r.left), r.right)
		}
		rl := r.left
		return mknode(rl.key, rl.val, mknode(key, val, l, rl.left), mknode(r.key, r.val, rl.right, r.right))
	}
	return mknode(key, val, l, r)
}

func (n *mnode) insert(key string, val Value) *mnode {
	if n == nil {
		return mknode(key, val, nil, nil)
	}
	switch {
	case key < n.key:
		return balance(n.key, n.val, n.left.insert(key, val), n.right)
	case key > n.key:
		return balance(n.key, n.val, n.left, n.right.insert(key, val))
	}
	return mknode(key, val, n.left, n.right)
}

func (n *mnode) remove(key string) (*mnode, bool) {
	if n == nil {
		return nil, false
	}
	switch {
	case key < n.key:
		l, ok := n.left.remove(key)
		if !ok {
			return n, false
		}
		return balance(n.key, n.val, l, n.right), true
	case key > n.key:
		r, ok := n.right.remove(key)
		if !ok {
			return n, false
		}
		return balance(n.key, n.val, n.left, r), true
	}
	switch {
	case n.left == nil:
		return n.right, true
	case n.right == nil:
		return n.left, true
	}
	m := n.right
	for m.left != nil {
		m = m.left
	}
	return balance(m.key, m.val, n.left, n.right.removeMin()), true
}

func (n *mnode) removeMin() *mnode {
	if n.left == nil {
		return n.right
	}
	return balance(n.key, n.val, n.left.removeMin(), n.right)
}

// buildTree builds a balanced tree from sorted, unique keys.
func buildTree(keys []string, vals []Value) *mnode {
	if len(keys) == 0 {
		return nil
	}
	mid := len(keys) / 2
	return mknode(keys[mid], vals[mid], buildTree(keys[:mid], vals[:mid]), buildTree(keys[mid+1:], vals[mid+1:]))
}

func (o *mapObj) len() int { return int(o.root.cnt()) }

func (o *mapObj) get(key string) (Value, bool) {
	n := o.root
	for n != nil {
		switch {
		case key < n.key:
			n = n.left
		case key > n.key:
			n = n.right
		default:
			return n.val, true
		}
	}
	return Value{}, false
}

// all iterates the entries in key order.
func (o *mapObj) all() iter.Seq2[string, Value] {
	return func(yield func(string, Value) bool) { o.root.walk(yield) }
}

func (n *mnode) walk(yield func(string, Value) bool) bool {
	if n == nil {
		return true
	}
	return n.left.walk(yield) && yield(n.key, n.val) && n.right.walk(yield)
}

// entries returns the keys and values in key order.
func (o *mapObj) entries() ([]string, []Value) {
	keys := make([]string, 0, o.len())
	vals := make([]Value, 0, o.len())
	for k, v := range o.all() {
		keys = append(keys, k)
		vals = append(vals, v)
	}
	return keys, vals
}

func mapFromTree(root *mnode) Value {
	return Value{k: KindMap, p: unsafePointer(&mapObj{root: root})}
}
