// Package tracing sets up OpenTelemetry tracing for `abacus serve`: an
// OTLP/HTTP exporter when an endpoint is configured, nothing otherwise,
// and the W3C trace context propagator either way, so that a request's
// traceparent reaches the spans the server and the Cassandra driver make.
//
// Spans are made by the code that does the work, through the global
// tracer provider (package otel): the server's middleware (one span per
// request, named by its route) and the Cassandra driver (one span per
// query, as a child of the request that caused it). Work no request asked
// for — group-committed shard writes, GC and rollup sweeps — has no parent
// and is not traced.
package tracing
