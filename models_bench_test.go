package abacus_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/driver/embedded"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// BenchmarkApplyEvents measures the library's own cost per events
// increment (validation, id, marker cache, write) on an in-memory store
// without fsync, where the store costs least.
func BenchmarkApplyEvents(b *testing.B) {
	ctx := context.Background()
	c := benchClient(b)
	if _, err := c.CreateNamespace(ctx, abacus.NamespaceConfig{Name: "ev", Model: abacus.ModelEvents}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Apply(ctx, abacus.Update{Namespace: "ev", Counter: "c", Delta: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNamespaceLookup measures what every operation pays to find its
// namespace: a cached record and, since deletes, a view of its cuts
// trusted now.
func BenchmarkNamespaceLookup(b *testing.B) {
	ctx := context.Background()
	c := benchClient(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Namespace(ctx, abacus.DefaultNamespace); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// benchClient is a client on an in-memory embedded store without fsync,
// where the store costs least, closed when the benchmark ends.
func benchClient(b *testing.B) *abacus.Client {
	ctx := context.Background()
	d, err := embedded.Open(ctx, embedded.Config{FS: vfs.NewMem(), NoSync: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	c, err := abacus.NewClient(ctx, abacus.Config{Driver: d, GCInterval: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		_ = d.Close()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = c.Stop(ctx)
		_ = d.Close()
	})
	return c
}
