package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus/api"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
)

// TestGracefulShutdownKeepsAcknowledgedUpdates cancels Serve while updates
// are streaming in and then reopens the store: every update that was
// answered 200 must be there.
func TestGracefulShutdownKeepsAcknowledgedUpdates(t *testing.T) {
	t.Parallel()
	fs := vfs.NewMem()
	_, drv, scfg := openClient(t, fs, prometheus.NewRegistry())
	scfg.ShutdownTimeout = 20 * time.Second
	srv, err := New(scfg)
	if err != nil {
		t.Fatal(err)
	}
	base, stop := serveOnLoopback(t, srv)

	hc := &http.Client{Timeout: 20 * time.Second}
	var sent, acked atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Go(func() {
			for i := 0; ; i++ {
				body := fmt.Sprintf(`{"delta":1,"request_id":"w%d-%d"}`, w, i)
				sent.Add(1)
				resp, err := hc.Post(base+"/v1/namespaces/default/counters/hits/updates", "application/json", strings.NewReader(body))
				if err != nil {
					return // the server stopped accepting
				}
				var ur api.UpdateResponse
				derr := json.NewDecoder(resp.Body).Decode(&ur)
				resp.Body.Close()
				if resp.StatusCode != 200 || derr != nil || !ur.Acknowledged {
					return
				}
				acked.Add(1)
			}
		})
	}
	// Let updates flow, then shut down under load.
	for deadline := time.Now().Add(30 * time.Second); acked.Load() < 200; {
		if time.Now().After(deadline) {
			t.Fatalf("only %d updates acknowledged in 30s", acked.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Fatalf("Serve returned %v after a graceful shutdown", err)
	}
	wg.Wait()
	if err := drv.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopen the same (in-memory) directory as a fresh process would.
	c2, drv2, _ := openClient(t, fs, prometheus.NewRegistry())
	defer drv2.Close()
	defer c2.Stop(context.Background())
	v, err := c2.Get(context.Background(), "default", "hits")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sent %d, acknowledged %d, stored %d", sent.Load(), acked.Load(), v.Value)
	if v.Value < acked.Load() {
		t.Fatalf("stored %d < acknowledged %d: acknowledged updates were lost in shutdown", v.Value, acked.Load())
	}
	if v.Value > sent.Load() {
		t.Fatalf("stored %d > sent %d", v.Value, sent.Load())
	}
}

func TestRunReportsListenErrors(t *testing.T) {
	t.Parallel()
	c, drv, scfg := openClient(t, vfs.NewMem(), prometheus.NewRegistry())
	defer drv.Close()
	defer c.Stop(context.Background())
	scfg.Addr = "256.0.0.1:1"
	srv, err := New(scfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("Run on a bad address = %v, want a listen error", err)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{}); err == nil {
		t.Error("New without a client succeeded")
	}
	c, drv, _ := openClient(t, vfs.NewMem(), prometheus.NewRegistry())
	defer drv.Close()
	defer c.Stop(context.Background())
	if _, err := New(Config{Client: c, MaxBodyBytes: -1}); err == nil {
		t.Error("New with a negative body limit succeeded")
	}
	// Two servers may share a registry with hooks registered earlier.
	reg := prometheus.NewRegistry()
	_ = Hooks(reg)
	for i := 0; i < 2; i++ {
		if _, err := New(Config{Client: c, Registry: reg}); err != nil {
			t.Errorf("New #%d on a shared registry: %v", i, err)
		}
	}
}
