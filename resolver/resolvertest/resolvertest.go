// Package resolvertest holds checks every resolver kind's tests share.
package resolvertest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/resolver"
)

// RoundTrip decodes in with resolver.Unmarshal, encodes the resolver again
// with resolver.Marshal and fails the test unless the result is out: the
// canonical form, every setting written.
func RoundTrip(t testing.TB, in, out string) {
	t.Helper()
	r, err := resolver.Unmarshal([]byte(in))
	if err != nil {
		t.Fatalf("decode %s: %v", in, err)
	}
	data, err := resolver.Marshal(r)
	if err != nil {
		t.Fatalf("encode %s: %v", in, err)
	}
	if string(data) != out {
		t.Errorf("round trip of %s:\n got %s\nwant %s", in, data, out)
	}
}

// ConfigError fails the test unless err is a *resolver.ConfigError that
// wraps resolver.ErrInvalid, names field (exactly) and, unless msg is
// empty, says msg: what every resolver kind's tests of a bad definition
// check.
func ConfigError(t testing.TB, err error, field, msg string) {
	t.Helper()
	var ce *resolver.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, resolver.ErrInvalid)
	assert.Equal(t, field, ce.Field, "%v", err)
	if msg != "" {
		assert.ErrorContains(t, err, msg)
	}
}
