package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/driver/embedded"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
)

// testEnv is a real server on a real client on the embedded store in memory.
type testEnv struct {
	t      *testing.T
	srv    *Server
	ts     *httptest.Server
	client *abacus.Client
	fs     vfs.FS
	reg    *prometheus.Registry
}

type envOption func(*abacus.Config, *Config)

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func openClient(t *testing.T, fs vfs.FS, reg *prometheus.Registry, opts ...envOption) (*abacus.Client, *embedded.Driver, Config) {
	t.Helper()
	ctx := context.Background()
	drv, err := embedded.Open(ctx, embedded.Config{FS: fs, Dir: "data", Logger: quietLogger()})
	if err != nil {
		t.Fatalf("open embedded store: %v", err)
	}
	acfg := abacus.Config{Driver: drv, Logger: quietLogger(), GCInterval: -1, ShardedHooks: Hooks(reg)}
	scfg := Config{Logger: quietLogger(), Registry: reg}
	for _, o := range opts {
		o(&acfg, &scfg)
	}
	c, err := abacus.NewClient(ctx, acfg)
	if err != nil {
		_ = drv.Close()
		t.Fatalf("new client: %v", err)
	}
	scfg.Client = c
	return c, drv, scfg
}

func newEnv(t *testing.T, opts ...envOption) *testEnv {
	t.Helper()
	fs := vfs.NewMem()
	reg := prometheus.NewRegistry()
	c, drv, scfg := openClient(t, fs, reg, opts...)
	srv, err := New(scfg)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Stop(ctx); err != nil {
			t.Errorf("stop client: %v", err)
		}
		if err := drv.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return &testEnv{t: t, srv: srv, ts: ts, client: c, fs: fs, reg: reg}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) apiError() api.Error {
	var e api.Error
	_ = json.Unmarshal(r.body, &e)
	return e
}

// do sends a request; body "" sends none, any other body goes as
// application/json unless headers say otherwise. headers are name, value
// pairs; a value "" removes the header.
func (e *testEnv) do(method, path, body string, headers ...string) response {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.ts.URL+path, rd)
	if err != nil {
		e.t.Fatalf("new request: %v", err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
			continue
		}
		if http.CanonicalHeaderKey(headers[i]) == "Host" {
			req.Host = headers[i+1] // the client sends req.Host, not a Host header
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("read response: %v", err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// mustJSON sends a request (headers as for do), checks the status and
// decodes the body into v.
func (e *testEnv) mustJSON(method, path, body string, want int, v any, headers ...string) {
	e.t.Helper()
	r := e.do(method, path, body, headers...)
	if r.status != want {
		e.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, r.status, want, r.body)
	}
	if v != nil {
		if err := json.Unmarshal(r.body, v); err != nil {
			e.t.Fatalf("%s %s: decode %s: %v", method, path, r.body, err)
		}
	}
}

// value reads a counter through the library, bypassing HTTP.
func (e *testEnv) value(ns, counter string) *abacus.Value {
	e.t.Helper()
	v, err := e.client.Get(context.Background(), ns, counter)
	if err != nil {
		e.t.Fatalf("get %s/%s: %v", ns, counter, err)
	}
	return v
}

func (e *testEnv) createNS(name, typ string) {
	e.t.Helper()
	_, err := e.client.CreateNamespace(context.Background(), abacus.NamespaceConfig{Name: name, Type: typ})
	if err != nil {
		e.t.Fatalf("create namespace %s: %v", name, err)
	}
}

// serveOnLoopback runs srv.Serve on a fresh 127.0.0.1 listener, as a real
// process would, and returns its base URL and stop, which cancels Serve
// and returns what Serve returned. The test's cleanup stops it too.
func serveOnLoopback(t *testing.T, srv *Server) (base string, stop func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	stop = sync.OnceValue(func() error {
		cancel()
		return <-served
	})
	t.Cleanup(func() { _ = stop() })
	return "http://" + ln.Addr().String(), stop
}
