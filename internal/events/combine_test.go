package events

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus/api"
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

// addAll adds 1 to each counter at once, after a lead add whose write is
// held at the gate has taken the engine's one request slot, and returns
// each add's error once the gate opens.
func addAll(t *testing.T, h *harness, g *gatedEvents, e *Engine, counters []string) []error {
	t.Helper()
	gate, arrived := make(chan struct{}), make(chan struct{})
	g.mu.Lock()
	g.gate, g.arrived = gate, arrived
	g.mu.Unlock()
	lead := make(chan error, 1)
	go func() { _, err := e.Add(ctxT(t), h.target("lead"), Request{Delta: 1}); lead <- err }()
	select {
	case <-arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("the lead write never reached the store")
	}
	errs := make([]error, len(counters))
	var wg sync.WaitGroup
	for i, c := range counters {
		wg.Go(func() { _, errs[i] = e.Add(ctxT(t), h.target(c), Request{Delta: 1}) })
	}
	time.Sleep(50 * time.Millisecond) // the adds mark their buckets and queue behind the gate
	close(gate)
	wg.Wait()
	if err := <-lead; err != nil {
		t.Fatalf("lead: %v", err)
	}
	return errs
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
		g := &gatedEvents{Events: h.store}
		h.store = g
		e := h.engine(func(c *Config) { c.MaxEventBatch, c.MaxInflightBatches = 8, 1 })
		counters := counterNames("quiet-%02d", 20)
		for i, err := range addAll(t, h, g, e, counters) {
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
		g := &gatedEvents{Events: h.store, manyErr: fmt.Errorf("%w: injected", driver.ErrUnknownOutcome), refuse: "batch-03"}
		h.store = g
		e := h.engine(func(c *Config) { c.MaxEventBatch, c.MaxInflightBatches = 16, 1 })
		counters := counterNames("batch-%02d", 6)
		errs := addAll(t, h, g, e, counters)
		for i, c := range counters {
			if c == g.refuse {
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
		// The retry of the refused add, with its id, counts it once.
		refused := h.target("batch-03")
		id := api.NewRequestID(h.clk.Now())
		mustAdd(t, e, refused, Request{ID: id, Delta: 1})
		mustAdd(t, e, refused, Request{ID: id, Delta: 1})
		wantValue(t, e, refused, 1)
	})
}

// With MaxEventBatch 1 every event is its own request.
func TestEventBatchOff(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		g := &gatedEvents{Events: h.store}
		h.store = g
		e := h.engine(func(c *Config) { c.MaxEventBatch = 1 })
		counters := counterNames("alone-%02d", 5)
		for i, err := range addAll(t, h, g, e, counters) {
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
