package node

import (
	"math"
	"strings"
	"testing"

	"github.com/axpool/axpool/policy"
)

func TestScaled(t *testing.T) {
	for _, c := range []struct{ v, unit, want int64 }{
		{0, 1 << 20, 0},
		{3, 1 << 20, 3 << 20},
		{1 << 43, 1 << 20, math.MaxInt64},
		{math.MaxInt64, 1_000_000, math.MaxInt64},
		{9_223_372_036_854, 1_000_000, 9_223_372_036_854_000_000},
	} {
		if got := scaled(c.v, c.unit); got != c.want {
			t.Errorf("scaled(%d, %d) = %d, want %d", c.v, c.unit, got, c.want)
		}
	}
}

// The worker processes are started without the variables the upstreams
// file references (withoutVars).
func TestWithoutVars(t *testing.T) {
	env := []string{"PATH=/bin", "GH=ghp_secret", "HOME=/root", "GH_X=1"}
	if got := withoutVars(env, []string{"GH", "NOPE"}); strings.Join(got, " ") != "PATH=/bin HOME=/root GH_X=1" {
		t.Errorf("got %v", got)
	}
	if got := withoutVars(env, nil); len(got) != 4 {
		t.Errorf("got %v", got)
	}
}

// tool.call is granted with --upstreams or --scripts-dir (hasTools), else
// reported with the flag --upstreams; other capabilities are granted's.
func TestWithToolGrant(t *testing.T) {
	granted := func(c policy.Capability) (bool, string) { return c == policy.TimeNow, "--x" }
	for _, c := range []struct {
		hasTools bool
		capa     policy.Capability
		ok       bool
		flag     string
	}{
		{true, policy.ToolCall, true, ""},
		{false, policy.ToolCall, false, "--upstreams"},
		{true, policy.TimeNow, true, "--x"},
		{false, policy.NetFetch, false, "--x"},
	} {
		if ok, flag := withToolGrant(granted, c.hasTools)(c.capa); ok != c.ok || flag != c.flag {
			t.Errorf("withToolGrant(hasTools %v)(%s) = %v, %q; want %v, %q", c.hasTools, c.capa, ok, flag, c.ok, c.flag)
		}
	}
	if withToolGrant(nil, true) != nil {
		t.Error("withToolGrant(nil) is not nil")
	}
}
