package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/client"
	"github.com/abacusdb/abacus/internal/servertest"
)

// value reads a counter through b's library, bypassing HTTP.
func value(t *testing.T, b *servertest.Backend, ns, counter string) int64 {
	t.Helper()
	v, err := b.Lib.Get(context.Background(), ns, counter)
	if err != nil {
		t.Fatal(err)
	}
	return v.Value
}

// start serves h and returns a client for it.
func start(t *testing.T, h http.Handler, opts ...client.Option) *client.Client {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	opts = append([]client.Option{client.WithHTTPClient(ts.Client()), client.WithBackoff(time.Millisecond, 5*time.Millisecond)}, opts...)
	c, err := client.New(ts.URL+"/", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEndToEnd(t *testing.T) {
	t.Parallel()
	b := servertest.NewBackend(t, nil)
	c := start(t, b.Handler)
	ctx := context.Background()

	if err := c.Healthz(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	ns, err := c.CreateNamespace(ctx, api.CreateNamespaceRequest{Name: "uniq", Type: "distinct", WriteConsistency: "QUORUM"})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Name != "uniq" || ns.Type != "distinct" || ns.WriteConsistency != "QUORUM" || ns.ReadConsistency != "DEFAULT" {
		t.Errorf("created %+v", ns)
	}
	got, err := c.Namespace(ctx, "uniq")
	if err != nil || got.Type != "distinct" {
		t.Fatalf("Namespace = %+v, %v", got, err)
	}
	list, err := c.Namespaces(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "default" || list[1].Name != "uniq" {
		t.Fatalf("Namespaces = %+v, %v", list, err)
	}

	id, err := c.Add(ctx, "", "likes", 5)
	if _, ok := api.RequestIDTime(id); err != nil || !ok {
		t.Fatalf("Add = %q, %v", id, err)
	}
	id, err = c.Update(ctx, "default", "likes", api.UpdateRequest{Delta: -2, RequestID: "mine"})
	if err != nil || id != "mine" {
		t.Fatalf("Update = %q, %v", id, err)
	}
	if _, err := c.Update(ctx, "uniq", "users", api.UpdateRequest{Item: "alice"}); err != nil {
		t.Fatal(err)
	}
	v, err := c.Get(ctx, "", "likes")
	if err != nil {
		t.Fatal(err)
	}
	if *v != (api.Value{Namespace: "default", Counter: "likes", Type: "sum", Model: "sharded", Value: 3, Shards: 1}) {
		t.Errorf("Get = %+v", v)
	}

	res, err := c.UpdateBatch(ctx, []api.BatchUpdate{
		{Counter: "likes", Delta: 10},
		{Namespace: "uniq", Counter: "users", Item: "bob"},
		{Counter: "likes", Delta: 1, RequestID: "b"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.Acknowledged || r.RequestID == "" {
			t.Errorf("batch result %d: %+v", i, r)
		}
	}
	if res[2].RequestID != "b" {
		t.Errorf("request id not kept: %+v", res[2])
	}
	if got := value(t, b, "default", "likes"); got != 14 {
		t.Errorf("likes = %d, want 14", got)
	}

	gc, err := c.GC(ctx, "", "likes")
	if err != nil || gc.Namespace != "default" || gc.Counter != "likes" || gc.Skipped {
		t.Errorf("GC = %+v, %v", gc, err)
	}
	all, err := c.GCAll(ctx, "")
	if err != nil || all.Counters != 2 {
		t.Errorf("GCAll = %+v, %v", all, err)
	}
	all, err = c.GCAll(ctx, "uniq")
	if err != nil || all.Counters != 1 {
		t.Errorf("GCAll(uniq) = %+v, %v", all, err)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	b := servertest.NewBackend(t, nil)
	c := start(t, b.Handler)
	ctx := context.Background()

	_, err := c.Namespace(ctx, "nope")
	if !client.IsCode(err, api.CodeNamespaceNotFound) {
		t.Fatalf("unknown namespace: %v", err)
	}
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 404 || !strings.Contains(e.Message, "nope") {
		t.Errorf("error %#v", e)
	}
	if _, err := c.CreateNamespace(ctx, api.CreateNamespaceRequest{Name: "default"}); !client.IsCode(err, api.CodeNamespaceExists) {
		t.Errorf("duplicate namespace: %v", err)
	}
	if _, err := c.Update(ctx, "", "c", api.UpdateRequest{Item: "x"}); !client.IsCode(err, api.CodeWrongType) {
		t.Errorf("item on a sum counter: %v", err)
	}
	if _, err := c.Add(ctx, "", "", 1); !client.IsCode(err, api.CodeInvalidArgument) {
		t.Errorf("empty counter: %v", err)
	}
	if _, err := c.UpdateBatch(ctx, []api.BatchUpdate{{Counter: "c", Delta: 1}, {Counter: "c", Item: "x"}}); !client.IsCode(err, api.CodeWrongType) || !strings.Contains(err.Error(), "updates[1]") {
		t.Errorf("bad batch: %v", err)
	}
	if got := value(t, b, "default", "c"); got != 0 {
		t.Errorf("refused requests changed c to %d", got)
	}
	if client.Retryable(err) {
		t.Errorf("wrong_type is retryable")
	}
}

func TestNamesRoundTrip(t *testing.T) {
	t.Parallel()
	b := servertest.NewBackend(t, nil)
	c := start(t, b.Handler)
	ctx := context.Background()
	// Counter names may be anything: they travel percent-encoded.
	odd := []string{"a/b", "/lead", "trail/", "a//b", "with space", "ünïcödé ✓", "100%", "%2F", "?q=1#f", ".", "..", "./..", "+plus", strings.Repeat("ü", 128)}
	for _, ns := range []string{"default", "Orders-2026.eu:west_1"} {
		if ns != "default" {
			if _, err := c.CreateNamespace(ctx, api.CreateNamespaceRequest{Name: ns}); err != nil {
				t.Fatalf("create namespace %q: %v", ns, err)
			}
		}
		for _, name := range append(odd, ns) {
			if _, err := c.Add(ctx, ns, name, 7); err != nil {
				t.Fatalf("add to %q/%q: %v", ns, name, err)
			}
			v, err := c.Get(ctx, ns, name)
			if err != nil || v.Namespace != ns || v.Counter != name || v.Value != 7 {
				t.Fatalf("get %q/%q: %+v, %v", ns, name, v, err)
			}
			if got := value(t, b, ns, name); got != 7 {
				t.Errorf("library reads %q/%q as %d", ns, name, got)
			}
			if _, err := c.GC(ctx, ns, name); err != nil {
				t.Errorf("gc %q/%q: %v", ns, name, err)
			}
		}
	}
	// A new namespace's name is one of the safe set; nothing else is created.
	for _, name := range odd {
		if _, err := c.CreateNamespace(ctx, api.CreateNamespaceRequest{Name: name}); !client.IsCode(err, api.CodeInvalidArgument) {
			t.Fatalf("create namespace %q: %v, want invalid_argument", name, err)
		}
		if _, err := c.Namespace(ctx, name); !client.IsCode(err, api.CodeNamespaceNotFound) {
			t.Fatalf("namespace %q after a refused create: %v", name, err)
		}
	}
}

// flaky passes update requests to the real server and then loses the
// answer the first n times: with a 503 unknown_outcome, or by dropping the
// connection.
type flaky struct {
	next   http.Handler
	drop   bool
	suffix string // the paths it loses answers of; default "/updates"

	mu   sync.Mutex
	n    int
	seen []string // request ids of every attempt
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	suffix := f.suffix
	if suffix == "" {
		suffix = "/updates"
	}
	if !strings.HasSuffix(r.URL.Path, suffix) || r.URL.Path == "/v1/updates" {
		f.next.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var u api.UpdateRequest
	_ = json.Unmarshal(body, &u)
	r.Body = io.NopCloser(bytes.NewReader(body))
	f.mu.Lock()
	f.seen = append(f.seen, u.RequestID)
	fail := f.n > 0
	f.n--
	f.mu.Unlock()
	if !fail {
		f.next.ServeHTTP(w, r)
		return
	}
	f.next.ServeHTTP(httptest.NewRecorder(), r) // applied, answer lost
	if f.drop {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(503)
	_ = json.NewEncoder(w).Encode(api.Error{Code: api.CodeUnknownOutcome, Message: "lost"})
}

// flakyBackend is a backend behind a flaky handler that loses the answers
// to its first n requests (dropping the connection when drop is set), and a
// client of it made with opts.
func flakyBackend(t *testing.T, n int, drop bool, opts ...client.Option) (*servertest.Backend, *flaky, *client.Client) {
	t.Helper()
	b := servertest.NewBackend(t, nil)
	f := &flaky{next: b.Handler, n: n, drop: drop}
	return b, f, start(t, f, opts...)
}

func TestRetriesReuseTheRequestID(t *testing.T) {
	t.Parallel()
	for _, drop := range []bool{false, true} {
		name := "503"
		if drop {
			name = "dropped connection"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, f, c := flakyBackend(t, 2, drop, client.WithRetries(3))
			id, err := c.Add(context.Background(), "", "likes", 5)
			if err != nil {
				t.Fatalf("Add with retries: %v", err)
			}
			if len(f.seen) != 3 {
				t.Fatalf("%d attempts, want 3", len(f.seen))
			}
			for _, s := range f.seen {
				if s != id {
					t.Errorf("attempt with request id %q, want %q on every attempt", s, id)
				}
			}
			if got := value(t, b, "default", "likes"); got != 5 {
				t.Fatalf("likes = %d after 3 attempts, want 5 (counted once)", got)
			}
		})
	}
}

func TestNoRetriesByDefault(t *testing.T) {
	t.Parallel()
	b, f, c := flakyBackend(t, 1, false)
	id, err := c.Add(context.Background(), "", "likes", 5)
	if !client.IsCode(err, api.CodeUnknownOutcome) || !client.Retryable(err) {
		t.Fatalf("Add = %v, want a retryable unknown_outcome", err)
	}
	if len(f.seen) != 1 {
		t.Fatalf("%d attempts without WithRetries", len(f.seen))
	}
	// The caller can retry by hand with the id it got back.
	if _, err := c.Update(context.Background(), "", "likes", api.UpdateRequest{Delta: 5, RequestID: id}); err != nil {
		t.Fatal(err)
	}
	if got := value(t, b, "default", "likes"); got != 5 {
		t.Fatalf("likes = %d, want 5", got)
	}
}

func TestRetriesGiveUp(t *testing.T) {
	t.Parallel()
	_, f, c := flakyBackend(t, 100, false, client.WithRetries(2))
	if _, err := c.Add(context.Background(), "", "likes", 1); !client.IsCode(err, api.CodeUnknownOutcome) {
		t.Fatalf("Add = %v", err)
	}
	if len(f.seen) != 3 {
		t.Fatalf("%d attempts, want 1 + 2 retries", len(f.seen))
	}
	// Non-retryable errors are not retried.
	f.mu.Lock()
	f.seen, f.n = nil, 0
	f.mu.Unlock()
	if _, err := c.Update(context.Background(), "", "likes", api.UpdateRequest{Item: "x"}); !client.IsCode(err, api.CodeWrongType) {
		t.Fatalf("Update = %v", err)
	}
	if len(f.seen) != 1 {
		t.Fatalf("wrong_type was attempted %d times", len(f.seen))
	}
}

// batchFlaky applies every batch but reports item 1 of the first batch as
// an unknown outcome.
type batchFlaky struct {
	next    http.Handler
	mu      sync.Mutex
	batches [][]api.BatchUpdate
}

func (f *batchFlaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/updates" {
		f.next.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req api.BatchRequest
	_ = json.Unmarshal(body, &req)
	f.mu.Lock()
	f.batches = append(f.batches, req.Updates)
	first := len(f.batches) == 1
	f.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	f.next.ServeHTTP(rec, r)
	var resp api.BatchResponse
	_ = json.Unmarshal(rec.Body.Bytes(), &resp)
	if first && len(resp.Results) > 1 {
		resp.Results[1].Acknowledged = false
		resp.Results[1].Error = &api.Error{Code: api.CodeUnknownOutcome, Message: "lost"}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rec.Code)
	_ = json.NewEncoder(w).Encode(resp)
}

func TestBatchRetriesOnlyFailedItems(t *testing.T) {
	t.Parallel()
	b := servertest.NewBackend(t, nil)
	f := &batchFlaky{next: b.Handler}
	c := start(t, f, client.WithRetries(1))
	res, err := c.UpdateBatch(context.Background(), []api.BatchUpdate{
		{Counter: "a", Delta: 1}, {Counter: "b", Delta: 2}, {Counter: "c", Delta: 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.Acknowledged {
			t.Errorf("result %d: %+v", i, r)
		}
	}
	if len(f.batches) != 2 || len(f.batches[1]) != 1 || f.batches[1][0].Counter != "b" || f.batches[1][0].RequestID != f.batches[0][1].RequestID {
		t.Fatalf("batches sent: %+v", f.batches)
	}
	for counter, want := range map[string]int64{"a": 1, "b": 2, "c": 3} {
		if got := value(t, b, "default", counter); got != want {
			t.Errorf("%s = %d, want %d", counter, got, want)
		}
	}

	// Without retries the item's error is reported in its result.
	f2 := &batchFlaky{next: b.Handler}
	c2 := start(t, f2)
	res, err = c2.UpdateBatch(context.Background(), []api.BatchUpdate{{Counter: "x", Delta: 1}, {Counter: "y", Delta: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Acknowledged || res[1].Acknowledged || res[1].Error == nil || res[1].Error.Code != api.CodeUnknownOutcome {
		t.Errorf("results %+v", res)
	}
}

func TestForeignErrors(t *testing.T) {
	t.Parallel()
	proxy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream connect error", http.StatusBadGateway)
	})
	c := start(t, proxy)
	_, err := c.Get(context.Background(), "", "x")
	e, ok := err.(*client.Error)
	if !ok || e.Status != 502 || e.Code != "" || !strings.Contains(e.Message, "upstream") {
		t.Fatalf("error %#v", err)
	}
	if !client.Retryable(err) {
		t.Error("a proxy's 502 should be retryable")
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	c := start(t, slow, client.WithTimeout(50*time.Millisecond))
	defer close(release)
	startAt := time.Now()
	_, err := c.Get(context.Background(), "", "x")
	if err == nil || time.Since(startAt) > 5*time.Second {
		t.Fatalf("Get against a hung server: %v after %v", err, time.Since(startAt))
	}
	if !client.Retryable(err) {
		t.Errorf("a timed-out attempt should be retryable: %v", err)
	}
}

func TestNewValidatesURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "127.0.0.1:7070", "ftp://x", "http://", "http://h/?q=1", "http://u:p@h", "http://h/#f", "://"} {
		if _, err := client.New(u); err == nil {
			t.Errorf("New(%q) succeeded", u)
		}
	}
	for _, u := range []string{"http://127.0.0.1:7070", "https://abacus.example/prefix/", "http://[::1]:7070"} {
		if _, err := client.New(u); err != nil {
			t.Errorf("New(%q): %v", u, err)
		}
	}
}

// An attempt that may have been applied is not forgotten when a later
// retry is refused outright: the caller is told the outcome is unknown.
func TestRetriesRememberAnUnknownOutcome(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code := api.CodeUnknownOutcome
		if calls.Add(1) > 1 {
			code = api.CodeNotApplied
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(api.Error{Code: code, Message: code})
	}))
	defer ts.Close()
	c, err := client.New(ts.URL, client.WithRetries(2), client.WithBackoff(time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Add(context.Background(), "default", "c", 1)
	if calls.Load() != 3 || !client.IsCode(err, api.CodeUnknownOutcome) || !strings.Contains(err.Error(), api.CodeNotApplied) {
		t.Fatalf("after unknown, not applied, not applied (%d calls): %v; want the unknown outcome, naming the last retry", calls.Load(), err)
	}
}

// Namespaces reads every page: more namespaces than one page holds come
// back complete, in order, once each.
func TestNamespacesReadsEveryPage(t *testing.T) {
	t.Parallel()
	b := servertest.NewBackend(t, nil)
	c := start(t, b.Handler)
	ctx := context.Background()
	const extra = api.MaxPageSize + 5
	for i := range extra {
		if _, err := b.Lib.CreateNamespace(ctx, abacus.NamespaceConfig{Name: fmt.Sprintf("n%04d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := c.Namespaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != extra+1 { // and "default"
		t.Fatalf("%d namespaces, want %d", len(list), extra+1)
	}
	for i := 1; i < len(list); i++ {
		if list[i-1].Name >= list[i].Name {
			t.Fatalf("namespaces %d and %d out of order or repeated: %q, %q", i-1, i, list[i-1].Name, list[i].Name)
		}
	}
}
