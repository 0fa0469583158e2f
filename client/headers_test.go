package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

type traceKey struct{}

// WithHeaders runs with each request's context, so a trace carried by the
// context reaches the server; WithAPIKey's header is sent beside it.
func TestWithHeadersAndAPIKey(t *testing.T) {
	var got http.Header
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	}))
	defer ts.Close()
	c, err := New(ts.URL, WithAPIKey("abk_k1_secret"), WithHeaders(func(ctx context.Context, h http.Header) {
		h.Set("Traceparent", ctx.Value(traceKey{}).(string))
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(context.Background(), traceKey{}, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if got.Get("Traceparent") != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" || got.Get("Authorization") != "Bearer abk_k1_secret" {
		t.Fatalf("headers sent: %v", got)
	}
}
