package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"testing"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/driver/embedded"
)

// BenchmarkShardedIncrementEmbedded measures Client.Apply on the embedded
// store: one hot counter, and updates spread over 100 counters.
//
// RunParallel starts parallelism × GOMAXPROCS goroutines; the sharded
// model's throughput comes from group commit, which needs many concurrent
// callers per counter, so the parallelism is raised to about 64 callers as
// in `abacus bench`. Every write is fsynced (the store's default), so the
// numbers depend on the disk as much as on the CPU.
func BenchmarkShardedIncrementEmbedded(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("counters=%d", n), func(b *testing.B) {
			ctx := context.Background()
			_, c := openEmbedded(b, embedded.Config{})
			names := CounterNames("bench", n)
			const callers = 64
			p, err := NewPicker(names, callers, 0)
			if err != nil {
				b.Fatal(err)
			}
			op := ShardedIncrements(c, abacus.DefaultNamespace, p)
			// Worker ids for the picker's per-worker generators: each
			// RunParallel goroutine takes the next one.
			ids := make(chan int, callers)
			for i := 0; i < callers; i++ {
				ids <- i
			}
			b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				w := 0
				select {
				case w = <-ids:
				default: // more goroutines than ids: share one (picks only)
				}
				for pb.Next() {
					if err := op(ctx, w%callers); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkShardedReadEmbedded measures Client.Get on the embedded store
// for a counter with 1, 100 and 1,000 live shards.
func BenchmarkShardedReadEmbedded(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("shards=%d", n), func(b *testing.B) {
			ctx := context.Background()
			d, c := openEmbedded(b, embedded.Config{NoSync: true})
			// Live shards: expiring far in the future, so reads never GC.
			if err := SeedShards(ctx, d, abacus.DefaultNamespace, "r", n, 1<<62, 0); err != nil {
				b.Fatal(err)
			}
			read := ShardedReads(c, abacus.DefaultNamespace, "r")
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := read(ctx, 0); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// openEmbedded opens the embedded store with cfg in a fresh directory and
// a client on it, both closed (the client first) when b ends.
func openEmbedded(b *testing.B, cfg embedded.Config) (*embedded.Driver, *abacus.Client) {
	b.Helper()
	ctx := context.Background()
	cfg.Dir, cfg.Logger = b.TempDir(), quietLogger()
	d, err := embedded.Open(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Close() })
	c, err := abacus.NewClient(ctx, abacus.Config{Driver: d, GCInterval: -1, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := c.Stop(ctx); err != nil {
			b.Error(err)
		}
	})
	return d, c
}

// quietLogger keeps Pebble's informational messages out of benchmark
// output; warnings still show.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
