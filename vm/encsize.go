package vm

// EncodedSizeAtLeast returns a lower bound n of len(v.MarshalJSON())
// (docs/tools.md §2 value encoding) and whether n exceeds limit, without
// building the encoding. Strings count their byte length plus the two
// quotes (escaping only adds bytes), numbers one byte, every other
// scalar and every container its fixed punctuation and tags. The walk
// stops as soon as n passes limit, so its cost is O(limit) even for a
// result that shares one huge string or list many times; a negative
// limit is treated as 0.
func EncodedSizeAtLeast(v Value, limit int64) (n int64, over bool) {
	if limit < 0 {
		limit = 0
	}
	w := sizeWalker{limit: limit}
	_ = walkValue(v, &w, 0)
	return w.n, w.n > limit
}

// sizeWalker sums the lower bound; it stops once the bound passes limit.
type sizeWalker struct {
	n, limit int64
}

func (w *sizeWalker) stop() bool { return w.n > w.limit }

func (w *sizeWalker) enter(v Value, f *wframe) {
	if f != nil && len(f.kids) > 1 {
		w.n += int64(len(f.kids) - 1) // the commas, counted up front
	}
	switch v.k {
	case KindUnit, KindBool:
		w.n += 4
	case KindInt, KindFloat:
		w.n++
	case KindString:
		w.n += int64(v.n) + 2
	case KindOption:
		if v.n == 0 {
			w.n += int64(len(`{"option":"None"}`))
		} else {
			w.n += int64(len(`{"option":"Some","value":}`))
		}
	case KindResult:
		w.n += int64(len(`{"result":"Ok","value":}`))
	case KindList, KindMap:
		w.n += 2
	case KindJSON:
		switch v.j {
		case JSONArray, JSONObject:
			w.n += 2
		case JSONInt, JSONFloat:
			w.n++
		case JSONString:
			w.n += int64(v.n) + 2
		default:
			w.n += 4
		}
	case KindRecord:
		o := (*recordObj)(v.p)
		w.n += recordLowerBound(o.typ.Name, o.typ.Fields)
	case KindEnum:
		o := (*enumObj)(v.p)
		w.n += int64(len(`{"type":"enum","type_id":0,"variant":"","payload":}`) + len(v.VariantName()))
		if vd, ok := structVariant(o); ok {
			w.n += recordLowerBound(vd.Name, vd.Fields)
		} else if unitVariant(o) {
			w.n += 4
		}
	case KindActor:
		w.n += int64(len(`{"actor_id":0}`))
	case KindFn:
		w.n += int64(len(`{"fn_ref":0}`))
	default:
		w.n += 4
	}
}

func (w *sizeWalker) child(f *wframe, i int) {
	if f.keys != nil {
		w.n += int64(len(f.keys[i])) + 3 // quotes and colon
	}
}

func (w *sizeWalker) leave(*wframe) {}

// recordLowerBound bounds a record's encoding without its field values.
func recordLowerBound(name string, names []string) int64 {
	n := int64(len(`{"type":"record","type_id":0,"name":"","fields":[],"field_names":[]}`) + len(name))
	if len(names) > 1 {
		n += int64(len(names) - 1)
	}
	for _, s := range names {
		n += int64(len(s)) + 2
	}
	return n
}
