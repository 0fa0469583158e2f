package ledger

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// A retry storm inside the history window: writes (and, in strict mode,
// claims) fail a quarter of the time — some after landing, some before,
// some as "unavailable" — and every caller retries each request with the
// same id, on whichever process it happens to reach, until it gets an
// answer; then it sends the request once more for good measure. The value
// must be exact: every request counted once.
func TestRetryStormIsExact(t *testing.T) {
	t.Parallel()
	onEachDriver(t, func(t *testing.T, d driver.Driver) {
		for _, strict := range []bool{false, true} {
			t.Run(fmt.Sprint("strict=", strict), func(t *testing.T) {
				retryStorm(t, d, strict)
			})
		}
	})
}

func retryStorm(t *testing.T, d driver.Driver, strict bool) {
	const (
		processes = 4
		callers   = 4
		requests  = 40 // per caller
	)
	seed := uint64(time.Now().UnixNano())
	t.Logf("fault seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	var rngMu sync.Mutex
	pick := func() fault {
		rngMu.Lock()
		defer rngMu.Unlock()
		switch x := rng.IntN(100); {
		case x < 10:
			return landThenUnknown
		case x < 18:
			return unknownNoLand
		case x < 25:
			return unavailable
		}
		return pass
	}
	fs := &faultyStore{Ledgers: d}
	fs.setWriteFault(func(*driver.WriteLedgerRowParams) fault { return pick() })
	fs.setClaimFault(func(*driver.ClaimRequestParams) fault { return pick() })
	h := newHarness(t, fs)
	// A retry_count of 1 makes the engines give up (and retire their actor)
	// now and then, so callers' own retries land on other actors.
	// The window (64) exceeds what the other callers can append to one
	// actor between a request and its retry.
	tg := h.target("storm", Options{HistoryLength: 64, Mode: modeOf(strict), RetryCount: 1})
	engines := make([]*Engine, processes)
	for i := range engines {
		engines[i] = h.engine()
	}

	var (
		want      atomic.Int64
		applied   atomic.Int64
		answered  atomic.Int64
		unknowns  atomic.Int64
		wg        sync.WaitGroup
		callerErr = make([]error, callers)
	)
	for c := range callers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(c), 99))
			for i := range requests {
				id := fmt.Sprintf("c%d-r%d", c, i)
				amt := 1 + r.Int64N(100)
				if r.IntN(4) == 0 {
					amt = -amt
				}
				want.Add(amt)
				// Retry until answered, then once more.
				giveUp := time.Now().Add(time.Minute)
				for extra := 0; extra < 2; {
					if time.Now().After(giveUp) {
						callerErr[c] = fmt.Errorf("%s: no answer within a minute of retries", id)
						return
					}
					res, err := engines[r.IntN(processes)].Update(ctxT(t), tg, amt, id)
					switch {
					case err == nil:
						answered.Add(1)
						if res.Applied {
							applied.Add(1)
						}
						extra++
					case retryable(err):
						unknowns.Add(1)
						time.Sleep(time.Millisecond)
					default:
						callerErr[c] = fmt.Errorf("%s: %w", id, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for _, err := range callerErr {
		if err != nil {
			t.Fatal(err)
		}
	}
	st := mustRead(t, engines[0], tg)
	got, err := st.Value()
	if err != nil || got != want.Load() {
		t.Fatalf("value after the storm = %d, %v; want %d", got, err, want.Load())
	}
	if n := applied.Load(); n > callers*requests {
		t.Fatalf("%d requests reported applied, at most %d may be", n, callers*requests)
	}
	// Every request is in exactly one actor's history (the window is large).
	holders := map[string]int{}
	for _, actor := range st.Actors() {
		a := st.Actor(actor)
		for _, e := range append(append([]Entry(nil), a.P.History...), a.N.History...) {
			holders[e.RequestID]++
		}
	}
	for c := range callers {
		for i := range requests {
			if id := fmt.Sprintf("c%d-r%d", c, i); holders[id] != 1 {
				t.Fatalf("%s is in %d histories, want 1", id, holders[id])
			}
		}
	}
	t.Logf("faults injected: %d land-then-unknown, %d unknown-no-land, %d unavailable; %d errors retried by callers; %d actors; %d retired",
		fs.count(landThenUnknown), fs.count(unknownNoLand), fs.count(unavailable), unknowns.Load(), st.Len(), totalRetired(engines))
	if fs.count(landThenUnknown) == 0 || unknowns.Load() == 0 {
		t.Fatal("the storm injected no faults that reached callers; the test proves nothing")
	}
}

// claimTTL is the claim TTL of the tests that let claims expire: long
// enough that a loaded dev node cannot expire a claim while a test still
// relies on it.
const claimTTL = 5 * time.Second

// expire moves past the expiry of claims made after start: on the manual
// clock for the embedded store, and in real time for Cassandra, whose
// TTLs run on its own clock.
func expire(h *harness, start time.Time, onCassandra bool) {
	h.clk.Advance(claimTTL + time.Second)
	if onCassandra {
		time.Sleep(time.Until(start.Add(claimTTL + 1100*time.Millisecond)))
	}
}

func totalRetired(es []*Engine) uint64 {
	var n uint64
	for _, e := range es {
		n += e.Stats().Retired.Load()
	}
	return n
}

// Ten processes credit and debit one ledger at the same time, each with
// several concurrent callers; every actor writes only its own row, so
// nothing is lost.
func TestTenConcurrentActors(t *testing.T) {
	t.Parallel()
	onEachDriver(t, func(t *testing.T, d driver.Driver) {
		for _, strict := range []bool{false, true} {
			h := newHarness(t, d)
			tg := h.target("hot", Options{Mode: modeOf(strict)})
			const actors, callers, each = 10, 3, 8
			engines := make([]*Engine, actors)
			for i := range engines {
				engines[i] = h.engine()
			}
			var wg sync.WaitGroup
			var want atomic.Int64
			for a := range actors {
				for c := range callers {
					wg.Go(func() {
						for i := range each {
							amt := int64(a*100 + c*10 + i + 1)
							if i%3 == 2 {
								amt = -amt
							}
							mustUpdate(t, engines[a], tg, amt, fmt.Sprintf("a%d-c%d-%d", a, c, i))
							want.Add(amt)
						}
					})
				}
			}
			wg.Wait()
			st := mustRead(t, engines[0], tg)
			if v, err := st.Value(); err != nil || v != want.Load() {
				t.Fatalf("strict=%v: value %d, %v; want %d", strict, v, err, want.Load())
			}
			if st.Len() != actors {
				t.Fatalf("strict=%v: %d actor rows, want %d", strict, st.Len(), actors)
			}
		}
	})
}

// The design's drift case: two actors receive the same request at the same
// moment. Each reads the ledger before the other has written, neither sees
// the request id, and both apply it. Strict mode closes it: both still
// read first, but only one wins the claim; the other waits for the
// winner's write and answers "already applied".
func TestDriftNonStrictAndClosedInStrict(t *testing.T) {
	t.Parallel()
	onEachDriver(t, func(t *testing.T, d driver.Driver) {
		for _, strict := range []bool{false, true} {
			h := newHarness(t, d)
			tg := h.target("drift", Options{Mode: modeOf(strict)})
			// Both claims meet on one Paxos partition, and the loser then
			// waits for the winner's write: on a loaded cluster that can
			// take more than the default ClaimWait.
			wait := func(c *Config) { c.ClaimWait = time.Minute }
			a, b := h.engine(wait), h.engine(wait)
			both := newBarrier(2)
			readBoth := func(Target, string) {
				if !both.wait(10 * time.Second) {
					t.Error("the other actor never read the ledger")
				}
			}
			a.afterRead, b.afterRead = readBoth, readBoth

			var wg sync.WaitGroup
			results := make([]Result, 2)
			for i, e := range []*Engine{a, b} {
				wg.Go(func() { results[i] = mustUpdate(t, e, tg, 25, "pay-42") })
			}
			wg.Wait()
			a.afterRead, b.afterRead = nil, nil

			st := mustRead(t, a, tg)
			v, _ := st.Value()
			holders := 0
			for _, id := range st.Actors() {
				if _, _, ok := st.Actor(id).P.find("pay-42"); ok {
					holders++
				}
			}
			if !strict {
				// Reproduced: counted twice, recorded by both actors.
				if v != 50 || holders != 2 || !results[0].Applied || !results[1].Applied {
					t.Fatalf("non-strict: value %d, %d holders, results %+v; the drift did not reproduce", v, holders, results)
				}
				// The history shows what counts: the request twice.
				if got := history(t, a, tg, 10); !reflect.DeepEqual(got, []string{"pay-42:25", "pay-42:25"}) {
					t.Fatalf("non-strict: history %v, want the doubled request twice", got)
				}
				continue
			}
			if v != 25 || holders != 1 || results[0].Applied == results[1].Applied {
				t.Fatalf("strict: value %d, %d holders, results %+v; want 25, 1 holder, one applied", v, holders, results)
			}
			if got := history(t, a, tg, 10); !reflect.DeepEqual(got, []string{"pay-42:25"}) {
				t.Fatalf("strict: history %v, want the request once", got)
			}
		}
	})
}

// If the strict-mode winner's write is slower than the loser is willing to
// wait, the loser says "unknown" rather than guess; once the winner's write
// lands a retry anywhere answers "already applied". Nothing is doubled.
func TestStrictLoserWaitsThenReportsUnknown(t *testing.T) {
	t.Parallel()
	onEachDriver(t, func(t *testing.T, d driver.Driver) {
		fs := &faultyStore{Ledgers: d}
		h := newHarness(t, fs)
		tg := h.target("slow", Options{Mode: ModeExact})
		a := h.engine()
		b := h.engine(func(c *Config) { c.ClaimWait = 200 * time.Millisecond })
		release, writing := make(chan struct{}), make(chan struct{})
		var once sync.Once
		fs.writeGate = func(p *driver.WriteLedgerRowParams) <-chan struct{} {
			if !strings.Contains(p.Row.Actor, "."+a.ActorID()+"-") {
				return nil
			}
			once.Do(func() { close(writing) }) // a has claimed and is writing
			return release
		}
		done := make(chan Result)
		go func() { done <- mustUpdate(t, a, tg, 9, "slow-1") }()
		select {
		case <-writing:
		case <-time.After(20 * time.Second):
			t.Fatal("a never wrote")
		}
		if _, err := b.Update(ctxT(t), tg, 9, "slow-1"); !isUnknown(err) {
			t.Fatalf("loser while the winner's write is held: got %v, want ErrUnknownOutcome", err)
		}
		close(release)
		if r := <-done; !r.Applied {
			t.Fatal("the winner did not apply its request")
		}
		if r := mustUpdate(t, b, tg, 9, "slow-1"); r.Applied {
			t.Fatal("the loser applied the request after the winner's write landed")
		}
		wantValue(t, a, tg, 9)
	})
}

// Outside the window the model's stated limit applies. Without strict mode
// a retry that comes after its actor has folded the request out of its
// history (history_length more requests, then a merge) is applied again.
// With strict mode the claim still names the entry, so the retry is
// recognised until the claim expires; after that it is applied again too.
func TestRetryOutsideTheWindow(t *testing.T) {
	t.Parallel()
	onEachDriver(t, func(t *testing.T, d driver.Driver) {
		_, onCassandra := d.(interface{ Keyspace() string })
		for _, strict := range []bool{false, true} {
			h := newHarness(t, d)
			tg := h.target("window", Options{HistoryLength: 3, Mode: modeOf(strict), ClaimTTL: claimTTL})
			a, b := h.engine(), h.engine()
			start := time.Now()
			mustUpdate(t, a, tg, 100, "late")
			for i := range 4 {
				mustUpdate(t, a, tg, 1, fmt.Sprint("later", i))
			}
			if mustRead(t, a, tg).Has("late") {
				t.Fatal("the request is still in the history; the test would not be outside the window")
			}
			r := mustUpdate(t, b, tg, 100, "late")
			if !strict {
				if !r.Applied {
					t.Fatal("non-strict: a retry outside the window was recognised; the limit is documented as applied again")
				}
				wantValue(t, a, tg, 204)
				continue
			}
			if r.Applied {
				t.Fatal("strict: a retry outside the history window but inside the claim TTL was applied again")
			}
			wantValue(t, a, tg, 104)
			// After the claim expires the limit applies in strict mode too.
			expire(h, start, onCassandra)
			if r := mustUpdate(t, b, tg, 100, "late"); !r.Applied {
				t.Fatal("strict: a retry after the claim expired was not applied again")
			}
			wantValue(t, a, tg, 204)
		}
	})
}

// When every write attempt of a request has an unknown outcome, the engine
// reports ErrUnknownOutcome — never success — and retires the actor, so
// that without strict mode the request's entry cannot be carried into the
// ledger by the actor's later writes. A retry then settles it: if a write
// had landed the retry finds it; if none had, without strict mode the retry
// applies it, and in strict mode the process finishes its own write in the
// background (the claim keeps everyone else from applying it meanwhile),
// after which retries find it.
func TestUnknownOutcomeIsReportedAndSettledByRetry(t *testing.T) {
	t.Parallel()
	onEachDriver(t, func(t *testing.T, d driver.Driver) {
		for _, strict := range []bool{false, true} {
			for _, fl := range []fault{landThenUnknown, unknownNoLand} {
				fs := &faultyStore{Ledgers: d}
				h := newHarness(t, fs)
				tg := h.target("unknown", Options{Mode: modeOf(strict), RetryCount: 2})
				a, b := h.engine(), h.engine()
				mustUpdate(t, a, tg, 5, "before")
				var failing atomic.Bool
				failing.Store(true)
				fs.setWriteFault(func(*driver.WriteLedgerRowParams) fault {
					if failing.Load() {
						return fl
					}
					return pass
				})
				_, err := a.Update(ctxT(t), tg, 10, "x")
				if !isUnknown(err) {
					t.Fatalf("strict=%v %v: got %v, want ErrUnknownOutcome", strict, fl, err)
				}
				if a.Stats().Retired.Load() != 1 {
					t.Fatalf("strict=%v %v: the actor was not retired", strict, fl)
				}
				failing.Store(false)
				// The retried request, from the same process or another.
				for i, e := range []*Engine{a, b} {
					r := mustUpdate(t, e, tg, 10, "x")
					if want := !strict && fl == unknownNoLand && i == 0; r.Applied != want {
						t.Fatalf("strict=%v %v: retry %d applied=%v, want %v", strict, fl, i, r.Applied, want)
					}
				}
				mustUpdate(t, a, tg, 1, "after") // the new actor carries nothing of the old one's
				wantValue(t, a, tg, 16)
			}
		}
	})
}

// A strict-mode process that gives up on a write and then stops (or dies)
// before finishing it in the background leaves the claim to its retired
// actor: retries anywhere answer "unknown" — never apply it a second time
// — until the claim expires, and then apply it.
func TestStrictUnsettledClaimBlocksUntilItExpires(t *testing.T) {
	t.Parallel()
	onEachDriver(t, func(t *testing.T, d driver.Driver) {
		_, onCassandra := d.(interface{ Keyspace() string })
		fs := &faultyStore{Ledgers: d}
		h := newHarness(t, fs)
		tg := h.target("stopped", Options{Mode: ModeExact, RetryCount: 1, ClaimTTL: claimTTL})
		a, b := h.engine(), h.engine(func(c *Config) { c.ClaimWait = 50 * time.Millisecond })
		fs.setWriteFault(func(*driver.WriteLedgerRowParams) fault { return unknownNoLand })
		start := time.Now()
		if _, err := a.Update(ctxT(t), tg, 10, "x"); !isUnknown(err) {
			t.Fatalf("got %v, want ErrUnknownOutcome", err)
		}
		if err := a.Close(ctxT(t)); err != nil { // the process stops
			t.Fatal(err)
		}
		fs.setWriteFault(nil)
		if _, err := b.Update(ctxT(t), tg, 10, "x"); !isUnknown(err) {
			t.Fatalf("retry while the stopped process's claim lives: got %v, want ErrUnknownOutcome", err)
		}
		wantValue(t, b, tg, 0)
		expire(h, start, onCassandra)
		if r := mustUpdate(t, b, tg, 10, "x"); !r.Applied {
			t.Fatal("retry after the claim expired was not applied")
		}
		wantValue(t, b, tg, 10)
	})
}

// In strict mode a request whose every write definitely failed is
// reported as ErrNotApplied and its claim is withdrawn, so a retry
// elsewhere does not have to wait for the claim to expire.
func TestStrictNotAppliedWithdrawsTheClaim(t *testing.T) {
	t.Parallel()
	onEachDriver(t, func(t *testing.T, d driver.Driver) {
		fs := &faultyStore{Ledgers: d}
		h := newHarness(t, fs)
		tg := h.target("withdraw", Options{Mode: ModeExact, RetryCount: 1})
		a, b := h.engine(), h.engine(func(c *Config) { c.ClaimWait = time.Millisecond })
		var failing atomic.Bool
		failing.Store(true)
		fs.setWriteFault(func(*driver.WriteLedgerRowParams) fault {
			if failing.Load() {
				return unavailable
			}
			return pass
		})
		if _, err := a.Update(ctxT(t), tg, 3, "y"); !errors.Is(err, ErrNotApplied) {
			t.Fatalf("got %v, want ErrNotApplied", err)
		}
		failing.Store(false)
		if r := mustUpdate(t, b, tg, 3, "y"); !r.Applied {
			t.Fatal("retry elsewhere was not applied")
		}
		wantValue(t, a, tg, 3)

		// A claim whose outcome stays unknown is withdrawn too, when the
		// withdrawal works; the actor is retired either way.
		fs.setClaimFault(func(*driver.ClaimRequestParams) fault { return landThenUnknown })
		if _, err := a.Update(ctxT(t), tg, 4, "z"); !errors.Is(err, ErrNotApplied) || errors.Is(err, ErrUnknownOutcome) {
			t.Fatalf("claim unknown then withdrawn: got %v, want ErrNotApplied and not also an unknown outcome", err)
		}
		fs.setClaimFault(nil)
		if r := mustUpdate(t, b, tg, 4, "z"); !r.Applied {
			t.Fatal("retry after a withdrawn claim was not applied")
		}
		wantValue(t, a, tg, 7)
	})
}
