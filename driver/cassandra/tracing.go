package cassandra

import (
	"context"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

var tracer = otel.Tracer("github.com/abacusdb/abacus/driver/cassandra")

// queryTracer makes a span of every query and batch whose context carries
// a recording span: the traced request that caused it. (A caller's
// sampled traceparent with no tracing set up here is not recording.) gocql reports a query after
// it returned, with its start and end, so the span is made afterwards
// with those times. Queries of no traced request (group-committed shard
// writes, sweeps, gocql's own) cost one check each.
type queryTracer struct{}

func (queryTracer) ObserveQuery(ctx context.Context, q gocql.ObservedQuery) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{
		attribute.String("db.system.name", "cassandra"),
		attribute.String("db.query.text", q.Statement),
		attribute.Int("db.response.returned_rows", q.Rows),
		attribute.Int("abacus.cassandra.attempt", q.Attempt),
	}
	record(ctx, operationName(q.Statement), q.Host, q.Err, q.Start, q.End, attrs)
}

func (queryTracer) ObserveBatch(ctx context.Context, b gocql.ObservedBatch) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{
		attribute.String("db.system.name", "cassandra"),
		attribute.Int("db.operation.batch.size", len(b.Statements)),
	}
	record(ctx, "BATCH", b.Host, b.Err, b.Start, b.End, attrs)
}

func record(ctx context.Context, name string, host *gocql.HostInfo, err error, start, end time.Time, attrs []attribute.KeyValue) {
	if host != nil {
		attrs = append(attrs, attribute.String("server.address", host.ConnectAddress().String()))
	}
	_, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End(trace.WithTimestamp(end))
}

// operationName is the statement's first word and table, such as
// "SELECT abacus.shards": what a trace view shows without the whole text.
func operationName(stmt string) string {
	f := strings.Fields(stmt)
	if len(f) == 0 {
		return "query"
	}
	op := strings.ToUpper(f[0])
	for i, w := range f {
		switch strings.ToUpper(w) {
		case "FROM", "INTO", "UPDATE":
			if i+1 < len(f) {
				return op + " " + strings.TrimSuffix(f[i+1], "(")
			}
		}
	}
	return op
}
