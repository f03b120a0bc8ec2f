package hashring

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/resolver"
)

// Resolvers of the same settings share one ring, built once (issue 27,
// finding 6: a lookup of 31 rings written alike built 31); any setting
// that decides the points gives a ring of its own; the partition key,
// which does not, is the resolver's.
func TestResolversOfTheSameSettingsShareTheirRing(t *testing.T) {
	ls := links("share", 3)
	base := func() *Options { return &Options{VirtualNodes: 7} }
	first, err := New(ls, base())
	require.NoError(t, err)
	again, err := New(append([]string(nil), ls...), &Options{VirtualNodes: 7, PartitionKey: resolver.MustKeyDef("/userId")})
	require.NoError(t, err)
	assert.Same(t, first.Ring(), again.Ring(), "same links, flavour, strategy and virtual nodes")
	assert.Equal(t, "/userId", again.KeyDef().String())
	assert.True(t, first.KeyDef().IsZero())

	for _, tc := range []struct {
		name  string
		links []string
		opts  *Options
	}{
		{"other virtual nodes", ls, &Options{VirtualNodes: 8}},
		{"other flavour", ls, &Options{VirtualNodes: 7, Hash: FlavourXXHash}},
		{"other strategy", ls, &Options{VirtualNodes: 7, Strategy: StrategyBalanced}},
		{"links in another order", []string{ls[1], ls[0], ls[2]}, base()},
		{"a link fewer", ls[:2], base()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New(tc.links, tc.opts)
			require.NoError(t, err)
			assert.NotSame(t, first.Ring(), r.Ring())
			assert.Equal(t, tc.links, r.Collections())
		})
	}
	b1, err := New(ls, &Options{Strategy: StrategyBounded, PartitionCount: 64})
	require.NoError(t, err)
	b2, err := New(ls, &Options{Strategy: StrategyBounded, PartitionCount: 64, LoadFactor: 1.5})
	require.NoError(t, err)
	assert.NotSame(t, b1.Ring(), b2.Ring(), "bounded: another load factor")
	b3, err := New(ls, &Options{Strategy: StrategyBounded, PartitionCount: 64})
	require.NoError(t, err)
	assert.Same(t, b1.Ring(), b3.Ring())
}

// Resolvers built at once from every goroutine agree (run with -race).
func TestSharedRingsUnderConcurrentBuilds(t *testing.T) {
	ls := links("concurrent", 4)
	want, err := New(ls, &Options{VirtualNodes: 33})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			r, err := New(ls, &Options{VirtualNodes: 33})
			if assert.NoError(t, err) {
				assert.Equal(t, want.Ring().Points(), r.Ring().Points())
			}
		})
	}
	wg.Wait()
}
