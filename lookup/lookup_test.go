package lookup_test

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/lookup"
	"github.com/docshard/docshard/rangeresolver"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/resolver/resolvertest"
)

func coll(s string) string           { return "dbs/app/colls/" + s }
func to(s string) resolver.Target    { return resolver.LinkTarget(coll(s)) }
func colls(names ...string) []string { return mapNames(names, coll) }

func mapNames(names []string, f func(string) string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = f(n)
	}
	return out
}

// tenants is the lookup of docs/design.md#resolver-json with two more entries: a number and a
// second value sharing bigcorp's collection.
const tenants = `{"kind":"lookup","partitionKey":"/tenant",
 "entries":{"bigcorp":"dbs/app/colls/bigcorp","42":"dbs/app/colls/answer","megacorp":"dbs/app/colls/bigcorp"},
 "default":{"kind":"hash","collections":["dbs/app/colls/shared0","dbs/app/colls/shared1"]}}`

func TestTenantLookupWithRingDefault(t *testing.T) {
	r, err := resolver.Unmarshal([]byte(tenants))
	require.NoError(t, err)
	ring, err := hashring.New(colls("shared0", "shared1"), nil)
	require.NoError(t, err)

	resolvertest.Places(t, r, coll, resolvertest.Cases{
		{"bigcorp", "bigcorp"},
		{"megacorp", "bigcorp"},
		{"42", "answer"},
		{42, "answer"}, // numbers match by their canonical text
		{42.0, "answer"},
		{uint8(42), "answer"},
		{json.Number("4.2e1"), "answer"},
	})
	for i := 0; i < 100; i++ {
		for _, tenant := range []any{fmt.Sprint("small-", i), i, float64(i) + 0.5} {
			if tenant == 42 {
				continue
			}
			got, err := r.ResolveForCreate(tenant)
			require.NoError(t, err)
			want, err := ring.ResolveForCreate(tenant)
			require.NoError(t, err)
			assert.Equal(t, want, got, "unlisted tenants go to the ring: %v", tenant)
			read, err := r.ResolveForRead(tenant)
			require.NoError(t, err)
			assert.Equal(t, []string{want}, read)
		}
	}
	all, err := r.ResolveForRead(nil)
	require.NoError(t, err)
	assert.Equal(t, colls("answer", "bigcorp", "shared0", "shared1"), all, "sorted entry names (\"42\" < \"bigcorp\"), then the default, each once")

	key, err := r.PartitionKey(map[string]any{"id": "1", "tenant": "bigcorp"})
	require.NoError(t, err)
	assert.Equal(t, "bigcorp", key)
	key, err = r.PartitionKey([]byte(`{"id":"1","tenant":42}`))
	require.NoError(t, err)
	got, err := r.ResolveForCreate(key)
	require.NoError(t, err)
	assert.Equal(t, coll("answer"), got, "a number read from raw JSON finds its entry")
	_, err = r.PartitionKey([]byte(`{"id":"1"}`))
	assert.ErrorIs(t, err, resolver.ErrNoPartitionKey)
	assert.ErrorContains(t, err, "/tenant")
}

func TestCanonicalText(t *testing.T) {
	r, err := lookup.New(resolver.MustKeyDef("/region", "/shard"), map[string]resolver.Target{
		"7":          to("seven"),
		"1.5":        to("one-and-a-half"),
		"1e+21":      to("big"),
		"1.0":        to("text-1.0"),
		"-0.000001":  to("tiny"),
		`["eu",42]`:  to("eu42"),
		`["eu","x"]`: to("eux"),
		"":           to("empty"),
	}, resolver.Target{})
	require.NoError(t, err)
	resolvertest.Places(t, r, coll, resolvertest.Cases{
		{7, "seven"}, {int64(7), "seven"}, {7.0, "seven"}, {float32(7), "seven"}, {json.Number("7.00"), "seven"}, {"7", "seven"},
		{1.5, "one-and-a-half"}, {float32(1.5), "one-and-a-half"}, {"1.5", "one-and-a-half"},
		{1e21, "big"}, {json.Number("1000000000000000000000"), "big"},
		{"1.0", "text-1.0"}, {1.0, ""}, // the number 1 is "1"
		{-1e-6, "tiny"},
		{resolver.CompositeKey{"eu", 42}, "eu42"}, {resolver.CompositeKey{"eu", 42.0}, "eu42"}, {[]any{"eu", "x"}, "eux"},
		{resolver.CompositeKey{"eu", "42"}, ""},
		{"", "empty"},
		{"07", ""}, {8, ""},
		{true, "type"}, {resolver.Null, "type"}, {time.Now(), "type"}, {map[string]any{}, "type"},
		{math.NaN(), "type"}, {math.Inf(1), "type"}, {resolver.CompositeKey{}, "type"},
		{rangeresolver.Range[string]{Low: "a", High: "b"}, "type"},
	})
	key, err := r.PartitionKey([]byte(`{"region":"eu","shard":42}`))
	require.NoError(t, err)
	got, err := r.ResolveForCreate(key)
	require.NoError(t, err)
	assert.Equal(t, coll("eu42"), got, "a composite key from a document")
}

func TestNoEntryNoDefault(t *testing.T) {
	r, err := lookup.New(resolver.MustKeyDef("/region"), map[string]resolver.Target{
		"eu": to("eu"),
		"us": to("us"),
	}, resolver.Target{})
	require.NoError(t, err)
	_, err = r.ResolveForCreate("apac")
	require.ErrorIs(t, err, resolver.ErrNoTarget)
	assert.EqualError(t, err, `resolver: no collection for partition key: key "apac" (string): no entry for this value and no default`)
	_, err = r.ResolveForRead("apac")
	require.ErrorIs(t, err, resolver.ErrNoTarget)
	_, err = r.ResolveForCreate(12)
	assert.ErrorContains(t, err, "key 12 (int)")
	_, err = r.ResolveForCreate(nil)
	require.ErrorIs(t, err, resolver.ErrNoPartitionKey)
	_, err = r.ResolveForRead(true)
	require.ErrorIs(t, err, resolver.ErrKeyType)
	all, err := r.ResolveForRead(nil)
	require.NoError(t, err)
	assert.Equal(t, colls("eu", "us"), all)
}

func TestNestedTargets(t *testing.T) {
	ring, err := hashring.New(colls("s0", "s1", "s2"), &hashring.Options{VirtualNodes: 160})
	require.NoError(t, err)
	regions, err := lookup.New(resolver.KeyDef{}, map[string]resolver.Target{"vip": to("vip")}, resolver.ResolverTarget(ring))
	require.NoError(t, err)
	byLetter, err := rangeresolver.New(resolver.KeyDef{}, []rangeresolver.Entry[string]{
		{Range: rangeresolver.Range[string]{Low: "a", High: "m~"}, Target: to("am")},
		{Range: rangeresolver.Range[string]{Low: "n", High: "z~"}, Target: to("nz")},
	}, resolver.Target{})
	require.NoError(t, err)
	r, err := lookup.New(resolver.MustKeyDef("/tenant"), map[string]resolver.Target{
		"bigcorp": to("bigcorp"),
		"vip":     resolver.ResolverTarget(regions), // a lookup in a lookup: the same key
		"letters": resolver.ResolverTarget(byLetter),
	}, resolver.ResolverTarget(regions))
	require.NoError(t, err)
	got, err := r.ResolveForCreate("vip")
	require.NoError(t, err)
	assert.Equal(t, coll("vip"), got)
	want, _ := ring.ResolveForCreate("acme")
	got, err = r.ResolveForCreate("acme")
	require.NoError(t, err)
	assert.Equal(t, want, got)
	got, err = r.ResolveForCreate("letters")
	require.NoError(t, err)
	assert.Equal(t, coll("am"), got, "the nested range places the same key")
	reads, err := r.ResolveForRead("acme")
	require.NoError(t, err)
	assert.Equal(t, []string{want}, reads)
	all, err := r.ResolveForRead(nil)
	require.NoError(t, err)
	assert.Equal(t, colls("bigcorp", "am", "nz", "vip", "s0", "s1", "s2"), all, "bigcorp < letters < vip, then the default; vip listed once")
}

func TestNewValues(t *testing.T) {
	byID, err := lookup.NewValues(resolver.MustKeyDef("/shard"), map[int]resolver.Target{1: to("a"), 2: to("b"), 1000000: to("c")}, resolver.Target{})
	require.NoError(t, err)
	assert.Equal(t, []string{"1", "1000000", "2"}, byID.Names())
	got, err := byID.ResolveForCreate(json.Number("1e6"))
	require.NoError(t, err)
	assert.Equal(t, coll("c"), got)

	mixed, err := lookup.NewValues(resolver.KeyDef{}, map[any]resolver.Target{"eu": to("eu"), 1.5: to("x"), uint64(3): to("y")}, to("d"))
	require.NoError(t, err)
	assert.Equal(t, []string{"1.5", "3", "eu"}, mixed.Names())

	_, err = lookup.NewValues(resolver.KeyDef{}, map[any]resolver.Target{1: to("a"), 1.0: to("b")}, resolver.Target{})
	var ce *resolver.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, `entries["1"]`, ce.Field)
	assert.EqualError(t, err, `resolver: invalid definition: entries["1"]: the values 1 (float64) and 1 (int) share this canonical text`)
	_, err = lookup.NewValues(resolver.KeyDef{}, map[any]resolver.Target{"42": to("a"), 42: to("b")}, resolver.Target{})
	assert.ErrorContains(t, err, "share this canonical text")
	_, err = lookup.NewValues(resolver.KeyDef{}, map[any]resolver.Target{true: to("a")}, resolver.Target{})
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "entries[true]", ce.Field)
	assert.ErrorIs(t, err, resolver.ErrKeyType)
	assert.ErrorIs(t, err, resolver.ErrInvalid)
	_, err = lookup.NewValues(resolver.KeyDef{}, map[float64]resolver.Target{math.NaN(): to("a")}, resolver.Target{})
	assert.ErrorIs(t, err, resolver.ErrInvalid)
}

func TestConstructorErrors(t *testing.T) {
	ring, err := hashring.New(colls("s0"), nil)
	require.NoError(t, err)
	cases := []struct {
		name    string
		entries map[string]resolver.Target
		def     resolver.Target
		field   string
		msg     string
	}{
		{"nothing", nil, resolver.Target{}, "entries", "at least one entry or a default"},
		{"empty target", map[string]resolver.Target{"eu": {}}, resolver.Target{}, `entries["eu"]`, "missing"},
		{"bad link", map[string]resolver.Target{"eu": resolver.LinkTarget("eu")}, resolver.Target{}, `entries["eu"]`, "collection link"},
		{"link and resolver", map[string]resolver.Target{"eu": {Link: coll("eu"), Resolver: ring}}, resolver.Target{}, `entries["eu"]`, "not both"},
		{"invalid UTF-8", map[string]resolver.Target{"e\xffu": to("eu")}, resolver.Target{}, `entries["e\xffu"]`, "UTF-8"},
		{"bad default", map[string]resolver.Target{"eu": to("eu")}, resolver.LinkTarget("dbs/x/colls/"), "default", "collection link"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := lookup.New(resolver.KeyDef{}, tc.entries, tc.def)
			resolvertest.ConfigError(t, err, tc.field, tc.msg)
		})
	}
	// The default alone is a lookup: every value to one place, entries to come.
	r, err := lookup.New(resolver.KeyDef{}, nil, to("all"))
	require.NoError(t, err)
	got, err := r.ResolveForCreate("x")
	require.NoError(t, err)
	assert.Equal(t, coll("all"), got)
	data, err := resolver.Marshal(r)
	require.NoError(t, err)
	assert.Equal(t, `{"kind":"lookup","entries":{},"default":"dbs/app/colls/all"}`, string(data))
}

func TestAccessors(t *testing.T) {
	in := map[string]resolver.Target{"eu": to("eu"), "us": to("us")}
	r, err := lookup.New(resolver.MustKeyDef("/region"), in, to("d"))
	require.NoError(t, err)
	in["apac"] = to("apac")
	assert.Equal(t, 2, r.Len(), "New copies its map")
	e := r.Entries()
	e["eu"] = to("changed")
	assert.Equal(t, coll("eu"), r.Entries()["eu"].Link, "Entries is a copy")
	assert.Equal(t, []string{"eu", "us"}, r.Names())
	assert.Equal(t, coll("d"), r.Default().Link)
	assert.Equal(t, []string{"/region"}, r.KeyDef().Paths())
	assert.Equal(t, lookup.Kind, r.Kind())
	tg, err := r.Lookup("us")
	require.NoError(t, err)
	assert.Equal(t, coll("us"), tg.Link)
	tg, err = r.Lookup("apac")
	require.NoError(t, err)
	assert.Equal(t, coll("d"), tg.Link, "the default")
}

func TestJSONForms(t *testing.T) {
	for _, tc := range []struct{ in, out string }{
		{ // docs/design.md#resolver-json's form; the ring writes its defaults
			`{"kind": "lookup", "partitionKey": "/tenant", "entries": {"bigcorp": "dbs/app/colls/bigcorp"},
			  "default": {"kind": "hash", "collections": ["dbs/app/colls/shared0", "dbs/app/colls/shared1"]}}`,
			`{"kind":"lookup","partitionKey":"/tenant","entries":{"bigcorp":"dbs/app/colls/bigcorp"},"default":{"kind":"hash","collections":["dbs/app/colls/shared0","dbs/app/colls/shared1"],"virtualNodes":16,"hash":"md5"}}`,
		},
		{ // entries sorted by name; null default and partitionKey mean none; composite names kept
			`{"kind":"lookup","partitionKey":null,"entries":{"z":"dbs/a/colls/z","[\"eu\",42]":"dbs/a/colls/e","10":"dbs/a/colls/t","9":"dbs/a/colls/n"},"default":null}`,
			`{"kind":"lookup","entries":{"10":"dbs/a/colls/t","9":"dbs/a/colls/n","[\"eu\",42]":"dbs/a/colls/e","z":"dbs/a/colls/z"}}`,
		},
		{ // a composite partitionKey and an escaped name
			`{"kind":"lookup","partitionKey":["/region","/\"user id\""],"entries":{"a\u00e9<>":"dbs/a/colls/x"},"default":"dbs/a/colls/d"}`,
			`{"kind":"lookup","partitionKey":["/region","/\"user id\""],"entries":{"aé\u003c\u003e":"dbs/a/colls/x"},"default":"dbs/a/colls/d"}`,
		},
		{ // no entries member at all
			`{"kind":"lookup","default":"dbs/a/colls/d"}`,
			`{"kind":"lookup","entries":{},"default":"dbs/a/colls/d"}`,
		},
	} {
		resolvertest.RoundTrip(t, tc.in, tc.out)
	}
}

func TestBadDefinitions(t *testing.T) {
	cases := []struct{ name, json, field, msg string }{
		{"malformed", `{"kind":"lookup","entries":{"eu":"dbs/a/colls/eu"`, "", "malformed JSON"},
		{"malformed entries", `{"kind":"lookup","entries":{"eu" "dbs/a/colls/eu"}}`, "", "malformed JSON"},
		{"not an object", `["lookup"]`, "", "JSON object"},
		{"nothing", `{"kind":"lookup","entries":{}}`, "entries", "at least one entry or a default"},
		{"nothing at all", `{"kind":"lookup"}`, "entries", "at least one entry or a default"},
		{"unknown field", `{"kind":"lookup","entries":{"eu":"dbs/a/colls/eu"},"fallback":"dbs/a/colls/x"}`, "fallback", "unknown field"},
		{"entries not object", `{"kind":"lookup","entries":["dbs/a/colls/eu"]}`, "entries", "JSON object"},
		{"entry written twice", `{"kind":"lookup","entries":{"eu":"dbs/a/colls/eu","us":"dbs/a/colls/us","eu":"dbs/a/colls/eu2"}}`, `entries.eu`, "named twice"},
		{"null entry", `{"kind":"lookup","entries":{"eu":null}}`, `entries["eu"]`, "missing"},
		{"bad link", `{"kind":"lookup","entries":{"eu":"eu"}}`, `entries["eu"]`, "collection link"},
		{"number target", `{"kind":"lookup","entries":{"eu":7}}`, `entries["eu"]`, "a target is"},
		{"bad nested", `{"kind":"lookup","entries":{"eu":{"kind":"hash","collections":[]}}}`, `entries["eu"].collections`, "at least one"},
		{"nested unknown kind", `{"kind":"lookup","entries":{"eu":{"kind":"spill"}}}`, `entries["eu"].kind`, "unknown kind"},
		{"nested no kind", `{"kind":"lookup","entries":{"eu":{"collections":[]}}}`, `entries["eu"].kind`, "missing"},
		{"duplicate links in ring", `{"kind":"lookup","entries":{"eu":"dbs/a/colls/eu"},"default":{"kind":"hash","collections":["dbs/a/colls/x","dbs/a/colls/x"]}}`, "default.collections[1]", "duplicate link"},
		{"absurd virtual nodes", `{"kind":"lookup","entries":{"eu":"dbs/a/colls/eu"},"default":{"kind":"hash","collections":["dbs/a/colls/x"],"virtualNodes":100000000}}`, "default.virtualNodes", "want 1 to"},
		{"nested overlap", `{"kind":"lookup","entries":{"eu":{"kind":"range","keyType":"string","ranges":[{"low":"a","high":"c","target":"dbs/a/colls/x"},{"low":"b","high":"d","target":"dbs/a/colls/y"}]}}}`, `entries["eu"].ranges[1]`, "overlaps ranges[0]"},
		{"deep", `{"kind":"lookup","entries":{"a":{"kind":"lookup","entries":{"b":{"kind":"lookup","entries":{"c":"c"}}}}}}`, `entries["a"].entries["b"].entries["c"]`, "collection link"},
		{"default not target", `{"kind":"lookup","entries":{"eu":"dbs/a/colls/eu"},"default":7}`, "default", "a target is"},
		{"bad partition key", `{"kind":"lookup","partitionKey":"tenant","entries":{"eu":"dbs/a/colls/eu"}}`, "partitionKey", "want '/'"},
		{"partition key type", `{"kind":"lookup","partitionKey":5,"entries":{"eu":"dbs/a/colls/eu"}}`, "partitionKey", "path string"},
		{"entry name type", `{"kind":"lookup","entries":5}`, "entries", "JSON object"},
		{"kind written twice", `{"kind":"lookup","entries":{"eu":"dbs/a/colls/eu"},"kind":"lookup","entries":5}`, "kind", "named twice"},
	}
	cases = append(cases, hostileDefinitions()...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resolver.Unmarshal([]byte(tc.json))
			resolvertest.ConfigError(t, err, tc.field, tc.msg)
		})
	}
}

func TestConcurrentUse(t *testing.T) {
	r, err := resolver.Unmarshal([]byte(tenants))
	require.NoError(t, err)
	ring, err := hashring.New(colls("shared0", "shared1"), nil)
	require.NoError(t, err)
	resolvertest.Concurrently(300, func(i int) {
		tenant := fmt.Sprint("t", i)
		got, err := r.ResolveForCreate(tenant)
		assert.NoError(t, err)
		want, _ := ring.ResolveForCreate(tenant)
		assert.Equal(t, want, got)
		got, err = r.ResolveForCreate("bigcorp")
		assert.NoError(t, err)
		assert.Equal(t, coll("bigcorp"), got)
		all, err := r.ResolveForRead(nil)
		assert.NoError(t, err)
		assert.Len(t, all, 4)
		_, err = resolver.Marshal(r)
		assert.NoError(t, err)
	})
}

// TestDeepTrees: a tree nested as deep as MaxNesting allows decodes and
// places keys; a deeper one is refused at once, before any nested
// resolver is decoded (each level re-reads its own text, so an unbounded
// depth would cost time quadratic in the document's size).
func TestDeepTrees(t *testing.T) {
	tree := func(levels int) string {
		level := `{"kind":"lookup","partitionKey":"/t","entries":{"a%d":"dbs/x/colls/a%d"},"default":`
		var b strings.Builder
		for i := range levels {
			fmt.Fprintf(&b, level, i, i)
		}
		b.WriteString(`"dbs/x/colls/last"`)
		b.WriteString(strings.Repeat("}", levels))
		return b.String()
	}
	// Each lookup level nests one object (its default); its entries one
	// more at the bottom.
	r, err := resolver.Unmarshal([]byte(tree(resolver.MaxNesting - 1)))
	require.NoError(t, err)
	l, err := r.ResolveForCreate("a40")
	require.NoError(t, err)
	assert.Equal(t, "dbs/x/colls/a40", l)
	l, err = r.ResolveForCreate("zzz")
	require.NoError(t, err)
	assert.Equal(t, "dbs/x/colls/last", l)

	_, err = resolver.Unmarshal([]byte(tree(resolver.MaxNesting + 1)))
	require.ErrorIs(t, err, resolver.ErrInvalid)
	assert.Contains(t, err.Error(), "levels deep")

	// 20,000 levels (1.6 MB) took minutes to decode before the bound;
	// now the depth is measured first, in one pass.
	_, err = resolver.Unmarshal([]byte(tree(20000)))
	require.ErrorIs(t, err, resolver.ErrInvalid)
	assert.Contains(t, err.Error(), "20001 levels deep")
}
