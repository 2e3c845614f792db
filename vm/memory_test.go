package vm

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// pinLoopModule runs 200 times: big = a fresh 256 KiB string (local 2);
// acc = list_push(acc, <keep>) where keep is computed from big by the
// given instructions; it returns list_len(acc). A kept value that shares
// memory with big would keep 50 MiB reachable while the memory measure
// counts only the kept bytes.
func pinLoopModule(keep string) *Module {
	consts := []Value{Str(strings.Repeat("a", 512)), Str("a"), Str(strings.Repeat("b", 512)),
		Int(0), Int(2), Int(200), Int(1)}
	body := []Instr{}
	body = append(body, code("MAKE_LIST 0; STORE 0; CONST 3; STORE 1")...) // 0-3
	loop := len(body)
	body = append(body, code("LOAD 1; CONST 5; LT_INT; JMP_FALSE 0")...) // patched below
	exit := len(body) - 1
	body = append(body, code(
		fmt.Sprintf("CONST 0; CONST 1; CONST 2; BUILTIN %d 3; STORE 2", BStringReplace),
		"LOAD 0", keep, fmt.Sprintf("BUILTIN %d 2; STORE 0", BListPush),
		"LOAD 1; CONST 6; ADD_INT; STORE 1", fmt.Sprintf("JMP %d", loop))...)
	body[exit].A = int32(len(body))
	body = append(body, code(fmt.Sprintf("LOAD 0; BUILTIN %d 1; RET", BListLen))...)
	return module(consts, fn("main", 0, 3, body))
}

// Values derived from a large one never keep it reachable beyond what the
// memory limit counts.
func TestDerivedValuesDoNotPinMemory(t *testing.T) {
	cases := []struct{ name, keep string }{
		{"string_slice", fmt.Sprintf("LOAD 2; CONST 3; CONST 4; BUILTIN %d 3", BStringSlice)},
		{"empty string_slice", fmt.Sprintf("LOAD 2; CONST 4; CONST 4; BUILTIN %d 3", BStringSlice)},
		{"list_tail", fmt.Sprintf("LOAD 2; CONST 6; MAKE_LIST 2; BUILTIN %d 1", BListTail)},
		// l1 = [1]; l2 = list_push(l1, big) would grow l1's array in place.
		{"list_push", fmt.Sprintf("MAKE_LIST 0; CONST 6; BUILTIN %d 2; DUP; LOAD 2; BUILTIN %d 2; POP", BListPush, BListPush)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := liveHeap()
			var peak uint64
			res := mustRun(t, pinLoopModule(c.keep), Options{Limits: Limits{MaxMemory: 16 << 20},
				Progress: func(int64) { peak = max(peak, liveHeap()) }, ProgressEvery: 1000})
			if res.Value.AsInt() != 200 {
				t.Fatalf("result %s", res.Value)
			}
			if grown := int64(peak) - int64(before); grown > 16<<20 {
				t.Fatalf("live heap grew by %d MB", grown>>20)
			}
		})
	}
}

// shares reports whether string value v points into s's bytes.
func shares(v Value, s string) bool {
	if v.Len() == 0 || len(s) == 0 {
		return v.p != nil
	}
	lo := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	p := uintptr(v.p)
	return p >= lo && p < lo+uintptr(len(s))
}

// String built-ins return whole strings or copies, never a proper part of
// their argument.
func TestSubstringsAreDetached(t *testing.T) {
	src := "  héllo, wörld, " + strings.Repeat("z", 100) + "  "
	m := &machine{memLimit: 1 << 30}
	check := func(name string, v Value, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		elems := []Value{v}
		if v.Kind() == KindList {
			elems = v.Elems()
		}
		for _, e := range elems {
			if e.Len() < len(src) && shares(e, src) {
				t.Errorf("%s: %q shares the source", name, e.AsString())
			}
		}
	}
	v, err := m.substr(src, src[2:7])
	check("slice", v, err)
	if v.AsString() != "héll" {
		t.Fatalf("slice %q", v.AsString())
	}
	v, err = m.substr(src, src)
	if err != nil || !shares(v, src) {
		t.Fatal("the whole string is not copied")
	}
	v, err = m.substr(src, strings.TrimSpace(src))
	check("trim", v, err)
	v, err = m.stringSplit(src, ", ")
	check("split", v, err)
	if got := jsonOf(v); got != `["  héllo","wörld","`+strings.Repeat("z", 100)+`  "]` {
		t.Fatalf("split %s", got)
	}
	v, err = m.stringChars(src)
	check("chars", v, err)
	if v.Len() != len([]rune(src)) || v.Index(3).AsString() != "é" {
		t.Fatalf("chars %d", v.Len())
	}
	v, err = m.stringSplit(src, "")
	check("split empty", v, err)
	v, err = m.substr(src, src[5:5])
	check("empty", v, err)
}

// The event log is charged for its backing array, not just its length.
func TestEventLogCharged(t *testing.T) {
	// emit 1 forever: each emit adds a ui value and an event.
	m := module([]Value{Int(1)}, fn("main", 0, 0, code("CONST 0; EMIT; POP; JMP 0")))
	res, err := run(t, m, Options{Limits: Limits{MaxMemory: 4 << 20, MaxSteps: 1 << 40}})
	limitErr(t, err, LimitMemoryMB, 4, "memory limit of 4 MB exceeded")
	// 24 bytes of ui_output and at least eventSize per emit.
	if n := int64(len(res.UIOutput)); n*(slotSize+eventSize) > 4<<20 || n < (4<<20)/(2*(slotSize+eventSize)) {
		t.Fatalf("%d emits before the limit", n)
	}
}
