package embedded

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/abacusdb/abacus/driver"
)

// BenchmarkWriteShard measures one blind shard write on a real directory.
// With sync every write waits for its own fsync (concurrent writers share
// one, which -cpu or RunParallel would show); NoSync shows the cost of the
// store itself.
func BenchmarkWriteShard(b *testing.B) {
	for _, noSync := range []bool{false, true} {
		name := "sync"
		if noSync {
			name = "nosync"
		}
		b.Run(name, func(b *testing.B) {
			d := open(b, Config{Dir: b.TempDir(), NoSync: noSync})
			ctx := context.Background()
			state := make([]byte, 16)
			p := &driver.WriteShardParams{Namespace: "default", Counter: "hot", Shard: driver.Shard{ID: "mutator-1", State: state, ExpiresAt: 1 << 62}}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				p.Timestamp = int64(i + 1)
				state[0] = byte(i)
				if err := d.WriteShard(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWriteShardParallel writes from many goroutines, each its own
// shard, with sync on: Pebble's commit pipeline lets concurrent writers share
// an fsync, which is what makes per-write durability affordable.
func BenchmarkWriteShardParallel(b *testing.B) {
	d := open(b, Config{Dir: b.TempDir()})
	ctx := context.Background()
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		p := &driver.WriteShardParams{Namespace: "default", Counter: "hot", Shard: driver.Shard{
			ID: fmt.Sprint("mutator-", next.Add(1)), State: make([]byte, 16), ExpiresAt: 1 << 62,
		}}
		for pb.Next() {
			p.Timestamp = next.Add(1)
			if err := d.WriteShard(ctx, p); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkReadShards reads a counter with n live shards and a tally, as a
// read of a busy counter between GCs does.
func BenchmarkReadShards(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("shards=%d", n), func(b *testing.B) {
			d := open(b, Config{Dir: b.TempDir(), NoSync: true})
			for i := range n {
				mustWrite(b, d, "default", "hot", fmt.Sprintf("mutator-%06d", i), make([]byte, 16), 1<<62, 1)
			}
			mustFold(b, d, "default", "hot", nil, make([]byte, 16), 1)
			ctx := context.Background()
			p := &driver.ReadShardsParams{Namespace: "default", Counter: "hot"}
			b.ReportAllocs()
			for b.Loop() {
				set, err := d.ReadShards(ctx, p)
				if err != nil {
					b.Fatal(err)
				}
				if len(set.Shards) != n {
					b.Fatalf("read %d shards, want %d", len(set.Shards), n)
				}
			}
		})
	}
}
