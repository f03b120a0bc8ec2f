package routerotel

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/docshard/docshard/router"
)

// Scope is the instrumentation scope the meter and tracer are named by.
const Scope = "github.com/docshard/docshard/router"

// Metric names, each under the "docshard.router." prefix.
const (
	MetricFanOut    = "docshard.router.fanout"        // histogram: collections a query runs on
	MetricDuration  = "docshard.router.call.duration" // histogram, seconds: one store call attempt
	MetricRetries   = "docshard.router.retries"       // counter: failed calls retried
	MetricDocuments = "docshard.router.documents"     // counter: rows returned by query pages
)

// Attribute keys.
const (
	AttrDatabase   = attribute.Key("docshard.database")   // dbs/{db}
	AttrCollection = attribute.Key("docshard.collection") // dbs/{db}/colls/{coll}
	AttrOperation  = attribute.Key("docshard.operation")  // create, read, query, ...
	AttrFailed     = attribute.Key("docshard.failed")     // whether the call failed
)

// Options configure Hooks. A nil *Options means the global providers.
type Options struct {
	// MeterProvider records the metrics; nil means otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// TracerProvider opens the spans; nil means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
}

// Hooks returns router hooks that record to OpenTelemetry. Cost per store
// call: a span (nothing but a check when the tracer is not sampling) and
// a histogram record; per query, a histogram and a counter record.
func Hooks(opts *Options) (router.Hooks, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MeterProvider == nil {
		o.MeterProvider = otel.GetMeterProvider()
	}
	if o.TracerProvider == nil {
		o.TracerProvider = otel.GetTracerProvider()
	}
	meter := o.MeterProvider.Meter(Scope)
	tracer := o.TracerProvider.Tracer(Scope)
	fanOut, err := meter.Int64Histogram(MetricFanOut, metric.WithDescription("collections a query runs on"), metric.WithUnit("{collection}"))
	if err != nil {
		return router.Hooks{}, fmt.Errorf("routerotel: %s: %w", MetricFanOut, err)
	}
	duration, err := meter.Float64Histogram(MetricDuration, metric.WithDescription("latency of one store call attempt"), metric.WithUnit("s"))
	if err != nil {
		return router.Hooks{}, fmt.Errorf("routerotel: %s: %w", MetricDuration, err)
	}
	retries, err := meter.Int64Counter(MetricRetries, metric.WithDescription("failed store calls retried"), metric.WithUnit("{retry}"))
	if err != nil {
		return router.Hooks{}, fmt.Errorf("routerotel: %s: %w", MetricRetries, err)
	}
	documents, err := meter.Int64Counter(MetricDocuments, metric.WithDescription("rows returned by query pages"), metric.WithUnit("{document}"))
	if err != nil {
		return router.Hooks{}, fmt.Errorf("routerotel: %s: %w", MetricDocuments, err)
	}
	return router.Hooks{
		FanOut: func(ctx context.Context, db string, width int) {
			fanOut.Record(ctx, int64(width), metric.WithAttributes(AttrDatabase.String(db)))
		},
		Call: func(ctx context.Context, link, op string, latency time.Duration, err error) {
			duration.Record(ctx, latency.Seconds(), metric.WithAttributes(AttrCollection.String(link), AttrOperation.String(op), AttrFailed.Bool(err != nil)))
		},
		Retry: func(ctx context.Context, link, op string, _ int, _ time.Duration, _ error) {
			retries.Add(ctx, 1, metric.WithAttributes(AttrCollection.String(link), AttrOperation.String(op)))
		},
		Documents: func(ctx context.Context, db string, n int) {
			documents.Add(ctx, int64(n), metric.WithAttributes(AttrDatabase.String(db)))
		},
		// The store call runs with the span's context, so the backend's
		// spans (azcosmos's HTTP requests) are its children.
		Span: func(ctx context.Context, link, op string) (context.Context, func(error)) {
			ctx, span := tracer.Start(ctx, "docshard "+op, trace.WithSpanKind(trace.SpanKindClient),
				trace.WithAttributes(AttrCollection.String(link), AttrOperation.String(op)))
			return ctx, func(err error) {
				if err != nil {
					span.RecordError(err)
					span.SetStatus(codes.Error, err.Error())
				}
				span.End()
			}
		},
	}, nil
}
