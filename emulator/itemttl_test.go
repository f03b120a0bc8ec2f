package emulator_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestItemTTLRefusedWithoutContainerTTL: an item's "ttl" must be -1 or a
// whole number of seconds from 1 to 2^31-1 (Cosmos DB's time-to-live
// documentation: "The item TTL value must be a nonzero positive integer
// less than or equal to 2147483647, or -1"; null is not supported), and
// the service refuses any other value with 400 whether or not the
// container has a default TTL (the Node.js SDK's own functional tests
// expect 400 for {"ttl": -10} in a container without one). Every write
// that stores a document is refused alike, and nothing is written.
func TestItemTTLRefusedWithoutContainerTTL(t *testing.T) {
	ctx := context.Background()
	cc := sharedContainer(t, "/pk")
	pk := azcosmos.NewPartitionKeyString("p")
	_, err := cc.CreateItem(ctx, pk, []byte(`{"id":"kept","pk":"p"}`), nil)
	require.NoError(t, err)

	for _, good := range []string{`-1`, `1`, `2147483647`} {
		_, err := cc.CreateItem(ctx, pk, []byte(`{"id":"ok`+good+`","pk":"p","ttl":`+good+`}`), nil)
		require.NoError(t, err, "ttl %s is valid", good)
	}
	for _, bad := range []string{`-10`, `0`, `1.5`, `"10"`, `null`, `2147483648`} {
		doc := []byte(fmt.Sprintf(`{"id":"kept","pk":"p","ttl":%s}`, bad))
		fresh := []byte(fmt.Sprintf(`{"id":"fresh","pk":"p","ttl":%s}`, bad))
		writes := []struct {
			name  string
			write func() error
		}{
			{"create", func() error { _, err := cc.CreateItem(ctx, pk, fresh, nil); return err }},
			{"upsert", func() error { _, err := cc.UpsertItem(ctx, pk, fresh, nil); return err }},
			{"replace", func() error { _, err := cc.ReplaceItem(ctx, pk, "kept", doc, nil); return err }},
			{"patch", func() error {
				var p azcosmos.PatchOperations
				p.AppendSet("/ttl", rawJSON(bad))
				_, err := cc.PatchItem(ctx, pk, "kept", p, nil)
				return err
			}},
		}
		for _, w := range writes {
			err := w.write()
			assert.Equal(t, http.StatusBadRequest, status(err), "%s with ttl %s: %v", w.name, bad, err)
		}
		b := cc.NewTransactionalBatch(pk)
		b.CreateItem(fresh, nil)
		resp, err := cc.ExecuteTransactionalBatch(ctx, b, nil)
		require.NoError(t, err)
		require.False(t, resp.Success, "a batch create with ttl %s", bad)
		assert.EqualValues(t, http.StatusBadRequest, resp.OperationResults[0].StatusCode, "a batch create with ttl %s", bad)
		_, err = cc.ReadItem(ctx, pk, "fresh", nil)
		assert.Equal(t, http.StatusNotFound, status(err), "nothing written with ttl %s", bad)
		got, err := cc.ReadItem(ctx, pk, "kept", nil)
		require.NoError(t, err)
		assert.NotContains(t, object(t, got.Value), "ttl", "kept is unchanged after ttl %s", bad)
	}
}

// rawJSON is JSON text that marshals as itself.
type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }
