package sharded_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/crdt"
	"github.com/abacusdb/abacus/internal/sharded"
)

// applyAll applies delta to each target at once and returns each error.
func applyAll(h *harness, tgs []sharded.Target, delta int64) []error {
	errs := make([]error, len(tgs))
	var wg sync.WaitGroup
	for i, tg := range tgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = h.eng.Apply(context.Background(), tg, crdt.Op{Delta: delta}, "")
		}()
	}
	wg.Wait()
	return errs
}

// sumTargets names n sum counters by format and their index.
func sumTargets(format string, n int) []sharded.Target {
	var tgs []sharded.Target
	for i := range n {
		tgs = append(tgs, target(fmt.Sprintf(format, i), crdt.KindSum))
	}
	return tgs
}

// newGate returns a gate for the store's writes and the function that
// opens it, once. The test's cleanup opens it too, before the engine's
// Close (cleanups run last first): a check that fails while a write is
// held must fail the test, not leave Close waiting on the gate.
func newGate(t *testing.T) (gate chan struct{}, open func()) {
	gate = make(chan struct{})
	open = sync.OnceFunc(func() { close(gate) })
	t.Cleanup(open)
	return gate, open
}

// holdAWrite starts an update of tg whose write is held at the store's
// gate, and returns once that write has reached the store. The Apply
// answers on the channel once the gate opens.
func holdAWrite(t *testing.T, h *harness, gate chan struct{}, tg sharded.Target) chan error {
	t.Helper()
	arrived := make(chan struct{})
	first := sync.OnceFunc(func() { close(arrived) })
	h.store.set(func(f *faultyStore) {
		f.gate = gate
		f.before = func() error { first(); return nil }
	})
	held := make(chan error, 1)
	go func() { held <- h.eng.Apply(context.Background(), tg, crdt.Op{Delta: 1}, "") }()
	select {
	case <-arrived:
	case <-time.After(5 * time.Second):
		t.Fatalf("the write of %s never reached the store", tg.Counter)
	}
	h.store.set(func(f *faultyStore) { f.before = nil })
	return held
}

// holdTheSlot holds a write of counter "lead" at the gate: with
// MaxInflightBatches 1 the combiner's one request slot is then taken.
func holdTheSlot(t *testing.T, h *harness, gate chan struct{}) chan error {
	t.Helper()
	return holdAWrite(t, h, gate, target("lead", crdt.KindSum))
}

// waitApplied waits until each target's mutator has applied n updates.
func waitApplied(t *testing.T, h *harness, tgs []sharded.Target, n uint64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, tg := range tgs {
		for sharded.Applied(h.eng, tg) < n {
			if time.Now().After(deadline) {
				t.Fatalf("%s applied %d updates, want %d", tg.Counter, sharded.Applied(h.eng, tg), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// waitQueued waits until n shard writes wait for a combined request: a
// sleep cannot promise that writes met at the queue on a loaded machine.
func waitQueued(t *testing.T, h *harness, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); sharded.Queued(h.eng) != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes wait for a request, want %d", sharded.Queued(h.eng), n)
		}
	}
}

// Writes of many counters that queue behind a busy request go out together,
// at most MaxShardBatch to a request, and each is acknowledged and read
// back as if written alone.
func TestQuietCountersShareARequest(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *sharded.Config) { c.MaxShardBatch, c.MaxInflightBatches = 8, 1 })
	gate, open := newGate(t)
	lead := holdTheSlot(t, h, gate)
	tgs := sumTargets("quiet-%02d", 20)
	done := make(chan []error, 1)
	go func() { done <- applyAll(h, tgs, 5) }()
	waitQueued(t, h, 20) // the 20 writes wait behind the gate
	open()
	if err := <-lead; err != nil {
		t.Fatal(err)
	}
	for i, err := range <-done {
		if err != nil {
			t.Fatalf("%s: %v", tgs[i].Counter, err)
		}
	}
	for _, tg := range tgs {
		if got, shards := h.value(t, tg); got != 5 || shards != 1 {
			t.Errorf("%s reads %d from %d shards, want 5 from 1", tg.Counter, got, shards)
		}
	}
	sizes := h.store.batchSizes()
	if len(sizes) == 0 || slices.Max(sizes) > 8 || slices.Max(sizes) < 2 {
		t.Fatalf("batch sizes %v: want some of 2 to 8 writes", sizes)
	}
	// 21 writes: the lead alone, the rest in requests of at most 8.
	if n := len(h.store.writeLog()); n != 21 {
		t.Fatalf("%d writes reached the store, want 21", n)
	}
}

// A request that fails is sent again write by write, so each write gets
// its own outcome: one the store refuses is an unknown outcome to its
// caller (never applied, never not applied), the others succeed, and the
// refused counter's next write persists the update, so none is lost.
func TestAFailedRequestIsSentAgainWriteByWrite(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *sharded.Config) { c.MaxShardBatch, c.MaxInflightBatches = 16, 1 })
	gate, open := newGate(t)
	lead := holdTheSlot(t, h, gate)
	tgs := sumTargets("c-%d", 6)
	// The store refuses every write of c-2, as a partition short of
	// replicas would be refused, until told otherwise.
	h.store.set(func(f *faultyStore) {
		f.refuse = func(p *driver.WriteShardParams) error {
			if p.Counter == "c-2" {
				return fmt.Errorf("injected: %w", driver.ErrUnavailable)
			}
			return nil
		}
	})
	done := make(chan []error, 1)
	go func() { done <- applyAll(h, tgs, 3) }()
	waitQueued(t, h, len(tgs)) // so c-2 shares the next request
	open()
	if err := <-lead; err != nil {
		t.Fatal(err)
	}
	for i, err := range <-done {
		if i == 2 {
			if !errors.Is(err, sharded.ErrUnknownOutcome) {
				t.Errorf("c-2, refused by the store: %v, want ErrUnknownOutcome", err)
			}
		} else if err != nil {
			t.Errorf("%s, which the store takes: %v; a request's failure must not fail it", tgs[i].Counter, err)
		}
	}
	// The refused write was in a request with the others (else nothing
	// was sent again).
	shared := false
	for _, b := range h.store.batchesOf("c-2") {
		shared = shared || len(b) == len(tgs)
	}
	if !shared {
		t.Fatalf("c-2 never shared a request (batches %v): the test did not test a failed request", h.store.batchesOf("c-2"))
	}
	h.store.set(func(f *faultyStore) { f.refuse = nil })
	for _, err := range applyAll(h, tgs, 4) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, tg := range tgs {
		if got, _ := h.value(t, tg); got != 7 {
			t.Errorf("%s reads %d after a failed and a good write, want 7", tg.Counter, got)
		}
	}
}

// WriteTimeout bounds a write from the moment its mutator hands it over,
// queueing included: a write that waited it out behind a stalled request
// is an unknown outcome, not one left waiting for the store.
func TestAWriteQueuedPastItsTimeoutIsUnknown(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *sharded.Config) {
		c.MaxShardBatch, c.MaxInflightBatches, c.WriteTimeout = 8, 1, 100*time.Millisecond
	})
	gate, open := newGate(t)
	lead := holdTheSlot(t, h, gate)
	queued := make(chan error, 1)
	go func() {
		queued <- h.eng.Apply(context.Background(), target("queued", crdt.KindSum), crdt.Op{Delta: 1}, "")
	}()
	waitQueued(t, h, 1)
	// The stalled request holds the only slot, so only the timeout can
	// answer the queued write.
	select {
	case err := <-queued:
		if !errors.Is(err, sharded.ErrUnknownOutcome) {
			t.Fatalf("a write queued past its timeout: %v, want ErrUnknownOutcome", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a write queued behind a stalled request was never answered")
	}
	h.store.set(func(f *faultyStore) { f.gate = nil })
	open()
	<-lead
	// The update stays in its mutator, and the next write persists it.
	h.add(t, target("queued", crdt.KindSum), 1, "")
	if got, _ := h.value(t, target("queued", crdt.KindSum)); got != 2 {
		t.Fatalf("queued reads %d, want 2", got)
	}
}

// Close writes what its mutators hold: an update waiting behind its
// mutator's write in flight is written once that write returns, though the
// engine takes no new background work by then, and is acknowledged.
func TestCloseSendsQueuedWrites(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *sharded.Config) { c.MaxInflightWrites = 1 })
	gate, open := newGate(t)
	tg := target("closing", crdt.KindSum)
	firstErr := holdAWrite(t, h, gate, tg) // the mutator's one write is in flight
	secondErr := make(chan error, 1)
	go func() { secondErr <- h.eng.Apply(context.Background(), tg, crdt.Op{Delta: 2}, "") }()
	waitApplied(t, h, []sharded.Target{tg}, 2) // the second waits for the next round
	closed := make(chan error, 1)
	go func() { closed <- h.eng.Close(context.Background()) }()
	for deadline := time.Now().Add(5 * time.Second); !sharded.Closing(h.eng); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Close never began")
		}
	}
	open()
	for _, c := range []chan error{firstErr, secondErr, closed} {
		if err := <-c; err != nil {
			t.Fatalf("an update (or Close) around Close: %v, want every update handed over written", err)
		}
	}
	set, err := h.store.Shards.ReadShards(context.Background(), &driver.ReadShardsParams{Namespace: "ns", Counter: "closing"})
	if err != nil || len(set.Shards) != 1 {
		t.Fatalf("the counter's shards after Close: %+v, %v", set, err)
	}
	if st, err := crdt.Decode(set.Shards[0].State); err != nil || st.Value() != 3 {
		t.Fatalf("the shard written at Close: %v, %v; want 3", st, err)
	}
}

// Writes at different consistency levels never share a request (a request
// has one level); each reaches the store at its own.
func TestEachRequestHasOneLevel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *sharded.Config) { c.MaxShardBatch, c.MaxInflightBatches = 32, 1 })
	var tgs []sharded.Target
	for i := range 24 {
		tg := target(fmt.Sprintf("lvl-%02d", i), crdt.KindSum)
		tg.WriteConsistency = []driver.Consistency{driver.One, driver.Quorum, driver.All}[i%3]
		tgs = append(tgs, tg)
	}
	h.store.set(func(f *faultyStore) { f.delay = 5 * time.Millisecond })
	for round := range 3 {
		for i, err := range applyAll(h, tgs, 1) {
			if err != nil {
				t.Fatalf("round %d, %s: %v", round, tgs[i].Counter, err)
			}
		}
	}
	for _, tg := range tgs {
		if got, _ := h.value(t, tg); got != 3 {
			t.Errorf("%s reads %d, want 3", tg.Counter, got)
		}
	}
	// The store counts the batches of two levels it refused
	// (driver.CheckShardWrites); the refused writes were then sent again
	// alone and succeeded, so only the count shows them.
	h.store.mu.Lock()
	bad := h.store.badBatches
	h.store.mu.Unlock()
	if bad != 0 {
		t.Fatalf("%d requests mixed consistency levels", bad)
	}
	if sizes := h.store.batchSizes(); len(sizes) == 0 || slices.Max(sizes) < 2 {
		t.Fatalf("batches %v: the writes were never combined, so levels were never at stake", sizes)
	}
	for _, w := range h.store.writeLog() {
		var want driver.Consistency
		for _, tg := range tgs {
			if tg.Counter == w.Counter {
				want = tg.WriteConsistency
			}
		}
		if w.Consistency != want {
			t.Fatalf("%s written at %v, want %v", w.Counter, w.Consistency, want)
		}
	}
}

// At most MaxInflightBatches requests are under way at once; writes that
// arrive while all are busy wait, and share the next requests.
func TestRequestsInFlightAreBounded(t *testing.T) {
	t.Parallel()
	// 40 writes of at most 8 to a request need at least 5 requests, so the
	// 3 slots fill however the writes happen to be grouped. (With 32 to a
	// request, a slow scheduler let all 40 queue first and fit in 2.)
	h := newHarness(t, func(c *sharded.Config) { c.MaxShardBatch, c.MaxInflightBatches = 8, 3 })
	gate, open := newGate(t)
	h.store.set(func(f *faultyStore) { f.gate = gate })
	tgs := sumTargets("bounded-%02d", 40)
	done := make(chan []error, 1)
	go func() { done <- applyAll(h, tgs, 2) }()
	waitApplied(t, h, tgs, 1)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if now, _ := h.store.inFlight(); now == 3 {
			break
		}
		if time.Now().After(deadline) {
			now, _ := h.store.inFlight()
			t.Fatalf("%d requests under way behind the gate, want 3", now)
		}
	}
	time.Sleep(50 * time.Millisecond) // room for a request the bound should have kept back
	if now, most := h.store.inFlight(); now != 3 || most != 3 {
		t.Fatalf("%d requests under way (at most %d) with 3 slots", now, most)
	}
	open()
	for i, err := range <-done {
		if err != nil {
			t.Fatalf("%s: %v", tgs[i].Counter, err)
		}
	}
	for _, tg := range tgs {
		if got, _ := h.value(t, tg); got != 2 {
			t.Errorf("%s reads %d, want 2", tg.Counter, got)
		}
	}
	if _, most := h.store.inFlight(); most != 3 {
		t.Fatalf("at most %d requests were under way, want 3", most)
	}
	if sizes := h.store.batchSizes(); len(sizes) == 0 || slices.Max(sizes) < 2 {
		t.Fatalf("batches %v: the waiting writes never shared a request", sizes)
	}
}

// A write too large to share a request is sent at once, alone, even while
// every request slot is busy: it neither waits for a slot nor joins a
// batch.
func TestALargeWriteGoesAlone(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *sharded.Config) { c.MaxShardBatch, c.MaxInflightBatches = 8, 1 })
	gate, open := newGate(t)
	arrived := make(chan struct{})
	first := sync.OnceFunc(func() { close(arrived) })
	h.store.set(func(f *faultyStore) {
		f.refuse = func(p *driver.WriteShardParams) error {
			if p.Counter == "lead" { // holds the one slot
				first()
				<-gate
			}
			return nil
		}
	})
	lead := make(chan error, 1)
	go func() { lead <- h.eng.Apply(context.Background(), target("lead", crdt.KindSum), crdt.Op{Delta: 1}, "") }()
	select {
	case <-arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("the lead write never reached the store")
	}
	small := make(chan error, 1)
	go func() {
		small <- h.eng.Apply(context.Background(), target("small", crdt.KindSum), crdt.Op{Delta: 1}, "")
	}()
	big := target(strings.Repeat("b", 5000), crdt.KindSum)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.eng.Apply(ctx, big, crdt.Op{Delta: 3}, ""); err != nil {
		t.Fatalf("a large write while the slot is held: %v, want it written at once", err)
	}
	select {
	case err := <-small:
		t.Fatalf("a small write was answered (%v) while the one slot was held: the test held nothing", err)
	default:
	}
	open()
	for _, c := range []chan error{lead, small} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	if b := h.store.batchesOf(big.Counter); len(b) != 0 {
		t.Fatalf("the large write joined %d batches", len(b))
	}
	if got, _ := h.value(t, big); got != 3 {
		t.Fatalf("the large counter reads %d, want 3", got)
	}
}

// With MaxShardBatch 1 every write goes to the store on its own.
func TestCombiningOff(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *sharded.Config) { c.MaxShardBatch = 1 })
	h.store.set(func(f *faultyStore) { f.delay = 5 * time.Millisecond })
	tgs := sumTargets("alone-%d", 10)
	for _, err := range applyAll(h, tgs, 1) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if sizes := h.store.batchSizes(); len(sizes) != 0 {
		t.Fatalf("batches %v with combining off", sizes)
	}
}

func TestShardBatchConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []sharded.Config{
		{MaxShardBatch: -1}, {MaxInflightBatches: -1}, {MaxShardBatch: driver.MaxShardWrites + 1},
	} {
		c.Store = newStore(t)
		if _, err := sharded.New(c); err == nil {
			t.Errorf("New(%+v): no error", c)
		}
	}
}

// A retry that reaches the engine after Close began, of an update whose
// write failed (its outcome unknown), is never answered "not applied": the
// failed write may have landed, so a caller that took "not applied" as
// leave to send the update elsewhere could count it twice.
func TestARetryAtCloseIsNeverNotApplied(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tg := target("retried", crdt.KindSum)
	h.store.set(func(f *faultyStore) { f.failAfter = 1 }) // lands, then reports a timeout
	if err := h.eng.Apply(context.Background(), tg, crdt.Op{Delta: 4}, "req"); !errors.Is(err, sharded.ErrUnknownOutcome) {
		t.Fatalf("the first attempt: %v, want ErrUnknownOutcome", err)
	}
	if err := h.eng.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := h.eng.Apply(context.Background(), tg, crdt.Op{Delta: 4}, "req")
	if errors.Is(err, sharded.ErrNotApplied) || err == nil {
		t.Fatalf("the retry after Close: %v, want an unknown outcome (the first attempt landed)", err)
	}
}
