//go:build !race

package gateway

// raceEnabled: the race detector slows the VM ~20x; tests size their
// programs by it.
const raceEnabled = false
