package syntax

import "unicode/utf8"

// Nearest returns the candidate closest to name, for a "did you mean"
// suffix (language-conventions.md "Compile errors"). A suggestion is given
// only when one candidate is clearly nearest: its Levenshtein distance to
// name (counted in runes) is at most 2 and at most len(name)/2 (in runes),
// and no other distinct candidate is at the same distance. Candidates equal
// to name are ignored. The boolean is false when there is no suggestion.
//
// Messages append it as ` (did you mean 'helper'?)`.
func Nearest(name string, candidates []string) (string, bool) {
	limit := min(2, utf8.RuneCountInString(name)/2)
	if limit == 0 {
		return "", false
	}
	a := []rune(name)
	best, bestD, tie := "", limit+1, false
	for _, c := range candidates {
		if c == name || c == best {
			continue
		}
		d := levenshtein(a, []rune(c), bestD+1)
		switch {
		case d < bestD:
			best, bestD, tie = c, d, false
		case d == bestD && d <= limit:
			tie = true
		}
	}
	if best == "" || tie {
		return "", false
	}
	return best, true
}

// levenshtein returns the edit distance between a and b, or a value >= bound
// as soon as the distance is known to be at least bound.
func levenshtein(a, b []rune, bound int) int {
	if d := len(a) - len(b); d >= bound || -d >= bound {
		return bound
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= bound {
			return bound
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
