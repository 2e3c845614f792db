package vm

import (
	"testing"

	"github.com/axpool/axpool/wire"
)

// The limit kinds are the wire's limit_kind strings.
func TestLimitKindsMatchWire(t *testing.T) {
	pairs := [][2]string{
		{LimitSteps, wire.LimitSteps}, {LimitWallMs, wire.LimitWallMs}, {LimitMemoryMB, wire.LimitMemoryMB},
		{LimitOutputBytes, wire.LimitOutputBytes}, {LimitCallDepth, wire.LimitCallDepth},
	}
	for _, p := range pairs {
		if p[0] != p[1] {
			t.Errorf("%q != %q", p[0], p[1])
		}
	}
}
