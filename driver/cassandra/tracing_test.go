package cassandra_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/abacusdb/abacus/driver"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A query made for a traced request is a span under the request's span,
// named by its statement and table; on a real Cassandra.
func TestQueriesOfATracedRequestAreItsChildSpans(t *testing.T) {
	d := sharedDriver(t)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(ctxT(t)) })
	// The driver's tracer is the global one, which takes this provider;
	// other tests' queries carry no sampled span and make none.
	otel.SetTracerProvider(tp)

	ctx, parent := tp.Tracer("test").Start(ctxT(t), "request")
	_, err := d.GetNamespace(ctx, &driver.GetNamespaceParams{Name: "no-such-namespace"})
	parent.End()
	if !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("GetNamespace: %v", err)
	}
	want := "SELECT " + d.Keyspace() + ".namespaces"
	for _, s := range spans.GetSpans() {
		if s.Name == want {
			if s.Parent.SpanID() != parent.SpanContext().SpanID() || s.SpanContext.TraceID() != parent.SpanContext().TraceID() {
				t.Fatalf("span %q is not a child of the request's span", s.Name)
			}
			return
		}
	}
	var names []string
	for _, s := range spans.GetSpans() {
		names = append(names, s.Name)
	}
	t.Fatalf("no %q span among %s", want, strings.Join(names, ", "))
}
