// Package spell finds the name a misspelt one most likely means, for the
// "did you mean" suffix of messages (docs/language.md "Compile errors"):
// unknown identifiers, keywords, capabilities, policy fields, tool and
// argument names all use Nearest, so every message suggests by one rule.
//
// Every package of the module may import it.
//
// Imports: nothing from the module.
package spell

import "unicode/utf8"

// Nearest returns the candidate closest to name. A suggestion is given only
// when one candidate is clearly nearest: its edit distance to name
// (Distance, counted in runes) is at most 2 and at most half of name's
// length in runes, and no other distinct candidate is at the same
// distance. Candidates equal to name are ignored. The boolean is false when
// there is no suggestion.
//
// The work is O(len(name)) per candidate of a very different length and
// O(len(name)·len(candidate)) otherwise, so a huge name costs little.
// Messages append the suggestion as ` (did you mean 'helper'?)`.
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
		d := distance(a, []rune(c), bestD+1)
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

// Distance returns the Levenshtein edit distance between a and b, counted
// in runes (insertions, deletions and substitutions of one rune each).
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	return distance(ra, rb, max(len(ra), len(rb))+1)
}

// distance returns the edit distance between a and b, or a value >= bound
// as soon as the distance is known to be at least bound.
func distance(a, b []rune, bound int) int {
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
