package cassandra

import (
	"context"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// readTraceKey is the context key of WithReadTrace.
type readTraceKey struct{}

// WithReadTrace returns a context under which the driver asks Cassandra to
// trace its reads of a counter's shards (ReadShards), of an events
// counter's record and events (ReadEventCounter, ReadEvents) and of a
// ledger's rows (ReadLedger), and hands each trace's id to t (a paged
// read: each page's). The trace (in
// system_traces) tells how many live rows and tombstones each replica
// stepped over, which is what a read costs the store apart from the
// machine it runs on. For diagnosis and benchmarks: tracing makes every
// replica write the trace's events, so it is not for every request.
func WithReadTrace(ctx context.Context, t gocql.Tracer) context.Context {
	return context.WithValue(ctx, readTraceKey{}, t)
}

// traced adds the context's read tracer, if any, to q.
func traced(ctx context.Context, q *gocql.Query) *gocql.Query {
	if t, ok := ctx.Value(readTraceKey{}).(gocql.Tracer); ok && t != nil {
		return q.Trace(t)
	}
	return q
}
