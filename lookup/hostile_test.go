package lookup_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/resolver"
)

// links is a JSON array of n collection links.
func links(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"dbs/a/colls/c%d"`, i)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// hostileDefinitions are the reproducers of issue 17 and the other hostile
// definitions (TestBadDefinitions runs them): each is refused before
// anything is built, with the field named.
func hostileDefinitions() []struct{ name, json, field, msg string } {
	maximalRing := fmt.Sprintf(`{"kind":"hash","collections":%s,"virtualNodes":65536}`, links(64))
	var rings []string
	for i := range 12 {
		rings = append(rings, fmt.Sprintf(`"t%d":%s`, i, maximalRing))
	}
	return []struct{ name, json, field, msg string }{
		// 19 KB: it took 277 s to place the partitions.
		{"bounded ring of minutes", fmt.Sprintf(`{"kind":"hash","strategy":"bounded","loadFactor":1,"partitionCount":1048576,"virtualNodes":6000,"collections":%s}`, links(640)), "", "units of work"},
		// 16 KB: 13 s and 1 GB, each ring within the per-ring cap.
		{"lookup of 12 maximal rings", `{"kind":"lookup","entries":{` + strings.Join(rings, ",") + `}}`, "entries.t1", "units of work"},
		{"duplicate field", `{"kind":"hash","collections":["dbs/a/colls/x"],"collections":["dbs/a/colls/y"]}`, "collections", "named twice"},
		{"duplicate nested field", `{"kind":"lookup","entries":{"eu":"dbs/a/colls/eu"},"default":{"kind":"hash","collections":["dbs/a/colls/x"],"virtualNodes":4,"virtualNodes":8}}`, "default.virtualNodes", "named twice"},
		{"NUL in a link", `{"kind":"hash","collections":["dbs/a/colls/x\u0000"]}`, "collections[0]", "NUL"},
		{"invalid UTF-8 in a link", "{\"kind\":\"hash\",\"collections\":[\"dbs/a/colls/x\xff\"]}", "collections[0]", "not valid UTF-8"},
		{"lone surrogate in a link", `{"kind":"hash","collections":["dbs/a/colls/x\ud800"]}`, "collections[0]", "lone surrogate"},
		{"lone low surrogate in an entry name", `{"kind":"lookup","entries":{"\udc00":"dbs/a/colls/x"}}`, "entries", "lone surrogate"},
	}
}

// A surrogate pair is a character, not a lone surrogate: the link decodes.
func TestSurrogatePairInALink(t *testing.T) {
	r, err := resolver.Unmarshal([]byte(`{"kind":"hash","collections":["dbs/a/colls/\ud83d\ude00"]}`))
	require.NoError(t, err)
	links, err := r.ResolveForRead(nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"dbs/a/colls/😀"}, links)
}

// The bounded strategy's own bound holds for resolvers built in Go too.
func TestBoundedWorkInNew(t *testing.T) {
	ls := make([]string, 640)
	for i := range ls {
		ls[i] = fmt.Sprintf("dbs/a/colls/c%d", i)
	}
	_, err := hashring.New(ls, &hashring.Options{PartitionKey: resolver.MustKeyDef("/id"), Strategy: hashring.StrategyBounded, LoadFactor: 1, PartitionCount: 1 << 20, VirtualNodes: 6000})
	require.ErrorIs(t, err, resolver.ErrInvalid)
	assert.ErrorContains(t, err, "partitionCount")
}

// FuzzResolverJSON: any text Unmarshal reads never panics, and within the
// tree-wide bound; what it accepts marshals to JSON it accepts again.
func FuzzResolverJSON(f *testing.F) {
	f.Add(`{"kind":"hash","collections":["dbs/a/colls/x"],"virtualNodes":4}`)
	f.Add(`{"kind":"lookup","entries":{"a":"dbs/a/colls/a","a":"dbs/a/colls/b"}}`)
	f.Add(`{"kind":"hash","strategy":"bounded","collections":["dbs/a/colls/x","dbs/a/colls/y"],"partitionCount":64}`)
	f.Add(`{"kind":"range","keyType":"string","ranges":[{"low":"a","high":"c","target":"dbs/a/colls/x\ud800"}]}`)
	f.Fuzz(func(t *testing.T, text string) {
		r, err := resolver.Unmarshal([]byte(text))
		if err != nil {
			return
		}
		out, err := resolver.Marshal(r)
		require.NoError(t, err)
		_, err = resolver.Unmarshal(out)
		require.NoError(t, err, "%s", out)
	})
}

// A tree or a ring refused for its work names the limit (its Go name and
// value), what the cost is made of, and the JSON settings to lower (issue
// 27, finding 10: the message said "the tree costs more than 4194304 units
// of work" and nothing else a user could act on).
func TestWorkErrorsNameTheLimitAndTheSettings(t *testing.T) {
	ring := `{"kind":"hash","collections":["dbs/a/colls/x","dbs/a/colls/y"],"virtualNodes":65536}`
	entries := func(n int) string {
		var es []string
		for i := range n {
			es = append(es, fmt.Sprintf(`"t%d":%s`, i, ring))
		}
		return `{"kind":"lookup","entries":{` + strings.Join(es, ",") + `}}`
	}
	cases := []struct {
		name, json, field string
		want              []string
	}{
		{"lookup of 33 rings of 2×65536 points", entries(33), "entries.t32", []string{
			"resolver.MaxWork = 4194304",
			"entries.t32, a ring of 2 collections × 65536 virtualNodes (kind hash), costs 131072",
			"on top of the 4194304 units of 32 × a ring of 2 collections × 65536 virtualNodes (kind hash, 131072 units each)",
			"Lower virtualNodes or the number of collections, or nest fewer resolvers",
		}},
		{"one bounded ring", fmt.Sprintf(`{"kind":"hash","strategy":"bounded","loadFactor":1,"partitionCount":1048576,"virtualNodes":6000,"collections":%s}`, links(640)), "", []string{
			"resolver.MaxWork = 4194304",
			"the resolver, a bounded ring of 640 collections × 6000 virtualNodes with partitionCount 1048576",
			"Lower partitionCount, virtualNodes or the number of collections",
		}},
		{"a ring past hashring.MaxPoints", fmt.Sprintf(`{"kind":"lookup","entries":{"a":{"kind":"hash","virtualNodes":65536,"collections":%s}}}`, links(65)), "entries.a", []string{
			"resolver.MaxWork = 4194304",
			"a ring of 65 collections × 65536 virtualNodes (kind hash), costs 4259840",
			"Lower virtualNodes or the number of collections",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resolver.Unmarshal([]byte(tc.json))
			require.ErrorIs(t, err, resolver.ErrInvalid)
			var ce *resolver.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.field, ce.Field)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// A ring built in Go is held to hashring's own caps, whose errors name the
// cap and the settings to lower too.
func TestRingCapErrorsNameTheLimitAndTheSettings(t *testing.T) {
	ls := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("dbs/a/colls/c%d", i)
		}
		return out
	}
	cases := []struct {
		name  string
		links []string
		opts  hashring.Options
		want  []string
	}{
		{"points", ls(65), hashring.Options{VirtualNodes: 65536}, []string{
			"65 collections × 65536 virtualNodes is 4259840 points, more than hashring.MaxPoints = 4194304",
			"lower virtualNodes or the number of collections",
		}},
		{"bounded placement", ls(640), hashring.Options{Strategy: hashring.StrategyBounded, LoadFactor: 1, PartitionCount: 1 << 20, VirtualNodes: 6000}, []string{
			"hashring.MaxBoundedWork = 17179869184",
			"lower partitionCount, virtualNodes or the number of collections",
		}},
		{"virtual nodes", ls(2), hashring.Options{VirtualNodes: 1 << 17}, []string{"hashring.MaxVirtualNodes"}},
		{"partitions", ls(2), hashring.Options{Strategy: hashring.StrategyBounded, PartitionCount: 1 << 21}, []string{"hashring.MaxPartitionCount"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := hashring.New(tc.links, &tc.opts)
			require.ErrorIs(t, err, resolver.ErrInvalid)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}
