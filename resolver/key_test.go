package resolver

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/partitionkey"
)

// TestForwarders: the key model lives in partitionkey; resolver's names for
// it keep working, and are the same values and types.
func TestForwarders(t *testing.T) {
	text, err := KeyString(CompositeKey{"eu", 7, json.Number("1E2")})
	require.NoError(t, err)
	assert.Equal(t, `["eu",7,100]`, text)
	b, err := AppendKey([]byte("x"), 1e21)
	require.NoError(t, err)
	assert.Equal(t, "x1e+21", string(b))
	_, err = KeyString(Null)
	var ke *KeyError
	require.ErrorAs(t, err, &ke)
	assert.ErrorIs(t, err, ErrKeyType)
	var pke *partitionkey.KeyError
	assert.ErrorAs(t, err, &pke, "one error type under two names")
	_, err = KeyString(nil)
	assert.ErrorIs(t, err, partitionkey.ErrNoPartitionKey)
	f, ok, err := Number(float32(0.1))
	assert.True(t, ok && err == nil && f == 0.1)
	b, err = AppendNumber(nil, 1e-7)
	require.NoError(t, err)
	assert.Equal(t, "1e-7", string(b))
	_, err = AppendNumber(nil, math.NaN())
	assert.ErrorIs(t, err, ErrKeyType)
	assert.Equal(t, `"é\\\u0001<\b"`, string(appendJSONString(nil, "é\\\x01<\b")))
	assert.Equal(t, partitionkey.Null, Null)
	vals, err := MustKeyDef("/a", "/b").ExtractRaw([]byte(`{"a":"x","b":2}`), nil)
	require.NoError(t, err)
	b, err = AppendRawKey(nil, vals)
	require.NoError(t, err)
	assert.Equal(t, `["x",2]`, string(b))
	assert.Equal(t, ValueString, vals[0].Kind())
}

func TestValidateLink(t *testing.T) {
	for _, ok := range []string{"dbs/a/colls/b", "/dbs/a/colls/b/", "dbs/T6t8AA==/colls/T6t8ALDFcwA=/"} {
		assert.NoError(t, ValidateLink(ok), ok)
	}
	for _, bad := range []string{"", "dbs/a", "dbs//colls/b", "colls/b", "dbs/a/colls/b/docs/c", "dbs/a?/colls/b"} {
		err := ValidateLink(bad)
		require.Error(t, err, bad)
		assert.ErrorIs(t, err, ErrInvalid)
	}
}
