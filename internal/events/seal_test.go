package events

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/driver"
)

// sealOptions are the defaults' shape at test scale: a seal of seconds
// and a de-duplication horizon of an hour.
var sealOptions = Options{Bucket: time.Minute, AcceptWindow: time.Hour, Seal: 4 * time.Second, RollupDelay: 2 * time.Second, FutureLimit: 10 * time.Second}

func (h *harness) sealTarget(counter string) Target {
	tg := h.target(counter)
	tg.Options = sealOptions.WithDefaults()
	return tg
}

// rollupOK rolls tg up on e and fails the test if it was skipped.
func rollupOK(t *testing.T, e *Engine, tg Target) RollupResult {
	t.Helper()
	res := e.Rollup(ctxT(t), tg)
	if res.Skipped {
		t.Fatalf("rollup skipped: %v", res.Err)
	}
	return res
}

func wantOutcome(t *testing.T, e *Engine, tg Target, r Request, replayed bool, wantErr error) {
	t.Helper()
	_, o, err := e.Add(ctxT(t), tg, r)
	if !errors.Is(err, wantErr) || (err == nil) != (wantErr == nil) {
		t.Fatalf("Add(%+v): %v, want %v", r, err, wantErr)
	}
	if o.Replayed != replayed {
		t.Fatalf("Add(%+v): replayed = %v, want %v", r, o.Replayed, replayed)
	}
}

// A retry 50 minutes after its event was acknowledged, through another
// process, counts nothing and is answered as a replay; the counter keeps
// being rolled up meanwhile, as a hot counter is.
func TestLateRetryThroughAnotherProcessIsReplayed(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		a, b := h.engine(), h.engine()
		tg := h.sealTarget("hot")
		first := api.NewRequestID(h.clk.Now())
		wantOutcome(t, a, tg, Request{ID: first, Delta: 7}, false, nil)
		want := int64(7)
		for range 50 {
			h.clk.Advance(time.Minute)
			mustAdd(t, a, tg, Request{Delta: 1})
			want++
			rollupOK(t, a, tg)
		}
		wantValue(t, b, tg, want)
		wantOutcome(t, b, tg, Request{ID: first, Delta: 7}, true, nil)
		wantOutcome(t, a, tg, Request{ID: first, Delta: 7}, true, nil)
		wantValue(t, a, tg, want)
		if b.Stats().Replayed.Load() != 1 {
			t.Fatalf("b counted %d replays", b.Stats().Replayed.Load())
		}
	})
}

// Rows written straight to the store stand for writes of unknown outcome:
// one that landed before its range was sealed counts, and its retry is a
// replay; one that landed after never counts, and its retry is refused —
// from every process, before and after later rollups.
func TestLateLandingWritesAndTheirRetries(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		a, b := h.engine(), h.engine()
		tg := h.sealTarget("late")
		mustAdd(t, a, tg, Request{Delta: 1}) // marks the bucket
		landed := driver.Event{ID: api.NewRequestID(h.clk.Now()), Time: h.clk.Now().UnixMicro(), Delta: 10}
		put := func(ev driver.Event) {
			t.Helper()
			err := h.store.WriteEvent(ctxT(t), &driver.WriteEventParams{Namespace: tg.Namespace, Counter: tg.Counter,
				Bucket: tg.Options.BucketOf(ev.Time), Event: ev, Consistency: driver.Quorum})
			if err != nil {
				t.Fatal(err)
			}
		}
		put(landed)
		lost := driver.Event{ID: api.NewRequestID(h.clk.Now()), Time: h.clk.Now().UnixMicro() + 1, Delta: 100}
		h.clk.Advance(10 * time.Second)
		rollupOK(t, a, tg)
		put(lost) // lands after its range was sealed
		wantValue(t, b, tg, 11)
		for _, e := range []*Engine{a, b} {
			wantOutcome(t, e, tg, Request{ID: landed.ID, Delta: 10}, true, nil)
			wantOutcome(t, e, tg, Request{ID: lost.ID, Time: time.UnixMicro(lost.Time), Delta: 100}, false, ErrTooLate)
		}
		h.clk.Advance(10 * time.Minute)
		rollupOK(t, b, tg)
		wantValue(t, a, tg, 11)
		wantOutcome(t, b, tg, Request{ID: lost.ID, Time: time.UnixMicro(lost.Time), Delta: 100}, false, ErrTooLate)
	})
}

// A retry older than the seal window whose range no rollup has sealed yet
// seals it itself, then answers.
func TestLateRetrySealsItsRange(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		a, b := h.engine(), h.engine()
		tg := h.sealTarget("unsealed")
		id := api.NewRequestID(h.clk.Now())
		mustAdd(t, a, tg, Request{ID: id, Delta: 3})
		never := api.NewRequestID(h.clk.Now())
		h.clk.Advance(30 * time.Second)
		wantOutcome(t, b, tg, Request{ID: id, Delta: 3}, true, nil)
		wantOutcome(t, b, tg, Request{ID: never, Delta: 5}, false, ErrTooLate)
		r := wantValue(t, a, tg, 3)
		if r.Epoch == 0 {
			t.Fatal("the late retry did not roll the counter up")
		}
	})
}

// Concurrent late retries of one event from several processes, racing
// rollups, all get the same answer and count nothing.
func TestConcurrentLateRetriesAgree(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		procs := []*Engine{h.engine(), h.engine(), h.engine()}
		tg := h.sealTarget("storm")
		var ids []string
		for i := range 20 {
			id := api.NewRequestID(h.clk.Now())
			ids = append(ids, id)
			mustAdd(t, procs[i%3], tg, Request{ID: id, Delta: 1})
			h.clk.Advance(500 * time.Millisecond)
		}
		h.clk.Advance(time.Minute)
		var wg sync.WaitGroup
		errs := make(chan error, 60)
		for i := range 60 {
			wg.Go(func() {
				_, o, err := procs[i%3].Add(context.Background(), tg, Request{ID: ids[i%20], Delta: 1})
				if err == nil && !o.Replayed {
					err = fmt.Errorf("retry %d was not a replay", i)
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		wantValue(t, procs[1], tg, 20)
	})
}

// A hot counter's seals are cut at bucket ends and at MaxSealEvents; every
// event stays answerable and the value exact.
func TestSealsSplitByBucketAndSize(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		e := h.engine(func(c *Config) { c.MaxSealEvents = 7 })
		tg := h.sealTarget("split")
		var ids []string
		for range 90 {
			id := api.NewRequestID(h.clk.Now())
			ids = append(ids, id)
			mustAdd(t, e, tg, Request{ID: id, Delta: 2})
			h.clk.Advance(2 * time.Second) // 3 minutes: 3 buckets
		}
		h.clk.Advance(time.Minute)
		res := rollupOK(t, e, tg)
		if res.Events != 90 || res.Seals < 90/7 {
			t.Fatalf("rollup %+v: want 90 events in at least 13 seals", res)
		}
		if r := wantValue(t, e, tg, 180); r.Events != 0 {
			t.Fatalf("read after the rollup added %d events", r.Events)
		}
		other := h.engine()
		for _, id := range ids {
			wantOutcome(t, other, tg, Request{ID: id, Delta: 2}, true, nil)
		}
	})
}

// Concurrent reads of one counter share store reads, and each still sees
// every increment acknowledged before it began.
func TestConcurrentReadsShareStoreReads(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		e := h.engine()
		tg := h.sealTarget("shared")
		mustAdd(t, e, tg, Request{Delta: 5})
		var wg sync.WaitGroup
		for range 40 {
			wg.Go(func() {
				r, err := e.Read(context.Background(), tg)
				if err != nil || r.Value != 5 {
					t.Errorf("read %+v, %v", r, err)
				}
			})
		}
		wg.Wait()
		if reads := e.Stats().Reads.Load(); reads >= 40 {
			t.Logf("40 concurrent reads made %d store reads (none shared this time)", reads)
		}
		if got := e.Stats().Reads.Load() + e.Stats().SharedReads.Load(); got < 40 {
			t.Fatalf("reads %d + shared %d < 40 callers", e.Stats().Reads.Load(), e.Stats().SharedReads.Load())
		}
	})
}

// A bounded-staleness read answers from memory while what this process
// holds is fresh enough, says how stale it is, and reads the store once
// it is not.
func TestReadWithinAnswersFromMemory(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		a, b := h.engine(), h.engine()
		tg := h.sealTarget("stale")
		mustAdd(t, a, tg, Request{Delta: 5})
		r, err := b.ReadWithin(ctxT(t), tg, time.Second)
		if err != nil || r.Cached || r.Value != 5 {
			t.Fatalf("first read: %+v, %v (nothing cached yet: must read the store)", r, err)
		}
		asOf := r.AsOf
		mustAdd(t, a, tg, Request{Delta: 1})
		h.clk.Advance(500 * time.Millisecond)
		r, err = b.ReadWithin(ctxT(t), tg, time.Second)
		if err != nil || !r.Cached || r.Value != 5 || !r.AsOf.Equal(asOf) {
			t.Fatalf("within a second: %+v, %v (want the cached 5 as of %v)", r, err, asOf)
		}
		h.clk.Advance(time.Second)
		r, err = b.ReadWithin(ctxT(t), tg, time.Second)
		if err != nil || r.Cached || r.Value != 6 {
			t.Fatalf("after a second: %+v, %v (want a store read of 6)", r, err)
		}
	})
}

// recordReads counts reads of counter records.
type recordReads struct {
	driver.Events
	n atomic.Int64
}

func (r *recordReads) ReadEventCounter(ctx context.Context, p *driver.ReadEventCounterParams) (*driver.EventCounter, error) {
	r.n.Add(1)
	return r.Events.ReadEventCounter(ctx, p)
}

// A read of a counter rolled up seconds ago reads its record once: the
// second look, which guards against deletes, is only for epochs old
// enough to have buckets deleted under the read.
func TestAHotReadReadsTheRecordOnce(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		rr := &recordReads{Events: h.store}
		h.store = rr
		e := h.engine()
		tg := h.sealTarget("hot")
		mustAdd(t, e, tg, Request{Delta: 1})
		h.clk.Advance(10 * time.Second)
		rollupOK(t, e, tg)
		before := rr.n.Load()
		wantValue(t, e, tg, 1)
		if got := rr.n.Load() - before; got != 1 {
			t.Fatalf("a hot read read the record %d times, want 1", got)
		}
	})
}
