package spillover_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/rangeresolver"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/resolver/resolvertest"
	"github.com/docshard/docshard/spillover"
	"github.com/docshard/docshard/store"
)

func TestDecodeRefusesBadConfig(t *testing.T) {
	cases := []struct {
		name, json, field string
	}{
		{"limit 0", `{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log0"],"collectionPrefix":"log","maxDocuments":0,"fillRatio":0.9}`, "maxDocuments"},
		{"negative limit", `{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log0"],"collectionPrefix":"log","maxDocuments":-5}`, "maxDocuments"},
		{"no limit", `{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log0"],"collectionPrefix":"log"}`, "maxDocuments"},
		{"bytes 0", `{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log0"],"collectionPrefix":"log","maxBytes":0}`, "maxBytes"},
		{"fill ratio 0", `{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log0"],"collectionPrefix":"log","maxDocuments":10,"fillRatio":0}`, "fillRatio"},
		{"fill ratio above 1", `{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log0"],"collectionPrefix":"log","maxDocuments":10,"fillRatio":1.01}`, "fillRatio"},
		{"fill ratio negative", `{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log0"],"collectionPrefix":"log","maxDocuments":10,"fillRatio":-0.5}`, "fillRatio"},
		{"no prefix", `{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log0"],"maxDocuments":10}`, "collectionPrefix"},
		{"prefix with slash", `{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log0"],"collectionPrefix":"a/b","maxDocuments":10}`, "collectionPrefix"},
		{"prefix of docshard's own", `{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/_x0"],"collectionPrefix":"_x","maxDocuments":10}`, "collectionPrefix"},
		{"collection off prefix", `{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/events0"],"collectionPrefix":"log","maxDocuments":10}`, "collections[0]"},
		{"gap", `{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log0","dbs/app/colls/log2"],"collectionPrefix":"log","maxDocuments":10}`, "collections[1]"},
		{"leading zero", `{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log01"],"collectionPrefix":"log","maxDocuments":10}`, "collections[0]"},
		{"two databases", `{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log0","dbs/other/colls/log1"],"collectionPrefix":"log","maxDocuments":10}`, "collections[1]"},
		{"no collections", `{"kind":"spillover","partitionKey":"/id","collections":[],"collectionPrefix":"log","maxDocuments":10}`, "collections"},
		{"unknown field", `{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log0"],"collectionPrefix":"log","maxDocuments":10,"limit":3}`, "limit"},
		{"range type alone", `{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log0"],"collectionPrefix":"log","maxDocuments":10,"rangeType":"time"}`, "rangeType"},
		{"range type wrong", `{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log0"],"collectionPrefix":"log","maxDocuments":10,"rangeKey":"/ts","rangeType":"date"}`, "rangeType"},
		{"bounds of the newest", `{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log0"],"collectionPrefix":"log","maxDocuments":10,"rangeKey":"/n","rangeType":"number","ranges":[{"target":"dbs/app/colls/log0","low":1,"high":2}]}`, "ranges[0].target"},
		{"bounds of the wrong type", `{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log0","dbs/app/colls/log1"],"collectionPrefix":"log","maxDocuments":10,"rangeKey":"/n","rangeType":"number","ranges":[{"target":"dbs/app/colls/log0","low":"a","high":2}]}`, "ranges[0].low"},
		{"template on another path", `{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log0"],"collectionPrefix":"log","maxDocuments":10,"template":{"partitionKeyPath":"/x"}}`, "template.partitionKeyPath"},
		{"template with a quota", `{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log0"],"collectionPrefix":"log","maxDocuments":10,"template":{"quota":{"maxDocuments":5}}}`, "template.quota"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resolver.Unmarshal([]byte(tc.json))
			resolvertest.ConfigError(t, err, tc.field, "")
		})
	}
}

func TestJSONRoundTrip(t *testing.T) {
	for _, text := range []string{
		`{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log0"],"collectionPrefix":"log","maxDocuments":1000000,"fillRatio":0.9}`,
		`{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log3","dbs/app/colls/log4"],"collectionPrefix":"log","maxBytes":1048576,"fillRatio":1,"template":{"defaultTtl":3600},"rangeKey":"/at","rangeType":"time","ranges":[{"target":"dbs/app/colls/log3","low":"2026-01-01T00:00:00Z","high":"2026-01-02T00:00:00Z"}]}`,
	} {
		r, err := resolver.Unmarshal([]byte(text))
		require.NoError(t, err)
		out, err := resolver.Marshal(r)
		require.NoError(t, err)
		assert.JSONEq(t, text, string(out))
	}
	// The limit is the template's quota, which the JSON leaves out.
	r, err := resolver.Unmarshal([]byte(`{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log0"],"collectionPrefix":"log","maxDocuments":7,"maxBytes":900,"fillRatio":0.5,"template":{"defaultTtl":60}}`))
	require.NoError(t, err)
	tmpl := r.(*spillover.Resolver).Template()
	require.NotNil(t, tmpl.Quota)
	assert.Equal(t, store.Quota{MaxDocuments: 7, MaxBytes: 900}, *tmpl.Quota, "collections are created with the limit as their quota")
	var prov store.CollectionSpec
	require.NoError(t, json.Unmarshal(r.(resolver.Provisioner).Provision().Template, &prov))
	assert.Equal(t, tmpl.Quota, prov.Quota, "a router creating the newest collection gives it the quota too")
	next, err := r.(*spillover.Resolver).WithNext()
	require.NoError(t, err)
	assert.Equal(t, tmpl.Quota, next.Template().Quota)
	out, err := resolver.Marshal(next)
	require.NoError(t, err)
	assert.NotContains(t, string(out), "quota")

	// fillRatio left out means the default, written out.
	r, err = resolver.Unmarshal([]byte(`{"kind":"spillover","partitionKey":"/id","collections":["dbs/app/colls/log0"],"collectionPrefix":"log","maxDocuments":5}`))
	require.NoError(t, err)
	assert.Equal(t, spillover.DefaultFillRatio, r.(*spillover.Resolver).FillRatio())
}

func TestResolve(t *testing.T) {
	r, err := spillover.New([]string{"dbs/app/colls/log0", "dbs/app/colls/log1", "dbs/app/colls/log2"}, &spillover.Options{
		PartitionKey: resolver.MustKeyDef("/id"), CollectionPrefix: "log", MaxDocuments: 100, FillRatio: 0.5,
		RangeKey: resolver.MustKeyDef("/at"), RangeType: spillover.RangeTime,
		Ranges: []spillover.Bounds{
			{Target: "dbs/app/colls/log0", Low: json.RawMessage(`"2026-01-01T00:00:00Z"`), High: json.RawMessage(`"2026-01-10T00:00:00Z"`)},
			{Target: "dbs/app/colls/log1", Low: json.RawMessage(`"2026-01-09T00:00:00+02:00"`), High: json.RawMessage(`"2026-01-20T00:00:00Z"`)},
		}})
	require.NoError(t, err)
	l, err := r.ResolveForCreate("anything")
	require.NoError(t, err)
	assert.Equal(t, "dbs/app/colls/log2", l)
	_, err = r.ResolveForCreate(nil)
	assert.ErrorIs(t, err, resolver.ErrNoPartitionKey)
	all, err := r.ResolveForRead("k")
	require.NoError(t, err)
	assert.Equal(t, []string{"dbs/app/colls/log2", "dbs/app/colls/log1", "dbs/app/colls/log0"}, all)
	assert.Equal(t, "dbs/app/colls/log3", r.NextLink())
	assert.True(t, r.Full(50, 0))
	assert.False(t, r.Full(49, 1<<40))

	day := func(d int) time.Time { return time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC) }
	for _, tc := range []struct {
		lo, hi int
		want   []string
	}{
		{2, 3, []string{"dbs/app/colls/log2", "dbs/app/colls/log0"}},
		{15, 16, []string{"dbs/app/colls/log2", "dbs/app/colls/log1"}},
		{9, 9, []string{"dbs/app/colls/log2", "dbs/app/colls/log1", "dbs/app/colls/log0"}}, // log1 starts at 8 Jan 22:00 UTC
		{25, 26, []string{"dbs/app/colls/log2"}},
	} {
		got, err := r.ResolveForRead(rangeresolver.Range[time.Time]{Low: day(tc.lo), High: day(tc.hi)})
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%d to %d January", tc.lo, tc.hi)
	}
	_, err = r.ResolveForRead(rangeresolver.Range[float64]{Low: 1, High: 2})
	assert.ErrorIs(t, err, resolver.ErrKeyType)

	next, err := r.WithNext()
	require.NoError(t, err)
	assert.Equal(t, "dbs/app/colls/log3", next.Newest())
	assert.Equal(t, []string{"dbs/app/colls/log2"}, next.Unmeasured())
}
