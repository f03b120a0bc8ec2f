package cursor

import (
	"encoding/json"
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
