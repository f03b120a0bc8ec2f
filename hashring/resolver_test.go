package hashring

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/resolver"
)

func links(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("dbs/app/colls/%s%d", prefix, i)
	}
	return out
}

func TestKeys(t *testing.T) {
	r, err := New(links("c", 5), &Options{PartitionKey: resolver.MustKeyDef("/userId")})
	require.NoError(t, err)

	// Numbers are placed by their canonical JSON text, whatever their Go type.
	want, err := r.ResolveForCreate("42")
	require.NoError(t, err)
	for _, k := range []any{42, int64(42), uint8(42), 42.0, float32(42), json.Number("42"), json.Number("4.2e1")} {
		got, err := r.ResolveForCreate(k)
		require.NoError(t, err, "%T", k)
		assert.Equal(t, want, got, "%T %v", k, k)
	}
	want, err = r.ResolveForCreate("1.5")
	require.NoError(t, err)
	got, err := r.ResolveForCreate(1.5)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	// A composite key is placed by its canonical JSON array.
	want, err = r.ResolveForCreate(`["eu",7]`)
	require.NoError(t, err)
	got, err = r.ResolveForCreate(resolver.CompositeKey{"eu", 7})
	require.NoError(t, err)
	assert.Equal(t, want, got)

	// From a document to a collection.
	key, err := r.PartitionKey([]byte(`{"id":"1","userId":"alice"}`))
	require.NoError(t, err)
	assert.Equal(t, "alice", key)

	for _, bad := range []any{true, struct{}{}, map[string]any{}, []byte("x")} {
		_, err := r.ResolveForCreate(bad)
		assert.ErrorIs(t, err, resolver.ErrKeyType, "%T", bad)
		_, err = r.ResolveForRead(bad)
		assert.ErrorIs(t, err, resolver.ErrKeyType, "%T", bad)
	}
	_, err = r.ResolveForCreate(nil)
	assert.ErrorIs(t, err, resolver.ErrNoPartitionKey)
	_, err = r.PartitionKey(map[string]any{"id": "1"})
	assert.ErrorIs(t, err, resolver.ErrNoPartitionKey)

	all, err := r.ResolveForRead(nil)
	require.NoError(t, err)
	assert.Equal(t, links("c", 5), all)
	all[0] = "mutated"
	assert.Equal(t, links("c", 5), r.Collections(), "callers cannot mutate the resolver")
}

func TestNestedRingHasNoPartitionKey(t *testing.T) {
	r, err := New(links("c", 2), nil)
	require.NoError(t, err)
	_, err = r.PartitionKey(map[string]any{"id": "x"})
	assert.ErrorIs(t, err, resolver.ErrNoPartitionKey)
	data, err := resolver.Marshal(r)
	require.NoError(t, err)
	assert.JSONEq(t, `{"kind":"hash","collections":["dbs/app/colls/c0","dbs/app/colls/c1"],"virtualNodes":16,"hash":"md5"}`, string(data))
}

func TestDefaults(t *testing.T) {
	for _, tc := range []struct {
		opts   Options
		vnodes int
		points int
	}{
		{Options{}, 16, 48},
		{Options{Hash: FlavourXXHash}, 16, 48},
		{Options{Hash: FlavourMurmur3}, 128, 384},
		{Options{Hash: FlavourDotnetX64}, 128, 384},
		{Options{Hash: FlavourDotnetX86}, 128, 384},
		{Options{Strategy: StrategyBounded}, 16, DefaultPartitionCount},
		{Options{VirtualNodes: 160}, 160, 480},
	} {
		opts := tc.opts
		r, err := New(links("c", 3), &opts)
		require.NoError(t, err)
		assert.Equal(t, tc.vnodes, r.VirtualNodes(), "%+v", tc.opts)
		assert.Equal(t, tc.points, r.Points(), "%+v", tc.opts)
	}
}

func TestJSONErrors(t *testing.T) {
	cases := []struct {
		name, json, field string
	}{
		{"malformed", `{"kind":"hash","collections":[`, ""},
		{"unknown field", `{"kind":"hash","collections":["dbs/a/colls/b"],"replicas":3}`, "replicas"},
		{"missing collections", `{"kind":"hash"}`, "collections"},
		{"empty collections", `{"kind":"hash","collections":[]}`, "collections"},
		{"duplicate link", `{"kind":"hash","collections":["dbs/a/colls/b","dbs/a/colls/c","dbs/a/colls/b"]}`, "collections[2]"},
		{"bad link", `{"kind":"hash","collections":["dbs/a/colls/b","users"]}`, "collections[1]"},
		{"zero vnodes", `{"kind":"hash","collections":["dbs/a/colls/b"],"virtualNodes":0}`, "virtualNodes"},
		{"negative vnodes", `{"kind":"hash","collections":["dbs/a/colls/b"],"virtualNodes":-4}`, "virtualNodes"},
		{"absurd vnodes", `{"kind":"hash","collections":["dbs/a/colls/b"],"virtualNodes":1000000}`, "virtualNodes"},
		{"fractional vnodes", `{"kind":"hash","collections":["dbs/a/colls/b"],"virtualNodes":1.5}`, "virtualNodes"},
		{"unknown hash", `{"kind":"hash","collections":["dbs/a/colls/b"],"hash":"sha1"}`, "hash"},
		{"unknown strategy", `{"kind":"hash","collections":["dbs/a/colls/b"],"strategy":"jump"}`, "strategy"},
		{"load factor on ring", `{"kind":"hash","collections":["dbs/a/colls/b"],"loadFactor":1.5}`, "loadFactor"},
		{"load factor too low", `{"kind":"hash","collections":["dbs/a/colls/b"],"strategy":"bounded","loadFactor":0.5}`, "loadFactor"},
		{"partitions too few", `{"kind":"hash","collections":["dbs/a/colls/b","dbs/a/colls/c"],"strategy":"bounded","partitionCount":10}`, "partitionCount"},
		{"bounded with murmur", `{"kind":"hash","collections":["dbs/a/colls/b"],"strategy":"bounded","hash":"murmur3"}`, "hash"},
		{"bad partition key", `{"kind":"hash","partitionKey":"userId","collections":["dbs/a/colls/b"]}`, "partitionKey"},
		{"wrong type", `{"kind":"hash","collections":"dbs/a/colls/b"}`, "collections"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resolver.Unmarshal([]byte(tc.json))
			require.Error(t, err)
			assert.ErrorIs(t, err, resolver.ErrInvalid)
			var ce *resolver.ConfigError
			require.True(t, errors.As(err, &ce), "%T %v", err, err)
			assert.Contains(t, ce.Field, tc.field, "error %q should name %q", err, tc.field)
		})
	}
}

// randomOptions draws a valid configuration.
func randomOptions(rng *rand.Rand, n int) Options {
	o := Options{}
	if rng.IntN(2) == 0 {
		o.PartitionKey = resolver.MustKeyDef([]string{"/userId", "/a/b", "/tenant"}[rng.IntN(3)])
	}
	if rng.IntN(4) == 0 {
		o.Strategy = StrategyBounded
		if rng.IntN(2) == 0 {
			o.LoadFactor = 1.1 + rng.Float64()
		}
		if rng.IntN(2) == 0 {
			o.PartitionCount = MinPartitionsPerCollection*n + rng.IntN(500)
		}
		o.VirtualNodes = rng.IntN(40)
		return o
	}
	o.Hash = []string{"", FlavourMD5, FlavourXXHash, FlavourMurmur3, FlavourDotnetX64, FlavourDotnetX86}[rng.IntN(6)]
	o.VirtualNodes = rng.IntN(300)
	return o
}

func TestJSONRoundTripProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	rounds := 200
	if testing.Short() {
		rounds = 40
	}
	for round := 0; round < rounds; round++ {
		n := 1 + rng.IntN(40)
		ls := links(fmt.Sprintf("r%d_", round), n)
		rng.Shuffle(len(ls), func(i, j int) { ls[i], ls[j] = ls[j], ls[i] })
		opts := randomOptions(rng, n)
		r, err := New(ls, &opts)
		require.NoError(t, err, "%+v", opts)
		data, err := resolver.Marshal(r)
		require.NoError(t, err)
		back, err := resolver.Unmarshal(data)
		require.NoError(t, err, "%s", data)
		again, err := resolver.Marshal(back)
		require.NoError(t, err)
		require.Equal(t, string(data), string(again), "every setting survives")
		b := back.(*Resolver)
		assert.Equal(t, r.VirtualNodes(), b.VirtualNodes())
		assert.Equal(t, r.Hash(), b.Hash())
		assert.Equal(t, r.Strategy(), b.Strategy())
		assert.Equal(t, r.LoadFactor(), b.LoadFactor())
		assert.Equal(t, r.PartitionCount(), b.PartitionCount())
		assert.Equal(t, r.KeyDef().Paths(), b.KeyDef().Paths())
		for k := 0; k < 200; k++ {
			key := fmt.Sprintf("key-%d-%d", round, rng.Int64())
			x, err := r.ResolveForCreate(key)
			require.NoError(t, err)
			y, err := back.ResolveForCreate(key)
			require.NoError(t, err)
			require.Equal(t, x, y, "placement of %q is identical after a round trip of %s", key, data)
		}
	}
}

func TestBoundedMemberNamesDoNotCollide(t *testing.T) {
	// Without a terminator, replica 10 of ".../x" and replica 0 of ".../x1"
	// get the same label on the library's ring.
	ls := []string{"dbs/a/colls/x", "dbs/a/colls/x1"}
	r, err := New(ls, &Options{Strategy: StrategyBounded, VirtualNodes: 20})
	require.NoError(t, err)
	counts := map[string]int{}
	for i := 0; i < 20000; i++ {
		l, err := r.ResolveForCreate(fmt.Sprint(i))
		require.NoError(t, err)
		counts[l]++
	}
	assert.Len(t, counts, 2)
	for _, l := range ls {
		assert.InDelta(t, 10000, counts[l], 10000*0.3, "both collections own a bounded share")
	}
	labels := map[string]bool{}
	for _, l := range ls {
		for i := 0; i < 20; i++ {
			label := boundedMember(l).String() + fmt.Sprint(i)
			assert.False(t, labels[label], "label %q repeats", label)
			labels[label] = true
		}
	}
}

func TestBoundedPanicBecomesError(t *testing.T) {
	// Load factor 1 with a partition count that does not divide evenly
	// leaves the library no room: it panics, New returns an error.
	_, err := New(links("c", 3), &Options{Strategy: StrategyBounded, LoadFactor: 1, PartitionCount: 31})
	require.Error(t, err)
	assert.ErrorIs(t, err, resolver.ErrInvalid)
	assert.Contains(t, err.Error(), "cannot place")
}

func TestBoundedLoadCap(t *testing.T) {
	r, err := New(links("c", 10), &Options{Strategy: StrategyBounded, LoadFactor: 1.25})
	require.NoError(t, err)
	owned := map[int32]int{}
	for _, o := range r.loc.(*boundedRing).owner {
		owned[o]++
	}
	mean := float64(r.PartitionCount()) / 10
	for l, c := range owned {
		assert.LessOrEqual(t, float64(c), mean*1.25+1, "collection %d owns %d partitions", l, c)
	}
}

func TestRegisterHashGenerator(t *testing.T) {
	require.Error(t, RegisterHashGenerator("md5", MD5{}))
	require.Error(t, RegisterHashGenerator("murmur3", MD5{}))
	require.Error(t, RegisterHashGenerator("", MD5{}))
	require.NoError(t, RegisterHashGenerator("test-md5-again", MD5{}))
	a, err := New(links("c", 4), &Options{Hash: "test-md5-again"})
	require.NoError(t, err)
	b, err := New(links("c", 4), nil)
	require.NoError(t, err)
	for i := 0; i < 1000; i++ {
		k := fmt.Sprint("k", i)
		x, _ := a.ResolveForCreate(k)
		y, _ := b.ResolveForCreate(k)
		require.Equal(t, y, x)
	}
	data, err := resolver.Marshal(a)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"hash":"test-md5-again"`)
}

func TestTieBreakKeepsLinkOrder(t *testing.T) {
	// A generator whose digests all collide puts every point at the same
	// place: the first link in the configured order owns everything.
	require.NoError(t, RegisterHashGenerator("test-constant", constantGen{}))
	r, err := New([]string{"dbs/a/colls/z", "dbs/a/colls/a"}, &Options{Hash: "test-constant"})
	require.NoError(t, err)
	l, err := r.ResolveForCreate("anything")
	require.NoError(t, err)
	assert.Equal(t, "dbs/a/colls/z", l)
}

type constantGen struct{}

func (constantGen) Size() int            { return 1 }
func (constantGen) Hash(_ []byte) Digest { return Digest{7} }

func TestConcurrentUse(t *testing.T) {
	r, err := New(links("c", 50), &Options{VirtualNodes: 64})
	require.NoError(t, err)
	b, err := New(links("c", 50), &Options{Strategy: StrategyBounded})
	require.NoError(t, err)
	want := map[string]string{}
	for i := 0; i < 500; i++ {
		k := fmt.Sprint("user-", i)
		want[k], _ = r.ResolveForCreate(k)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k, l := range want {
				got, err := r.ResolveForCreate(k)
				assert.NoError(t, err)
				assert.Equal(t, l, got)
				_, err = b.ResolveForRead(k)
				assert.NoError(t, err)
				_, err = resolver.Marshal(r)
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
}

// Adding a collection moves about 1/(n+1) of the keys with every strategy;
// the bounded strategy keeps its partition count fixed, so it moves little
// more than the ring does.
func TestAddingACollectionMovesFewKeys(t *testing.T) {
	const n, keys = 20, 40000
	for _, opts := range []Options{{}, {VirtualNodes: 160}, {Strategy: StrategyBounded}} {
		before, err := New(links("c", n), &opts)
		require.NoError(t, err)
		after, err := New(links("c", n+1), &opts)
		require.NoError(t, err)
		moved := 0
		newLink := links("c", n+1)[n]
		for k := 0; k < keys; k++ {
			key := fmt.Sprint("key-", k)
			x, _ := before.ResolveForCreate(key)
			y, _ := after.ResolveForCreate(key)
			if x != y {
				moved++
				if opts.Strategy == StrategyRing || opts.Strategy == "" {
					require.Equal(t, newLink, y, "on a ring keys only move to the new collection")
				}
			}
		}
		frac := float64(moved) / keys
		ideal := 1.0 / (n + 1)
		assert.Greater(t, frac, ideal/3, "%+v moved %.3f", opts, frac)
		assert.Less(t, frac, ideal*2.5, "%+v moved %.3f, ideal %.3f", opts, frac, ideal)
	}
}
