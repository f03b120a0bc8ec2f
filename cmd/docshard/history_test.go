package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store/memstore"
)

// TestHistoryOldAndNew: a history with the dozens of progress versions an
// earlier release wrote per reshard (no reason) and versions with a reason
// after them lists the old progress as one line, as before, and each
// version with a reason as a line of its own, saying why, even where its
// resolver and step are those of the version before.
func TestHistoryOldAndNew(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := writeFile(t, dir, "c.yaml", "store: {kind: embedded, path: "+data+"}\ndatabases:\n  - link: dbs/app\n    resolver: {kind: hash, partitionKey: /userId, collections: [dbs/app/colls/u0]}\n")
	code, _, errOut := runCLI(t, `{"id":"1","userId":"a"}`+"\n", "load", "-c", cfg, "-")
	require.Equal(t, 0, code, errOut)
	ctx := context.Background()
	st, err := memstore.Open(data, nil)
	require.NoError(t, err)
	publish := func(phase, reason string) {
		s, err := shardstate.Load(ctx, st, "dbs/app")
		require.NoError(t, err)
		_, err = shardstate.Publish(ctx, st, s, shardstate.Change{Phase: json.RawMessage(phase), By: "test", Reason: reason})
		require.NoError(t, err)
	}
	for i := range 3 { // versions 2-4: an earlier release's progress
		publish(fmt.Sprintf(`{"reshard":{"id":"r1","step":"copy","started":"2026-11-27T10:00:00Z","copy":{"dbs/app/colls/u0":"pos%d"}}}`, i), "")
	}
	publish(`{"reshard":{"id":"r1","step":"copy","started":"2026-11-27T10:00:00Z"}}`, "reshard 1 → 1 collection: resumed by b") // 5
	publish(`{"reshard":{"id":"r1","step":"copy","started":"2026-11-27T10:00:00Z"}}`, "reshard 1 → 1 collection: resumed by c") // 6
	publish(`null`, "reshard 1 → 1 collection done: the moved documents removed from their sources")                            // 7
	require.NoError(t, st.Close())

	code, out, errOut := runCLI(t, "", "state", "history", "-c", cfg)
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 5, out)
	assert.True(t, strings.HasPrefix(lines[1], "2-4\t"), lines[1])
	assert.Contains(t, lines[1], "being resharded (step copy, started 2026-11-27T10:00:00Z) (3 versions recording its progress)")
	assert.Regexp(t, `^5\tepoch 1\t\S+\ttest\treshard 1 → 1 collection: resumed by b; routes by hash over 1 collection\(s\): dbs/app/colls/u0$`, lines[2])
	assert.Regexp(t, `^6\t.*resumed by c;`, lines[3])
	assert.Regexp(t, `^7\t.*\treshard 1 → 1 collection done: the moved documents removed from their sources; routes by hash over 1 collection\(s\)`, lines[4])

	code, out, errOut = runCLI(t, "", "state", "history", "-c", cfg, "--json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"reason":"reshard 1 → 1 collection: resumed by b"`)
}
