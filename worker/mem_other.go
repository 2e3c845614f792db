//go:build !linux

package worker

// physicalMemory returns the machine's RAM in bytes: unknown (0) outside
// Linux, where DefaultSlots then applies only its CPU rule.
func physicalMemory() int64 { return 0 }
