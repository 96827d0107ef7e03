// Package usertext bounds text that comes from users or from other systems (a config's
// fields, a ConfigMap's keys, an endpoint's address, a selector's labels) before it is
// quoted in a condition, an Event or an error: such text may be huge or hostile, and a
// status update carrying it must stay small enough for the API server to accept.
package usertext

import "strings"

// Cut is text cut to at most limit bytes, on a UTF-8 boundary, marked "..." when cut.
func Cut(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	return strings.ToValidUTF8(text[:limit], "") + "..."
}

// Nearest is the candidate nearest to name by edit distance, ignoring case, when it is
// near enough to be what was meant (at most a third of name's letters differ, at least 2
// allowed); "" when none is. Ties go to the candidate first in byte order, so that the
// answer does not depend on the candidates' order. For "did you mean" in messages.
func Nearest(name string, candidates []string) string {
	best, bestDistance := "", max(2, len(name)/3)+1
	for _, candidate := range candidates {
		if distance := editDistance(strings.ToLower(name), strings.ToLower(candidate)); distance < bestDistance ||
			(distance == bestDistance && candidate < best) {
			best, bestDistance = candidate, distance
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes: the names compared are
// ASCII. Written here rather than imported: a dozen lines, for names of a few dozen bytes.
func editDistance(a, b string) int {
	previous := make([]int, len(b)+1)
	current := make([]int, len(b)+1)
	for j := range previous {
		previous[j] = j
	}
	for i := 1; i <= len(a); i++ {
		current[0] = i
		for j := 1; j <= len(b); j++ {
			substitution := previous[j-1]
			if a[i-1] != b[j-1] {
				substitution++
			}
			current[j] = min(previous[j]+1, current[j-1]+1, substitution)
		}
		previous, current = current, previous
	}
	return previous[len(b)]
}
