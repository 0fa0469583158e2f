package sharedkeyspace

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver/cassandra"
	"github.com/abacusdb/abacus/internal/cassandratest"
)

// Keyspace is one package's shared keyspace. Declare one per test package.
type Keyspace struct {
	// Name is a label for the keyspace name (the package under test).
	Name string

	once sync.Once
	d    *cassandra.Driver
	err  error
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
