package lookup_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/lookup"
	_ "github.com/docshard/docshard/rangeresolver"
	"github.com/docshard/docshard/resolver"
)

const tenants = `{"kind":"lookup","partitionKey":"/tenant",
 "entries":{"bigcorp":"dbs/app/colls/bigcorp","42":"dbs/app/colls/answer","megacorp":"dbs/app/colls/bigcorp"},
 "default":{"kind":"hash","collections":["dbs/app/colls/shared0","dbs/app/colls/shared1"]}}`

func TestTenantLookupWithRingDefault(t *testing.T) {
	r, err := resolver.Unmarshal([]byte(tenants))
	require.NoError(t, err)
	ring, err := hashring.New([]string{"dbs/app/colls/shared0", "dbs/app/colls/shared1"}, nil)
	require.NoError(t, err)

	for key, want := range map[any]string{
		"bigcorp":  "dbs/app/colls/bigcorp",
		"megacorp": "dbs/app/colls/bigcorp",
		"42":       "dbs/app/colls/answer",
		42:         "dbs/app/colls/answer", // numbers match by their canonical text
		42.0:       "dbs/app/colls/answer",
	} {
		got, err := r.ResolveForCreate(key)
		require.NoError(t, err, "%v", key)
		assert.Equal(t, want, got, "%v", key)
		read, err := r.ResolveForRead(key)
		require.NoError(t, err)
		assert.Equal(t, []string{want}, read)
	}
	for i := 0; i < 100; i++ {
		tenant := fmt.Sprint("small-", i)
		got, err := r.ResolveForCreate(tenant)
		require.NoError(t, err)
		want, _ := ring.ResolveForCreate(tenant)
		assert.Equal(t, want, got, "unlisted tenants go to the ring")
		read, err := r.ResolveForRead(tenant)
		require.NoError(t, err)
		assert.Equal(t, []string{want}, read)
	}
	all, err := r.ResolveForRead(nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"dbs/app/colls/answer", "dbs/app/colls/bigcorp", "dbs/app/colls/shared0", "dbs/app/colls/shared1"}, all)

	key, err := r.PartitionKey(map[string]any{"id": "1", "tenant": "bigcorp"})
	require.NoError(t, err)
	assert.Equal(t, "bigcorp", key)
	_, err = r.ResolveForCreate(true)
	assert.ErrorIs(t, err, resolver.ErrKeyType)
}

func TestNoEntryNoDefault(t *testing.T) {
	r, err := lookup.New(resolver.MustKeyDef("/region"), map[string]resolver.Target{
		"eu": resolver.LinkTarget("dbs/app/colls/eu"),
		"us": resolver.LinkTarget("dbs/app/colls/us"),
	}, resolver.Target{})
	require.NoError(t, err)
	_, err = r.ResolveForCreate("apac")
	require.ErrorIs(t, err, resolver.ErrNoTarget)
	assert.Contains(t, err.Error(), `"apac"`, "the error names the value")
	_, err = r.ResolveForRead("apac")
	require.ErrorIs(t, err, resolver.ErrNoTarget)
	_, err = r.ResolveForCreate(nil)
	require.ErrorIs(t, err, resolver.ErrNoPartitionKey)
	_, err = r.PartitionKey([]byte(`{"id":"1"}`))
	require.ErrorIs(t, err, resolver.ErrNoPartitionKey)
}

func TestBadDefinitions(t *testing.T) {
	cases := []struct{ name, json, field string }{
		{"nothing", `{"kind":"lookup","entries":{}}`, "entries"},
		{"bad link", `{"kind":"lookup","entries":{"eu":"eu"}}`, `entries["eu"]`},
		{"bad nested", `{"kind":"lookup","entries":{"eu":{"kind":"hash","collections":[]}}}`, `entries["eu"].collections`},
		{"bad default", `{"kind":"lookup","entries":{"eu":"dbs/a/colls/eu"},"default":{"kind":"hash","collections":["dbs/a/colls/x","dbs/a/colls/x"]}}`, "default.collections[1]"},
		{"default not target", `{"kind":"lookup","entries":{"eu":"dbs/a/colls/eu"},"default":7}`, "default"},
		{"unknown field", `{"kind":"lookup","entries":{"eu":"dbs/a/colls/eu"},"fallback":"dbs/a/colls/x"}`, "fallback"},
		{"entries not object", `{"kind":"lookup","entries":["dbs/a/colls/eu"]}`, "entries"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resolver.Unmarshal([]byte(tc.json))
			require.Error(t, err)
			var ce *resolver.ConfigError
			require.True(t, errors.As(err, &ce), "%T %v", err, err)
			assert.Equal(t, tc.field, ce.Field, "%v", err)
		})
	}
}

// randomTree builds a random resolver tree of lookups, ranges and rings.
func randomTree(rng *rand.Rand, depth int, next *int) string {
	newLink := func() string { *next++; return fmt.Sprintf(`"dbs/app/colls/c%d"`, *next) }
	target := func() string {
		if depth < 3 && rng.IntN(3) == 0 {
			return randomTree(rng, depth+1, next)
		}
		return newLink()
	}
	pk := ""
	if depth == 0 {
		pk = `"partitionKey":"/k",`
	}
	switch rng.IntN(3) {
	case 0:
		s := `{"kind":"lookup",` + pk + `"entries":{`
		for i, n := 0, 1+rng.IntN(4); i < n; i++ {
			if i > 0 {
				s += ","
			}
			s += fmt.Sprintf(`"v%d":%s`, i, target())
		}
		s += "}"
		if rng.IntN(2) == 0 {
			s += `,"default":` + target()
		}
		return s + "}"
	case 1:
		s := `{"kind":"range",` + pk + `"keyType":"string","ranges":[`
		for i, n := 0, 1+rng.IntN(4); i < n; i++ {
			if i > 0 {
				s += ","
			}
			s += fmt.Sprintf(`{"low":"v%d","high":"v%d~","target":%s}`, i, i, target())
		}
		s += "]"
		if rng.IntN(2) == 0 {
			s += `,"default":` + target()
		}
		return s + "}"
	default:
		s := `{"kind":"hash",` + pk + `"collections":[`
		for i, n := 0, 1+rng.IntN(4); i < n; i++ {
			if i > 0 {
				s += ","
			}
			s += newLink()
		}
		return s + fmt.Sprintf(`],"virtualNodes":%d,"hash":"%s"}`, 1+rng.IntN(200), []string{"md5", "murmur3", "xxhash", "dotnet-x64", "dotnet-x86"}[rng.IntN(5)])
	}
}

func TestRandomTreesRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := 0; round < 300; round++ {
		next := 0
		src := randomTree(rng, 0, &next)
		r, err := resolver.Unmarshal([]byte(src))
		require.NoError(t, err, src)
		data, err := resolver.Marshal(r)
		require.NoError(t, err)
		back, err := resolver.Unmarshal(data)
		require.NoError(t, err, "%s", data)
		again, err := resolver.Marshal(back)
		require.NoError(t, err)
		require.Equal(t, string(data), string(again), "every setting survives")
		all1, err := r.ResolveForRead(nil)
		require.NoError(t, err)
		all2, err := back.ResolveForRead(nil)
		require.NoError(t, err)
		require.Equal(t, all1, all2)
		require.Len(t, all1, len(resolver.UnionLinks(all1)), "each link once")
		for k := 0; k < 50; k++ {
			key := fmt.Sprintf("v%d%s", rng.IntN(5), []string{"", "x", "~~"}[rng.IntN(3)])
			x, errX := r.ResolveForCreate(key)
			y, errY := back.ResolveForCreate(key)
			require.Equal(t, errX == nil, errY == nil)
			require.Equal(t, x, y, "%q in %s", key, data)
			if errX == nil {
				reads, err := r.ResolveForRead(key)
				require.NoError(t, err)
				assert.Contains(t, reads, x, "a read finds where a create put it")
			}
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	r, err := resolver.Unmarshal([]byte(tenants))
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				_, err := r.ResolveForCreate(fmt.Sprint("t", i))
				assert.NoError(t, err)
				got, err := r.ResolveForCreate("bigcorp")
				assert.NoError(t, err)
				assert.Equal(t, "dbs/app/colls/bigcorp", got)
			}
		}()
	}
	wg.Wait()
}

func BenchmarkResolveForCreate(b *testing.B) {
	r, err := resolver.Unmarshal([]byte(tenants))
	if err != nil {
		b.Fatal(err)
	}
	for _, key := range []string{"bigcorp", "small-tenant"} {
		var k any = key
		b.Run(key, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := r.ResolveForCreate(k); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func ExampleNew() {
	ring, _ := hashring.New([]string{"dbs/app/colls/shared0", "dbs/app/colls/shared1"}, nil)
	r, _ := lookup.New(resolver.MustKeyDef("/tenant"), map[string]resolver.Target{
		"bigcorp": resolver.LinkTarget("dbs/app/colls/bigcorp"),
	}, resolver.ResolverTarget(ring))
	for _, tenant := range []string{"bigcorp", "acme"} {
		link, _ := r.ResolveForCreate(tenant)
		fmt.Println(tenant, link)
	}
	data, _ := resolver.Marshal(r)
	fmt.Println(string(data))
	// Output:
	// bigcorp dbs/app/colls/bigcorp
	// acme dbs/app/colls/shared1
	// {"kind":"lookup","partitionKey":"/tenant","entries":{"bigcorp":"dbs/app/colls/bigcorp"},"default":{"kind":"hash","collections":["dbs/app/colls/shared0","dbs/app/colls/shared1"],"virtualNodes":16,"hash":"md5"}}
}
