package emulator_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator/emulatortest"
)

// TestQueryMetrics: azcosmos asks every query page for its metrics
// (x-ms-documentdb-populatequerymetrics) and, with PopulateIndexMetrics,
// for its index utilization; the service answers both headers, and
// Microsoft's own emulator tests (TestSinglePartitionQueryWithIndexMetrics,
// the query tests that check QueryMetrics) fail without them. The metrics
// are what the server measures: the page's time, its result count and
// size; the index lists are empty, since the store keeps no indexes.
func TestQueryMetrics(t *testing.T) {
	srv := emulatortest.Shared(t)
	cc := newContainer(t, newClient(t, srv), "/pk")
	seedItems(t, cc, 30)
	pager := cc.NewQueryItemsPager("SELECT * FROM c WHERE c.pk = 'k1'", azcosmos.NewPartitionKeyString("k1"),
		&azcosmos.QueryOptions{PopulateIndexMetrics: true})
	require.True(t, pager.More())
	page, err := pager.NextPage(context.Background())
	require.NoError(t, err)
	require.NotNil(t, page.QueryMetrics, "x-ms-documentdb-query-metrics")
	metrics := map[string]string{}
	for _, kv := range strings.Split(*page.QueryMetrics, ";") {
		k, v, ok := strings.Cut(kv, "=")
		require.True(t, ok, "%q in %q is name=value", kv, *page.QueryMetrics)
		metrics[k] = v
	}
	assert.Contains(t, metrics, "totalExecutionTimeInMs")
	assert.Equal(t, metrics["outputDocumentCount"], jsonNumber(len(page.Items)))
	size := 0
	for _, it := range page.Items {
		size += len(it)
	}
	assert.Equal(t, jsonNumber(size), metrics["outputDocumentSize"], "the bytes of the page's results")
	assert.NotEmpty(t, page.Items)

	require.NotNil(t, page.IndexMetrics, "x-ms-cosmos-index-utilization")
	raw, err := base64.StdEncoding.DecodeString(*page.IndexMetrics)
	require.NoError(t, err)
	var used map[string][]any
	require.NoError(t, json.Unmarshal(raw, &used))
	assert.Len(t, used, 4)
	assert.Empty(t, used["UtilizedSingleIndexes"])

	// Without PopulateIndexMetrics, no index utilization (azcosmos always
	// asks for the query metrics).
	plain := cc.NewQueryItemsPager("SELECT VALUE COUNT(1) FROM c", azcosmos.NewPartitionKeyString("k1"), nil)
	page, err = plain.NextPage(context.Background())
	require.NoError(t, err)
	assert.NotNil(t, page.QueryMetrics)
	assert.Nil(t, page.IndexMetrics)
}

func jsonNumber(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
