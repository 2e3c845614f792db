package vm

import "unsafe"

// Walks over values. A value may nest as deep as memory allows (a
// 100,000-deep `enum Nest { Leaf, Wrap(Nest) }` chain built by a loop is an
// ordinary value), so no walk over a value recurses on the Go stack: each
// keeps its own stack of frames, one per open container, on the heap. The
// encoders (MarshalJSON, EncodeBrief, EncodedSize, EncodedSizeAtLeast),
// the display forms, Equal and Depth are all built on walkValue or, for
// Equal, the same frames.
//
// The one depth limit left is MaxEncodeDepth, for the JSON encodings a
// value leaves a run in.

// MaxEncodeDepth bounds the nesting of a value's JSON encoding
// (docs/tools.md §2 value encoding; in JSON levels, as Depth counts them).
// A value nested deeper can be built, compared, displayed and measured,
// but not encoded as JSON: a run whose result or ui_output is deeper fails
// with the runtime error "value nesting depth limit exceeded (5000 levels
// in a JSON encoding)". The number keeps every document a value travels in
// (the tool response, its JSON-RPC envelope, the queue's result message,
// the sealed event log) well inside the 10,000-level limit of the JSON
// decoders on the way (Go's encoding/json, which the gateway and mcp-go
// clients use).
const MaxEncodeDepth = 5000

// EncodeDepthError is the error of encoding a value nested deeper than
// MaxEncodeDepth: a *RuntimeError with the message
// "value nesting depth limit exceeded (5000 levels in a JSON encoding)".
func EncodeDepthError() *RuntimeError {
	return rtErrf("value nesting depth limit exceeded (%d levels in a JSON encoding)", MaxEncodeDepth)
}

// frame is one open container of a walk: its children (kids, and keys for
// a map) and the index of the next child to visit. levels is the number
// of JSON levels the container's encoding opens (see Depth).
type wframe struct {
	v      Value
	kids   []Value
	keys   []string
	i      int
	levels int
}

// open fills f for container v and reports whether v has children to
// visit (a container without children is closed right after it opens).
// Option/Result boxes have one child; lists their elements; maps their
// values in key order (keys alongside); records their fields; tuple
// variants their payload; struct variants their fields; unit variants
// none (their encodings write the null payload themselves).
func (f *wframe) open(v Value) {
	f.v, f.i = v, 0
	f.kids, f.keys = nil, nil
	switch v.k {
	case KindOption, KindResult:
		f.levels = 1
		if v.p != nil {
			f.kids = unsafe.Slice(&(*boxObj)(v.p).v, 1)
		}
	case KindList:
		f.levels = 1
		f.kids = v.listElems()
	case KindMap:
		f.levels = 1
		f.keys, f.kids = (*mapObj)(v.p).entries()
	case KindRecord:
		f.levels = 2 // {"type":"record",…,"fields":[…]}
		f.kids = (*recordObj)(v.p).fields
	case KindEnum:
		o := (*enumObj)(v.p)
		if o.variant < len(o.typ.Variants) && o.typ.Variants[o.variant].Shape == StructVariant {
			f.levels = 3 // enum object, record object, fields array
			f.kids = o.fields
		} else {
			f.levels = 1
			if o.variant < len(o.typ.Variants) && o.typ.Variants[o.variant].Shape == TupleVariant {
				f.kids = unsafe.Slice(&o.payload, 1)
			}
		}
	case KindJSON:
		f.levels = 1
		o := (*jsonObj)(v.p)
		f.keys, f.kids = o.keys, o.elems
	default:
		f.levels = 0
	}
}

// isContainer reports whether v has a frame in a walk: an Option,
// Result, List, Map, Record, Enum, or a Json array or object (whose
// children are its elements, or its values with their keys alongside).
func isContainer(v Value) bool {
	switch v.k {
	case KindOption, KindResult, KindList, KindMap, KindRecord, KindEnum:
		return true
	case KindJSON:
		return v.j == JSONArray || v.j == JSONObject
	}
	return false
}

// leafLevels is the JSON depth of a non-container value's encoding.
func leafLevels(k Kind) int {
	if k == KindActor || k == KindFn {
		return 1 // {"actor_id":n}, {"fn_ref":n}
	}
	return 0
}

// visitor receives a depth-first walk. enter is called for every value:
// for a container, before its children (f is its frame); for any other
// value, once (f is nil). child is called before child i of the container
// of f; leave after its last child. stop is checked before each step: a
// visitor that has seen enough (an output budget spent) returns true.
type visitor interface {
	enter(v Value, f *wframe)
	child(f *wframe, i int)
	leave(f *wframe)
	stop() bool
}

// skipper is a visitor that may skip the children of a container: when
// skip(v) is true right after enter(v, f), the walk leaves v without
// visiting them (its frame's kids and keys are cleared).
type skipper interface {
	skip(v Value) bool
}

// stackHolder is a visitor that accounts for the walk's own frame stack
// (a run's built-ins, whose work memory counts toward its limit): before
// the stack grows, holdStack(n) is told its new size n in bytes, and an
// error ends the walk with that error before the stack is allocated.
type stackHolder interface {
	holdStack(n int64) error
}

// wframeBytes is the size of one walk frame.
const wframeBytes = int64(unsafe.Sizeof(wframe{}))

// walkValue walks v depth-first with vis, iteratively. With maxDepth > 0
// it stops with EncodeDepthError as soon as the JSON depth of what it has
// entered exceeds maxDepth (before entering the value that is too deep).
// A stackHolder visitor is told the stack's size before each growth (the
// stack doubles) and its error ends the walk.
func walkValue(v Value, vis visitor, maxDepth int) error {
	if !isContainer(v) {
		// A scalar (most results) needs no frame stack: buf escapes to
		// the heap, 1.5 KB allocated and cleared per walk.
		if maxDepth > 0 && leafLevels(v.k) > maxDepth {
			return EncodeDepthError()
		}
		vis.enter(v, nil)
		return nil
	}
	var buf [16]wframe
	stack := buf[:0]
	depth := 0
	skip, _ := vis.(skipper)
	holder, _ := vis.(stackHolder)
	enter := func(v Value) error {
		if !isContainer(v) {
			if maxDepth > 0 && depth+leafLevels(v.k) > maxDepth {
				return EncodeDepthError()
			}
			vis.enter(v, nil)
			return nil
		}
		if holder != nil && len(stack) == cap(stack) {
			n := 2 * cap(stack)
			if err := holder.holdStack(int64(n) * wframeBytes); err != nil {
				return err
			}
			grown := make([]wframe, len(stack), n)
			copy(grown, stack)
			stack = grown
		}
		stack = append(stack, wframe{})
		f := &stack[len(stack)-1]
		f.open(v)
		depth += f.levels
		if maxDepth > 0 && depth > maxDepth {
			return EncodeDepthError()
		}
		vis.enter(v, f)
		if skip != nil && skip.skip(v) {
			f.kids, f.keys = nil, nil
		}
		return nil
	}
	if err := enter(v); err != nil {
		return err
	}
	for len(stack) > 0 && !vis.stop() {
		f := &stack[len(stack)-1]
		if f.i == len(f.kids) {
			vis.leave(f)
			depth -= f.levels
			stack[len(stack)-1] = wframe{} // drop references
			stack = stack[:len(stack)-1]
			continue
		}
		i := f.i
		f.i++
		vis.child(f, i)
		if vis.stop() {
			break
		}
		if err := enter(f.kids[i]); err != nil {
			return err
		}
	}
	return nil
}

// depthVisitor measures the JSON depth of a value.
type depthVisitor struct{ cur, max int }

func (d *depthVisitor) enter(v Value, f *wframe) {
	if f == nil {
		d.max = max(d.max, d.cur+leafLevels(v.k))
		return
	}
	d.cur += f.levels
	d.max = max(d.max, d.cur)
}
func (d *depthVisitor) child(*wframe, int) {}
func (d *depthVisitor) leave(f *wframe)    { d.cur -= f.levels }
func (d *depthVisitor) stop() bool         { return false }

// Depth returns the nesting depth of v's JSON encoding (docs/tools.md §2):
// 0 for Unit, Bool, Int, Float, String and a Json scalar, 1 for ActorId,
// FnRef, None and an empty list, map or Json array or object, one more per
// enclosing list, map, Option, Result, tuple variant or Json array or
// object, two more per record, three per struct variant. It walks
// v: O(size of v), any depth.
func (v Value) Depth() int {
	var d depthVisitor
	_ = walkValue(v, &d, 0)
	return d.max
}

// Visitor receives the depth-first walk of Walk. Enter is called for every
// value. For a container — an Option or Result (None included), List,
// Map, Record, Enum, or Json array or object — its children follow, each
// preceded by Child (parent the container, i the child's index, key its
// map or Json object key or ""), and Leave is called after the last. The
// children are: the payload of Some/Ok/Err; a list's elements; a map's
// values in key order; a record's fields; a tuple variant's payload; a
// struct variant's fields (a unit variant has none); a Json array's
// elements; a Json object's values in their order.
type Visitor interface {
	Enter(v Value)
	Child(parent Value, i int, key string)
	Leave(container Value)
}

// Walk walks v depth-first with vis without recursion, so v may nest to
// any depth. With maxDepth > 0 it fails with EncodeDepthError before
// entering a value whose JSON depth (see Depth) would exceed maxDepth.
func Walk(v Value, vis Visitor, maxDepth int) error {
	return walkValue(v, publicVisitor{vis}, maxDepth)
}

type publicVisitor struct{ vis Visitor }

func (p publicVisitor) enter(v Value, _ *wframe) { p.vis.Enter(v) }
func (p publicVisitor) child(f *wframe, i int) {
	key := ""
	if f.keys != nil {
		key = f.keys[i]
	}
	p.vis.Child(f.v, i, key)
}
func (p publicVisitor) leave(f *wframe) { p.vis.Leave(f.v) }
func (p publicVisitor) stop() bool      { return false }

// CheckEncodeDepth returns EncodeDepthError when v nests deeper than
// MaxEncodeDepth (so MarshalJSON would fail), else nil. It walks v: O(size
// of v), stopping at the first level too deep.
func CheckEncodeDepth(v Value) error {
	if !isContainer(v) {
		return nil
	}
	var d depthVisitor
	return walkValue(v, &d, MaxEncodeDepth)
}
