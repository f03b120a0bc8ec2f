package routertest

import "testing"

// Paired runs base and cand in alternating blocks of block calls each and
// reports the median ratio of cand's time over base's per block as the
// metric "ratio": the comparison of two calls on a noisy host (see
// paired). Calls i of the two sides in a block are i and i+shift.
func Paired(b *testing.B, block, shift int, base, cand func(int) error) {
	paired(b, block, shift, base, cand)
}
