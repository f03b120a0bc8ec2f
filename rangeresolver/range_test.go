package rangeresolver

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRangeMethods(t *testing.T) {
	n := Range[float64]{1, 5}
	for _, tc := range []struct {
		v    float64
		want bool
	}{{1, true}, {5, true}, {3.3, true}, {0.9999, false}, {5.0001, false}, {math.NaN(), false}, {math.Inf(1), false}} {
		assert.Equal(t, tc.want, n.Contains(tc.v), "%v", tc.v)
	}
	for _, tc := range []struct {
		o                 Range[float64]
		intersect, covers bool
	}{
		{Range[float64]{5, 9}, true, false}, // inclusive bounds meet
		{Range[float64]{-3, 1}, true, false},
		{Range[float64]{6, 9}, false, false},
		{Range[float64]{2, 3}, true, true},
		{Range[float64]{1, 5}, true, true},
		{Range[float64]{0, 6}, true, false},
		{Range[float64]{3, 2}, false, true}, // empty
	} {
		assert.Equal(t, tc.intersect, n.Intersects(tc.o), "%v", tc.o)
		assert.Equal(t, tc.intersect, tc.o.Intersects(n), "symmetric %v", tc.o)
		assert.Equal(t, tc.covers, n.Covers(tc.o), "%v", tc.o)
	}
	assert.False(t, Range[float64]{2, 1}.Intersects(Range[float64]{0, 9}), "an empty range meets nothing")
	assert.True(t, Range[float64]{2, 1}.Empty())
	assert.False(t, n.Empty())
	assert.Equal(t, "[1, 5]", n.String())
	assert.Equal(t, "[-1e+21, 5e-7]", Range[float64]{-1e21, 5e-7}.String())

	s := Range[string]{"b", "d"}
	assert.Equal(t, `["b", "d"]`, s.String())
	for _, tc := range []struct {
		v    string
		want bool
	}{{"b", true}, {"c", true}, {"czzz", true}, {"d", true}, {"d\x00", false}, {"a", false}, {"B", false}, {"é", false}} {
		assert.Equal(t, tc.want, s.Contains(tc.v), "%q", tc.v)
	}

	paris := time.FixedZone("CET", 3600)
	jan := Range[time.Time]{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 31, 23, 59, 59, 999999999, time.UTC)}
	assert.True(t, jan.Contains(time.Date(2026, 1, 1, 1, 0, 0, 0, paris)), "the same instant as the low bound")
	assert.False(t, jan.Contains(time.Date(2026, 1, 1, 0, 59, 59, 0, paris)), "an instant before it")
	assert.True(t, jan.Contains(time.Date(2026, 2, 1, 0, 59, 59, 0, paris)), "23:59:59Z on Jan 31")
	assert.Equal(t, "[2026-01-01T00:00:00Z, 2026-01-31T23:59:59.999999999Z]", jan.String())
}

func TestCompare(t *testing.T) {
	assert.Equal(t, -1, Compare("Z", "a"), "byte order, not collation")
	assert.Equal(t, -1, Compare("10", "9"))
	assert.Equal(t, -1, Compare("a", "é"))
	assert.Equal(t, 0, Compare("x", "x"))
	assert.Equal(t, -1, Compare(9.0, 10.0))
	assert.Equal(t, 0, Compare(0.0, math.Copysign(0, -1)))
	assert.Equal(t, -1, Compare(math.NaN(), math.Inf(-1)), "NaN sorts first, keeping the order total")
	at := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	assert.Equal(t, 0, Compare(at, at.In(time.FixedZone("", -5*3600))))
	assert.Equal(t, 1, Compare(at.Add(time.Nanosecond), at))
}
