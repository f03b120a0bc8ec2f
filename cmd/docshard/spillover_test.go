package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/cosmos"
	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/spillover"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// TestLoadSpillover: docshard load fills a spillover database end to end:
// collections are opened in sequence as the newest fills, and every
// document is read back once.
func TestLoadSpillover(t *testing.T) {
	dir := t.TempDir()
	cfg := embedded(t, dir, `
databases:
  - link: dbs/app
    resolver: {kind: spillover, partitionKey: /id, collections: [dbs/app/colls/log0], collectionPrefix: log, maxDocuments: 400, fillRatio: 0.5, template: {defaultTtl: -1}}
`)
	var lines strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&lines, `{"id":"e%d","n":%d}`+"\n", i, i)
	}
	errOut := requireLoad(t, lines.String(), 2000, "dbs/app", "-c", cfg, "--check-every", "5ms", "--create", "-")
	assert.Contains(t, errOut, "opened collection dbs/app/colls/log1")

	requireCount(t, cfg, 2000)
	code, out, errOut := runCLI(t, "", "query", "-c", cfg, "SELECT DISTINCT VALUE c.id FROM c")
	require.Equal(t, 0, code, errOut)
	assert.Len(t, strings.Fields(out), 2000, "each document once")

	st, err := memstore.Open(filepath.Join(dir, "data"), nil)
	require.NoError(t, err)
	defer st.Close()
	ctx := context.Background()
	s, err := shardstate.Load(ctx, st, "dbs/app")
	require.NoError(t, err)
	r, err := s.Decode()
	require.NoError(t, err)
	colls := r.(*spillover.Resolver).Collections()
	var counts []int64
	for i, l := range colls {
		assert.Equal(t, fmt.Sprintf("dbs/app/colls/log%d", i), l)
		info, err := st.CollectionInfo(ctx, l)
		require.NoError(t, err)
		counts = append(counts, info.Documents)
		assert.LessOrEqual(t, info.Documents, int64(400), l)
		require.NotNil(t, info.Spec.DefaultTTL, "created from the template")
		assert.Equal(t, "/id", info.Spec.PartitionKeyPath)
	}
	t.Logf("2000 documents in %v (limit 400, opened at 200)", counts)
	assert.GreaterOrEqual(t, len(colls), 5)
}

func TestSpilloverBadConfig(t *testing.T) {
	dir := t.TempDir()
	for field, res := range map[string]string{
		"maxDocuments": `{kind: spillover, partitionKey: /id, collections: [dbs/app/colls/log0], collectionPrefix: log, maxDocuments: 0}`,
		"fillRatio":    `{kind: spillover, partitionKey: /id, collections: [dbs/app/colls/log0], collectionPrefix: log, maxDocuments: 10, fillRatio: 1.5}`,
	} {
		cfg := writeFile(t, dir, field+".yaml", "databases:\n  - link: dbs/app\n    resolver: "+res+"\n")
		code, _, errOut := runCLI(t, "", "load", "-c", cfg, "-")
		assert.NotEqual(t, 0, code)
		assert.Contains(t, errOut, field)
	}
	// A prefix clashing with a collection of the store.
	cfg := writeFile(t, dir, "clash.yaml", `
store: {kind: embedded, path: `+filepath.Join(dir, "data")+`}
databases:
  - link: dbs/app
    resolver: {kind: spillover, partitionKey: /id, collections: [dbs/app/colls/log0], collectionPrefix: log, maxDocuments: 10}
`)
	st, err := memstore.Open(filepath.Join(dir, "data"), nil)
	require.NoError(t, err)
	require.NoError(t, st.CreateCollection(context.Background(), "dbs/app/colls/log3", nil))
	require.NoError(t, st.Close())
	code, _, errOut := runCLI(t, "", "load", "-c", cfg, "-")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errOut, "collectionPrefix")
	assert.Contains(t, errOut, "dbs/app/colls/log3")
}

// TestLoadSpilloverLimit: the runs, scaled down (a limit of 300,
// not 1,000). maxDocuments is a limit no collection exceeds: one load of
// 4.4 times the limit into the durable store, and four concurrent loads
// through docshard serve, each with its own coordinator checking only once
// an hour, so only the store's quota keeps a collection within its limit.
// Then verify accepts every document in whichever collection holds it: a
// spillover reads them all.
func TestLoadSpilloverLimit(t *testing.T) {
	const limit, total = 300, 1320
	const resolverYAML = `{kind: spillover, partitionKey: /id, collections: [dbs/app/colls/log0], collectionPrefix: log, maxDocuments: 300, fillRatio: 0.9}`
	lines := func(prefix string, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `{"id":"%s%d","n":%d}`+"\n", prefix, i, i)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name  string
		loads int
		serve bool
	}{
		{"one load into the durable store", 1, false},
		{"four loads through serve", 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx := context.Background()
			storeYAML := fmt.Sprintf("store: {kind: embedded, path: %q}", filepath.Join(dir, "data"))
			endpoint := ""
			if tc.serve {
				endpoint = startServe(t, nil, "serve", "--dir", filepath.Join(dir, "data"), "--addr", "127.0.0.1:0").endpoint
				storeYAML = fmt.Sprintf("store: {kind: cosmos, endpoint: %q}", endpoint)
				t.Setenv("DOCSHARD_STORE_KEY", "")
			}
			cfg := writeFile(t, dir, "c.yaml", storeYAML+"\ndatabases:\n  - link: dbs/app\n    resolver: "+resolverYAML+"\n")
			var wg sync.WaitGroup
			for i := range tc.loads {
				wg.Go(func() {
					code, _, errOut := runCLI(t, lines(fmt.Sprintf("l%d-", i), total/tc.loads), "load", "-c", cfg, "--check-every", "1h", "--create", "-")
					assert.Equal(t, 0, code, errOut)
				})
			}
			wg.Wait()
			requireCount(t, cfg, total)
			code, out, errOut := runCLI(t, "", "verify", "-c", cfg)
			assert.Equal(t, 0, code, "verify: %s%s", out, errOut)
			assert.Contains(t, out, fmt.Sprintf("%d documents", total))

			var st store.Store
			if tc.serve {
				cs, err := cosmos.New(ctx, &cosmos.Options{Account: cosmos.Account{Endpoint: endpoint}})
				require.NoError(t, err)
				st = cs
			} else {
				ms, err := memstore.Open(filepath.Join(dir, "data"), nil)
				require.NoError(t, err)
				st = ms
			}
			defer st.Close()
			s, err := shardstate.Load(ctx, st, "dbs/app")
			require.NoError(t, err)
			r, err := s.Decode()
			require.NoError(t, err)
			var counts []int64
			for _, l := range r.(*spillover.Resolver).Collections() {
				info, err := st.CollectionInfo(ctx, l)
				require.NoError(t, err)
				counts = append(counts, info.Documents)
				assert.LessOrEqual(t, info.Documents, int64(limit), "%s holds %d documents, maxDocuments is %d", l, info.Documents, limit)
			}
			t.Logf("%d documents in %v", total, counts)
			assert.Len(t, counts, (total+limit-1)/limit, "every collection filled to its limit before the next was opened")
		})
	}
}

// TestLoadCreateTwice: --create means create on every resolver kind: a
// second load of the same file fails on its first line, naming the id and
// the count written (0), and nothing is stored twice. Before, a spillover
// stored every document again in its newest collection (count 5,100 for
// 5,000 in the issue).
func TestLoadCreateTwice(t *testing.T) {
	for name, res := range map[string]string{
		"hash":      `{kind: hash, partitionKey: /id, collections: [dbs/app/colls/h0, dbs/app/colls/h1]}`,
		"spillover": `{kind: spillover, partitionKey: /id, collections: [dbs/app/colls/log0], collectionPrefix: log, maxDocuments: 100, fillRatio: 0.5}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := writeFile(t, dir, "c.yaml", "store: {kind: embedded, path: "+filepath.Join(dir, "data")+"}\ndatabases:\n  - link: dbs/app\n    resolver: "+res+"\n")
			var lines strings.Builder
			for i := range 300 {
				fmt.Fprintf(&lines, `{"id":"e%d","n":%d}`+"\n", i, i)
			}
			code, out, errOut := runCLI(t, lines.String(), "load", "-c", cfg, "--check-every", "5ms", "--create", "--workers", "1", "-")
			require.Equal(t, 0, code, errOut)
			assert.True(t, strings.HasPrefix(out, "300 documents loaded"), out)

			code, _, errOut = runCLI(t, lines.String(), "load", "-c", cfg, "--create", "--workers", "1", "-")
			assert.Equal(t, 1, code, errOut)
			assert.Contains(t, errOut, `"e0"`)
			assert.Contains(t, errOut, "conflict")
			assert.Contains(t, errOut, "0 documents")

			code, out, errOut = runCLI(t, "", "query", "-c", cfg, "SELECT VALUE COUNT(1) FROM c")
			require.Equal(t, 0, code, errOut)
			assert.Equal(t, "300\n", out, "nothing stored twice")
		})
	}
}
