package abacus_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/driver/embedded"
	"github.com/cockroachdb/pebble/v2/vfs"
)

func newClient(t *testing.T) *abacus.Client {
	t.Helper()
	return startClient(t, abacus.Config{Driver: newMemStore(t)})
}

// newMemStore opens the embedded store on a fresh in-memory file system and
// closes it when the test ends.
func newMemStore(t *testing.T) *embedded.Driver {
	t.Helper()
	store, err := embedded.Open(context.Background(), embedded.Config{FS: vfs.NewMem(), Dir: "db"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// startClient makes a library client from cfg and stops it when the test
// ends (before the store's own cleanup, which was registered earlier).
func startClient(t *testing.T, cfg abacus.Config) *abacus.Client {
	t.Helper()
	c, err := abacus.NewClient(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return c
}

func TestDefaultNamespaceExists(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ns, err := c.Namespace(context.Background(), abacus.DefaultNamespace)
	if err != nil {
		t.Fatal(err)
	}
	if ns.Model != abacus.ModelSharded || ns.Type != abacus.TypeSum {
		t.Fatalf("default namespace = %+v, want sharded/sum", ns)
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := context.Background()
	if _, err := c.CreateNamespace(ctx, abacus.NamespaceConfig{Name: "uniq", Type: abacus.TypeDistinct}); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(ctx, "", "n", 1); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		u    abacus.Update
		want error
	}{
		{"empty counter", abacus.Update{Counter: "", Delta: 1}, abacus.ErrInvalid},
		{"long counter", abacus.Update{Counter: strings.Repeat("x", 257), Delta: 1}, abacus.ErrInvalid},
		{"invalid utf8", abacus.Update{Counter: "a\xff", Delta: 1}, abacus.ErrInvalid},
		{"unknown namespace", abacus.Update{Namespace: "nope", Counter: "n", Delta: 1}, abacus.ErrNamespaceNotFound},
		{"item on sum", abacus.Update{Counter: "n", Item: "x"}, abacus.ErrWrongType},
		{"delta on distinct", abacus.Update{Namespace: "uniq", Counter: "n", Delta: 1}, abacus.ErrWrongType},
		{"no item on distinct", abacus.Update{Namespace: "uniq", Counter: "n"}, abacus.ErrWrongType},
		{"long request id", abacus.Update{Counter: "n", Delta: 1, RequestID: strings.Repeat("r", 257)}, abacus.ErrInvalid},
	}
	for _, tc := range cases {
		if err := c.Apply(ctx, tc.u); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	v, err := c.Get(ctx, "", "n")
	if err != nil || v.Value != 1 {
		t.Fatalf("after bad input: %+v, %v; want 1", v, err)
	}
}

func TestOverflowIsRefusedAndChangesNothing(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := context.Background()
	const big = int64(1) << 62
	for range 2 {
		if err := c.Add(ctx, "", "big", big-1); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Add(ctx, "", "big", big); !errors.Is(err, abacus.ErrOverflow) {
		t.Fatalf("overflowing add: %v, want ErrOverflow", err)
	}
	v, _ := c.Get(ctx, "", "big")
	if v.Value != 2*(big-1) {
		t.Fatalf("value %d, want %d", v.Value, 2*(big-1))
	}
}

func TestCreateNamespace(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ctx := context.Background()
	ns, err := c.CreateNamespace(ctx, abacus.NamespaceConfig{Name: "peaks", Type: abacus.TypeMax, WriteConsistency: driver.One})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Model != abacus.ModelSharded || ns.Type != "max" || ns.WriteConsistency != driver.One {
		t.Fatalf("created %+v", ns)
	}
	if _, err := c.CreateNamespace(ctx, abacus.NamespaceConfig{Name: "peaks"}); !errors.Is(err, abacus.ErrNamespaceExists) {
		t.Fatalf("second create: %v, want ErrNamespaceExists", err)
	}
	if ns, err := c.CreateNamespace(ctx, abacus.NamespaceConfig{Name: "shouty", Type: "DISTINCT"}); err != nil || ns.Type != abacus.TypeDistinct {
		t.Fatalf("upper-case type: %+v, %v; want stored as %q", ns, err, abacus.TypeDistinct)
	}
	if err := c.Apply(ctx, abacus.Update{Namespace: "shouty", Counter: "u", Item: "x"}); err != nil {
		t.Fatalf("item on a namespace created as DISTINCT: %v", err)
	}
	for _, bad := range []abacus.NamespaceConfig{
		{Name: ""},
		{Name: "x", Type: "avg"},
		{Name: "x", Model: "magic"},
		{Name: "x", Model: abacus.ModelEvents, Type: abacus.TypeDistinct},
		{Name: "x", Model: "counter"},
		{Name: "x", Model: abacus.ModelLedger, Type: abacus.TypeSum},
		{Name: "x", Ledger: &abacus.LedgerOptions{Mode: abacus.LedgerModeExact}},
	} {
		if _, err := c.CreateNamespace(ctx, bad); !errors.Is(err, abacus.ErrInvalid) {
			t.Errorf("CreateNamespace(%+v): %v, want ErrInvalid", bad, err)
		}
	}
	list, err := c.Namespaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || list[0].Name != "default" || list[1].Name != "peaks" || list[2].Name != "shouty" {
		t.Fatalf("Namespaces = %v", list)
	}
	for _, v := range []int64{3, 9, -4} {
		if err := c.Apply(ctx, abacus.Update{Namespace: "peaks", Counter: "p", Delta: v}); err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := c.Get(ctx, "peaks", "p"); v.Value != 9 {
		t.Fatalf("max = %d, want 9", v.Value)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	if _, err := abacus.NewClient(context.Background(), abacus.Config{}); err == nil {
		t.Fatal("NewClient without a driver succeeded")
	}
	store := newMemStore(t)
	for _, cfg := range []abacus.Config{
		{Driver: store, MutatorLifetime: time.Hour, RefusalMargin: 2 * time.Hour},
		{Driver: store, GCGrace: -time.Second},
		{Driver: store, MaxMutators: -1},
	} {
		if _, err := abacus.NewClient(context.Background(), cfg); err == nil {
			t.Errorf("NewClient accepted %+v", cfg)
		}
	}
}

// The sharded model's documented limit: a request id is remembered by the
// process that applied it, so the same update retried on another process
// counts again (at-least-once). The events model is the one to use when
// that matters.
func TestShardedRetryOnAnotherProcessCountsAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := newMemStore(t)
	var procs [2]*abacus.Client
	for i := range procs {
		procs[i] = startClient(t, abacus.Config{Driver: store, GCInterval: -1})
	}
	u := abacus.Update{Counter: "c", Delta: 5, RequestID: "retry-me"}
	for _, c := range []*abacus.Client{procs[0], procs[0], procs[1]} {
		if err := c.Apply(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	v, err := procs[0].Get(ctx, "", "c")
	if err != nil || v.Value != 10 {
		t.Fatalf("value %+v, %v: want 10 (once per process)", v, err)
	}
}

// Start runs the background sweeper: with nobody calling GC, expired
// shards of a sharded counter are folded and an events counter is rolled
// up, and the values stay.
func TestStartSweepsEveryModelThatCollects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Now())
	c := startClient(t, abacus.Config{Driver: newMemStore(t), Clock: clk, GCInterval: 10 * time.Millisecond,
		MutatorLifetime: time.Hour, RefusalMargin: time.Minute, GCGrace: time.Minute,
		Logger: slog.New(slog.DiscardHandler)})
	if _, err := c.CreateNamespace(ctx, abacus.NamespaceConfig{Name: "ev", Model: abacus.ModelEvents,
		Events: &abacus.EventsOptions{Bucket: time.Minute, AcceptWindow: 2 * time.Minute, RollupDelay: 30 * time.Second}}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"", "ev"} {
		if err := c.Add(ctx, ns, "c", 5); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(2 * time.Hour)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		sh, err1 := c.Get(ctx, "", "c")
		ev, err2 := c.Get(ctx, "ev", "c")
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		if sh.Value != 5 || ev.Value != 5 {
			t.Fatalf("values changed under the sweeper: sharded %+v, events %+v", sh, ev)
		}
		if sh.Shards == 0 && ev.Events == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sweeper did not collect within 20s: sharded %+v, events %+v", sh, ev)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// New namespaces take names from the safe set only; one created before that
// rule, under any name, stays readable and writable.
func TestNamespaceNamesOutsideTheSafeSet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := newMemStore(t)
	for _, name := range []string{"with space", "ünï", "a/b", "..", "-x"} {
		if err := store.CreateNamespace(ctx, &driver.CreateNamespaceParams{Namespace: driver.Namespace{
			Name: name, Model: string(abacus.ModelSharded), Type: abacus.TypeSum, CreatedAt: time.Now(),
		}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.CreateQueue(ctx, &driver.CreateQueueParams{Queue: driver.Queue{
		Name: "mail/outbox", Shards: 4, ShardDuration: time.Minute, MaxDeliveries: 5, VisibilityTimeout: 30 * time.Second, CreatedAt: time.Now(),
	}}); err != nil {
		t.Fatal(err)
	}
	c := startClient(t, abacus.Config{Driver: store})
	if _, err := c.Queues().Create(ctx, abacus.QueueConfig{Name: "mail/outbox"}); !errors.Is(err, abacus.ErrQueueExists) {
		t.Errorf("create the existing queue mail/outbox again: %v, want ErrQueueExists", err)
	}
	if _, err := c.Queues().Create(ctx, abacus.QueueConfig{Name: "mail/inbox"}); !errors.Is(err, abacus.ErrInvalid) {
		t.Errorf("create the new queue mail/inbox: %v, want ErrInvalid", err)
	}
	for _, name := range []string{"with space", "ünï", "a/b", "..", "-x"} {
		_, err := c.CreateNamespace(ctx, abacus.NamespaceConfig{Name: name + "2"})
		if !errors.Is(err, abacus.ErrInvalid) {
			t.Errorf("create %q: %v, want ErrInvalid", name+"2", err)
		}
		if _, err := c.CreateNamespace(ctx, abacus.NamespaceConfig{Name: name}); !errors.Is(err, abacus.ErrNamespaceExists) {
			t.Errorf("create the existing %q again: %v, want ErrNamespaceExists as before the rule", name, err)
		}
		if err := c.Add(ctx, name, "c", 3); err != nil {
			t.Fatalf("add to the existing namespace %q: %v", name, err)
		}
		if v, err := c.Get(ctx, name, "c"); err != nil || v.Value != 3 {
			t.Fatalf("read the existing namespace %q: %+v, %v", name, v, err)
		}
	}
}

// Sweeps says when every counter was last collected and rolled up: GCAll
// over every namespace counts, one namespace does not, and so do the
// background sweepers.
func TestSweepsReportCompleteSweeps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	c := startClient(t, abacus.Config{Driver: newMemStore(t), Clock: clk, GCInterval: -1})
	if s := c.Sweeps(); !s.GCComplete.IsZero() || !s.RollupComplete.IsZero() {
		t.Fatalf("a new client reports sweeps: %+v", s)
	}
	if err := c.Add(ctx, abacus.DefaultNamespace, "c", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GCAll(ctx, abacus.DefaultNamespace); err != nil {
		t.Fatal(err)
	}
	if s := c.Sweeps(); !s.GCComplete.IsZero() || !s.RollupComplete.IsZero() {
		t.Fatalf("GCAll of one namespace counted as a complete sweep: %+v", s)
	}
	if _, err := c.GCAll(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if s := c.Sweeps(); !s.GCComplete.Equal(clk.Now()) || !s.RollupComplete.Equal(clk.Now()) {
		t.Fatalf("after GCAll of every namespace at %v: %+v", clk.Now(), s)
	}

	swept := startClient(t, abacus.Config{Driver: newMemStore(t), GCInterval: 10 * time.Millisecond})
	if err := swept.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if s := swept.Sweeps(); !s.GCComplete.IsZero() && !s.RollupComplete.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sweepers ran for 10 s and report %+v", swept.Sweeps())
		}
	}
}
