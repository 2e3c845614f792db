package framework

import "strings"

// MessageLines returns the messages of a messages file (`axpool app test
// --messages-file`): one per line, without a trailing "\r", blank lines
// skipped.
func MessageLines(b []byte) []string {
	var out []string
	for line := range strings.SplitSeq(string(b), "\n") {
		if line = strings.TrimRight(line, "\r"); strings.TrimSpace(line) != "" {
			out = append(out, line)
		}
	}
	return out
}
