package main

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP trace receiver: what an OpenTelemetry
// collector does with the exporter's requests, keeping the spans.
type collector struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req collectortrace.ExportTraceServiceRequest
	if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			c.spans = append(c.spans, ss.Spans...)
		}
	}
	c.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// A traceparent sent by the CLI ($TRACEPARENT) makes the server's span of
// that request its child, exported to the configured collector; requests
// without one are not traced at a sample ratio of 0.
func TestServeExportsSpansOfTracedRequests(t *testing.T) {
	t.Parallel()
	col := &collector{}
	ts := httptest.NewServer(col)
	defer ts.Close()
	s := serveInProcess(t, map[string]string{"ABACUS_ADDR": "127.0.0.1:0"},
		"--data", filepath.Join(t.TempDir(), "d"), "--gc-interval", "0",
		"--otlp-endpoint", ts.URL, "--trace-sample-ratio", "0")
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	env := map[string]string{"ABACUS_SERVER": s.base}
	if r := cli(env, "counter", "add", "untraced", "1"); r.code != 0 {
		t.Fatal(r)
	}
	env["TRACEPARENT"] = "00-" + traceID + "-" + parentID + "-01"
	if r := cli(env, "counter", "add", "likes", "1"); r.code != 0 {
		t.Fatal(r)
	}
	s.stop(t) // flushes the exporter

	col.mu.Lock()
	defer col.mu.Unlock()
	found := false
	for _, sp := range col.spans {
		if hex.EncodeToString(sp.TraceId) != traceID {
			t.Errorf("span %q of another trace %x exported at a sample ratio of 0", sp.Name, sp.TraceId)
			continue
		}
		if sp.Name == "POST /v1/namespaces/{ns}/counters/{counter}/updates" {
			found = true
			if hex.EncodeToString(sp.ParentSpanId) != parentID || sp.Kind != tracepb.Span_SPAN_KIND_SERVER {
				t.Errorf("the request's span has parent %x and kind %v, want %s and server", sp.ParentSpanId, sp.Kind, parentID)
			}
		}
	}
	if !found {
		t.Fatalf("no span of the traced update among %d exported", len(col.spans))
	}
}
