package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// TestStateCommands: load seeds the state from the file; state show,
// history and set; every command then routes by the state, not the file.
func TestStateCommands(t *testing.T) {
	dir, _, cfg := twoCollections(t)

	code, _, errOut := runCLI(t, "", "state", "show", "-c", cfg)
	require.Equal(t, 1, code)
	assert.Contains(t, errOut, "no shared state document yet")

	code, out, errOut := runCLI(t, oneUserEach(20), "load", "-c", cfg, "-")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "20 documents loaded")
	assert.Contains(t, errOut, "the file's resolver is now its version 1")

	code, out, errOut = runCLI(t, "", "state", "show", "-c", cfg)
	require.Equal(t, 0, code, errOut)
	var shown map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &shown))
	assert.Equal(t, "dbs/app", shown["database"])
	assert.EqualValues(t, 1, shown["version"])
	assert.EqualValues(t, 1, shown["epoch"])
	assert.Equal(t, "hash", shown["resolver"].(map[string]any)["kind"])

	// Publish a resolver over three collections.
	next := writeFile(t, dir, "next.json", `{"kind":"hash","partitionKey":"/userId","collections":["dbs/app/colls/u0","dbs/app/colls/u1","dbs/app/colls/u2"]}`)
	code, _, errOut = runCLI(t, "", "state", "set", "-c", cfg, "--if-version", "7", next)
	require.Equal(t, 1, code)
	assert.Contains(t, errOut, "is at version 1")
	code, out, errOut = runCLI(t, "", "state", "set", "-c", cfg, "--if-version", "1", next)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "2\n", out)
	assert.Contains(t, errOut, "warning: the new resolver places")

	code, out, errOut = runCLI(t, "", "state", "history", "-c", cfg)
	require.Equal(t, 0, code, errOut)
	hist := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, hist, 2)
	assert.True(t, strings.HasPrefix(hist[0], "1\tepoch 1\t"), hist[0])
	assert.Contains(t, hist[0], "hash over 2 collection(s)")
	assert.True(t, strings.HasPrefix(hist[1], "2\tepoch 2\t"), hist[1])
	assert.Contains(t, hist[1], "dbs/app/colls/u2")

	// locate routes by the state: some key now lands in u2, which the
	// file's resolver does not have.
	keys := make([]string, 30)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
	}
	code, out, errOut = runCLI(t, "", append([]string{"locate", "-c", cfg}, keys...)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "dbs/app/colls/u2")
	assert.Contains(t, errOut, "routes by its shared state, version 2")

	// A .NET SDK resolver, imported.
	dotnet := writeFile(t, dir, "dotnet.json", `{"PartitionKeyPropertyName":"userId","CollectionLinks":["dbs/app/colls/u0","dbs/app/colls/u1"]}`)
	code, _, errOut = runCLI(t, "", "state", "set", "-c", cfg, "--dotnet", "arm", dotnet)
	require.Equal(t, 1, code)
	assert.Contains(t, errOut, `want "x64" or "x86"`)
	code, out, errOut = runCLI(t, "", "state", "set", "-c", cfg, "--dotnet", "x64", dotnet)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "3\n", out)
	code, out, _ = runCLI(t, "", "state", "show", "-c", cfg)
	require.Equal(t, 0, code)
	assert.Contains(t, out, `"dotnet-x64"`)

	// Queries route by the state too (and still find every document: the
	// .NET ring over the two original collections is a different ring, so
	// a keyed read may miss, but a fan-out query reads both).
	code, out, errOut = runCLI(t, "", "query", "-c", cfg, "SELECT VALUE COUNT(1) FROM c")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "20\n", out)
	assert.Contains(t, errOut, "version 3")
}

// twoCollections writes a configuration of dbs/app hashed over u0 and u1 on
// a durable embedded store in a new directory: it returns the directory,
// the store's path and the configuration file.
func twoCollections(t *testing.T) (dir, data, cfg string) {
	dir = t.TempDir()
	data = filepath.Join(dir, "data")
	cfg = writeFile(t, dir, "app.yaml", fmt.Sprintf(`store: {kind: embedded, path: %s}
databases:
  - link: dbs/app
    resolver: {kind: hash, partitionKey: /userId, collections: [dbs/app/colls/u0, dbs/app/colls/u1]}
`, data))
	return dir, data, cfg
}

// TestJSONOutputs: plan, verify and the state commands print one JSON
// object per line with --json.
func TestJSONOutputs(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "app.yaml", oneRing)
	next := writeFile(t, dir, "next.json", `{"kind":"hash","partitionKey":"/userId","collections":["dbs/app/colls/u0","dbs/app/colls/u1","dbs/app/colls/u2"]}`)
	code, _, errOut := runCLI(t, oneUserEach(30), "load", "-c", cfg, "-")
	require.Equal(t, 0, code, errOut)

	code, out, errOut := runCLI(t, "", "plan", "-c", cfg, "--next", next, "--keys", "3000", "--json")
	require.Equal(t, 0, code, errOut)
	var plan struct {
		Database string
		Keys     int
		Current  struct{ Collections []struct{ Link string } }
		Next     struct{ Collections []struct{ Link string } }
		Moved    int
		Exact    *struct{ MovedShare float64 }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &plan), out)
	assert.Equal(t, "dbs/app", plan.Database)
	assert.Equal(t, 3000, plan.Keys)
	assert.Len(t, plan.Current.Collections, 2)
	assert.Len(t, plan.Next.Collections, 3)
	assert.Positive(t, plan.Moved)
	require.NotNil(t, plan.Exact, "two rings: the exact figures too")

	code, out, errOut = runCLI(t, "", "verify", "-c", cfg, "--json")
	require.Equal(t, 0, code, errOut)
	var verified struct {
		Database    string
		Documents   int
		OK          bool
		Collections []struct {
			Collection string
			Documents  int
		}
		Misplaced, Duplicates []any
	}
	require.NoError(t, json.Unmarshal([]byte(out), &verified), out)
	assert.Equal(t, "dbs/app", verified.Database)
	assert.Equal(t, 30, verified.Documents)
	assert.True(t, verified.OK)
	require.Len(t, verified.Collections, 2)
	assert.Equal(t, 30, verified.Collections[0].Documents+verified.Collections[1].Documents, "per-collection counts")
	assert.NotNil(t, verified.Misplaced)
	assert.Empty(t, verified.Misplaced)
	assert.Empty(t, verified.Duplicates)

	code, out, errOut = runCLI(t, "", "state", "set", "-c", cfg, "--json", next)
	require.Equal(t, 0, code, errOut)
	var set map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &set))
	assert.EqualValues(t, 2, set["version"])

	code, out, errOut = runCLI(t, "", "verify", "-c", cfg, "--json")
	require.Equal(t, 1, code, "documents sit where the published resolver does not put them: %s", errOut)
	var rep struct {
		OK        bool
		Misplaced []struct{ ID, Collection, Want string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.False(t, rep.OK)
	require.NotEmpty(t, rep.Misplaced)
	assert.Equal(t, "dbs/app/colls/u2", rep.Misplaced[0].Want)

	code, out, errOut = runCLI(t, "", "state", "history", "-c", cfg, "--json")
	require.Equal(t, 0, code, errOut)
	hist := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, hist, 2)
	for i, l := range hist {
		var s map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &s))
		assert.EqualValues(t, i+1, s["version"])
	}
	code, out, errOut = runCLI(t, "", "state", "show", "-c", cfg, "--json")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, 1, strings.Count(out, "\n"), "one line")
}

// loadedOne is a configuration of one hash collection, loaded with one
// document through the command, and its store opened (the caller closes it
// before running a command on it).
func loadedOne(t *testing.T) (cfg string, st *memstore.Store) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg = writeFile(t, dir, "c.yaml", "store: {kind: embedded, path: "+data+"}\ndatabases:\n  - link: dbs/app\n    resolver: {kind: hash, partitionKey: /userId, collections: [dbs/app/colls/u0]}\n")
	code, _, errOut := runCLI(t, `{"id":"1","userId":"a"}`+"\n", "load", "-c", cfg, "-")
	require.Equal(t, 0, code, errOut)
	st, err := memstore.Open(data, nil)
	require.NoError(t, err)
	return cfg, st
}

// publishPhase publishes a version of dbs/app's state with phase (JSON)
// and reason, by "test".
func publishPhase(t *testing.T, st store.Store, phase, reason string) {
	ctx := context.Background()
	s, err := shardstate.Load(ctx, st, "dbs/app")
	require.NoError(t, err)
	_, err = shardstate.Publish(ctx, st, s, shardstate.Change{Phase: json.RawMessage(phase), By: "test", Reason: reason})
	require.NoError(t, err)
}

// publishProgress publishes versions 2 to 4 of dbs/app's state, each
// recording a reshard's progress at step, with no reason (as an earlier
// release wrote them).
func publishProgress(t *testing.T, st store.Store, step string) {
	for i := range 3 {
		publishPhase(t, st, fmt.Sprintf(`{"reshard":{"id":"r1","step":%q,"started":"2026-11-27T10:00:00Z","copy":{"dbs/app/colls/u0":"pos%d"}}}`, step, i), "")
	}
}

// historyLines closes st and returns the lines of state history.
func historyLines(t *testing.T, cfg string, st store.Store) []string {
	require.NoError(t, st.Close())
	code, out, errOut := runCLI(t, "", "state", "history", "-c", cfg)
	require.Equal(t, 0, code, errOut)
	return strings.Split(strings.TrimSpace(out), "\n")
}

// TestHistoryGroupsProgress: versions that only record a change's
// progress (same resolver, same step) are one line of state history, so a
// reshard reads as a few lines, not dozens.
func TestHistoryGroupsProgress(t *testing.T) {
	cfg, st := loadedOne(t)
	publishProgress(t, st, "published")
	lines := historyLines(t, cfg, st)
	require.Len(t, lines, 2, lines)
	assert.True(t, strings.HasPrefix(lines[1], "2-4\t"), lines[1])
	assert.Contains(t, lines[1], "being resharded (step published, started 2026-11-27T10:00:00Z) (3 versions recording its progress)")
}

// TestHistoryOldAndNew: a history with the dozens of progress versions an
// earlier release wrote per reshard (no reason) and versions with a reason
// after them lists the old progress as one line, as before, and each
// version with a reason as a line of its own, saying why, even where its
// resolver and step are those of the version before.
func TestHistoryOldAndNew(t *testing.T) {
	cfg, st := loadedOne(t)
	publish := func(phase, reason string) { publishPhase(t, st, phase, reason) }
	// Versions 2-4: an earlier release's progress.
	publishProgress(t, st, "copy")
	publish(`{"reshard":{"id":"r1","step":"copy","started":"2026-11-27T10:00:00Z"}}`, "reshard 1 → 1 collection: resumed by b") // 5
	publish(`{"reshard":{"id":"r1","step":"copy","started":"2026-11-27T10:00:00Z"}}`, "reshard 1 → 1 collection: resumed by c") // 6
	publish(`null`, "reshard 1 → 1 collection done: the moved documents removed from their sources")                            // 7

	lines := historyLines(t, cfg, st)
	require.Len(t, lines, 5, lines)
	assert.True(t, strings.HasPrefix(lines[1], "2-4\t"), lines[1])
	assert.Contains(t, lines[1], "being resharded (step copy, started 2026-11-27T10:00:00Z) (3 versions recording its progress)")
	assert.Regexp(t, `^5\tepoch 1\t\S+\ttest\treshard 1 → 1 collection: resumed by b; routes by hash over 1 collection\(s\): dbs/app/colls/u0$`, lines[2])
	assert.Regexp(t, `^6\t.*resumed by c;`, lines[3])
	assert.Regexp(t, `^7\t.*\treshard 1 → 1 collection done: the moved documents removed from their sources; routes by hash over 1 collection\(s\)`, lines[4])

	code, out, errOut := runCLI(t, "", "state", "history", "-c", cfg, "--json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"reason":"reshard 1 → 1 collection: resumed by b"`)
}

// TestStateSetRestoresEpoch: a state whose epoch fell below the store's
// fence refuses every write; one state set lifts its epoch above the fence
// and writes go through again.
func TestStateSetRestoresEpoch(t *testing.T) {
	dir, data, cfg := twoCollections(t)
	code, _, errOut := runCLI(t, `{"id":"1","userId":"a"}`+"\n", "load", "-c", cfg, "-")
	require.Equal(t, 0, code, errOut)

	st, err := memstore.Open(data, nil)
	require.NoError(t, err)
	_, err = st.RaiseFence(context.Background(), "dbs/app", 6)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	code, _, errOut = runCLI(t, `{"id":"2","userId":"b"}`+"\n", "load", "-c", cfg, "-")
	require.NotEqual(t, 0, code, "the state's epoch 1 is below the fence 6")
	assert.Contains(t, errOut, "fenced")

	next := writeFile(t, dir, "next.json", `{"kind":"hash","partitionKey":"/userId","collections":["dbs/app/colls/u0","dbs/app/colls/u1"]}`)
	code, out, errOut := runCLI(t, "", "state", "set", "-c", cfg, "--json", next)
	require.Equal(t, 0, code, errOut)
	var s map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	assert.EqualValues(t, 2, s["version"])
	assert.EqualValues(t, 7, s["epoch"], "one state set puts the epoch above the fence")

	var lines strings.Builder
	for i := range 10 {
		fmt.Fprintf(&lines, `{"id":"%d","userId":"user%d"}`+"\n", i+2, i)
	}
	code, out, errOut = runCLI(t, lines.String(), "load", "-c", cfg, "-")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "10 documents loaded")
}

// TestStateSetRestoresDeletedState: a state document deleted while a
// router holds a lease is not reseeded by load (nor shown as "no state
// yet"): both name the lease and state set, which restores it above the
// lost version.
func TestStateSetRestoresDeletedState(t *testing.T) {
	ctx := context.Background()
	dir, data, cfg := twoCollections(t)
	code, _, errOut := runCLI(t, `{"id":"1","userId":"a"}`+"\n", "load", "-c", cfg, "-")
	require.Equal(t, 0, code, errOut)

	st, err := memstore.Open(data, nil)
	require.NoError(t, err)
	_, err = shardstate.RenewLease(ctx, st, shardstate.Lease{Router: "app-1", Database: "dbs/app", Version: 1, Epoch: 1, ValidFor: time.Minute})
	require.NoError(t, err)
	coll, err := shardstate.CollectionLink("dbs/app")
	require.NoError(t, err)
	require.NoError(t, st.Delete(ctx, coll, "state", &store.WriteOptions{PartitionKey: "state"}))
	require.NoError(t, st.Close())

	for _, args := range [][]string{{"load", "-c", cfg, "-"}, {"state", "show", "-c", cfg}, {"query", "-c", cfg, "SELECT * FROM c"}} {
		code, _, errOut = runCLI(t, `{"id":"2","userId":"b"}`+"\n", args...)
		require.Equal(t, 1, code, args)
		assert.Contains(t, errOut, "the state document of dbs/app is missing", args)
		assert.Contains(t, errOut, "app-1 (version 1)", args)
		assert.Contains(t, errOut, "docshard state set", args)
	}

	same := writeFile(t, dir, "same.json", `{"kind":"hash","partitionKey":"/userId","collections":["dbs/app/colls/u0","dbs/app/colls/u1"]}`)
	code, out, errOut := runCLI(t, "", "state", "set", "-c", cfg, same)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "2\n", out, "above the lost version 1")
	code, out, errOut = runCLI(t, `{"id":"2","userId":"b"}`+"\n", "load", "-c", cfg, "-")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "1 documents loaded")
}
