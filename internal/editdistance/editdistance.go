// Package editdistance is the Levenshtein distance behind every "did you mean" hint:
// queen's settings, queen-proxy's settings and queenctl's commands. It is a leaf of
// its own so that each of them imports the one implementation, not a copy.
package editdistance

// Between is the Levenshtein distance between a and b: the fewest insertions,
// deletions and substitutions of bytes that turn one into the other. It counts bytes,
// not runes, which is right for the ASCII names it compares (settings, commands).
func Between(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
