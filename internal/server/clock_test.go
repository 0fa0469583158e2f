package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/driver/cassandra"
	"github.com/abacusdb/abacus/internal/cassandratest"
	"github.com/prometheus/client_golang/prometheus"
)

// openCassandra opens a driver on a fresh keyspace of its own, closed when
// the test ends, or skips the test without ABACUS_TEST_CASSANDRA: only
// Cassandra has a clock to compare with.
func openCassandra(t *testing.T, ctx context.Context) *cassandra.Driver {
	t.Helper()
	hosts := cassandratest.Hosts(t) // skips without ABACUS_TEST_CASSANDRA
	d, err := cassandra.Open(ctx, cassandra.Config{
		Hosts: hosts, Keyspace: cassandratest.Keyspace(t),
		Replication: cassandra.Replication{ReplicationFactor: cassandratest.ReplicationFactor(t)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// A server whose clock is off the store's by more than MaxClockSkew takes
// no writes and is not ready; reads go on; once its clock is back within
// the limit it takes writes again. Only Cassandra has a clock to compare
// with.
func TestClockSkewRefusesWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	started := time.Now()
	d := openCassandra(t, ctx)
	offset := &clock.Offset{Base: clock.Real{}, By: 3 * time.Minute}
	c, err := abacus.NewClient(ctx, abacus.Config{Driver: d, Clock: offset, GCInterval: -1, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)
	srv, err := New(Config{Client: c, Logger: quietLogger(), Registry: prometheus.NewRegistry(), MaxClockSkew: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	e := &testEnv{t: t, srv: srv, ts: ts, client: c}

	srv.checkClock(ctx)
	for _, req := range []struct{ method, path string }{
		{"POST", "/v1/namespaces/default/counters/c/updates"},
		{"POST", "/v1/namespaces"},
		{"DELETE", "/v1/namespaces/default/counters/c"}, // its effective time comes from the clock
	} {
		body := `{"delta":1,"name":"x"}`
		if req.method == "DELETE" {
			body = ""
		}
		r := e.do(req.method, req.path, body)
		if r.status != 503 || r.apiError().Code != api.CodeUnavailable || !strings.Contains(r.apiError().Message, "clock skew") {
			t.Fatalf("%s %s with a 3m skew: %d %s", req.method, req.path, r.status, r.body)
		}
	}
	cuts, err := d.ReadCuts(ctx, &driver.ReadCutsParams{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range cuts {
		if cut.Counter == "c" && cut.At > started.UnixMicro() {
			t.Fatalf("a refused delete left a cut: %+v", cut)
		}
	}
	if r := e.do("GET", "/readyz", ""); r.status != 503 || !strings.Contains(string(r.body), "clock skew") {
		t.Fatalf("readyz with a 3m skew: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/v1/namespaces/default/counters/c", ""); r.status != 200 {
		t.Fatalf("reads go on: %d %s", r.status, r.body)
	}
	if m := string(e.do("GET", "/metrics", "").body); !strings.Contains(m, "abacus_clock_skew_seconds 1") {
		t.Fatalf("metrics lack the skew:\n%s", m)
	}
	v, err := c.Get(ctx, "", "c")
	if err != nil || !v.Empty {
		t.Fatalf("a refused write left a trace: %+v %v", v, err)
	}

	// The clock is fixed (within the limit): writes are taken again.
	offset.By = 10 * time.Second
	srv.checkClock(ctx)
	e.mustJSON("POST", "/v1/namespaces/default/counters/c/updates", `{"delta":1}`, 200, nil)
	if r := e.do("GET", "/readyz", ""); r.status != 200 {
		t.Fatalf("readyz after the fix: %d %s", r.status, r.body)
	}
}

// The embedded store has no clock: the check never refuses anything.
func TestClockSkewIgnoredOnEmbedded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(ac *abacus.Config, _ *Config) {
		ac.Clock = clock.Offset{Base: clock.Real{}, By: time.Hour}
	})
	e.srv.checkClock(context.Background())
	e.mustJSON("POST", "/v1/namespaces/default/counters/c/updates", `{"delta":1}`, 200, nil)
}

// shiftingClock is the real clock plus an offset a test changes while the
// server reads it.
type shiftingClock struct{ by atomic.Int64 }

func (c *shiftingClock) Now() time.Time { return time.Now().Add(time.Duration(c.by.Load())) }

// The clock is compared again while serving, not only at start: a server
// whose clock drifts beyond the limit stops taking writes, and takes them
// again once its clock is fixed.
func TestClockSkewWatchedWhileServing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := openCassandra(t, ctx)
	clk := &shiftingClock{}
	c, err := abacus.NewClient(ctx, abacus.Config{Driver: d, Clock: clk, GCInterval: -1, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Client: c, Logger: quietLogger(), Registry: prometheus.NewRegistry(),
		MaxClockSkew: time.Minute, ClockCheckInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	base, _ := serveOnLoopback(t, srv)
	post := func() int {
		resp, err := http.Post(base+"/v1/namespaces/default/counters/c/updates", "application/json", strings.NewReader(`{"delta":1}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	waitFor := func(want int, what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got := post()
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: updates answer %d, want %d", what, got, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor(200, "clock right")
	clk.by.Store(int64(3 * time.Minute))
	waitFor(503, "clock drifted 3m while serving")
	clk.by.Store(0)
	waitFor(200, "clock fixed")
}
