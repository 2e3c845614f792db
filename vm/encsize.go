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
	w.add(v)
	return w.n, w.n > limit
}

type sizeWalker struct {
	n, limit int64
}

// over reports whether the bound has passed the limit.
func (w *sizeWalker) over() bool { return w.n > w.limit }

func (w *sizeWalker) add(v Value) {
	if w.over() {
		return
	}
	switch v.k {
	case KindUnit, KindBool:
		w.n += 4
	case KindInt, KindFloat:
		w.n++
	case KindString:
		w.n += int64(len(v.str())) + 2
	case KindOption:
		if v.n == 0 {
			w.n += int64(len(`{"option":"None"}`))
			return
		}
		w.n += int64(len(`{"option":"Some","value":}`))
		w.add(v.box().v)
	case KindResult:
		w.n += int64(len(`{"result":"Ok","value":}`))
		w.add(v.box().v)
	case KindList:
		w.elems(v.list().elems)
	case KindMap:
		o := v.mapo()
		w.n += 2
		if n := o.len(); n > 1 {
			w.n += int64(n - 1) // commas
		}
		for k, val := range o.all() {
			w.n += int64(len(k)) + 3 // quotes and colon
			if w.over() {
				return
			}
			w.add(val)
		}
	case KindRecord:
		o := v.rec()
		w.record(o.typ.Name, o.fields, o.typ.Fields)
	case KindEnum:
		o := v.enum()
		w.n += int64(len(`{"type":"enum","type_id":0,"variant":"","payload":}`) + len(v.VariantName()))
		if o.variant < len(o.typ.Variants) && o.typ.Variants[o.variant].Shape == StructVariant {
			vd := o.typ.Variants[o.variant]
			w.record(vd.Name, o.fields, vd.Fields)
		} else {
			w.add(o.payload)
		}
	case KindActor:
		w.n += int64(len(`{"actor_id":0}`))
	case KindFn:
		w.n += int64(len(`{"fn_ref":0}`))
	default:
		w.n += 4
	}
}

func (w *sizeWalker) elems(elems []Value) {
	w.n += 2
	if len(elems) > 1 {
		w.n += int64(len(elems) - 1)
	}
	for _, e := range elems {
		if w.over() {
			return
		}
		w.add(e)
	}
}

func (w *sizeWalker) record(name string, fields []Value, names []string) {
	w.n += int64(len(`{"type":"record","type_id":0,"name":"","fields":,"field_names":[]}`) + len(name))
	if len(names) > 1 {
		w.n += int64(len(names) - 1)
	}
	for _, s := range names {
		w.n += int64(len(s)) + 2
	}
	w.elems(fields)
}
