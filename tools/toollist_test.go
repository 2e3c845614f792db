package tools

import (
	"reflect"
	"testing"
)

func TestToolList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{"", nil, ""},
		{"all", nil, ""},
		{"agent", []string{"boruna_capability_list", "boruna_check", "boruna_run"}, ""},
		{" boruna_run , boruna_compile,boruna_run", []string{"boruna_run", "boruna_compile"}, ""},
		{"agent,boruna_repair", []string{"boruna_capability_list", "boruna_check", "boruna_run", "boruna_repair"}, ""},
		{"boruna_rn", nil, `unknown tool "boruna_rn" in --tools (did you mean "boruna_run"?); give "all", "agent" or tool names separated by commas`},
		{"frobnicate", nil, `unknown tool "frobnicate" in --tools; give "all", "agent" or tool names separated by commas`},
		{" , ", nil, `--tools names no tool; give "all", "agent" or tool names separated by commas`},
	} {
		got, err := ToolList(tc.in)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if !reflect.DeepEqual(got, tc.want) || msg != tc.err {
			t.Errorf("ToolList(%q) = %v, %q; want %v, %q", tc.in, got, msg, tc.want, tc.err)
		}
	}
	order := ListOrder()
	if len(order) != len(Names()) || order[0] != "boruna_capability_list" {
		t.Errorf("ListOrder = %v", order)
	}
}
