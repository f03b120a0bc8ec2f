package routertest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/resolver"
)

// Ring returns a hash ring over n collections dbs/app/colls/c0 ...
// dbs/app/colls/c{n-1}, keyed by /userId: the resolver the tests of the
// shared state and of resharding publish and reshard between.
func Ring(t testing.TB, n int) *hashring.Resolver {
	t.Helper()
	links := make([]string, n)
	for i := range links {
		links[i] = fmt.Sprintf("dbs/app/colls/c%d", i)
	}
	r, err := hashring.New(links, &hashring.Options{PartitionKey: resolver.MustKeyDef("/userId")})
	require.NoError(t, err)
	return r
}
