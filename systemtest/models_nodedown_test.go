package systemtest

import (
	"context"
	"testing"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/internal/cassandratest"
)

// With one Cassandra node of three stopped, every model writes and reads
// at QUORUM (its default levels) and loses nothing; the events rollup,
// which needs every replica, is skipped while the node is down and
// completes once it is back, with the value unchanged.
func TestEveryModelNodeDown(t *testing.T) {
	cluster := cassandratest.Faults(t) // skips unless node-loss tests are enabled
	ctx := context.Background()
	store := openReplicatedStore(t)
	clk := clock.NewManual(time.Now())
	c, err := abacus.NewClient(ctx, abacus.Config{Driver: store, Clock: clk, GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)
	for _, nc := range []abacus.NamespaceConfig{
		{Name: "ev", Model: abacus.ModelEvents, Events: &abacus.EventsOptions{Bucket: time.Minute, AcceptWindow: 2 * time.Minute, RollupDelay: 30 * time.Second}},
		{Name: "act", Model: abacus.ModelActor},
		{Name: "nat", Model: abacus.ModelNative},
		{Name: "cas", Model: abacus.ModelCAS},
		{Name: "led", Model: abacus.ModelLedger},
	} {
		if _, err := c.CreateNamespace(ctx, nc); err != nil {
			t.Fatal(err)
		}
	}
	// write applies one change per model; the round makes versions and
	// request ids differ between calls.
	write := func(round int64) {
		t.Helper()
		for _, ns := range []string{"", "ev", "nat", "cas"} {
			if err := c.Add(ctx, ns, "c", 10); err != nil {
				t.Fatalf("add to %q in round %d: %v", ns, round, err)
			}
		}
		if err := c.Set(ctx, abacus.ActorSet{Namespace: "act", Counter: "c", Actor: "a", Version: round, Value: 10 * round}); err != nil {
			t.Fatalf("set in round %d: %v", round, err)
		}
		if _, err := c.Credit(ctx, "led", "c", 10, abacus.NewRequestID()); err != nil {
			t.Fatalf("credit in round %d: %v", round, err)
		}
	}
	read := func(want int64) {
		t.Helper()
		for _, ns := range []string{"", "ev", "act", "nat", "cas"} {
			v, err := c.Get(ctx, ns, "c")
			if err != nil || v.Value != want {
				t.Fatalf("read %q: %+v, %v; want %d", ns, v, err, want)
			}
		}
		lv, err := c.LedgerValue(ctx, "led", "c")
		if err != nil || lv.Value != want {
			t.Fatalf("read ledger: %+v, %v; want %d", lv, err, want)
		}
	}
	write(1)
	read(10)
	clk.Advance(time.Second)

	cluster.StopNode(3)
	write(2)
	read(20)
	clk.Advance(5 * time.Minute)
	res, err := c.GC(ctx, "ev", "c")
	if err != nil || !res.Skipped {
		t.Fatalf("events rollup with a node down: %+v, %v; want skipped", res, err)
	}
	write(3)
	read(30)
	cluster.StartNode(3)

	// The rollup is done when it covers the two events older than its
	// epoch and only the newest is unrolled.
	gcUntilDone(t, c, "ev", "c", "events rollup after the node came back", func(v *abacus.Value) bool { return v.Events == 1 })
	read(30)
}
