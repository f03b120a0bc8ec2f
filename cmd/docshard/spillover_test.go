package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/spillover"
	"github.com/docshard/docshard/store/memstore"
)

// TestLoadSpillover: docshard load fills a spillover database end to end:
// collections are opened in sequence as the newest fills, and every
// document is read back once.
func TestLoadSpillover(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "c.yaml", `
store: {kind: embedded, path: `+filepath.Join(dir, "data")+`}
databases:
  - link: dbs/app
    resolver: {kind: spillover, partitionKey: /id, collections: [dbs/app/colls/log0], collectionPrefix: log, maxDocuments: 400, fillRatio: 0.5, template: {defaultTtl: -1}}
`)
	var lines strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&lines, `{"id":"e%d","n":%d}`+"\n", i, i)
	}
	code, out, errOut := runCLI(t, lines.String(), "load", "-c", cfg, "--check-every", "5ms", "--create", "-")
	require.Equal(t, 0, code, errOut)
	assert.True(t, strings.HasPrefix(out, "2000 documents loaded into dbs/app ("), out)
	assert.Contains(t, errOut, "opened collection dbs/app/colls/log1")

	code, out, errOut = runCLI(t, "", "query", "-c", cfg, "SELECT VALUE COUNT(1) FROM c")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "2000\n", out)
	code, out, errOut = runCLI(t, "", "query", "-c", cfg, "SELECT DISTINCT VALUE c.id FROM c")
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
