package servertest

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/driver/embedded"
	"github.com/abacusdb/abacus/internal/server"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Backend is the real HTTP server on a library client on the embedded
// store in memory: a whole server without disk, network or Cassandra. The
// client runs no background GC.
type Backend struct {
	Lib     *abacus.Client // the library client the server runs on
	Handler http.Handler   // the server's routes
}

// NewBackend starts a Backend on a store of its own, its library telling
// time by clk (nil: the system clock). It stops when the test ends.
func NewBackend(t testing.TB, clk clock.Clock) *Backend {
	t.Helper()
	return NewBackendOn(t, OpenStore(t), clk)
}

// OpenStore opens an embedded store in memory, closed when the test ends.
// Several Backends on one store stand for several server processes.
func OpenStore(t testing.TB) *embedded.Driver {
	t.Helper()
	drv, err := embedded.Open(context.Background(), embedded.Config{FS: vfs.NewMem(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drv.Close() })
	return drv
}

// NewBackendOn starts a Backend on store, its library telling time by clk
// (nil: the system clock). It stops when the test ends, before the store
// is closed.
func NewBackendOn(t testing.TB, store driver.Driver, clk clock.Clock) *Backend {
	t.Helper()
	lib, err := abacus.NewClient(context.Background(), abacus.Config{Driver: store, Logger: quiet(), GCInterval: -1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lib.Stop(context.Background()) })
	srv, err := server.New(server.Config{Client: lib, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	return &Backend{Lib: lib, Handler: srv.Handler()}
}

// quiet is a logger that discards everything.
func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
