// Package resolvertest holds checks every resolver kind's tests share.
package resolvertest

import (
	"sync"
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

// What a Case expects instead of a collection.
const (
	NoTarget  = ""     // resolver.ErrNoTarget, a *resolver.KeyError naming the key
	WrongType = "type" // resolver.ErrKeyType: not a key of this resolver's type
)

// Cases are keys and where a resolver puts each: a collection's name,
// NoTarget or WrongType. (Its elements are of an unnamed type so that a
// test's table may list them as {key, want}.)
type Cases []struct {
	Key  any
	Want string
}

// Places checks where r puts each case's key, for a create and for a read:
// the collection link(Want), or the error Want names.
func Places(t testing.TB, r resolver.Resolver, link func(name string) string, cases Cases) {
	t.Helper()
	for _, tc := range cases {
		got, err := r.ResolveForCreate(tc.Key)
		read, readErr := r.ResolveForRead(tc.Key)
		switch tc.Want {
		case NoTarget:
			require.ErrorIs(t, err, resolver.ErrNoTarget, "%v", tc.Key)
			var ke *resolver.KeyError
			require.ErrorAs(t, err, &ke)
			assert.Equal(t, tc.Key, ke.Key, "the error names the key")
			assert.ErrorIs(t, readErr, resolver.ErrNoTarget, "read %v", tc.Key)
		case WrongType:
			assert.ErrorIs(t, err, resolver.ErrKeyType, "%v", tc.Key)
			assert.ErrorIs(t, readErr, resolver.ErrKeyType, "read %v", tc.Key)
		default:
			require.NoError(t, err, "%v", tc.Key)
			assert.Equal(t, link(tc.Want), got, "%v", tc.Key)
			require.NoError(t, readErr, "read %v", tc.Key)
			assert.Equal(t, []string{link(tc.Want)}, read, "read %v", tc.Key)
		}
	}
}

// Concurrently calls f(i) for i from 0 to n-1 in each of 8 goroutines at
// once and waits for them: a resolver's test of concurrent use, run with
// -race.
func Concurrently(n int, f func(i int)) {
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range n {
				f(i)
			}
		})
	}
	wg.Wait()
}
