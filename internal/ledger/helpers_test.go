package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/driver/cassandra"
	"github.com/abacusdb/abacus/internal/sharedkeyspace"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var quiet = slog.New(slog.DiscardHandler)

var shared = sharedkeyspace.Keyspace{Name: "ledger engine"}

// onEachDriver runs fn on the embedded store and on this package's shared
// Cassandra keyspace: the engine needs the whole driver, so no adapter.
var onEachDriver = shared.Each

func sharedCassandra(t testing.TB) *cassandra.Driver { return shared.Driver(t) }

func TestMain(m *testing.M) { shared.Main(m) }

// harness is one store and a shared manual clock; each engine it makes is
// one process (one actor per ledger).
type harness struct {
	t     *testing.T
	store driver.Ledgers
	clk   *clock.Manual
	ns    string
}

func newHarness(t *testing.T, store driver.Ledgers) *harness {
	return &harness{t: t, store: store, clk: clock.NewManual(t0), ns: shared.Namespace()}
}

// onEachHarness is the usual start of a test: in parallel, on each driver,
// a harness on that driver's store.
func onEachHarness(t *testing.T, fn func(t *testing.T, h *harness)) {
	t.Helper()
	t.Parallel()
	onEachDriver(t, func(t *testing.T, d driver.Driver) { fn(t, newHarness(t, d)) })
}

func (h *harness) engine(tweak ...func(*Config)) *Engine {
	h.t.Helper()
	cfg := Config{
		Store: h.store, Clock: h.clk, Logger: quiet,
		RetryBackoff: -1, ClaimWait: 2 * time.Second, WriteTimeout: 15 * time.Second,
	}
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

func (h *harness) target(ledger string, opts Options) Target {
	return Target{Namespace: h.ns, Ledger: ledger, Options: opts.WithDefaults()}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func mustUpdate(t *testing.T, e *Engine, tg Target, amount int64, id string) Result {
	t.Helper()
	r, err := e.Update(ctxT(t), tg, amount, id)
	if err != nil {
		t.Fatalf("Update(%d, %q): %v", amount, id, err)
	}
	return r
}

func mustRead(t *testing.T, e *Engine, tg Target) *State {
	t.Helper()
	st, err := e.Read(ctxT(t), tg)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return st
}

func wantValue(t *testing.T, e *Engine, tg Target, want int64) {
	t.Helper()
	v, err := mustRead(t, e, tg).Value()
	if err != nil || v != want {
		t.Fatalf("value = %d, %v; want %d", v, err, want)
	}
}

func wantKnown(t *testing.T, st *State, known map[string]bool) {
	t.Helper()
	for id, want := range known {
		if got := st.Has(id); got != want {
			t.Errorf("has_request_id(%s) = %v, want %v", id, got, want)
		}
	}
}

// fault is what a faultyStore does to one call.
type fault int

const (
	pass            fault = iota
	landThenUnknown       // apply, then report a timeout (ErrUnknownOutcome)
	unknownNoLand         // report a timeout without applying
	unavailable           // report ErrUnavailable without applying
)

func (f fault) String() string {
	return [...]string{"pass", "land-then-unknown", "unknown-no-land", "unavailable"}[f]
}

// faultyStore wraps a real store and injects the failures a networked
// store shows on writes and claims. Reads pass through.
type faultyStore struct {
	driver.Ledgers

	mu          sync.Mutex
	writeFault  func(p *driver.WriteLedgerRowParams) fault
	claimFault  func(p *driver.ClaimRequestParams) fault
	swapFault   func(p *driver.SwapLedgerRightsParams) fault
	writeGate   func(p *driver.WriteLedgerRowParams) <-chan struct{}
	rowsFault   func(ws []driver.WriteLedgerRowParams) fault // WriteLedgerRows: all rows land or none
	rowsGate    func(ws []driver.WriteLedgerRowParams) <-chan struct{}
	writes      int
	injected    map[fault]int
	releaseErrs int // release calls to fail
}

func (f *faultyStore) decide(fn func() fault) fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fn == nil {
		return pass
	}
	fl := fn()
	if f.injected == nil {
		f.injected = map[fault]int{}
	}
	f.injected[fl]++
	return fl
}

func (f *faultyStore) apply(fl fault, op func() error) error {
	switch fl {
	case landThenUnknown:
		if err := op(); err != nil {
			return err
		}
		return fmt.Errorf("injected timeout after the write landed: %w", driver.ErrUnknownOutcome)
	case unknownNoLand:
		return fmt.Errorf("injected timeout, nothing landed: %w", driver.ErrUnknownOutcome)
	case unavailable:
		return fmt.Errorf("injected: %w", driver.ErrUnavailable)
	}
	return op()
}

func (f *faultyStore) WriteLedgerRow(ctx context.Context, p *driver.WriteLedgerRowParams) error {
	f.mu.Lock()
	gate := f.writeGate
	wf := f.writeFault
	f.writes++
	f.mu.Unlock()
	if gate != nil {
		if ch := gate(p); ch != nil {
			select {
			case <-ch:
			case <-ctx.Done():
				return fmt.Errorf("gated write: %w: %w", driver.ErrUnknownOutcome, ctx.Err())
			}
		}
	}
	var fl fault
	if wf != nil {
		fl = f.decide(func() fault { return wf(p) })
	}
	return f.apply(fl, func() error { return f.Ledgers.WriteLedgerRow(ctx, p) })
}

func (f *faultyStore) WriteLedgerRows(ctx context.Context, ws []driver.WriteLedgerRowParams) error {
	f.mu.Lock()
	rf := f.rowsFault
	gate := f.rowsGate
	f.writes++
	f.mu.Unlock()
	if gate != nil {
		if ch := gate(ws); ch != nil {
			<-ch
		}
	}
	var fl fault
	if rf != nil {
		fl = f.decide(func() fault { return rf(ws) })
	}
	return f.apply(fl, func() error { return f.Ledgers.WriteLedgerRows(ctx, ws) })
}

func (f *faultyStore) setRowsFault(fn func([]driver.WriteLedgerRowParams) fault) {
	f.mu.Lock()
	f.rowsFault = fn
	f.mu.Unlock()
}

func (f *faultyStore) ClaimRequest(ctx context.Context, p *driver.ClaimRequestParams) (driver.ClaimResult, error) {
	f.mu.Lock()
	cf := f.claimFault
	f.mu.Unlock()
	var fl fault
	if cf != nil {
		fl = f.decide(func() fault { return cf(p) })
	}
	var res driver.ClaimResult
	err := f.apply(fl, func() error {
		var err error
		res, err = f.Ledgers.ClaimRequest(ctx, p)
		return err
	})
	return res, err
}

func (f *faultyStore) ReleaseClaim(ctx context.Context, p *driver.ReleaseClaimParams) (bool, error) {
	f.mu.Lock()
	fail := f.releaseErrs > 0
	if fail {
		f.releaseErrs--
	}
	f.mu.Unlock()
	if fail {
		return false, fmt.Errorf("injected: %w", driver.ErrUnknownOutcome)
	}
	return f.Ledgers.ReleaseClaim(ctx, p)
}

func (f *faultyStore) SwapLedgerRights(ctx context.Context, p *driver.SwapLedgerRightsParams) (bool, driver.LedgerRights, error) {
	f.mu.Lock()
	sf := f.swapFault
	f.mu.Unlock()
	var fl fault
	if sf != nil {
		fl = f.decide(func() fault { return sf(p) })
	}
	var (
		applied bool
		cur     driver.LedgerRights
	)
	err := f.apply(fl, func() error {
		var err error
		applied, cur, err = f.Ledgers.SwapLedgerRights(ctx, p)
		return err
	})
	return applied, cur, err
}

func (f *faultyStore) setWriteFault(fn func(*driver.WriteLedgerRowParams) fault) {
	f.mu.Lock()
	f.writeFault = fn
	f.mu.Unlock()
}

func (f *faultyStore) setClaimFault(fn func(*driver.ClaimRequestParams) fault) {
	f.mu.Lock()
	f.claimFault = fn
	f.mu.Unlock()
}

func (f *faultyStore) count(fl fault) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.injected[fl]
}

// barrier lets n goroutines wait for each other, giving up after a
// timeout so that a path which never reaches it cannot hang a test.
type barrier struct {
	mu      sync.Mutex
	n       int
	arrived int
	all     chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: n, all: make(chan struct{})} }

func (b *barrier) wait(timeout time.Duration) bool {
	b.mu.Lock()
	b.arrived++
	if b.arrived == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
		return true
	case <-time.After(timeout):
		return false
	}
}

func isUnknown(err error) bool { return errors.Is(err, ErrUnknownOutcome) }

// retryable reports whether an answer tells its caller to retry with the
// same id: the outcome is unknown, or the request was not applied for a
// reason other than the ledger's floor.
func retryable(err error) bool {
	return isUnknown(err) || errors.Is(err, ErrNotApplied) && !errors.Is(err, ErrBelowFloor)
}

// modeOf names the mode a test's strict flag stands for.
func modeOf(strict bool) Mode {
	if strict {
		return ModeExact
	}
	return ModeConcurrentRetriesMayDouble
}
