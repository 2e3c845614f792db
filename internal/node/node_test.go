package node

import (
	"math"
	"strings"
	"testing"
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
