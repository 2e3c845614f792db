package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"

	"github.com/axpool/axpool/wire"
)

// RegradeStats says how the lines of a regrade were found.
type RegradeStats struct {
	// Items is the number of items of ITEMS; Missing the graded ones
	// without a result in OLD (each written with verdict error), Skipped
	// the ungraded ones without one (not written).
	Items, Missing, Skipped int
	// Changed counts the graded items whose run changed since OLD was
	// written: their OLD result is of another run (a run_digest that
	// differs, or none: their source, arguments, tests' arguments or
	// checker changed, or they ran ungraded), verdict error. Changed
	// expectations are not counted (regrading them is the point), nor are
	// changed ungraded items (they get no verdict; --resume runs them
	// again).
	Changed int
	// Unmatched counts the results of OLD whose id is no item of ITEMS
	// (left out of NEW).
	Unmatched int
}

// RegradeNames are how Regrade's reasons name the file of old results
// (Old: "old.jsonl"; "OLD" when empty) and the command that runs the items
// it lacks (Rerun: "axpool batch evals.jsonl -o old.jsonl --resume";
// "axpool batch ITEMS -o OLD --resume" when empty).
type RegradeNames struct {
	Old, Rerun string
}

// Regrade recomputes the verdicts of the saved results old (the OUT of an
// earlier `axpool batch`) against the expectations of the items in items
// (a file of items, whose ids ScanIDs found unique), running nothing
// (docs/operations.md "Graded batches"). emit receives one Result and its
// output line per item, in the order of items:
//
//   - a malformed item: its refusal, as a batch answers it;
//   - a script item whose line in old is the refusal of its call (an
//     unknown script, arguments it does not take: callRefusal): that
//     refusal, as the batch answered it (Refuse; graded: verdict error,
//     the refusal's message) — running it again refuses it again. The
//     refusal of an item malformed then, valid now, is of another run;
//   - an item with a result in old: that result with the verdict Judge
//     gives it now — or, for a graded item whose line's run_digest is not
//     the item's RunDigest (its source, arguments, tests' arguments or
//     checker changed, or it ran ungraded), verdict error `OLD holds the
//     result of another run of this item (…): run it again (…)`, which
//     `axpool batch ITEMS -o OLD --resume` does (Stale);
//   - a graded item without one: a line of its id with verdict error
//     `no result in OLD: …`; an ungraded one is left out.
//
// Each line carries the run_digest of the run its result is of — OLD's
// line's, none for an item without a result (Result.Saved) — never the
// item's current one: a later --resume of NEW runs a changed item, or one
// that never ran, instead of keeping its line. The reasons name OLD and
// the command as names says (RegradeNames).
//
// It holds an offset per line of old (the id and 8 bytes) and one item at
// a time. Errors: reading either file, or emit's.
func Regrade(items io.Reader, old *os.File, names RegradeNames, emit func(Result, []byte) error) (RegradeStats, error) {
	if names.Old == "" {
		names.Old = "OLD"
	}
	if names.Rerun == "" {
		names.Rerun = "axpool batch ITEMS -o OLD --resume"
	}
	var st RegradeStats
	type saved struct {
		off  int64
		used bool
		// report: the line is a refusal ("input_line").
		report bool
	}
	index := map[string]*saved{}
	br := bufio.NewReaderSize(old, 1<<16)
	var off int64
	for {
		line, size, read, err := ReadLine(br, MaxResultLineBytes)
		start := off
		off += size
		if err == nil {
			off++
		}
		if read && line != nil {
			// A result of an id an item can have, a refusal with one
			// too (as --resume reads OUT): the last line of an id is its
			// result.
			if l, ok := parseOutLine(line); ok && l.id != "" {
				index[l.id] = &saved{off: start, report: l.report}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return st, err
		}
	}
	var emitErr error
	err := eachLine(items, func(pos int, line []byte, size int64) {
		st.Items++
		var it Item
		if line == nil {
			it = TooLong(pos, size, "line")
		} else {
			it = Parse(line, pos, "line")
		}
		var r Result
		switch s := index[it.ID]; {
		case it.Malformed():
			env, _ := it.Err.MarshalJSON() // plain values: cannot fail
			r = resultOf(it, env)
		case s == nil && !it.Graded():
			st.Skipped++
			return
		case s == nil:
			st.Missing++
			r = Result{Item: it, Envelope: json.RawMessage(`{}`), RunMs: -1, QueueMs: -1, Steps: -1, Saved: true, // no run: no run_digest
				Verdict: VerdictError, Reason: "no result in " + names.Old + ": run the item (" + names.Rerun + "), then regrade"}
		default:
			s.used = true
			oldLine, digest := savedEnvelope(old, s.off)
			if s.report && it.Script {
				if env, refusal, ok := callRefusal(oldLine); ok {
					// Refused when it ran (an unknown script, arguments
					// that do not fit it): its result, as the batch
					// answered it (Refuse).
					it.Err = refusal
					r = resultOf(it, env)
					r.Saved = true
					break
				}
			}
			r = resultOf(it, oldLine)
			r.Saved, r.SavedDigest = true, digest
			if it.Graded() && digest != RunDigest(&it) {
				st.Changed++
				r.Verdict, r.Reason = VerdictError, names.Old+" holds the result of another run of this item (its source, arguments, tests' arguments or check changed, or it ran ungraded): run it again ("+names.Rerun+" runs it), then regrade"
			}
		}
		if emit != nil && emitErr == nil {
			emitErr = emit(r, OutLine(r, "input_line"))
		}
	})
	if err == nil {
		err = emitErr
	}
	for _, s := range index {
		if !s.used {
			st.Unmatched++
		}
	}
	return st, err
}

// callRefusal reports whether env, the envelope of a refusal in OLD
// (savedEnvelope), is the refusal of a call — a script item refused when
// it ran, which has "job_id" (""), as a call's envelope has — rather than
// of a malformed line, and returns it without its "input_line" (Line
// writes the item's): as the envelope out, and as Item.Err holds it
// (refusalOf), from the one parse of env.
func callRefusal(env json.RawMessage) (out json.RawMessage, refusal *wire.Object, ok bool) {
	o, err := wire.ParseObject(env)
	if err != nil {
		return nil, nil, false
	}
	if _, ok := o.Get("job_id"); !ok {
		return nil, nil, false
	}
	o.Delete("input_line")
	out, err = o.MarshalJSON() // before refusalOf changes the message
	if err != nil {
		return nil, nil, false
	}
	return out, refusalOf(o), true
}

// refusalOf is o, a refusal's envelope as ParseObject gives it (raw
// values), as Item.Err holds one: its message a string (Refuse). It
// changes o.
func refusalOf(o *wire.Object) *wire.Object {
	if v, ok := o.Get("message"); ok {
		if raw, ok := v.(json.RawMessage); ok {
			var msg string
			wire.DecodeString(raw, &msg)
			o.Set("message", msg)
		}
	}
	return o
}

// savedEnvelope reads the line of old at off and returns its envelope (the
// line without the members a batch adds: id, task, run_digest, verdict,
// verdict_reason) and its run_digest ("" when it has none, or one that is
// not 64 lower-case hex digits).
func savedEnvelope(old *os.File, off int64) (json.RawMessage, string) {
	br := bufio.NewReaderSize(io.NewSectionReader(old, off, 1<<62), 1<<16)
	line, _, _, _ := ReadLine(br, MaxResultLineBytes)
	var digest string
	var out bytes.Buffer
	out.WriteByte('{')
	wire.SplitObject(line, func(key string, raw json.RawMessage) {
		switch key {
		case "id", "task", "verdict", "verdict_reason":
			return
		case "run_digest":
			if json.Unmarshal(raw, &digest) != nil || !validDigest(digest) {
				digest = "" // not one a batch wrote: none
			}
			return
		}
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		out.Write(k)
		out.WriteByte(':')
		out.Write(raw)
	})
	out.WriteByte('}')
	return out.Bytes(), digest
}

// validDigest reports whether d is a run_digest as RunDigest writes it:
// 64 lower-case hex digits.
func validDigest(d string) bool {
	if len(d) != 64 {
		return false
	}
	for i := range len(d) {
		if c := d[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
