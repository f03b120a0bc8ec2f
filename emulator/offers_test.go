package emulator_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docshard/docshard/emulator/emulatortest"
)

// TestThroughput: a database or container created with throughput, manual
// or autoscale, has an offer that azcosmos reads and replaces (kept, not
// enforced); one created without has none (404); a bad throughput is 400;
// the offers survive a restart and go with their resource.
func TestThroughput(t *testing.T) {
	dir := t.TempDir()
	srv, err := emulatortest.New(&emulatortest.Options{Dir: dir})
	require.NoError(t, err)
	defer func() { _ = srv.Close() }()
	c := newClient(t, srv)
	ctx := context.Background()

	manual := azcosmos.NewManualThroughputProperties(400)
	_, err = c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "shared"}, &azcosmos.CreateDatabaseOptions{ThroughputProperties: &manual})
	require.NoError(t, err)
	_, err = c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "plain"}, nil)
	require.NoError(t, err)
	shared, _ := c.NewDatabase("shared")
	plain, _ := c.NewDatabase("plain")
	_, err = plain.ReadThroughput(ctx, nil)
	assert.Equal(t, http.StatusNotFound, status(err), "a database created without throughput has none")

	auto := azcosmos.NewAutoscaleThroughputProperties(4000)
	pk := azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}
	_, err = plain.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "auto", PartitionKeyDefinition: pk}, &azcosmos.CreateContainerOptions{ThroughputProperties: &auto})
	require.NoError(t, err)
	_, err = plain.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "none", PartitionKeyDefinition: pk}, nil)
	require.NoError(t, err)
	for _, tp := range []azcosmos.ThroughputProperties{azcosmos.NewManualThroughputProperties(350), azcosmos.NewManualThroughputProperties(450), azcosmos.NewAutoscaleThroughputProperties(1500)} {
		_, err = plain.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "bad", PartitionKeyDefinition: pk}, &azcosmos.CreateContainerOptions{ThroughputProperties: &tp})
		assert.Equal(t, http.StatusBadRequest, status(err))
	}
	none, _ := plain.NewContainer("none")
	_, err = none.ReadThroughput(ctx, nil)
	assert.Equal(t, http.StatusNotFound, status(err), "a container created without throughput has none")

	autoC, _ := plain.NewContainer("auto")
	r, err := autoC.ReadThroughput(ctx, nil)
	require.NoError(t, err)
	maxRU, ok := r.ThroughputProperties.AutoscaleMaxThroughput()
	require.True(t, ok)
	assert.Equal(t, int32(4000), maxRU)
	_, ok = r.ThroughputProperties.ManualThroughput()
	assert.False(t, ok)

	r, err = autoC.ReplaceThroughput(ctx, azcosmos.NewManualThroughputProperties(1200), nil)
	require.NoError(t, err, "autoscale to manual")
	mt, ok := r.ThroughputProperties.ManualThroughput()
	require.True(t, ok)
	assert.Equal(t, int32(1200), mt)
	_, err = autoC.ReplaceThroughput(ctx, azcosmos.NewManualThroughputProperties(100), nil)
	assert.Equal(t, http.StatusBadRequest, status(err))

	r, err = shared.ReplaceThroughput(ctx, azcosmos.NewAutoscaleThroughputProperties(10000), nil)
	require.NoError(t, err, "manual to autoscale")
	maxRU, ok = r.ThroughputProperties.AutoscaleMaxThroughput()
	require.True(t, ok)
	assert.Equal(t, int32(10000), maxRU)

	// Kept across a restart.
	require.NoError(t, srv.Close())
	srv = emulatortest.Start(t, &emulatortest.Options{Dir: dir})
	c = newClient(t, srv)
	shared, _ = c.NewDatabase("shared")
	plain, _ = c.NewDatabase("plain")
	r, err = shared.ReadThroughput(ctx, nil)
	require.NoError(t, err)
	maxRU, _ = r.ThroughputProperties.AutoscaleMaxThroughput()
	assert.Equal(t, int32(10000), maxRU)
	autoC, _ = plain.NewContainer("auto")
	r, err = autoC.ReadThroughput(ctx, nil)
	require.NoError(t, err)
	mt, _ = r.ThroughputProperties.ManualThroughput()
	assert.Equal(t, int32(1200), mt)

	// Deleted with their resource; a resource created again without
	// throughput has none.
	_, err = autoC.Delete(ctx, nil)
	require.NoError(t, err)
	_, err = plain.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "auto", PartitionKeyDefinition: pk}, nil)
	require.NoError(t, err)
	_, err = autoC.ReadThroughput(ctx, nil)
	assert.Equal(t, http.StatusNotFound, status(err))
	_, err = shared.Delete(ctx, nil)
	require.NoError(t, err)
	_, err = c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "shared"}, nil)
	require.NoError(t, err)
	_, err = shared.ReadThroughput(ctx, nil)
	assert.Equal(t, http.StatusNotFound, status(err))
}

// TestContainerPolicies: the vector embedding and full-text policies,
// unique keys and the indexing policy are kept and returned on create,
// read, list and replace; unique keys are enforced (409); a replace that
// changes the default TTL applies it to the documents stored.
func TestContainerPolicies(t *testing.T) {
	srv := emulatortest.Start(t, nil)
	c := newClient(t, srv)
	ctx := context.Background()
	_, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "policies"}, nil)
	require.NoError(t, err)
	db, _ := c.NewDatabase("policies")
	props := azcosmos.ContainerProperties{
		ID:                     "c",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
		UniqueKeyPolicy:        &azcosmos.UniqueKeyPolicy{UniqueKeys: []azcosmos.UniqueKey{{Paths: []string{"/email"}}}},
		VectorEmbeddingPolicy: &azcosmos.VectorEmbeddingPolicy{VectorEmbeddings: []azcosmos.VectorEmbedding{
			{Path: "/v", DataType: azcosmos.VectorDataTypeFloat32, DistanceFunction: azcosmos.VectorDistanceFunctionCosine, Dimensions: 3}}},
		FullTextPolicy: &azcosmos.FullTextPolicy{DefaultLanguage: "en-US", FullTextPaths: []azcosmos.FullTextPath{{Path: "/title", Language: "en-US"}}},
		IndexingPolicy: &azcosmos.IndexingPolicy{Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent,
			IncludedPaths:   []azcosmos.IncludedPath{{Path: "/*"}},
			VectorIndexes:   []azcosmos.VectorIndex{{Path: "/v", Type: azcosmos.VectorIndexTypeFlat}},
			FullTextIndexes: []azcosmos.FullTextIndex{{Path: "/title"}}},
	}
	created, err := db.CreateContainer(ctx, props, nil)
	require.NoError(t, err)
	cc, _ := db.NewContainer("c")
	read, err := cc.Read(ctx, nil)
	require.NoError(t, err)
	listed := collect(t, db.NewQueryContainersPager("SELECT * FROM c", nil), func(p azcosmos.QueryContainersResponse) []azcosmos.ContainerProperties {
		return p.Containers
	})
	require.Len(t, listed, 1)
	for name, got := range map[string]*azcosmos.ContainerProperties{"create": created.ContainerProperties, "read": read.ContainerProperties, "list": &listed[0]} {
		assert.Equal(t, props.UniqueKeyPolicy, got.UniqueKeyPolicy, name)
		assert.Equal(t, props.VectorEmbeddingPolicy, got.VectorEmbeddingPolicy, name)
		assert.Equal(t, props.FullTextPolicy, got.FullTextPolicy, name)
		require.NotNil(t, got.IndexingPolicy, name)
		assert.Equal(t, props.IndexingPolicy.VectorIndexes, got.IndexingPolicy.VectorIndexes, name)
		assert.Equal(t, props.IndexingPolicy.FullTextIndexes, got.IndexingPolicy.FullTextIndexes, name)
	}

	pk := azcosmos.NewPartitionKeyString("p")
	_, err = cc.CreateItem(ctx, pk, []byte(`{"id":"a","pk":"p","email":"x@y","title":"Unique keys in Cosmos DB"}`), nil)
	require.NoError(t, err)
	_, err = cc.CreateItem(ctx, pk, []byte(`{"id":"b","pk":"p","email":"x@y"}`), nil)
	assert.Equal(t, http.StatusConflict, status(err), "a unique key taken within the partition key")
	_, err = cc.UpsertItem(ctx, pk, []byte(`{"id":"b","pk":"p","email":"x@y"}`), nil)
	assert.Equal(t, http.StatusConflict, status(err))
	_, err = cc.CreateItem(ctx, azcosmos.NewPartitionKeyString("q"), []byte(`{"id":"b","pk":"q","email":"x@y"}`), nil)
	require.NoError(t, err, "another partition key")
	items := queryAll(t, cc, `SELECT VALUE c.id FROM c WHERE FullTextContains(c.title, "cosmos")`, pk, nil)
	assert.Equal(t, []string{`"a"`}, []string{string(items[0])})

	// A replace that turns TTL on expires the documents stored.
	next := *read.ContainerProperties
	ttl := int32(60)
	next.DefaultTimeToLive = &ttl
	next.IndexingPolicy = &azcosmos.IndexingPolicy{IndexingMode: azcosmos.IndexingModeNone}
	replaced, err := cc.Replace(ctx, next, nil)
	require.NoError(t, err)
	require.NotNil(t, replaced.ContainerProperties.DefaultTimeToLive)
	assert.Equal(t, ttl, *replaced.ContainerProperties.DefaultTimeToLive)
	assert.Equal(t, azcosmos.IndexingModeNone, replaced.ContainerProperties.IndexingPolicy.IndexingMode)
	assert.Equal(t, props.FullTextPolicy, replaced.ContainerProperties.FullTextPolicy)
	srv.Advance(2 * time.Minute)
	_, err = cc.ReadItem(ctx, pk, "a", nil)
	assert.Equal(t, http.StatusNotFound, status(err), "expired by the new default TTL")

	next.UniqueKeyPolicy = nil
	_, err = cc.Replace(ctx, next, nil)
	assert.Equal(t, http.StatusBadRequest, status(err), "unique keys cannot change")
}
