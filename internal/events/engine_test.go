package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/sharedkeyspace"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var quiet = slog.New(slog.DiscardHandler)

// testOptions keep every window short so tests move the clock in minutes.
var testOptions = Options{Bucket: time.Minute, AcceptWindow: 2 * time.Minute, Seal: 2 * time.Minute, RollupDelay: 30 * time.Second, FutureLimit: 10 * time.Second}

// onEachDriver runs fn on the embedded store and on this package's shared
// Cassandra keyspace (see sharedkeyspace.Keyspace.Each).
func onEachDriver(t *testing.T, fn func(t *testing.T, d driver.Events)) {
	t.Helper()
	shared.Each(t, func(t *testing.T, d driver.Driver) { fn(t, d) })
}

var shared = sharedkeyspace.Keyspace{Name: "events engine"}

func TestMain(m *testing.M) { shared.Main(m) }

// harness is one store and a shared manual clock; each engine it makes is
// one process.
type harness struct {
	t     *testing.T
	store driver.Events
	clk   *clock.Manual
	ns    string
}

func newHarness(t *testing.T, store driver.Events) *harness {
	ns := fmt.Sprintf("%s-%d", shared.Namespace(), time.Now().UnixNano())
	return &harness{t: t, store: store, clk: clock.NewManual(t0), ns: ns}
}

// onEachHarness is the usual start of a test: in parallel, on each driver,
// a harness on that driver's store.
func onEachHarness(t *testing.T, fn func(t *testing.T, h *harness)) {
	t.Helper()
	t.Parallel()
	onEachDriver(t, func(t *testing.T, d driver.Events) { fn(t, newHarness(t, d)) })
}

func (h *harness) engine(tweak ...func(*Config)) *Engine {
	h.t.Helper()
	// A day between triggered rollups: tests roll up explicitly unless
	// they tweak it.
	cfg := Config{Store: h.store, Clock: h.clk, Logger: quiet, WriteTimeout: 15 * time.Second, RollupEvery: 24 * time.Hour}
	for _, f := range tweak {
		f(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

func (h *harness) target(counter string) Target {
	return Target{Namespace: h.ns, Counter: counter, Options: testOptions.WithDefaults(),
		ReadConsistency: driver.Quorum, WriteConsistency: driver.Quorum}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func mustAdd(t *testing.T, e *Engine, tg Target, r Request) driver.Event {
	t.Helper()
	ev, _, err := e.Add(ctxT(t), tg, r)
	if err != nil {
		t.Fatalf("Add(%+v): %v", r, err)
	}
	return ev
}

func wantValue(t *testing.T, e *Engine, tg Target, want int64) *Reading {
	t.Helper()
	r, err := e.Read(ctxT(t), tg)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if r.Value != want {
		t.Fatalf("value = %d, want %d (epoch %d, %d events in %d buckets)", r.Value, want, r.Epoch, r.Events, r.Buckets)
	}
	return r
}

func TestRetriesCountOnce(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		procs := []*Engine{h.engine(), h.engine(), h.engine()}
		tg := h.target("likes")

		// Sequential retries, on one process and on others.
		id := api.NewRequestID(h.clk.Now())
		for i := range 6 {
			mustAdd(t, procs[i%3], tg, Request{ID: id, Delta: 5})
		}
		wantValue(t, procs[0], tg, 5)

		// Concurrent retries of one request from every process.
		id2 := api.NewRequestID(h.clk.Now())
		var wg sync.WaitGroup
		errs := make(chan error, 12)
		for i := range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, err := procs[i%3].Add(context.Background(), tg, Request{ID: id2, Delta: 7})
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		wantValue(t, procs[1], tg, 12)

		// An id that fixes no time counts once when it comes with its time.
		at := h.clk.Now().Add(-time.Second)
		for range 3 {
			mustAdd(t, procs[2], tg, Request{ID: "order-17", Time: at, Delta: 100})
		}
		wantValue(t, procs[0], tg, 112)

		// Distinct requests all count; an empty id is a new event each time.
		for range 4 {
			mustAdd(t, procs[0], tg, Request{Delta: 1})
		}
		wantValue(t, procs[0], tg, 116)
	})
}

func TestBadEventsWriteNothing(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		e := h.engine()
		tg := h.target("c")
		now := h.clk.Now()
		for name, c := range map[string]struct {
			r    Request
			want error
		}{
			"id without time":  {Request{ID: "plain", Delta: 1}, ErrInvalid},
			"far future":       {Request{ID: "f", Time: now.Add(11 * time.Second), Delta: 1}, ErrInvalid},
			"v7 in the future": {Request{ID: api.NewRequestID(now.Add(time.Minute)), Delta: 1}, ErrInvalid},
			"outside window":   {Request{ID: api.NewRequestID(now.Add(-2 * time.Minute)), Delta: 1}, ErrTooLate},
			"old with time":    {Request{ID: "o", Time: now.Add(-3 * time.Minute), Delta: 1}, ErrTooLate},
		} {
			if _, _, err := e.Add(ctxT(t), tg, c.r); !errors.Is(err, c.want) {
				t.Errorf("%s: got %v, want %v", name, err, c.want)
			}
		}
		r := wantValue(t, e, tg, 0)
		if !r.Empty {
			t.Fatalf("refused events left a trace: %+v", r)
		}
	})
}

func TestRollupFoldsAndFreesBuckets(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		e := h.engine()
		tg := h.target("shares")
		var ids []string
		want := int64(0)
		// Ten minutes of events, one every 20 s, across ten buckets.
		for i := range 30 {
			id := api.NewRequestID(h.clk.Now())
			ids = append(ids, id)
			mustAdd(t, e, tg, Request{ID: id, Delta: int64(i - 10)})
			want += int64(i - 10)
			h.clk.Advance(20 * time.Second)
		}
		before := wantValue(t, e, tg, want)
		if before.Buckets < 10 || before.Events != 30 {
			t.Fatalf("before rollup: %+v", before)
		}

		res := e.Rollup(ctxT(t), tg)
		if res.Skipped {
			t.Fatalf("rollup skipped: %v", res.Err)
		}
		// Epoch = now - 2m30s: events older than that are folded.
		if wantEpoch := h.clk.Now().Add(-150 * time.Second).UnixMicro(); res.Epoch != wantEpoch {
			t.Fatalf("epoch %d, want %d", res.Epoch, wantEpoch)
		}
		if res.Events != 23 || res.Buckets < 6 {
			t.Fatalf("rollup %+v: want 23 events (times up to 450 s) folded and the old buckets freed", res)
		}
		after := wantValue(t, e, tg, want)
		if after.Events != 7 {
			t.Fatalf("after rollup the read added %d events, want 7", after.Events)
		}
		// A retry of a folded event is refused, not counted again.
		if _, _, err := e.Add(ctxT(t), tg, Request{ID: ids[0], Delta: -10}); !errors.Is(err, ErrTooLate) {
			t.Fatalf("retry of a folded event: %v", err)
		}
		// A retry of an unfolded event still counts once.
		mustAdd(t, e, tg, Request{ID: ids[29], Delta: 19})
		wantValue(t, e, tg, want)

		// Replaying the rollup at once changes nothing.
		if res := e.Rollup(ctxT(t), tg); res.Skipped || res.Events != 0 {
			t.Fatalf("second rollup: %+v", res)
		}
		h.clk.Advance(10 * time.Minute)
		if res := e.Rollup(ctxT(t), tg); res.Skipped || res.Events != 7 {
			t.Fatalf("final rollup: %+v", res)
		}
		final := wantValue(t, e, tg, want)
		if final.Buckets != 0 || final.Events != 0 {
			t.Fatalf("everything is rolled up, yet the read scanned %+v", final)
		}
	})
}

// A rollup from a process whose clock runs behind writes an older epoch;
// it must lose to the newer rollup, never move the counter backwards.
func TestStaleRollupLoses(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		d := h.store
		fast := h.engine()
		slowClock := clock.Offset{Base: h.clk, By: -20 * time.Second}
		slow := h.engine(func(c *Config) { c.Clock = slowClock })
		tg := h.target("c")
		for i := range 20 {
			mustAdd(t, fast, tg, Request{ID: api.NewRequestID(h.clk.Now()), Delta: int64(i)})
			h.clk.Advance(15 * time.Second)
		}
		h.clk.Advance(3 * time.Minute)
		if res := fast.Rollup(ctxT(t), tg); res.Skipped {
			t.Fatal(res.Err)
		}
		if res := slow.Rollup(ctxT(t), tg); res.Skipped || res.Events != 0 {
			t.Fatalf("slow rollup after the fast one: %+v (it must find nothing to do)", res)
		}
		// Write an older rollup directly, as a delayed replay would.
		err := d.WriteRollup(ctxT(t), &driver.WriteRollupParams{Namespace: tg.Namespace, Counter: tg.Counter,
			Rollup: driver.Rollup{Value: -1000, Epoch: t0.UnixMicro()}, Consistency: driver.Quorum})
		if err != nil {
			t.Fatal(err)
		}
		wantValue(t, slow, tg, 190)
	})
}

func TestRacingRollups(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		procs := make([]*Engine, 5)
		for i := range procs {
			procs[i] = h.engine()
		}
		tg := h.target("race")
		want := int64(0)
		for round := range 4 {
			for i := range 25 {
				mustAdd(t, procs[i%5], tg, Request{ID: api.NewRequestID(h.clk.Now()), Delta: int64(round*100 + i)})
				want += int64(round*100 + i)
				h.clk.Advance(3 * time.Second)
			}
			h.clk.Advance(time.Minute)
			var wg sync.WaitGroup
			for _, p := range procs {
				wg.Add(1)
				go func() { defer wg.Done(); p.Rollup(context.Background(), tg) }()
			}
			wg.Wait()
			wantValue(t, procs[round%5], tg, want)
		}
		h.clk.Advance(time.Hour)
		procs[0].Rollup(ctxT(t), tg)
		if r := wantValue(t, procs[4], tg, want); r.Events != 0 {
			t.Fatalf("after the last rollup: %+v", r)
		}
	})
}

func TestClearThenReuse(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		a, b := h.engine(), h.engine()
		tg := h.target("cart")
		old := api.NewRequestID(h.clk.Now())
		mustAdd(t, a, tg, Request{ID: old, Delta: 5})
		mustAdd(t, b, tg, Request{Delta: 6})
		h.clk.Advance(time.Second)

		clearID := api.NewRequestID(h.clk.Now())
		if _, err := a.Clear(ctxT(t), tg, clearID, time.Time{}); err != nil {
			t.Fatal(err)
		}
		wantValue(t, b, tg, 0)
		// A retry of a cleared increment is refused on the process that
		// cleared; on one that has not yet read the clear it is written
		// but, being at or before the clear, never counts.
		if _, _, err := a.Add(ctxT(t), tg, Request{ID: old, Delta: 5}); !errors.Is(err, ErrTooLate) {
			t.Fatalf("retry of a cleared event: %v", err)
		}
		c := h.engine()
		mustAdd(t, c, tg, Request{ID: old, Delta: 5})
		wantValue(t, c, tg, 0)

		h.clk.Advance(time.Second)
		mustAdd(t, b, tg, Request{Delta: 3})
		wantValue(t, a, tg, 3)
		// Repeating the clear (same id) is harmless: it is the same clear.
		if _, err := b.Clear(ctxT(t), tg, clearID, time.Time{}); err != nil {
			t.Fatal(err)
		}
		wantValue(t, a, tg, 3)
		// Rollups after the clear keep the value.
		h.clk.Advance(5 * time.Minute)
		if res := a.Rollup(ctxT(t), tg); res.Skipped {
			t.Fatal(res.Err)
		}
		wantValue(t, b, tg, 3)
		// A clear outside the window is refused.
		if _, err := a.Clear(ctxT(t), tg, clearID, time.Time{}); !errors.Is(err, ErrTooLate) {
			t.Fatalf("stale clear: %v", err)
		}
	})
}

// Reads and writes start a rollup once the counter's epoch trails by more
// than RollupEvery.
func TestRollupTriggeredByUse(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		e := h.engine(func(c *Config) { c.RollupEvery = 30 * time.Second })
		tg := h.target("busy")
		for range 10 {
			mustAdd(t, e, tg, Request{Delta: 2})
			h.clk.Advance(30 * time.Second)
		}
		deadline := time.Now().Add(30 * time.Second)
		for e.Stats().Rollups.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if e.Stats().Rollups.Load() == 0 {
			t.Fatal("no rollup was triggered")
		}
		if err := e.Close(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		r := wantValue(t, h.engine(), tg, 20)
		if r.Epoch == 0 {
			t.Fatalf("no rollup landed: %+v", r)
		}
	})
}

// faultyEvents injects the failures a networked store shows on writes.
type faultyEvents struct {
	driver.Events
	mu          sync.Mutex
	markErr     error
	eventErr    error
	landOnError bool
	duringWrite func()
}

func (f *faultyEvents) MarkEventBucket(ctx context.Context, p *driver.MarkEventBucketParams) error {
	f.mu.Lock()
	err := f.markErr
	f.mu.Unlock()
	if err != nil {
		return err
	}
	return f.Events.MarkEventBucket(ctx, p)
}

func (f *faultyEvents) WriteEvent(ctx context.Context, p *driver.WriteEventParams) error {
	f.mu.Lock()
	err, land, during := f.eventErr, f.landOnError, f.duringWrite
	f.mu.Unlock()
	if during != nil {
		during()
	}
	if err != nil && !land {
		return err
	}
	if werr := f.Events.WriteEvent(ctx, p); werr != nil {
		return werr
	}
	return err
}

func TestWriteFailures(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		f := &faultyEvents{Events: h.store}
		h.store = f
		e := h.engine()
		tg := h.target("f")

		f.markErr = fmt.Errorf("%w: injected", driver.ErrUnknownOutcome)
		if _, _, err := e.Add(ctxT(t), tg, Request{Delta: 1}); !errors.Is(err, ErrNotApplied) {
			t.Fatalf("marker failure: %v, want ErrNotApplied", err)
		}
		f.markErr = nil

		f.eventErr = fmt.Errorf("%w: injected", driver.ErrUnavailable)
		if _, _, err := e.Add(ctxT(t), tg, Request{Delta: 1}); !errors.Is(err, ErrNotApplied) {
			t.Fatalf("unavailable: %v, want ErrNotApplied", err)
		}
		wantValue(t, e, tg, 0)

		// A timeout after the write landed: unknown outcome; the retry
		// with the same id settles it and counts once.
		f.eventErr, f.landOnError = fmt.Errorf("%w: injected timeout", driver.ErrUnknownOutcome), true
		id := api.NewRequestID(h.clk.Now())
		if _, _, err := e.Add(ctxT(t), tg, Request{ID: id, Delta: 4}); !errors.Is(err, driver.ErrUnknownOutcome) {
			t.Fatalf("timeout: %v, want unknown outcome", err)
		}
		f.eventErr = nil
		mustAdd(t, e, tg, Request{ID: id, Delta: 4})
		wantValue(t, e, tg, 4)

		// A write that outlives the accept window is never acknowledged.
		f.duringWrite = func() { h.clk.Advance(3 * time.Minute) }
		if _, _, err := e.Add(ctxT(t), tg, Request{Delta: 1}); !errors.Is(err, driver.ErrUnknownOutcome) {
			t.Fatalf("slow write: %v, want unknown outcome", err)
		}
	})
}

// countingEvents counts marker writes.
type countingEvents struct {
	driver.Events
	marks atomic.Int64
}

func (c *countingEvents) MarkEventBucket(ctx context.Context, p *driver.MarkEventBucketParams) error {
	c.marks.Add(1)
	return c.Events.MarkEventBucket(ctx, p)
}

// The write path is one event write per increment: the bucket marker is
// written once per process and bucket, not per increment (docs: "one extra
// marker write per (process, counter, bucket)").
func TestOneMarkerWritePerBucket(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		ce := &countingEvents{Events: h.store}
		h.store = ce
		e := h.engine()
		tg := h.target("m")
		for range 20 { // one bucket (1 minute)
			mustAdd(t, e, tg, Request{Delta: 1})
		}
		if n := ce.marks.Load(); n != 1 {
			t.Fatalf("%d marker writes for 20 increments in one bucket, want 1", n)
		}
		h.clk.Advance(time.Minute)
		mustAdd(t, e, tg, Request{Delta: 1})
		if n := ce.marks.Load(); n != 2 {
			t.Fatalf("%d marker writes after moving to a second bucket, want 2", n)
		}
		wantValue(t, e, tg, 21)
	})
}
