package routerotel_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/docshard/docshard/hashring"
	"github.com/docshard/docshard/resolver"
	"github.com/docshard/docshard/router"
	"github.com/docshard/docshard/router/routerotel"
	"github.com/docshard/docshard/store"
	"github.com/docshard/docshard/store/memstore"
)

// TestHooksRecord: a routed create, read and fanned-out query record the
// fan-out width, call latencies by collection and operation, documents,
// and a span per store call under the caller's span.
func TestHooksRecord(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	hooks, err := routerotel.Hooks(&routerotel.Options{MeterProvider: mp, TracerProvider: tp})
	require.NoError(t, err)

	st := memstore.New(nil)
	defer st.Close()
	links := []string{"dbs/app/colls/c0", "dbs/app/colls/c1", "dbs/app/colls/c2"}
	ring, err := hashring.New(links, &hashring.Options{PartitionKey: resolver.MustKeyDef("/userId")})
	require.NoError(t, err)
	c := router.New(st, &router.Options{Hooks: hooks})
	require.NoError(t, c.Register("dbs/app", ring))
	_, err = c.EnsureCollections(ctx, "dbs/app", nil)
	require.NoError(t, err)

	parentCtx, parent := tp.Tracer("test").Start(ctx, "handler")
	_, err = c.Create(parentCtx, "dbs/app", `{"id":"1","userId":"ann"}`, nil)
	require.NoError(t, err)
	_, err = c.Read(parentCtx, "dbs/app", "1", "ann")
	require.NoError(t, err)
	rows, err := c.Query(parentCtx, "dbs/app", store.Query{Text: "SELECT * FROM c"}, nil)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	parent.End()

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	got := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, routerotel.Scope, sm.Scope.Name)
		for _, m := range sm.Metrics {
			got[m.Name] = m.Data
		}
	}
	fan := got[routerotel.MetricFanOut].(metricdata.Histogram[int64])
	require.Len(t, fan.DataPoints, 1)
	assert.Equal(t, uint64(1), fan.DataPoints[0].Count)
	assert.Equal(t, int64(3), fan.DataPoints[0].Sum, "the query ran on 3 collections")
	docs := got[routerotel.MetricDocuments].(metricdata.Sum[int64])
	require.Len(t, docs.DataPoints, 1)
	assert.Equal(t, int64(1), docs.DataPoints[0].Value)
	dur := got[routerotel.MetricDuration].(metricdata.Histogram[float64])
	ops := map[string]uint64{}
	for _, dp := range dur.DataPoints {
		op, _ := dp.Attributes.Value(routerotel.AttrOperation)
		ops[op.AsString()] += dp.Count
	}
	assert.Equal(t, uint64(1), ops["create"])
	assert.Equal(t, uint64(1), ops["read"])
	assert.Equal(t, uint64(3), ops["query"], "one query call per collection")

	var children int
	names := map[string]int{}
	for _, s := range spans.Ended() {
		names[s.Name()]++
		if s.Name() == "handler" || !s.Parent().IsValid() {
			continue // EnsureCollections ran outside the handler's span
		}
		children++
		assert.Equal(t, parent.SpanContext().TraceID(), s.SpanContext().TraceID(), "%s is in the caller's trace", s.Name())
		assert.Equal(t, parent.SpanContext().SpanID(), s.Parent().SpanID())
		var coll string
		for _, a := range s.Attributes() {
			if a.Key == routerotel.AttrCollection {
				coll = a.Value.AsString()
			}
		}
		assert.Contains(t, links, coll, "the span names its collection")
	}
	assert.Equal(t, 5, children, "create, read and three query calls: %v", names)
	assert.Equal(t, 1, names["docshard create"])
	assert.Equal(t, 3, names["docshard query"])
}

// tracedStore opens a span of its own in each Read, from the context it
// is called with, as a backend that traces its requests (azcosmos) does.
type tracedStore struct {
	store.Store
	tracer trace.Tracer
}

func (s tracedStore) Read(ctx context.Context, l, id string, o *store.ReadOptions) (*store.Document, error) {
	_, span := s.tracer.Start(ctx, "backend read")
	defer span.End()
	return s.Store.Read(ctx, l, id, o)
}

// TestBackendSpansNest: the store call runs with the context of the span
// the hook opened, so the backend's span is that span's child, not its
// sibling.
func TestBackendSpansNest(t *testing.T) {
	ctx := context.Background()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	hooks, err := routerotel.Hooks(&routerotel.Options{MeterProvider: sdkmetric.NewMeterProvider(), TracerProvider: tp})
	require.NoError(t, err)
	mem := memstore.New(nil)
	defer mem.Close()
	ring, err := hashring.New([]string{"dbs/app/colls/c0"}, &hashring.Options{PartitionKey: resolver.MustKeyDef("/userId")})
	require.NoError(t, err)
	c := router.New(tracedStore{Store: mem, tracer: tp.Tracer("backend")}, &router.Options{Hooks: hooks})
	require.NoError(t, c.Register("dbs/app", ring))
	_, err = c.EnsureCollections(ctx, "dbs/app", nil)
	require.NoError(t, err)
	_, err = c.Create(ctx, "dbs/app", `{"id":"1","userId":"ann"}`, nil)
	require.NoError(t, err)

	_, err = c.Read(ctx, "dbs/app", "1", "ann")
	require.NoError(t, err)
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans.Ended() {
		byName[s.Name()] = s
	}
	router, backend := byName["docshard read"], byName["backend read"]
	require.NotNil(t, router)
	require.NotNil(t, backend)
	assert.Equal(t, router.SpanContext().SpanID(), backend.Parent().SpanID(), "the backend's span is the router's span's child")
	assert.Equal(t, router.SpanContext().TraceID(), backend.SpanContext().TraceID())
}
