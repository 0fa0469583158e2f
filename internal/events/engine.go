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
	// Store persists events, seals and rollups. Required.
	Store driver.Events
	// Clock tells the time. Default: the system clock.
	Clock clock.Clock
	// WriteTimeout bounds one event write. Default 10s.
	WriteTimeout time.Duration
	// RollupConsistency is the level of every read and write of a rollup
	// and of the reads that answer a late retry. Default ALL: a rollup
	// that missed an acknowledged event on a replica would lose it.
	RollupConsistency driver.Consistency
	// RollupEvery is the shortest pause between two rollups of a counter
	// that reads and writes of it start in the background. Default 1s;
	// negative starts none (Rollup still works).
	RollupEvery time.Duration
	// RollupAfterEvents is how many new events (written here, or found by
	// a read here) make a counter due for a rollup; a counter with fewer
	// is rolled up once its epoch trails by MaxRollupLag. Cold counters
	// so cost a rollup a minute, hot ones one every RollupEvery. Default
	// 64.
	RollupAfterEvents int
	// MaxRollupLag is how far a counter's epoch may trail the epoch a
	// rollup could reach before any read or write of it starts one.
	// Default 1m.
	MaxRollupLag time.Duration
	// MaxSealEvents bounds the events one seal names (about 19 bytes
	// each); a rollup with more seals them in several steps. Default
	// 20,000.
	MaxSealEvents int
	// MaxCounters bounds the counters whose state (epoch, cached reading,
	// marked buckets) this process remembers. Forgetting costs one marker
	// write. Default 10,000.
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
	c.RollupEvery = cmp.Or(c.RollupEvery, time.Second)
	c.RollupAfterEvents = cmp.Or(c.RollupAfterEvents, 64)
	c.MaxRollupLag = cmp.Or(c.MaxRollupLag, time.Minute)
	c.MaxSealEvents = cmp.Or(c.MaxSealEvents, 20_000)
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
	case c.WriteTimeout < 0, c.MaxRollupLag < 0, c.RollupAfterEvents < 0, c.MaxSealEvents < 0,
		c.MaxCounters < 0, c.MaxEventBatch < 0, c.MaxInflightBatches < 0:
		return errors.New("events: durations and counts must not be negative")
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
	Replayed      atomic.Uint64
	Rollups       atomic.Uint64
	RollupSkips   atomic.Uint64
	EventsRolled  atomic.Uint64
	Seals         atomic.Uint64
	BucketsFreed  atomic.Uint64
	Reads         atomic.Uint64
	CachedReads   atomic.Uint64
	SharedReads   atomic.Uint64
	EventsScanned atomic.Uint64

	lagMu sync.Mutex
	lag   map[string]time.Duration // per namespace: the largest lag seen since the last LagSnapshot
}

// observeLag records the rollup lag a read or rollup of a counter of ns
// saw: how far the counter's epoch trailed now.
func (s *Stats) observeLag(ns string, lag time.Duration) {
	s.lagMu.Lock()
	defer s.lagMu.Unlock()
	if s.lag == nil {
		s.lag = make(map[string]time.Duration)
	}
	if lag > s.lag[ns] {
		s.lag[ns] = lag
	}
}

// LagSnapshot returns, per namespace, the largest rollup lag reads and
// rollups saw since the previous call, and starts a new period.
func (s *Stats) LagSnapshot() map[string]time.Duration {
	s.lagMu.Lock()
	defer s.lagMu.Unlock()
	out := s.lag
	s.lag = nil
	return out
}

// counterState is what this process remembers of one counter. It is only
// a cache: losing it costs a marker write and a later too-late check.
type counterState struct {
	epoch      int64          // highest epoch seen
	marked     map[int64]bool // buckets this process has marked
	lastRollup time.Time      // start of the last rollup attempt
	rolling    bool
	// fresh counts events written here or found by reads since the last
	// rollup attempt: what makes a hot counter due.
	fresh int
	// head is the last rollup seen (value at epoch), for bounded-staleness
	// reads; last is the last full read and when it began.
	head     driver.Rollup
	haveHead bool
	last     *Reading
	// reading is the read in flight; next gathers the callers that came
	// while it was, who share the read that starts when it ends.
	reading, next *readCall
}

// readCall is one store read of a counter shared by its callers.
type readCall struct {
	done chan struct{}
	r    *Reading
	err  error
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

// learnHead records that the counter's rollup reached r.
func (e *Engine) learnHead(t Target, r driver.Rollup) {
	now := e.cfg.Clock.Now()
	e.stats.observeLag(t.Namespace, now.Sub(time.UnixMicro(r.Epoch)))
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.stateLocked(t.key())
	if st.haveHead && r.Epoch <= st.head.Epoch {
		return
	}
	st.head, st.haveHead = r, true
	if r.Epoch > st.epoch {
		st.epoch = r.Epoch
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
// time against the de-duplication horizon as of now. It writes nothing.
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
	return ev, nil
}

// Outcome says what a write did.
type Outcome struct {
	// Replayed is set when the event had been counted before: a retry
	// that arrived after its time range was sealed and was answered from
	// the seal. A retry inside the seal window writes its row again and
	// is not told apart from the first copy.
	Replayed bool
}

// Add writes one increment and returns the event it wrote. An error
// wrapping driver.ErrUnknownOutcome means the event may or may not count;
// retrying with the returned event's id and time (any process) settles it
// while it is inside the accept window.
func (e *Engine) Add(ctx context.Context, t Target, r Request) (driver.Event, Outcome, error) {
	ev, err := e.Event(t, r)
	if err != nil {
		return ev, Outcome{}, err
	}
	o, err := e.Write(ctx, t, ev)
	return ev, o, err
}

// Write writes an event that Event resolved (and checked) just before;
// callers that validate before writing use the pair instead of Add, so
// the id is made and the checks run once per increment.
//
// An event inside the seal window is written and acknowledged if it is
// still inside it when the write returns. An older one — a retry, or a
// request that took too long — is never written: it is answered from the
// seal of its time range (sealing it first if no rollup has yet), as
// Replayed when the seal counted it and ErrTooLate when it did not.
func (e *Engine) Write(ctx context.Context, t Target, ev driver.Event) (Outcome, error) {
	if !e.work.Enter() {
		return Outcome{}, fmt.Errorf("%w: %w", ErrNotApplied, driver.ErrClosed)
	}
	defer e.work.Leave()
	k := t.key()
	now := e.cfg.Clock.Now()
	e.mu.Lock()
	st := e.stateLocked(k)
	epoch, marked := st.epoch, st.marked[t.Options.BucketOf(ev.Time)]
	e.mu.Unlock()
	if ev.Time <= t.Options.ackFloor(now) || ev.Time <= epoch {
		return e.answerLate(ctx, t, ev, false)
	}
	b := t.Options.BucketOf(ev.Time)
	if !marked {
		if err := e.mark(ctx, t, b); err != nil {
			return Outcome{}, fmt.Errorf("%w: mark bucket: %w", ErrNotApplied, err)
		}
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
		return Outcome{}, fmt.Errorf("%w: %w", ErrNotApplied, err)
	case errors.Is(err, driver.ErrUnknownOutcome):
		return Outcome{}, err
	case err != nil:
		return Outcome{}, fmt.Errorf("%w: %w", driver.ErrUnknownOutcome, err)
	}
	// A write that outlived the seal window may have landed after a
	// rollup sealed its time; only the seal can say whether it counts.
	if ev.Time <= t.Options.ackFloor(e.cfg.Clock.Now()) {
		return e.answerLate(ctx, t, ev, true)
	}
	e.stats.Adds.Add(1)
	e.mu.Lock()
	e.stateLocked(k).fresh++
	e.mu.Unlock()
	e.maybeRollup(t)
	return Outcome{}, nil
}

// mark writes bucket b's marker unless this process already did: a reader
// only looks into marked buckets, so the marker must be durable before
// anything is written into the bucket.
func (e *Engine) mark(ctx context.Context, t Target, b int64) error {
	e.mu.Lock()
	done := e.stateLocked(t.key()).marked[b]
	e.mu.Unlock()
	if done {
		return nil
	}
	if err := e.write(ctx, func(ctx context.Context) error {
		return e.cfg.Store.MarkEventBucket(ctx, &driver.MarkEventBucketParams{
			Namespace: t.Namespace, Counter: t.Counter, Bucket: b, Consistency: t.WriteConsistency,
		})
	}); err != nil {
		return err
	}
	e.mu.Lock()
	e.stateLocked(t.key()).marked[b] = true
	e.mu.Unlock()
	return nil
}

// answerLate answers an event too old to be acknowledged as new: from the
// seal of its time range, which says once and for all whether it counts.
// Nothing is written. written says this process has just written the
// event itself (a write that outlived the seal window): counted, it is
// then acknowledged, not reported as a replay.
func (e *Engine) answerLate(ctx context.Context, t Target, ev driver.Event, written bool) (Outcome, error) {
	// Its range can be sealed only once every process's rollup may pass
	// it; until then a rollup could not reach it. The wait is at most
	// Seal + RollupDelay, and only for a write that just outlived Seal.
	sealable := time.UnixMicro(ev.Time).Add(t.Options.Seal + t.Options.RollupDelay)
	e.mu.Lock()
	if st := e.counters[t.key()]; st != nil && ev.Time <= st.epoch {
		sealable = time.Time{} // sealed already, by a rollup or a clear
	}
	e.mu.Unlock()
	if ev.Time <= t.Options.acceptFloor(e.cfg.Clock.Now()) {
		// Its seal may be gone already: beyond the horizon nothing is
		// answered.
		if written {
			return Outcome{}, fmt.Errorf("%w: the write finished after the event left the accept window (%v)", driver.ErrUnknownOutcome, t.Options.AcceptWindow)
		}
		e.stats.TooLate.Add(1)
		return Outcome{}, fmt.Errorf("%w: event time %s is more than the accept window (%v) in the past", ErrTooLate, time.UnixMicro(ev.Time).UTC().Format(time.RFC3339Nano), t.Options.AcceptWindow)
	}
	for wait := sealable.Sub(e.cfg.Clock.Now()); wait > 0; wait = sealable.Sub(e.cfg.Clock.Now()) {
		// In slices, so that a clock moved by hand (tests) is noticed.
		select {
		case <-ctx.Done():
			return Outcome{}, fmt.Errorf("%w: %w", driver.ErrUnknownOutcome, ctx.Err())
		case <-time.After(min(wait, 50*time.Millisecond)):
		}
	}
	s, err := e.sealOf(ctx, t, ev.Time)
	if err != nil {
		return Outcome{}, fmt.Errorf("%w: the event is older than the seal window (%v) and its seal could not be read: %w", driver.ErrUnknownOutcome, t.Options.Seal, err)
	}
	at := time.UnixMicro(ev.Time).UTC().Format(time.RFC3339Nano)
	if s.Clear {
		e.stats.TooLate.Add(1)
		return Outcome{}, fmt.Errorf("%w: event time %s is at or before the counter's clear at %s; it does not count", ErrTooLate, at, time.UnixMicro(s.End).UTC().Format(time.RFC3339Nano))
	}
	counted, err := sealHolds(s, ev.Time, ev.ID)
	if err != nil {
		return Outcome{}, fmt.Errorf("%w: %w", driver.ErrUnknownOutcome, err)
	}
	if !counted {
		e.stats.TooLate.Add(1)
		return Outcome{}, fmt.Errorf("%w: event time %s is older than the seal window (%v) and the event was not counted before its time was sealed; it never will be (send it with a new request id to count it)", ErrTooLate, at, t.Options.Seal)
	}
	if written {
		e.stats.Adds.Add(1)
		return Outcome{}, nil
	}
	e.stats.Replayed.Add(1)
	return Outcome{Replayed: true}, nil
}

// sealOf returns the seal covering event time at, rolling the counter up
// first when no seal covers it yet. A time covered only by a seal that
// names no events (an idle stretch, or a clear stored in an earlier
// bucket) gets an empty seal: nothing there counts.
func (e *Engine) sealOf(ctx context.Context, t Target, at int64) (*driver.EventSeal, error) {
	skipped := errors.New("no rollup skipped")
	for attempt := 0; ; attempt++ {
		// The head first: it moves only after the seals up to it are
		// stored, so a head at or past at means the seal covering at is
		// already readable.
		rec, err := e.cfg.Store.ReadEventCounter(ctx, &driver.ReadEventCounterParams{
			Namespace: t.Namespace, Counter: t.Counter, Consistency: e.cfg.RollupConsistency,
		})
		if err != nil {
			return nil, fmt.Errorf("read counter: %w", err)
		}
		var head driver.Rollup
		if rec.Rollup != nil {
			head = *rec.Rollup
			e.learnHead(t, head)
		}
		if head.Epoch >= at {
			return e.findSeal(ctx, t, at, rec.Buckets)
		}
		if attempt > 0 {
			return nil, fmt.Errorf("the counter is rolled up to %s only: %w", time.UnixMicro(head.Epoch).UTC().Format(time.RFC3339Nano), skipped)
		}
		// A skipped rollup may have stepped aside for another that did
		// the work: the head, read again, says.
		if res := e.Rollup(ctx, t); res.Skipped {
			skipped = fmt.Errorf("rollup: %w", res.Err)
		}
	}
}

// findSeal returns the seal covering at, which the counter's epoch has
// passed. A seal that names events lies in the bucket of at unless the
// counter's total was outside the int64 range across a bucket's end; a
// seal naming none (an idle stretch, a clear) may begin buckets earlier.
// So it looks in at's bucket, then back through the marked buckets —
// every seal's bucket is marked — newest first.
func (e *Engine) findSeal(ctx context.Context, t Target, at int64, marked []int64) (*driver.EventSeal, error) {
	buckets := []int64{t.Options.BucketOf(at)}
	for _, b := range slices.Backward(marked) {
		if b < buckets[0] {
			buckets = append(buckets, b)
		}
	}
	for _, b := range buckets {
		s, err := e.cfg.Store.ReadEventSeal(ctx, &driver.ReadEventSealParams{
			Namespace: t.Namespace, Counter: t.Counter, Bucket: b, Before: at, Consistency: e.cfg.RollupConsistency,
		})
		switch {
		case errors.Is(err, driver.ErrNotFound):
			continue
		case err != nil:
			return nil, fmt.Errorf("read seal: %w", err)
		case s.End >= at:
			return s, nil
		}
		// The seal after this one begins at or after its end, below at,
		// yet in no later bucket: the chain is broken, which only the
		// purge of an old bucket does.
		break
	}
	return nil, fmt.Errorf("no seal covering %s is left (deleted with buckets beyond the accept window)", time.UnixMicro(at).UTC().Format(time.RFC3339Nano))
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
	// AsOf is the time up to which the value is complete: every event
	// acknowledged before it is in it. A read from the store is as of its
	// start; a bounded-staleness answer from memory is older.
	AsOf time.Time
	// Cached is set when the answer came from memory (ReadWithin).
	Cached bool
	// Events is how many events after the epoch the read added.
	Events int
	// Buckets is how many buckets the read scanned.
	Buckets int
	// Empty is true when nothing was ever written to the counter.
	Empty bool
}

// Read returns the counter's value: its rollup plus every event after the
// rollup's epoch, at the namespace's read consistency. Callers that come
// while a read of the counter is in flight share the next one, which
// starts after they came, so each still sees every event acknowledged
// before it called. Events are blind writes from many servers, so their
// total may leave the int64 range; the read still succeeds and reports it
// (Reading.Saturated), and it becomes exact again once later events bring
// the total back into range.
func (e *Engine) Read(ctx context.Context, t Target) (*Reading, error) {
	k := t.key()
	e.mu.Lock()
	st := e.stateLocked(k)
	var call *readCall
	switch {
	case st.reading == nil:
		call = &readCall{done: make(chan struct{})}
		st.reading = call
		e.mu.Unlock()
		e.runRead(context.WithoutCancel(ctx), t, st, call)
	default:
		if st.next == nil {
			st.next = &readCall{done: make(chan struct{})}
		}
		call = st.next
		e.mu.Unlock()
		e.stats.SharedReads.Add(1)
	}
	select {
	case <-call.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if call.err != nil {
		return nil, call.err
	}
	r := *call.r
	return &r, nil
}

// runRead performs call, then hands the counter to the callers that came
// meanwhile. The read carries the values of the context of the caller
// that started it (read statistics, traces) but not its cancellation:
// others wait for it too.
func (e *Engine) runRead(base context.Context, t Target, st *counterState, call *readCall) {
	for call != nil {
		ctx, cancel := context.WithTimeout(base, e.cfg.WriteTimeout)
		call.r, call.err = e.readStore(ctx, t)
		cancel()
		close(call.done)
		e.mu.Lock()
		call, st.next = st.next, nil
		st.reading = call
		e.mu.Unlock()
		if call != nil {
			// The next read runs on the goroutine of whichever caller
			// started the chain; that caller has its answer already.
			next := call
			go e.runRead(context.Background(), t, st, next)
			return
		}
	}
}

// ReadWithin answers from memory when this process holds a reading or a
// rollup of the counter complete as of maxStaleness ago or later, and
// reads the store (Read) otherwise. The answer's AsOf says how stale it
// is; only the reading of a rollup seen here or a full read made here
// qualifies, never one of another process.
func (e *Engine) ReadWithin(ctx context.Context, t Target, maxStaleness time.Duration) (*Reading, error) {
	now := e.cfg.Clock.Now()
	oldest := now.Add(-maxStaleness)
	e.mu.Lock()
	var r *Reading
	if st := e.counters[t.key()]; st != nil {
		if st.last != nil && !st.last.AsOf.Before(oldest) {
			c := *st.last
			r = &c
		}
		if asOf := time.UnixMicro(st.head.Epoch); st.haveHead && !asOf.Before(oldest) && (r == nil || asOf.After(r.AsOf)) {
			r = &Reading{Total: crdt.WideOf(st.head.Value), Epoch: st.head.Epoch, AsOf: asOf}
			r.Value, _ = r.Total.Int64()
		}
	}
	e.mu.Unlock()
	if r == nil {
		return e.Read(ctx, t)
	}
	r.Cached = true
	e.stats.CachedReads.Add(1)
	e.maybeRollup(t)
	return r, nil
}

// readStore reads the counter from the store. The record and the events
// are separate reads: a rollup that moves the epoch and deletes buckets
// between them could take events this read still needs, so the record is
// read again afterwards and the read done again if the epoch moved.
func (e *Engine) readStore(ctx context.Context, t Target) (*Reading, error) {
	for attempt := 0; ; attempt++ {
		r, rec, err := e.readStoreOnce(ctx, t)
		if err != nil {
			return nil, err
		}
		if r.Epoch >= t.Options.keepFloor(e.cfg.Clock.Now().Add(maxRollupSpan)) {
			// Deletes take only buckets wholly behind the keep floor, and
			// this read needs none of those: no second record read (the
			// hot path, where the epoch trails by seconds).
			return e.finishRead(t, r, rec), nil
		}
		again, err := e.cfg.Store.ReadEventCounter(ctx, &driver.ReadEventCounterParams{
			Namespace: t.Namespace, Counter: t.Counter, Consistency: t.ReadConsistency,
		})
		if err != nil {
			return nil, err
		}
		if sameRollup(rec.Rollup, again.Rollup) || attempt == 4 {
			if attempt == 4 && !sameRollup(rec.Rollup, again.Rollup) {
				return nil, fmt.Errorf("%w: the counter's rollup kept moving during the read", driver.ErrUnavailable)
			}
			return e.finishRead(t, r, rec), nil
		}
	}
}

func sameRollup(a, b *driver.Rollup) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// readStoreOnce reads the counter's record and the events after its epoch.
func (e *Engine) readStoreOnce(ctx context.Context, t Target) (*Reading, *driver.EventCounter, error) {
	start := e.cfg.Clock.Now()
	rec, err := e.cfg.Store.ReadEventCounter(ctx, &driver.ReadEventCounterParams{
		Namespace: t.Namespace, Counter: t.Counter, Consistency: t.ReadConsistency,
	})
	if err != nil {
		return nil, nil, err
	}
	r := &Reading{Empty: rec.Rollup == nil && len(rec.Buckets) == 0, AsOf: start}
	if rec.Rollup != nil {
		r.Total, r.Epoch = crdt.WideOf(rec.Rollup.Value), rec.Rollup.Epoch
	}
	for _, b := range rec.Buckets {
		if t.Options.bucketLast(b) <= r.Epoch {
			continue // sealed: kept only to answer late retries
		}
		evs, err := e.cfg.Store.ReadEvents(ctx, &driver.ReadEventsParams{
			Namespace: t.Namespace, Counter: t.Counter, Bucket: b,
			After: r.Epoch, UpTo: math.MaxInt64, Consistency: t.ReadConsistency,
		})
		if err != nil {
			return nil, nil, err
		}
		r.Buckets++
		r.Events += len(evs)
		for _, ev := range evs {
			r.Total.Add(ev.Delta)
		}
	}
	return r, rec, nil
}

// finishRead completes a consistent reading: its value, the statistics,
// what this process remembers of the counter.
func (e *Engine) finishRead(t Target, r *Reading, rec *driver.EventCounter) *Reading {
	var exact bool
	r.Value, exact = r.Total.Int64()
	r.Saturated = !exact
	e.stats.Reads.Add(1)
	e.stats.EventsScanned.Add(uint64(r.Events))
	if rec.Rollup != nil {
		e.learnHead(t, *rec.Rollup)
	}
	e.mu.Lock()
	st := e.stateLocked(t.key())
	if st.last == nil || !st.last.AsOf.After(r.AsOf) {
		c := *r
		st.last = &c
	}
	st.fresh = max(st.fresh, r.Events)
	e.mu.Unlock()
	e.maybeRollup(t)
	return r
}

// Clear resets the counter to zero as of time at (zero: the time in id if
// it is a version 7 UUID, else now): every event at or before it stops
// counting, including ones still in flight and later retries of them.
// Clearing again with the same id or time is harmless; the counter takes
// new increments at once. It returns the clear's epoch (µs).
//
// A clear is a seal: it closes the range from the counter's epoch to its
// time, naming no event, so a late retry of an event in it is answered
// ErrTooLate from any process.
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
		return 0, fmt.Errorf("%w: clear time %s is more than the accept window (%v) in the past", ErrTooLate, at.UTC().Format(time.RFC3339Nano), t.Options.AcceptWindow)
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.WriteTimeout)
	defer cancel()
	// Each failed attempt means a rollup or another clear moved the
	// counter meanwhile; a handful settle any real race.
	for range 8 {
		rec, err := e.cfg.Store.ReadEventCounter(ctx, &driver.ReadEventCounterParams{
			Namespace: t.Namespace, Counter: t.Counter, Consistency: t.WriteConsistency,
		})
		if err != nil {
			return 0, err
		}
		var head driver.Rollup
		if rec.Rollup != nil {
			head = *rec.Rollup
		}
		if epoch <= head.Epoch {
			// Either this clear, repeated, or a rollup or clear beyond it.
			s, err := e.sealAt(ctx, t, epoch, t.WriteConsistency)
			if err != nil {
				return 0, err
			}
			if s != nil && s.Clear && s.End == epoch {
				e.learnHead(t, head)
				return epoch, nil
			}
			return 0, fmt.Errorf("%w: clear time %s is at or before the counter's epoch %s (a rollup or another clear)", ErrTooLate, at.UTC().Format(time.RFC3339Nano), time.UnixMicro(head.Epoch).UTC().Format(time.RFC3339Nano))
		}
		seal := driver.EventSeal{Start: head.Epoch, End: epoch, Value: 0, Clear: true}
		if b := t.Options.BucketOf(epoch); t.Options.sealBucket(head.Epoch) < b {
			// Clear up to the clear's own bucket first, so that the seal
			// ending at the clear's time lies in that bucket, where a
			// repeat of the clear finds it.
			seal.End = b - 1
		}
		if err := e.mark(ctx, t, t.Options.sealBucket(seal.Start)); err != nil {
			return 0, fmt.Errorf("%w: mark bucket: %w", ErrNotApplied, err)
		}
		stored, _, err := e.cfg.Store.SealEvents(ctx, &driver.SealEventsParams{
			Namespace: t.Namespace, Counter: t.Counter, Bucket: t.Options.sealBucket(seal.Start), Seal: seal,
			Consistency: t.WriteConsistency,
		})
		if err != nil {
			return 0, err
		}
		next := driver.Rollup{Value: stored.Value, Epoch: stored.End}
		if err := e.cfg.Store.WriteRollup(ctx, &driver.WriteRollupParams{
			Namespace: t.Namespace, Counter: t.Counter, Rollup: next, Consistency: t.WriteConsistency,
		}); err != nil {
			return 0, err
		}
		e.learnHead(t, next)
		if stored.Clear && stored.End == epoch {
			return epoch, nil
		}
	}
	return 0, fmt.Errorf("%w: the counter kept moving; try again", ErrNotApplied)
}

// sealAt returns the seal covering time at, or nil when it names no
// events and lies in an earlier bucket.
func (e *Engine) sealAt(ctx context.Context, t Target, at int64, cl driver.Consistency) (*driver.EventSeal, error) {
	s, err := e.cfg.Store.ReadEventSeal(ctx, &driver.ReadEventSealParams{
		Namespace: t.Namespace, Counter: t.Counter, Bucket: t.Options.BucketOf(at), Before: at, Consistency: cl,
	})
	switch {
	case errors.Is(err, driver.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	case s.End < at:
		return nil, nil
	}
	return s, nil
}

// RollupResult describes one rollup attempt.
type RollupResult struct {
	Key driver.CounterKey
	// Epoch is the counter's epoch after the attempt (µs).
	Epoch int64
	// Events is how many events the rollup folded; Seals how many seals
	// it stored; Buckets how many buckets it deleted.
	Events  int
	Seals   int
	Buckets int
	// Skipped is set when the rollup could not run (a replica is down);
	// Err says why. It is retried later; reads are unaffected.
	Skipped bool
	Err     error
}

// Rollup seals the counter's events up to now - Seal - RollupDelay, moves
// its epoch there, and deletes the buckets beyond the de-duplication
// horizon.
func (e *Engine) Rollup(ctx context.Context, t Target) RollupResult {
	res := e.rollup(ctx, t)
	if res.Skipped {
		e.stats.RollupSkips.Add(1)
	} else {
		e.stats.Rollups.Add(1)
		e.stats.EventsRolled.Add(uint64(res.Events))
		e.stats.Seals.Add(uint64(res.Seals))
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
	now, began := e.cfg.Clock.Now(), time.Now() // began: real time, however the clock is set
	target := t.Options.RollupEpoch(now)
	rec, err := e.cfg.Store.ReadEventCounter(ctx, &driver.ReadEventCounterParams{
		Namespace: t.Namespace, Counter: t.Counter, Consistency: cl,
	})
	if err != nil {
		return skip("read counter at %s: %w", cl, err)
	}
	var head driver.Rollup
	if rec.Rollup != nil {
		head = *rec.Rollup
		e.learnHead(t, head)
	}
	res.Epoch = head.Epoch
	if target > head.Epoch {
		// Every event after the epoch up to the target, oldest first: the
		// seals below take them in order.
		var evs []driver.Event
		for _, b := range rec.Buckets {
			if t.Options.bucketLast(b) <= head.Epoch || b > target {
				continue
			}
			got, err := e.cfg.Store.ReadEvents(ctx, &driver.ReadEventsParams{
				Namespace: t.Namespace, Counter: t.Counter, Bucket: b,
				After: head.Epoch, UpTo: target, Consistency: cl,
			})
			if err != nil {
				return skip("read events at %s: %w", cl, err)
			}
			evs = append(evs, got...)
		}
		slices.SortFunc(evs, func(a, b driver.Event) int {
			return cmp.Or(cmp.Compare(a.Time, b.Time), cmp.Compare(a.ID, b.ID))
		})
		for head.Epoch < target {
			seal, n, ok := e.nextSeal(t, head, target, evs)
			if !ok {
				if res.Seals == 0 {
					return skip("the counter's value stays outside the int64 range from its epoch %d to %d; its events are kept (reads stay exact) until later events bring it back", head.Epoch, target)
				}
				break
			}
			if took := max(time.Since(began), e.cfg.Clock.Now().Sub(now)); took > min(maxRollupSpan, t.Options.AcceptWindow/2) {
				// A seal is stored only while the epoch it starts from is
				// recent: buckets (and the seals in them) beyond the
				// accept window are deleted, and a seal stored from a
				// deleted one would fold from a stale epoch.
				return skip("the rollup ran for %v; the next one goes on from here", took)
			}
			bucket := t.Options.sealBucket(seal.Start)
			if err := e.mark(ctx, t, bucket); err != nil {
				return skip("mark seal bucket at %s: %w", t.WriteConsistency, err)
			}
			stored, applied, err := e.cfg.Store.SealEvents(ctx, &driver.SealEventsParams{
				Namespace: t.Namespace, Counter: t.Counter, Bucket: bucket, Seal: seal, Consistency: cl,
			})
			if err != nil {
				return skip("seal at %s: %w", cl, err)
			}
			if seal.Start < t.Options.keepFloor(now) {
				// The seal at an epoch this old may have been deleted after
				// another rollup passed it; ours (or a stalled twin's we
				// adopted) would then fork the chain. The epoch moves only
				// after its seals are stored, and deletes come after that,
				// so a head past our start that is not this seal's end
				// exposes the fork: step aside rather than write a head.
				again, err := e.cfg.Store.ReadEventCounter(ctx, &driver.ReadEventCounterParams{
					Namespace: t.Namespace, Counter: t.Counter, Consistency: cl,
				})
				if err != nil {
					return skip("re-read counter at %s: %w", cl, err)
				}
				if h := again.Rollup; h != nil && h.Epoch > seal.Start && *h != (driver.Rollup{Value: stored.Value, Epoch: stored.End}) {
					return skip("the counter's epoch passed %d while this rollup sealed from it", seal.Start)
				}
			}
			// A seal another rollup or a clear stored from this epoch
			// stands in for ours: its head is finished and the events
			// after it go on from there.
			next := driver.Rollup{Value: stored.Value, Epoch: stored.End}
			if err := e.cfg.Store.WriteRollup(ctx, &driver.WriteRollupParams{
				Namespace: t.Namespace, Counter: t.Counter, Rollup: next, Consistency: cl,
			}); err != nil {
				// The seal stands; the next rollup finishes the head.
				return skip("write rollup at %s: %w", cl, err)
			}
			if applied {
				res.Seals++
				res.Events += n
			}
			head = next
			res.Epoch = head.Epoch
			e.learnHead(t, head)
			for len(evs) > 0 && evs[0].Time <= head.Epoch {
				evs = evs[1:]
			}
		}
	}
	// Buckets wholly beyond the de-duplication horizon and behind the
	// epoch hold nothing a read or a retry can still ask for.
	keep := min(head.Epoch, t.Options.keepFloor(now))
	var gone []int64
	for _, b := range rec.Buckets {
		if t.Options.bucketLast(b) < keep {
			gone = append(gone, b)
		}
	}
	if len(gone) > 0 {
		if err := e.cfg.Store.DeleteEventSeals(ctx, &driver.DeleteEventSealsParams{
			Namespace: t.Namespace, Counter: t.Counter, Buckets: gone, Consistency: cl,
		}); err != nil {
			return skip("delete the seals of %d old buckets at %s: %w", len(gone), cl, err)
		}
		if err := e.cfg.Store.DeleteEventBuckets(ctx, &driver.DeleteEventBucketsParams{
			Namespace: t.Namespace, Counter: t.Counter, Buckets: gone, Timestamp: head.Epoch, Consistency: cl,
		}); err != nil {
			// The rollup itself stands; the next one deletes them.
			return skip("delete %d old buckets at %s: %w", len(gone), cl, err)
		}
		e.mu.Lock()
		st := e.stateLocked(t.key())
		for _, b := range gone {
			delete(st.marked, b)
		}
		e.mu.Unlock()
		res.Buckets = len(gone)
	}
	return res
}

// maxRollupSpan bounds how long after reading the epoch a rollup may
// store seals from it (or half the accept window, if shorter): well before
// the buckets behind that epoch can be deleted.
const maxRollupSpan = 30 * time.Second

// nextSeal returns the seal that follows head towards target, given the
// events after head (oldest first), and how many of them it names. A seal
// that names events lies inside one bucket and names at most
// MaxSealEvents; a stretch without events is sealed in one piece, however
// many buckets it spans. ok is false when no seal can move: the running
// total is outside the int64 range at every later event time.
func (e *Engine) nextSeal(t Target, head driver.Rollup, target int64, evs []driver.Event) (driver.EventSeal, int, bool) {
	seal := driver.EventSeal{Start: head.Epoch, End: target, Value: head.Value}
	first := len(evs)
	for i, ev := range evs {
		if ev.Time > head.Epoch {
			first = i
			break
		}
	}
	evs = evs[first:]
	if len(evs) == 0 || evs[0].Time > target {
		seal.Events = encodeSealSet(seal.Start, nil)
		return seal, 0, true
	}
	if b := t.Options.BucketOf(evs[0].Time); b > t.Options.sealBucket(head.Epoch) {
		// An empty stretch up to the bucket of the next event.
		seal.End = b - 1
		seal.Events = encodeSealSet(seal.Start, nil)
		return seal, 0, true
	}
	seal.End = min(target, t.Options.bucketLast(t.Options.sealBucket(head.Epoch)))
	out, n, ok := e.sealEvents(seal, head, evs)
	if !ok && seal.End < target {
		// The total is outside the int64 range at every event time to the
		// bucket's end: the seal goes on into later buckets, where events
		// may bring it back (findSeal looks back for it).
		seal.End = target
		out, n, ok = e.sealEvents(seal, head, evs)
	}
	return out, n, ok
}

// sealEvents fills in seal (whose Start and End are set) with the events
// of evs up to its end, at most MaxSealEvents of them, moving its end back
// where it must: to the last of those events, and to the last time at
// which the running total fits an int64.
func (e *Engine) sealEvents(seal driver.EventSeal, head driver.Rollup, evs []driver.Event) (driver.EventSeal, int, bool) {
	n := 0
	for n < len(evs) && evs[n].Time <= seal.End {
		n++
	}
	if n > e.cfg.MaxSealEvents {
		// Cut at a time boundary: a seal covers every event at its end.
		cut := e.cfg.MaxSealEvents
		for cut > 0 && evs[cut].Time == evs[cut-1].Time {
			cut--
		}
		if cut == 0 {
			cut = e.cfg.MaxSealEvents // one instant holds them all
			for cut < n && evs[cut].Time == evs[cut-1].Time {
				cut++
			}
		}
		n = cut
		seal.End = evs[n-1].Time
	}
	end, value, folded, ok := fold(head, seal.End, slices.Clone(evs[:n]))
	if !ok {
		return seal, 0, false
	}
	for folded < n && evs[folded].Time <= end {
		folded++ // fold counts to its end; keep ties together
	}
	seal.End, seal.Value = end, value
	seal.Events = encodeSealSet(seal.Start, evs[:folded])
	return seal, folded, true
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

// maybeRollup starts a background rollup of t when it is due: its epoch
// trails what a rollup could reach, no rollup of it started here within
// RollupEvery, and either enough new events were seen (a hot counter) or
// the epoch trails by MaxRollupLag (a cold one).
func (e *Engine) maybeRollup(t Target) {
	if e.cfg.RollupEvery < 0 {
		return
	}
	now := e.cfg.Clock.Now()
	k := t.key()
	e.mu.Lock()
	st := e.stateLocked(k)
	behind := t.Options.RollupEpoch(now) - st.epoch
	due := !st.rolling && now.Sub(st.lastRollup) >= e.cfg.RollupEvery && behind > 0 &&
		(st.fresh >= e.cfg.RollupAfterEvents || behind > e.cfg.MaxRollupLag.Microseconds())
	if due {
		st.rolling, st.lastRollup, st.fresh = true, now, 0
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
