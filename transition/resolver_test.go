package transition_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	_ "github.com/docshard/docshard/lookup"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/resolver/resolvertest"
	"github.com/docshard/docshard/router/routertest"
	"github.com/docshard/docshard/transition"
)

func ring(t testing.TB, n int) *hashring.Resolver { return routertest.Ring(t, n) }

// movingKey returns a key that current and next place apart, and one they
// place alike.
func keys(t testing.TB, cur, next resolver.Resolver) (moving, staying string) {
	for i := 0; moving == "" || staying == ""; i++ {
		k := fmt.Sprint("k", i)
		a, err := cur.ResolveForCreate(k)
		require.NoError(t, err)
		b, err := next.ResolveForCreate(k)
		require.NoError(t, err)
		if a != b && moving == "" {
			moving = k
		}
		if a == b && staying == "" {
			staying = k
		}
	}
	return moving, staying
}

func TestPlacement(t *testing.T) {
	cur, next := ring(t, 2), ring(t, 3)
	moving, staying := keys(t, cur, next)
	curAt, _ := cur.ResolveForCreate(moving)
	nextAt, _ := next.ResolveForCreate(moving)
	stayAt, _ := cur.ResolveForCreate(staying)
	all3 := []string{"dbs/app/colls/c0", "dbs/app/colls/c1", "dbs/app/colls/c2"}
	for _, tc := range []struct {
		mode, writeTo     string
		create            string
		readMove, readAll []string
	}{
		{transition.ReadBoth, transition.WriteNext, nextAt, []string{nextAt, curAt}, all3},
		{transition.ReadCurrent, transition.WriteNext, nextAt, []string{curAt}, all3[:2]},
		{transition.ReadNext, transition.WriteCurrent, curAt, []string{nextAt}, all3},
		{"", "", nextAt, []string{nextAt, curAt}, all3}, // defaults: both, next
	} {
		name := tc.mode + "/" + tc.writeTo
		r, err := transition.New(resolver.ResolverTarget(cur), resolver.ResolverTarget(next), &transition.Options{ReadMode: tc.mode, WriteTo: tc.writeTo})
		require.NoError(t, err, name)
		got, err := r.ResolveForCreate(moving)
		require.NoError(t, err)
		assert.Equal(t, tc.create, got, name)
		links, err := r.ResolveForRead(moving)
		require.NoError(t, err)
		assert.Equal(t, tc.readMove, links, name)
		links, err = r.ResolveForRead(staying)
		require.NoError(t, err)
		assert.Equal(t, []string{stayAt}, links, "%s: a key that does not move is read from its one collection", name)
		links, err = r.ResolveForRead(nil)
		require.NoError(t, err)
		assert.ElementsMatch(t, tc.readAll, links, name)
		key, err := r.PartitionKey([]byte(`{"id":"1","userId":"u"}`))
		require.NoError(t, err)
		assert.Equal(t, "u", key)
	}

	none, err := transition.New(resolver.ResolverTarget(cur), resolver.ResolverTarget(next), &transition.Options{ReadMode: transition.ReadNone})
	require.NoError(t, err)
	_, err = none.ResolveForRead(moving)
	require.ErrorIs(t, err, transition.ErrMigrationInProgress)
	_, err = none.ResolveForRead(nil)
	require.ErrorIs(t, err, transition.ErrMigrationInProgress)
	_, err = none.ResolveForCreate(moving)
	require.NoError(t, err, "writes go on")
	_, err = none.ResolveForCreate(nil)
	require.ErrorIs(t, err, resolver.ErrNoPartitionKey)

	// From one collection (a link) to a ring.
	one, err := transition.New(resolver.LinkTarget("dbs/app/colls/c0"), resolver.ResolverTarget(next), nil)
	require.NoError(t, err)
	assert.Equal(t, next.KeyDef().Paths(), one.KeyDef().Paths(), "the placement that defines the key lends it")
}

func TestJSON(t *testing.T) {
	resolvertest.RoundTrip(t,
		`{"kind":"transition","current":"dbs/app/colls/c0","next":{"kind":"hash","partitionKey":"/userId","collections":["dbs/app/colls/c0","dbs/app/colls/c1"]}}`,
		`{"kind":"transition","readMode":"both","writeTo":"next","current":"dbs/app/colls/c0","next":{"kind":"hash","partitionKey":"/userId","collections":["dbs/app/colls/c0","dbs/app/colls/c1"],"virtualNodes":16,"hash":"md5"}}`)
	resolvertest.RoundTrip(t,
		`{"kind":"transition","readMode":"none","writeTo":"current","current":{"kind":"lookup","partitionKey":"/userId","entries":{"a":"dbs/app/colls/a"},"default":"dbs/app/colls/d"},"next":"dbs/app/colls/n"}`,
		`{"kind":"transition","readMode":"none","writeTo":"current","current":{"kind":"lookup","partitionKey":"/userId","entries":{"a":"dbs/app/colls/a"},"default":"dbs/app/colls/d"},"next":"dbs/app/colls/n"}`)

	// A transition nested in a lookup, and the reverse.
	resolvertest.RoundTrip(t,
		`{"kind":"lookup","partitionKey":"/userId","entries":{},"default":{"kind":"transition","readMode":"both","writeTo":"next","current":"dbs/app/colls/a","next":"dbs/app/colls/b"}}`,
		`{"kind":"lookup","partitionKey":"/userId","entries":{},"default":{"kind":"transition","readMode":"both","writeTo":"next","current":"dbs/app/colls/a","next":"dbs/app/colls/b"}}`)

	for _, tc := range []struct{ name, json, field, msg string }{
		{"mode", `{"kind":"transition","readMode":"sometimes","current":"dbs/a/colls/b","next":"dbs/a/colls/c"}`, "readMode", "want"},
		{"writeTo", `{"kind":"transition","writeTo":"both","current":"dbs/a/colls/b","next":"dbs/a/colls/c"}`, "writeTo", "want"},
		{"no next", `{"kind":"transition","current":"dbs/a/colls/b"}`, "next", "missing"},
		{"no current", `{"kind":"transition","next":"dbs/a/colls/b"}`, "current", "missing"},
		{"bad link", `{"kind":"transition","current":"colls/b","next":"dbs/a/colls/c"}`, "current", ""},
		{"unknown field", `{"kind":"transition","current":"dbs/a/colls/b","next":"dbs/a/colls/c","extra":1}`, "extra", "unknown field"},
		{"keys differ", `{"kind":"transition","current":{"kind":"hash","partitionKey":"/a","collections":["dbs/a/colls/b"]},"next":{"kind":"hash","partitionKey":"/b","collections":["dbs/a/colls/c"]}}`, "next.partitionKey", "differs from current"},
		{"nested error", `{"kind":"transition","current":"dbs/a/colls/b","next":{"kind":"hash","collections":[]}}`, "next.collections", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resolver.Unmarshal([]byte(tc.json))
			resolvertest.ConfigError(t, err, tc.field, tc.msg)
		})
	}
}

func TestOwner(t *testing.T) {
	cur, next := ring(t, 3), ring(t, 2) // c2 goes away
	moving, _ := keys(t, cur, next)
	for _, tc := range []struct {
		mode   string
		shared []string
		owner  resolver.Resolver
	}{
		{transition.ReadCurrent, []string{"dbs/app/colls/c0", "dbs/app/colls/c1"}, cur},
		{transition.ReadNext, []string{"dbs/app/colls/c0", "dbs/app/colls/c1"}, next},
		{transition.ReadBoth, nil, next},
		{transition.ReadNone, nil, next},
	} {
		r, err := transition.New(resolver.ResolverTarget(cur), resolver.ResolverTarget(next), &transition.Options{ReadMode: tc.mode})
		require.NoError(t, err)
		assert.Equal(t, tc.shared, r.SharedCollections(), tc.mode)
		got, err := r.Owner(moving)
		require.NoError(t, err)
		want, _ := tc.owner.ResolveForCreate(moving)
		assert.Equal(t, want, got, tc.mode)
		holders, err := r.Holders(moving)
		require.NoError(t, err)
		require.Len(t, holders, 2, "a moving key may sit in both placements")
		assert.Equal(t, want, holders[0], "the owner first")
		_, staying := keys(t, cur, next)
		holders, err = r.Holders(staying)
		require.NoError(t, err)
		assert.Len(t, holders, 1)
	}
}

func TestFrozen(t *testing.T) {
	cur, next := ring(t, 2), ring(t, 3)
	moving, staying := keys(t, cur, next)
	r, err := transition.New(resolver.ResolverTarget(cur), resolver.ResolverTarget(next), &transition.Options{ReadMode: transition.ReadCurrent, WriteTo: transition.WriteCurrent, Frozen: true})
	require.NoError(t, err)
	_, err = r.ResolveForCreate(moving)
	require.ErrorIs(t, err, transition.ErrMoving)
	require.ErrorIs(t, err, resolver.ErrMoving)
	_, err = r.Holders(moving)
	require.ErrorIs(t, err, transition.ErrMoving, "deletes of a moving key wait too")
	_, err = r.ResolveForCreate(staying)
	require.NoError(t, err, "keys that stay are written as usual")
	_, err = r.ResolveForRead(moving)
	require.NoError(t, err, "reads go on")
	data, err := resolver.Marshal(r)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"frozen":true`)
	back, err := resolver.Unmarshal(data)
	require.NoError(t, err)
	assert.True(t, back.(*transition.Resolver).Frozen())
}
