package cursor

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCache(t *testing.T) {
	c := NewCache[[]json.RawMessage](2)
	a := c.Put("q1", []json.RawMessage{[]byte("1")})
	b := c.Put("q2", []json.RawMessage{[]byte("2")})
	got, ok := c.Get(a, "q1")
	require.True(t, ok)
	assert.Equal(t, "1", string(got[0]))
	_, ok = c.Get(a, "q2")
	assert.False(t, ok, "a cursor answers only its own query")
	c.Put("q3", nil) // evicts b, the least recently used
	_, ok = c.Get(b, "q2")
	assert.False(t, ok)
	_, ok = c.Get(a, "q1")
	assert.True(t, ok)
	_, ok = c.Get(0, "q1")
	assert.False(t, ok)
}

func TestTokens(t *testing.T) {
	type tok struct {
		V int    `json:"v"`
		S string `json:"s"`
	}
	s := Encode(tok{1, "x"})
	var back tok
	require.NoError(t, Decode(s, &back))
	assert.Equal(t, tok{1, "x"}, back)
	assert.ErrorIs(t, Decode("!!", &back), ErrMalformed)
	assert.ErrorIs(t, Decode(Encode(map[string]int{"zz": 1}), &back), ErrMalformed)
}

// A sized cache holds at most its bytes: least recently used values go
// first, and a value larger than the bound alone is not kept.
func TestSizedCache(t *testing.T) {
	c := NewSizedCache(100, 1000, func(s string) int64 { return int64(len(s)) })
	a := c.Put("h", strings.Repeat("a", 400))
	b := c.Put("h", strings.Repeat("b", 400))
	require.EqualValues(t, 800, c.Bytes())
	_, ok := c.Get(a, "h") // a is now the most recently used
	require.True(t, ok)
	d := c.Put("h", strings.Repeat("d", 400))
	assert.EqualValues(t, 800, c.Bytes())
	_, ok = c.Get(b, "h")
	assert.False(t, ok, "b, least recently used, made room")
	_, ok = c.Get(a, "h")
	assert.True(t, ok)
	_, ok = c.Get(d, "h")
	assert.True(t, ok)
	assert.Zero(t, c.Put("h", strings.Repeat("x", 1001)), "too large alone: not kept")
	assert.EqualValues(t, 800, c.Bytes())
}

// FuzzSizedCache: whatever values are put, the cache holds at most its
// count and its bytes, and a value it kept is found until evicted.
func FuzzSizedCache(f *testing.F) {
	f.Add([]byte{10, 200, 3, 250, 90}, uint8(3), uint16(300))
	f.Fuzz(func(t *testing.T, sizes []byte, n uint8, maxBytes uint16) {
		c := NewSizedCache(int(n), int64(maxBytes), func(s string) int64 { return int64(len(s)) })
		for _, sz := range sizes {
			id := c.Put("h", strings.Repeat("x", int(sz)))
			if int64(sz) > max(int64(maxBytes), 1) {
				require.Zero(t, id)
			} else {
				_, ok := c.Get(id, "h")
				require.True(t, ok, "the value just put is kept")
			}
			require.LessOrEqual(t, c.Bytes(), max(int64(maxBytes), 1))
			require.LessOrEqual(t, c.lru.Len(), max(int(n), 1))
		}
	})
}
