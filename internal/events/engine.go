package events

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/background"
	"github.com/abacusdb/abacus/internal/combine"
	"github.com/abacusdb/abacus/internal/crdt"
	"github.com/abacusdb/abacus/internal/outcome"
)

// Errors returned to callers. They are wrapped with detail; test with errors.Is.
var (
	// ErrTooLate means the event time is at or before the point up to which
	// the counter may already be rolled up (now - AcceptWindow, or the
	// counter's epoch after a clear). Writing it could count a retry twice
	// or not at all, so nothing was written.
	ErrTooLate = outcome.ErrTooLate

	// ErrInvalid means the request is malformed (an event time too far in
	// the future, a request id that fixes no time and no time given).
	// Nothing was written.
	ErrInvalid = outcome.Tag(outcome.ErrInvalid, errors.New("invalid event"))

	// ErrNotApplied means nothing was written; retrying is safe anywhere.
	ErrNotApplied = outcome.Tag(outcome.ErrNotApplied, errors.New("increment not applied"))
)

// Config configures an Engine. Zero fields take the documented defaults.
type Config struct {
	// Store persists events and rollups. Required.
	Store driver.Events
	// Clock tells the time. Default: the system clock.
	Clock clock.Clock
	// WriteTimeout bounds one event write. Default 10s.
	WriteTimeout time.Duration
	// RollupConsistency is the level of every read and write of a rollup.
	// Default ALL: a rollup that missed an acknowledged event on a replica
	// would lose it.
	RollupConsistency driver.Consistency
	// RollupEvery is how far a counter's epoch may trail the epoch a rollup
	// could reach before a read or write of it starts one in the
	// background; also the shortest pause between two such attempts.
	// Default 5m.
	RollupEvery time.Duration
	// MaxCounters bounds the counters whose state (epoch, marked buckets)
	// this process remembers. Forgetting costs one marker write. Default
	// 10,000.
	MaxCounters int
	// MaxEventBatch is how many event writes, of any counters, one
	// request to the store may carry: writes that queue while
	// MaxInflightBatches requests are in flight go out together (package
	// combine). 1 sends every write on its own. Default 32.
	MaxEventBatch int
	// MaxInflightBatches bounds the event-write requests in flight when
	// MaxEventBatch is above 1. Default 8.
	MaxInflightBatches int
	// Logger receives warnings about skipped rollups. Default: slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	c.WriteTimeout = cmp.Or(c.WriteTimeout, 10*time.Second)
	c.RollupConsistency = cmp.Or(c.RollupConsistency, driver.All)
	c.RollupEvery = cmp.Or(c.RollupEvery, 5*time.Minute)
	c.MaxCounters = cmp.Or(c.MaxCounters, 10_000)
	c.MaxEventBatch = cmp.Or(c.MaxEventBatch, 32)
	c.MaxInflightBatches = cmp.Or(c.MaxInflightBatches, 8)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

func (c Config) validate() error {
	switch {
	case c.Store == nil:
		return errors.New("events: Config.Store is required")
	case c.WriteTimeout < 0, c.RollupEvery < 0, c.MaxCounters < 0, c.MaxEventBatch < 0, c.MaxInflightBatches < 0:
		return errors.New("events: durations, MaxCounters, MaxEventBatch and MaxInflightBatches must not be negative")
	case c.MaxEventBatch > driver.MaxShardWrites:
		return fmt.Errorf("events: MaxEventBatch (%d) is more than one request carries (%d)", c.MaxEventBatch, driver.MaxShardWrites)
	}
	return nil
}

// Target is one counter and the settings of its namespace.
type Target struct {
	Namespace        string
	Counter          string
	Options          Options
	ReadConsistency  driver.Consistency
	WriteConsistency driver.Consistency
}

func (t Target) key() driver.CounterKey {
	return driver.CounterKey{Namespace: t.Namespace, Counter: t.Counter}
}

// Stats are running totals for metrics.
type Stats struct {
	Adds          atomic.Uint64
	TooLate       atomic.Uint64
	Rollups       atomic.Uint64
	RollupSkips   atomic.Uint64
	EventsRolled  atomic.Uint64
	BucketsFreed  atomic.Uint64
	Reads         atomic.Uint64
	EventsScanned atomic.Uint64
}

// counterState is what this process remembers of one counter. It is only
// a cache: losing it costs a marker write and a later too-late check.
type counterState struct {
	epoch      int64          // highest epoch seen
	marked     map[int64]bool // buckets this process has marked
	lastRollup time.Time      // start of the last rollup attempt
	rolling    bool
}

// Engine serves the events model. It is safe for concurrent use.
type Engine struct {
	cfg   Config
	stats Stats

	mu       sync.Mutex
	counters map[driver.CounterKey]*counterState

	work background.Work // adds and background rollups Close waits for

	// combiner sends event writes of any counters in shared requests;
	// nil when MaxEventBatch is 1.
	combiner *combine.Combiner[driver.WriteEventParams]
}

// New returns an engine.
func New(cfg Config) (*Engine, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, counters: make(map[driver.CounterKey]*counterState)}
	if cfg.MaxEventBatch > 1 {
		e.combiner = &combine.Combiner[driver.WriteEventParams]{
			Start: e.work.Go, Timeout: cfg.WriteTimeout,
			MaxWrites: cfg.MaxEventBatch, MaxBytes: combine.MaxBatchBytes, MaxInflight: cfg.MaxInflightBatches,
			Size:  eventBytes,
			Level: func(p *driver.WriteEventParams) driver.Consistency { return p.Consistency },
			One:   cfg.Store.WriteEvent,
			Many:  cfg.Store.WriteEvents,
		}
	}
	return e, nil
}

// eventBytes estimates what an event write adds to a batch as Cassandra
// 3.0 and later count it: its key, its three numbers and the cells'
// overhead.
func eventBytes(p *driver.WriteEventParams) int {
	return len(p.Namespace) + len(p.Counter) + len(p.Event.ID) + 3*8 + 24
}

// Stats returns the running totals.
func (e *Engine) Stats() *Stats { return &e.stats }

// stateLocked returns the counter's state, creating it; e.mu is held.
func (e *Engine) stateLocked(k driver.CounterKey) *counterState {
	st := e.counters[k]
	if st == nil {
		if len(e.counters) >= e.cfg.MaxCounters {
			// Dropping everything is crude but cheap and safe: the state
			// is a cache, and a busy counter rebuilds it in one write.
			clear(e.counters)
		}
		// The first rollup a process triggers comes RollupEvery after it
		// first touched the counter, not at once: a restarted fleet would
		// otherwise send a read at ALL per counter it touches, and the
		// sweeper covers counters nobody keeps using.
		st = &counterState{marked: make(map[int64]bool), lastRollup: e.cfg.Clock.Now()}
		e.counters[k] = st
	}
	return st
}

// learnEpoch records that the counter's rollup reached epoch.
func (e *Engine) learnEpoch(t Target, epoch int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.stateLocked(t.key())
	if epoch <= st.epoch {
		return
	}
	st.epoch = epoch
	for b := range st.marked {
		if t.Options.bucketLast(b) <= epoch {
			delete(st.marked, b)
		}
	}
}

// Request is one increment.
type Request struct {
	// ID is the request id. Empty: the engine makes a version 7 UUID at
	// the current time (and a retry of the call is a new increment).
	ID string
	// Time is the event time. Zero: the time in ID, which must then be a
	// version 7 UUID.
	Time time.Time
	// Delta is added to the counter.
	Delta int64
}

// Event resolves the request into the event it writes, checking the event
// time against the accept window as of now. It writes nothing.
func (e *Engine) Event(t Target, r Request) (driver.Event, error) {
	now := e.cfg.Clock.Now()
	if r.ID == "" {
		r.ID = api.NewRequestID(now)
		if r.Time.IsZero() {
			r.Time = now
		}
	}
	if r.Time.IsZero() {
		at, ok := api.RequestIDTime(r.ID)
		if !ok {
			return driver.Event{}, fmt.Errorf("%w: request id %q is not a version 7 UUID, so it does not fix the event time; send a time with it", ErrInvalid, r.ID)
		}
		r.Time = at
	}
	ev := driver.Event{ID: r.ID, Time: r.Time.UnixMicro(), Delta: r.Delta}
	if limit := now.Add(t.Options.FutureLimit).UnixMicro(); ev.Time > limit {
		return ev, fmt.Errorf("%w: event time %s is more than %v ahead of this server's clock", ErrInvalid, r.Time.UTC().Format(time.RFC3339Nano), t.Options.FutureLimit)
	}
	if floor := t.Options.acceptFloor(now); ev.Time <= floor {
		e.stats.TooLate.Add(1)
		return ev, fmt.Errorf("%w: event time %s is more than the accept window (%v) in the past", ErrTooLate, r.Time.UTC().Format(time.RFC3339Nano), t.Options.AcceptWindow)
	}
	e.mu.Lock()
	epoch := int64(0)
	if st := e.counters[t.key()]; st != nil {
		epoch = st.epoch
	}
	e.mu.Unlock()
	if ev.Time <= epoch {
		e.stats.TooLate.Add(1)
		return ev, fmt.Errorf("%w: event time %s is at or before the counter's last clear or rollup (%s)", ErrTooLate, r.Time.UTC().Format(time.RFC3339Nano), time.UnixMicro(epoch).UTC().Format(time.RFC3339Nano))
	}
	return ev, nil
}

// Add writes one increment and returns the event it wrote. An error
// wrapping driver.ErrUnknownOutcome means the event may or may not count;
// retrying with the returned event's id and time (any process) is safe
// while it is inside the accept window.
func (e *Engine) Add(ctx context.Context, t Target, r Request) (driver.Event, error) {
	ev, err := e.Event(t, r)
	if err != nil {
		return ev, err
	}
	return ev, e.Write(ctx, t, ev)
}

// Write writes an event that Event resolved (and checked) just before;
// callers that validate before writing use the pair instead of Add, so
// the id is made and the checks run once per increment.
func (e *Engine) Write(ctx context.Context, t Target, ev driver.Event) error {
	if !e.work.Enter() {
		return fmt.Errorf("%w: %w", ErrNotApplied, driver.ErrClosed)
	}
	defer e.work.Leave()
	k := t.key()
	b := t.Options.BucketOf(ev.Time)

	e.mu.Lock()
	marked := e.stateLocked(k).marked[b]
	e.mu.Unlock()
	if !marked {
		// The marker must be durable before the event: a reader only looks
		// into marked buckets. Without it nothing of the event was written.
		if err := e.write(ctx, func(ctx context.Context) error {
			return e.cfg.Store.MarkEventBucket(ctx, &driver.MarkEventBucketParams{
				Namespace: t.Namespace, Counter: t.Counter, Bucket: b, Consistency: t.WriteConsistency,
			})
		}); err != nil {
			return fmt.Errorf("%w: mark bucket: %w", ErrNotApplied, err)
		}
		e.mu.Lock()
		e.stateLocked(k).marked[b] = true
		e.mu.Unlock()
	}
	p := driver.WriteEventParams{Namespace: t.Namespace, Counter: t.Counter, Bucket: b, Event: ev, Consistency: t.WriteConsistency}
	var err error
	if e.combiner != nil {
		// Shares a request with the writes queued meanwhile; its answer
		// is this write's own, as if sent alone (package combine).
		err = e.combiner.Write(ctx, p)
	} else {
		err = e.write(ctx, func(ctx context.Context) error { return e.cfg.Store.WriteEvent(ctx, &p) })
	}
	switch {
	case errors.Is(err, driver.ErrUnavailable):
		return fmt.Errorf("%w: %w", ErrNotApplied, err)
	case errors.Is(err, driver.ErrUnknownOutcome):
		return err
	case err != nil:
		return fmt.Errorf("%w: %w", driver.ErrUnknownOutcome, err)
	}
	// A write that took longer than the margin may have landed after a
	// rollup passed its event time; it cannot be reported as counted.
	if ev.Time <= t.Options.acceptFloor(e.cfg.Clock.Now()) {
		return fmt.Errorf("%w: the write finished after the event left the accept window", driver.ErrUnknownOutcome)
	}
	e.stats.Adds.Add(1)
	e.maybeRollup(t)
	return nil
}

// write runs one store write under the write timeout.
func (e *Engine) write(ctx context.Context, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.WriteTimeout)
	defer cancel()
	return fn(ctx)
}

// Reading is a counter's value as read.
type Reading struct {
	// Value is the counter's value, or the nearest int64 when the exact
	// total (Total) is outside the int64 range; Saturated says which.
	Value     int64
	Saturated bool
	// Total is the exact value: the rollup plus every later event, summed
	// without overflow.
	Total crdt.Wide
	// Epoch is the rollup's epoch (µs); 0 when never rolled up.
	Epoch int64
	// Events is how many events after the epoch the read added.
	Events int
	// Buckets is how many buckets the read scanned.
	Buckets int
	// Empty is true when nothing was ever written to the counter.
	Empty bool
}

// Read returns the counter's value: its rollup plus every event after the
// rollup's epoch, at the namespace's read consistency. Events are blind
// writes from many servers, so their total may leave the int64 range; the
// read still succeeds and reports it (Reading.Saturated), and it becomes
// exact again once later events bring the total back into range.
func (e *Engine) Read(ctx context.Context, t Target) (*Reading, error) {
	rec, err := e.cfg.Store.ReadEventCounter(ctx, &driver.ReadEventCounterParams{
		Namespace: t.Namespace, Counter: t.Counter, Consistency: t.ReadConsistency,
	})
	if err != nil {
		return nil, err
	}
	r := &Reading{Empty: rec.Rollup == nil && len(rec.Buckets) == 0}
	if rec.Rollup != nil {
		r.Total, r.Epoch = crdt.WideOf(rec.Rollup.Value), rec.Rollup.Epoch
	}
	for _, b := range rec.Buckets {
		if t.Options.bucketLast(b) <= r.Epoch {
			continue // left over from a rollup that stopped before its deletes
		}
		evs, err := e.cfg.Store.ReadEvents(ctx, &driver.ReadEventsParams{
			Namespace: t.Namespace, Counter: t.Counter, Bucket: b,
			After: r.Epoch, UpTo: math.MaxInt64, Consistency: t.ReadConsistency,
		})
		if err != nil {
			return nil, err
		}
		r.Buckets++
		r.Events += len(evs)
		for _, ev := range evs {
			r.Total.Add(ev.Delta)
		}
	}
	var exact bool
	r.Value, exact = r.Total.Int64()
	r.Saturated = !exact
	e.stats.Reads.Add(1)
	e.stats.EventsScanned.Add(uint64(r.Events))
	e.learnEpoch(t, r.Epoch)
	e.maybeRollup(t)
	return r, nil
}

// Clear resets the counter to zero as of time at (zero: the time in id if
// it is a version 7 UUID, else now): every event at or before it stops
// counting, including ones still in flight and later retries of them.
// Clearing again with the same id or time is harmless; the counter takes
// new increments at once. It returns the clear's epoch (µs).
func (e *Engine) Clear(ctx context.Context, t Target, id string, at time.Time) (int64, error) {
	now := e.cfg.Clock.Now()
	if at.IsZero() {
		if idAt, ok := api.RequestIDTime(id); ok {
			at = idAt
		} else {
			at = now
		}
	}
	epoch := at.UnixMicro()
	if epoch > now.Add(t.Options.FutureLimit).UnixMicro() {
		return 0, fmt.Errorf("%w: clear time %s is more than %v ahead of this server's clock", ErrInvalid, at.UTC().Format(time.RFC3339Nano), t.Options.FutureLimit)
	}
	if epoch <= t.Options.acceptFloor(now) {
		// A rollup may already have moved past it; a clear there could
		// move nothing back and would only pretend to have worked.
		return 0, fmt.Errorf("%w: clear time %s is more than the accept window (%v) in the past", ErrTooLate, at.UTC().Format(time.RFC3339Nano), t.Options.AcceptWindow)
	}
	err := e.write(ctx, func(ctx context.Context) error {
		return e.cfg.Store.WriteRollup(ctx, &driver.WriteRollupParams{
			Namespace: t.Namespace, Counter: t.Counter,
			Rollup: driver.Rollup{Value: 0, Epoch: epoch}, Consistency: t.WriteConsistency,
		})
	})
	if err != nil {
		return 0, err
	}
	e.learnEpoch(t, epoch)
	return epoch, nil
}

// RollupResult describes one rollup attempt.
type RollupResult struct {
	Key driver.CounterKey
	// Epoch is the counter's epoch after the attempt (µs).
	Epoch int64
	// Events is how many events the rollup folded; Buckets how many
	// buckets it deleted.
	Events  int
	Buckets int
	// Skipped is set when the rollup could not run (a replica is down,
	// another rollup or a clear moved the epoch meanwhile); Err says why.
	// It is retried later; reads are unaffected.
	Skipped bool
	Err     error
}

// Rollup folds the counter's events older than now - AcceptWindow -
// RollupDelay into its rollup and deletes the buckets it covers.
func (e *Engine) Rollup(ctx context.Context, t Target) RollupResult {
	res := e.rollup(ctx, t)
	if res.Skipped {
		e.stats.RollupSkips.Add(1)
	} else {
		e.stats.Rollups.Add(1)
		e.stats.EventsRolled.Add(uint64(res.Events))
		e.stats.BucketsFreed.Add(uint64(res.Buckets))
	}
	return res
}

func (e *Engine) rollup(ctx context.Context, t Target) RollupResult {
	res := RollupResult{Key: t.key()}
	cl := e.cfg.RollupConsistency
	skip := func(format string, args ...any) RollupResult {
		res.Skipped, res.Err = true, fmt.Errorf(format, args...)
		return res
	}
	epoch := t.Options.RollupEpoch(e.cfg.Clock.Now())
	readRec := func() (*driver.EventCounter, driver.Rollup, error) {
		rec, err := e.cfg.Store.ReadEventCounter(ctx, &driver.ReadEventCounterParams{
			Namespace: t.Namespace, Counter: t.Counter, Consistency: cl,
		})
		if err != nil {
			return nil, driver.Rollup{}, err
		}
		var r driver.Rollup
		if rec.Rollup != nil {
			r = *rec.Rollup
		}
		return rec, r, nil
	}
	rec, prev, err := readRec()
	if err != nil {
		return skip("read counter at %s: %w", cl, err)
	}
	e.learnEpoch(t, prev.Epoch)
	res.Epoch = prev.Epoch
	next := prev
	if epoch > prev.Epoch {
		next.Epoch = epoch
		var folded []driver.Event
		for _, b := range rec.Buckets {
			if t.Options.bucketLast(b) <= prev.Epoch || b > epoch {
				continue
			}
			evs, err := e.cfg.Store.ReadEvents(ctx, &driver.ReadEventsParams{
				Namespace: t.Namespace, Counter: t.Counter, Bucket: b,
				After: prev.Epoch, UpTo: epoch, Consistency: cl,
			})
			if err != nil {
				return skip("read events at %s: %w", cl, err)
			}
			folded = append(folded, evs...)
		}
		var ok bool
		if next.Epoch, next.Value, res.Events, ok = fold(prev, epoch, folded); !ok {
			return skip("the counter's value stays outside the int64 range from its rollup epoch %d to %d; its events are kept (reads stay exact) until later events bring it back", prev.Epoch, epoch)
		}
		// Another rollup or a clear may have landed while we read; ours
		// would then lose to it anyway (or, at an equal epoch, could win
		// with stale events), so step aside.
		_, again, err := readRec()
		if err != nil {
			return skip("re-read counter at %s: %w", cl, err)
		}
		if again != prev {
			return skip("the counter's rollup moved from %d to %d during the rollup", prev.Epoch, again.Epoch)
		}
		err = e.cfg.Store.WriteRollup(ctx, &driver.WriteRollupParams{
			Namespace: t.Namespace, Counter: t.Counter, Rollup: next, Consistency: cl,
		})
		if err != nil {
			// The rollup may have landed; replaying it is harmless. The
			// buckets stay until a rollup is known to have landed.
			return skip("write rollup at %s: %w", cl, err)
		}
		res.Epoch = next.Epoch
		e.learnEpoch(t, next.Epoch)
	}
	var gone []int64
	for _, b := range rec.Buckets {
		if t.Options.bucketLast(b) <= next.Epoch {
			gone = append(gone, b)
		}
	}
	if len(gone) > 0 {
		err := e.cfg.Store.DeleteEventBuckets(ctx, &driver.DeleteEventBucketsParams{
			Namespace: t.Namespace, Counter: t.Counter, Buckets: gone, Timestamp: next.Epoch, Consistency: cl,
		})
		if err != nil {
			// The rollup itself stands; the next one deletes them.
			return skip("delete %d rolled-up buckets at %s: %w", len(gone), cl, err)
		}
		res.Buckets = len(gone)
	}
	return res
}

// fold returns the rollup that folds evs (the events after prev.Epoch up
// to epoch) into prev. A rollup stores an int64, so when the total at epoch
// is outside that range it stops at the latest event time before that at
// which the running total (every event up to and including that time) is
// inside it: the events after stay in their buckets and reads add them
// exactly. ok is false when no such time is later than prev.Epoch.
func fold(prev driver.Rollup, epoch int64, evs []driver.Event) (newEpoch, value int64, events int, ok bool) {
	total := crdt.WideOf(prev.Value)
	for _, ev := range evs {
		total.Add(ev.Delta)
	}
	if v, exact := total.Int64(); exact {
		return epoch, v, len(evs), true
	}
	slices.SortFunc(evs, func(a, b driver.Event) int { return cmp.Compare(a.Time, b.Time) })
	running := crdt.WideOf(prev.Value)
	newEpoch, value = prev.Epoch, prev.Value
	for i, ev := range evs {
		running.Add(ev.Delta)
		if i+1 < len(evs) && evs[i+1].Time == ev.Time {
			continue // an epoch covers every event at its time or none
		}
		if v, exact := running.Int64(); exact {
			newEpoch, value, events = ev.Time, v, i+1
		}
	}
	return newEpoch, value, events, newEpoch > prev.Epoch
}

// maybeRollup starts a background rollup of t if its epoch trails what a
// rollup could reach by more than RollupEvery and none ran recently.
func (e *Engine) maybeRollup(t Target) {
	now := e.cfg.Clock.Now()
	k := t.key()
	e.mu.Lock()
	st := e.stateLocked(k)
	due := !st.rolling && now.Sub(st.lastRollup) >= e.cfg.RollupEvery &&
		t.Options.RollupEpoch(now)-st.epoch > e.cfg.RollupEvery.Microseconds()
	if due {
		st.rolling, st.lastRollup = true, now
	}
	e.mu.Unlock()
	if !due {
		return
	}
	done := func() {
		e.mu.Lock()
		if st := e.counters[k]; st != nil {
			st.rolling = false
		}
		e.mu.Unlock()
	}
	started := e.work.Go(func() {
		defer done()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if res := e.Rollup(ctx, t); res.Skipped {
			e.cfg.Logger.Warn("rollup skipped", "namespace", t.Namespace, "counter", t.Counter, "err", res.Err)
		}
	})
	if !started {
		done()
	}
}

// Close waits for writes and background rollups.
func (e *Engine) Close(ctx context.Context) error {
	return e.work.Shutdown(ctx, "events: work")
}
