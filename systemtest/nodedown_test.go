package systemtest

import (
	"context"
	"testing"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver/cassandra"
	"github.com/abacusdb/abacus/internal/cassandratest"
)

// openReplicatedStore opens the test keyspace with three replicas, so that
// QUORUM survives one node of three down; the store is closed when the test
// ends.
func openReplicatedStore(t *testing.T) *cassandra.Driver {
	t.Helper()
	store, err := cassandra.Open(context.Background(), cassandra.Config{
		Hosts:       cassandratest.Hosts(t),
		Keyspace:    cassandratest.Keyspace(t),
		Replication: cassandra.Replication{Strategy: cassandra.SimpleStrategy, ReplicationFactor: 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// gcUntilDone collects the counter every 2 s, for up to 90 s, until a
// collection is not skipped and done says the counter, read after it, is
// folded as it should be (what names the collection in the failure): once
// a stopped node is back, the coordinator may need a few seconds of gossip
// to see it up, and an attempt that times out at ALL while the node catches
// up may still land, leaving the next attempt less to fold.
func gcUntilDone(t *testing.T, c *abacus.Client, ns, counter, what string, done func(*abacus.Value) bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		res, err := c.GC(context.Background(), ns, counter)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Skipped {
			v, err := c.Get(context.Background(), ns, counter)
			if err != nil {
				t.Fatalf("%s: read after it: %v", what, err)
			}
			if done(v) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %+v", what, res)
		}
		time.Sleep(2 * time.Second)
	}
}

// GC needs every replica: with one node of three down it is skipped (and
// counted), while reads and writes at QUORUM carry on; once the node is back
// the same collection folds everything and the value is unchanged.
func TestGCNodeDownSkippedThenCompletes(t *testing.T) {
	cluster := cassandratest.Faults(t) // skips unless node-loss tests are enabled
	ctx := context.Background()
	store := openReplicatedStore(t)
	const lifetime, margin, grace = 10 * time.Minute, time.Minute, 5 * time.Minute
	clk := clock.NewManual(time.Now())
	c, err := abacus.NewClient(ctx, abacus.Config{
		Driver: store, Clock: clk, GCInterval: -1,
		MutatorLifetime: lifetime, RefusalMargin: margin, GCGrace: grace,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)

	// Three mutators live and die one after another: three shards.
	want := int64(0)
	for i := range 3 {
		if err := c.Add(ctx, "", "c", int64(10+i)); err != nil {
			t.Fatal(err)
		}
		want += int64(10 + i)
		clk.Advance(lifetime - margin + time.Second)
	}
	clk.Advance(lifetime + grace)

	cluster.StopNode(3)
	res, err := c.GC(ctx, "", "c")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Skipped || res.Folded != 0 {
		t.Fatalf("GC with a node down: %+v, want skipped", res)
	}
	if n := c.Stats().GCSkips.Load(); n == 0 {
		t.Fatal("skipped GC not counted")
	}
	if err := c.Add(ctx, "", "c", 5); err != nil {
		t.Fatalf("QUORUM write with one node down: %v", err)
	}
	want += 5
	v, err := c.Get(ctx, "", "c")
	if err != nil || v.Value != want || v.Shards != 4 {
		t.Fatalf("QUORUM read with one node down: %+v, %v; want %d from 4 shards", v, err, want)
	}
	cluster.StartNode(3)

	// The GC is done when the expired shards are folded into one.
	gcUntilDone(t, c, "", "c", "GC after the node came back", func(v *abacus.Value) bool { return v.Shards == 1 })
	v, err = c.Get(ctx, "", "c")
	if err != nil || v.Value != want || v.Shards != 1 {
		t.Fatalf("after GC: %+v, %v; want %d from 1 live shard", v, err, want)
	}
}
