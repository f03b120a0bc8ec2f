package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
