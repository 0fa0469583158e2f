package events

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// gatedEvents holds event writes at a gate, logs the requests that reach
// the store, and fails the ones a test asks it to.
type gatedEvents struct {
	driver.Events
	mu      sync.Mutex
	gate    chan struct{} // writes wait until it is closed; nil: no wait
	arrived chan struct{} // closed when the first write reaches the gate
	batches []int         // the size of each WriteEvents call
	singles int           // WriteEvent calls
	manyErr error         // every WriteEvents call fails with it, writing nothing
	refuse  string        // WriteEvent of this counter fails as unavailable
}

func (g *gatedEvents) wait() {
	g.mu.Lock()
	gate, arrived := g.gate, g.arrived
	g.arrived = nil
	g.mu.Unlock()
	if arrived != nil {
		close(arrived)
	}
	if gate != nil {
		<-gate
	}
}

func (g *gatedEvents) WriteEvent(ctx context.Context, p *driver.WriteEventParams) error {
	g.wait()
	g.mu.Lock()
	g.singles++
	refused := p.Counter == g.refuse
	g.mu.Unlock()
	if refused {
		return fmt.Errorf("%w: injected", driver.ErrUnavailable)
	}
	return g.Events.WriteEvent(ctx, p)
}

func (g *gatedEvents) WriteEvents(ctx context.Context, ws []driver.WriteEventParams) error {
	g.wait()
	g.mu.Lock()
	g.batches = append(g.batches, len(ws))
	err := g.manyErr
	g.mu.Unlock()
	if err != nil {
		return err
	}
	return g.Events.WriteEvents(ctx, ws)
}

// holdTheSlot starts an add whose write is held at the gate, taking the
// engine's one request slot, and returns once that write reached the
// store; the add answers on the channel once open opens the gate. The
// test's cleanup opens it too, before the engine's Close (cleanups run
// last first): a check that fails while the write is held must fail the
// test, not leave Close waiting on the gate.
func holdTheSlot(t *testing.T, h *harness, g *gatedEvents, e *Engine) (open func(), lead chan error) {
	t.Helper()
	gate, arrived := make(chan struct{}), make(chan struct{})
	open = sync.OnceFunc(func() { close(gate) })
	t.Cleanup(open)
	g.mu.Lock()
	g.gate, g.arrived = gate, arrived
	g.mu.Unlock()
	lead = make(chan error, 1)
	go func() { _, _, err := e.Add(ctxT(t), h.target("lead"), Request{Delta: 1}); lead <- err }()
	select {
	case <-arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("the lead write never reached the store")
	}
	return open, lead
}

// queueBehind waits until n event writes have queued behind the held
// write (their adds marked their buckets first). Without a combiner
// (MaxEventBatch 1) nothing queues: each write waits at the gate alone.
func queueBehind(t *testing.T, e *Engine, n int) {
	t.Helper()
	if e.combiner == nil {
		return
	}
	for deadline := time.Now().Add(10 * time.Second); e.combiner.Queued() != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d event writes queued behind the held one, want %d", e.combiner.Queued(), n)
		}
	}
}

// addAll adds 1 to each counter at once, behind a held write, and
// returns each add's event and error once the gate opens.
func addAll(t *testing.T, h *harness, g *gatedEvents, e *Engine, counters []string) ([]driver.Event, []error) {
	t.Helper()
	open, lead := holdTheSlot(t, h, g, e)
	evs, errs := make([]driver.Event, len(counters)), make([]error, len(counters))
	var wg sync.WaitGroup
	for i, c := range counters {
		wg.Go(func() { evs[i], _, errs[i] = e.Add(ctxT(t), h.target(c), Request{Delta: 1}) })
	}
	queueBehind(t, e, len(counters))
	open()
	wg.Wait()
	if err := <-lead; err != nil {
		t.Fatalf("lead: %v", err)
	}
	return evs, errs
}

// gatedEngine is an engine whose event writes reach the harness's store
// through a gatedEvents, with MaxEventBatch batch and one request slot.
func gatedEngine(h *harness, batch int) (*gatedEvents, *Engine) {
	g := &gatedEvents{Events: h.store}
	h.store = g
	return g, h.engine(func(c *Config) { c.MaxEventBatch, c.MaxInflightBatches = batch, 1 })
}

// retryEvent adds ev again, with its own id and time.
func retryEvent(t *testing.T, e *Engine, tg Target, ev driver.Event) {
	t.Helper()
	mustAdd(t, e, tg, Request{ID: ev.ID, Time: time.UnixMicro(ev.Time), Delta: ev.Delta})
}

func counterNames(format string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf(format, i))
	}
	return out
}

// Event writes of many counters that queue behind a busy request go out
// together, at most MaxEventBatch to a request, and each is acknowledged
// and read back as if written alone.
func TestEventsOfManyCountersShareARequest(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		g, e := gatedEngine(h, 8)
		counters := counterNames("quiet-%02d", 20)
		_, errs := addAll(t, h, g, e, counters)
		for i, err := range errs {
			if err != nil {
				t.Fatalf("%s: %v", counters[i], err)
			}
		}
		for _, c := range counters {
			wantValue(t, e, h.target(c), 1)
		}
		g.mu.Lock()
		sizes, singles := slices.Clone(g.batches), g.singles
		g.mu.Unlock()
		total := singles
		for _, n := range sizes {
			total += n
		}
		if len(sizes) == 0 || slices.Max(sizes) > 8 || slices.Max(sizes) < 2 || total != 21 {
			t.Fatalf("requests of %v events and %d alone: want some of 2 to 8 events, 21 in all", sizes, singles)
		}
	})
}

// A request the store refuses is sent again event by event, so each add
// gets its own answer: the others are applied once; one the store then
// refuses, even as unavailable, is of unknown outcome (never "not
// applied": the failed request may have carried it), and its retry with
// the same id counts it once.
func TestAFailedEventRequestIsSentAgainEventByEvent(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		g, e := gatedEngine(h, 16)
		g.manyErr, g.refuse = fmt.Errorf("%w: injected", driver.ErrUnknownOutcome), "batch-03"
		counters := counterNames("batch-%02d", 6)
		evs, errs := addAll(t, h, g, e, counters)
		var refused driver.Event
		for i, c := range counters {
			if c == g.refuse {
				refused = evs[i]
				if !errors.Is(errs[i], driver.ErrUnknownOutcome) || errors.Is(errs[i], ErrNotApplied) || errors.Is(errs[i], driver.ErrUnavailable) {
					t.Fatalf("%s: %v, want unknown outcome, never not applied", c, errs[i])
				}
				continue
			}
			if errs[i] != nil {
				t.Fatalf("%s: %v", c, errs[i])
			}
			wantValue(t, e, h.target(c), 1)
		}
		g.mu.Lock()
		sent := len(g.batches) > 0 && g.singles >= 1+len(counters)
		g.refuse, g.manyErr = "", nil
		g.mu.Unlock()
		if !sent {
			t.Fatalf("requests of %v events and %d alone: want a failed request and each event sent again", g.batches, g.singles)
		}
		// The retry of the refused add, with its own id and time, counts
		// it once, twice sent.
		tg := h.target("batch-03")
		for range 2 {
			retryEvent(t, e, tg, refused)
		}
		wantValue(t, e, tg, 1)
	})
}

// With MaxEventBatch 1 every event is its own request.
func TestEventBatchOff(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		g, e := gatedEngine(h, 1)
		counters := counterNames("alone-%02d", 5)
		_, errs := addAll(t, h, g, e, counters)
		for i, err := range errs {
			if err != nil {
				t.Fatalf("%s: %v", counters[i], err)
			}
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if len(g.batches) != 0 || g.singles != 6 {
			t.Fatalf("requests of %v events and %d alone, want 6 alone", g.batches, g.singles)
		}
	})
}

// An add whose caller gives up while its event waits for a request is of
// unknown outcome, never applied and never "not applied": the event may
// still be sent, and its retry counts it once.
func TestGivingUpWhileQueuedIsUnknown(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		g, e := gatedEngine(h, 8)
		tg := h.target("impatient")
		mustAdd(t, e, tg, Request{Delta: 1}) // marks the bucket
		open, lead := holdTheSlot(t, h, g, e)
		ctx, cancel := context.WithCancel(ctxT(t))
		got := make(chan error, 1)
		var ev driver.Event
		go func() {
			var err error
			ev, _, err = e.Add(ctx, tg, Request{Delta: 1})
			got <- err
		}()
		queueBehind(t, e, 1)
		cancel()
		err := <-got
		if !errors.Is(err, driver.ErrUnknownOutcome) || errors.Is(err, ErrNotApplied) {
			t.Fatalf("an add given up while queued: %v, want unknown outcome", err)
		}
		open()
		if err := <-lead; err != nil {
			t.Fatal(err)
		}
		retryEvent(t, e, tg, ev)
		wantValue(t, e, tg, 2)
	})
}

// Close waits for the event writes queued behind a request and sends them:
// each add is answered as it would be alone.
func TestCloseSendsQueuedEvents(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		g, e := gatedEngine(h, 8)
		counters := counterNames("closing-%02d", 5)
		open, lead := holdTheSlot(t, h, g, e)
		errs := make([]error, len(counters))
		var wg sync.WaitGroup
		for i, c := range counters {
			wg.Go(func() { _, _, errs[i] = e.Add(ctxT(t), h.target(c), Request{Delta: 1}) })
		}
		queueBehind(t, e, len(counters))
		closed := make(chan error, 1)
		go func() { closed <- e.Close(ctxT(t)) }()
		for deadline := time.Now().Add(5 * time.Second); e.work.Enter(); time.Sleep(time.Millisecond) {
			e.work.Leave()
			if time.Now().After(deadline) {
				t.Fatal("Close never began")
			}
		}
		open()
		wg.Wait()
		if err := <-lead; err != nil {
			t.Fatal(err)
		}
		if err := <-closed; err != nil {
			t.Fatalf("Close: %v", err)
		}
		for i, c := range counters {
			if errs[i] != nil {
				t.Fatalf("%s: %v", c, errs[i])
			}
			wantValue(t, h.engine(), h.target(c), 1)
		}
	})
}

// MaxEventBatch and MaxInflightBatches are refused out of range: negative,
// or more writes than one request carries.
func TestEventBatchConfig(t *testing.T) {
	t.Parallel()
	var store driver.Events = &gatedEvents{} // never called: New only checks the settings
	for _, c := range []Config{
		{MaxEventBatch: -1}, {MaxInflightBatches: -1}, {MaxEventBatch: driver.MaxShardWrites + 1},
	} {
		c.Store = store
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v): no error", c)
		}
	}
	if _, err := New(Config{Store: store, MaxEventBatch: driver.MaxShardWrites}); err != nil {
		t.Errorf("MaxEventBatch at the limit: %v", err)
	}
}
