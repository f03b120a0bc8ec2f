package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/shardstate"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

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
