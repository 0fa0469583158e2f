package sharedkeyspace

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/driver/cassandra"
	"github.com/abacusdb/abacus/driver/embedded"
	"github.com/abacusdb/abacus/internal/cassandratest"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Keyspace is one package's shared keyspace. Declare one per test package.
type Keyspace struct {
	// Name is a label for the keyspace name (the package under test).
	Name string

	once sync.Once
	d    *cassandra.Driver
	err  error

	nsMu sync.Mutex
	nsN  int
}

// Main runs the package's tests, drops the keyspace and exits with the
// tests' code. Call it as the whole of TestMain.
func (k *Keyspace) Main(m *testing.M) {
	code := m.Run()
	k.Drop()
	os.Exit(code)
}

// Namespace returns a namespace name no other call on k has returned in
// this process ("ns1", "ns2", …): tests sharing the keyspace keep apart by
// writing under names of their own.
func (k *Keyspace) Namespace() string {
	k.nsMu.Lock()
	defer k.nsMu.Unlock()
	k.nsN++
	return fmt.Sprintf("ns%d", k.nsN)
}

// Driver returns the shared driver, opening it on first use. It skips the
// test (and says why) when ABACUS_TEST_CASSANDRA is unset.
func (k *Keyspace) Driver(t testing.TB) *cassandra.Driver {
	t.Helper()
	hosts := cassandratest.Hosts(t) // skips without ABACUS_TEST_CASSANDRA
	k.once.Do(func() {
		cfg := cassandra.Config{
			Hosts:       hosts,
			Keyspace:    cassandratest.KeyspaceName(k.Name),
			Replication: cassandra.Replication{ReplicationFactor: cassandratest.ReplicationFactor(t)},
			// The dev cluster shares two cores with compilers and other suites.
			Timeout: 15 * time.Second,
			Logger:  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		k.d, k.err = cassandra.Open(ctx, cfg)
	})
	if k.err != nil {
		t.Fatalf("cassandra.Open: %v", k.err)
	}
	return k.d
}

// Drop drops the keyspace if it was opened and closes the driver. Call it
// from TestMain after m.Run.
func (k *Keyspace) Drop() {
	if k.d == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := k.d.Session().Query("DROP KEYSPACE IF EXISTS " + k.d.Keyspace()).ExecContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "dropping keyspace %s: %v\n", k.d.Keyspace(), err)
	}
	_ = k.d.Close()
}

// Each runs fn as two parallel subtests: "embedded", on a fresh embedded
// store in memory, and "cassandra", on the shared keyspace (skipped, and
// saying why, without ABACUS_TEST_CASSANDRA).
func (k *Keyspace) Each(t *testing.T, fn func(t *testing.T, d driver.Driver)) {
	t.Helper()
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		d, err := embedded.Open(context.Background(), embedded.Config{FS: vfs.NewMem(), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
		fn(t, d)
	})
	t.Run("cassandra", func(t *testing.T) {
		t.Parallel()
		fn(t, k.Driver(t))
	})
}
