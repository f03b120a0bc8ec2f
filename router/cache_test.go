package router

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
)

// TestReadAdmission checks the route cache's admission of read routes: a
// key's first read places it without a route, its second (with no other key
// in its slot meanwhile) stores one, and the third finds it; a key that
// takes the slot in between puts the first back to its first miss.
func TestReadAdmission(t *testing.T) {
	r, err := hashring.New([]string{"dbs/a/colls/x", "dbs/a/colls/y", "dbs/a/colls/z"}, nil)
	require.NoError(t, err)
	pl := newPlacement(r, 1) // one slot: every key shares it
	want, err := r.ResolveForRead("alice")
	require.NoError(t, err)

	for i, tc := range []struct {
		key    string
		cached bool // a route comes back (from the cache or just admitted)
	}{
		{"alice", false}, // first miss: links only
		{"alice", true},  // second miss: admitted
		{"alice", true},  // hit
		{"bob", false},   // another key takes the slot's hash
		{"alice", false}, // alice's first miss again
		{"alice", true},
	} {
		rt, links, err := pl.forRead(tc.key)
		require.NoError(t, err)
		if tc.cached {
			require.NotNil(t, rt, "step %d", i)
			assert.Nil(t, links)
			if tc.key == "alice" {
				assert.Equal(t, want, rt.links)
			}
		} else {
			assert.Nil(t, rt, "step %d", i)
			exp, _ := r.ResolveForRead(tc.key)
			assert.Equal(t, exp, links, "step %d", i)
		}
	}
	// Non-string keys and no cache: always a route.
	rt, links, err := pl.forRead(42.0)
	require.NoError(t, err)
	assert.NotNil(t, rt)
	assert.Nil(t, links)
	_, _, err = pl.forRead(nil)
	assert.Error(t, err)
	rt, _, err = newPlacement(r, 0).forRead("alice")
	require.NoError(t, err)
	assert.NotNil(t, rt)
}
