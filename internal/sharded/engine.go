package sharded

import (
	"cmp"
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/background"
	"github.com/abacusdb/abacus/internal/combine"
	"github.com/abacusdb/abacus/internal/crdt"
	"github.com/abacusdb/abacus/internal/outcome"
)

// Errors returned to callers, wrapped with detail; test with errors.Is.
var (
	// ErrUnknownOutcome means the update was applied in memory but the shard
	// write that should persist it failed or timed out. It may or may not be
	// counted; retrying with the same request id on the same process is safe.
	ErrUnknownOutcome = outcome.ErrUnknownOutcome

	// ErrNotApplied means the update was definitely not counted; it is safe
	// to retry anywhere.
	ErrNotApplied = outcome.ErrNotApplied

	// ErrRequestConflict means a request id was reused for a different update.
	ErrRequestConflict = outcome.ErrRequestConflict
)

// Config configures an Engine. Zero fields take the documented defaults.
type Config struct {
	// Store persists shards. Required.
	Store driver.Shards
	// Clock tells the time. Default: the system clock.
	Clock clock.Clock
	// Lifetime is how long a mutator lives after its birth. Default 24h.
	Lifetime time.Duration
	// RefusalMargin: a mutator refuses updates once its death is closer than
	// this, and a new one is born. Must be below Lifetime. Default 1h.
	RefusalMargin time.Duration
	// GCGrace is how long after its death a shard becomes final and may be
	// folded. It must exceed the worst clock skew between processes plus the
	// store's hint window. Default 24h.
	GCGrace time.Duration
	// MaxMutators bounds the live mutators of this process (LRU). Dropping a
	// mutator loses nothing: its state is already persisted. Default 10,000.
	MaxMutators int
	// MaxReadBounds bounds how many counters' read bounds (the tally
	// timestamp a read may start from) this process remembers. Forgetting
	// one costs one read of the whole partition. Default 100,000.
	MaxReadBounds int
	// DedupWindow is how long a request id is remembered. Default 10m.
	DedupWindow time.Duration
	// DedupMax bounds how many request ids are remembered. Default 1,000,000.
	DedupMax int
	// WriteTimeout bounds one shard write, from the moment its mutator hands
	// it over (time queued for a combined request included). Default 10s.
	WriteTimeout time.Duration
	// MaxInflightWrites is how many shard writes one mutator may have in
	// flight. More than one lets a hot counter pipeline its writes instead of
	// waiting a round trip per group commit. Default 4.
	MaxInflightWrites int
	// MaxShardBatch is how many shard writes, of any counters, one request
	// to the store may carry: writes that queue while MaxInflightBatches
	// requests are in flight go out together (see combiner). 1 sends every
	// write on its own, straight from its mutator. Default 32.
	MaxShardBatch int
	// MaxInflightBatches is how many combined shard-write requests this
	// process may have in flight at once. Default 8.
	MaxInflightBatches int
	// GCConsistency is the level of the read before a fold. Default ALL:
	// folding a shard set that misses a shard would lose it.
	GCConsistency driver.Consistency
	// FoldConsistency is the level of the fold batch. Default: the driver's.
	FoldConsistency driver.Consistency
	// Logger receives warnings about skipped GCs. Default: slog.Default().
	Logger *slog.Logger
	// Hooks receive measurements; nil functions are skipped.
	Hooks Hooks
}

// Hooks are callbacks for metrics. They must be fast and must not block.
type Hooks struct {
	// Commit is called after every shard write with the number of updates it
	// acknowledged (0 when it failed), its latency and its error.
	Commit func(updates uint64, latency time.Duration, err error)
	// Read is called after every read with the number of shards it merged.
	Read func(shards int)
	// GC is called after every collection attempt.
	GC func(r GCResult)
}

func (h Hooks) commit(n uint64, d time.Duration, err error) {
	if h.Commit != nil {
		h.Commit(n, d, err)
	}
}

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	c.Lifetime = cmp.Or(c.Lifetime, 24*time.Hour)
	c.RefusalMargin = cmp.Or(c.RefusalMargin, time.Hour)
	c.GCGrace = cmp.Or(c.GCGrace, 24*time.Hour)
	c.MaxMutators = cmp.Or(c.MaxMutators, 10_000)
	c.MaxReadBounds = cmp.Or(c.MaxReadBounds, 100_000)
	c.DedupWindow = cmp.Or(c.DedupWindow, 10*time.Minute)
	c.DedupMax = cmp.Or(c.DedupMax, 1_000_000)
	c.WriteTimeout = cmp.Or(c.WriteTimeout, 10*time.Second)
	c.MaxInflightWrites = cmp.Or(c.MaxInflightWrites, 4)
	c.MaxShardBatch = cmp.Or(c.MaxShardBatch, 32)
	c.MaxInflightBatches = cmp.Or(c.MaxInflightBatches, 8)
	c.GCConsistency = cmp.Or(c.GCConsistency, driver.All)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

func (c Config) validate() error {
	switch {
	case c.Store == nil:
		return errors.New("sharded: Config.Store is required")
	case c.Lifetime < 0 || c.RefusalMargin < 0 || c.GCGrace < 0 || c.DedupWindow < 0 || c.WriteTimeout < 0:
		return errors.New("sharded: durations must not be negative")
	case c.RefusalMargin >= c.Lifetime:
		return fmt.Errorf("sharded: RefusalMargin (%v) must be below Lifetime (%v)", c.RefusalMargin, c.Lifetime)
	case c.MaxMutators < 0 || c.DedupMax < 0 || c.MaxInflightWrites < 0 || c.MaxReadBounds < 0 || c.MaxShardBatch < 0 || c.MaxInflightBatches < 0:
		return errors.New("sharded: MaxMutators, MaxReadBounds, DedupMax, MaxInflightWrites, MaxShardBatch and MaxInflightBatches must not be negative")
	case c.MaxShardBatch > driver.MaxShardWrites:
		return fmt.Errorf("sharded: MaxShardBatch (%d) is more than one request carries (%d)", c.MaxShardBatch, driver.MaxShardWrites)
	}
	return nil
}

// Target identifies a counter and how to store it.
type Target struct {
	Namespace        string
	Counter          string
	Kind             crdt.Kind
	ReadConsistency  driver.Consistency
	WriteConsistency driver.Consistency
}

func (t Target) key() driver.CounterKey {
	return driver.CounterKey{Namespace: t.Namespace, Counter: t.Counter}
}

// Engine runs the sharded model for one process.
type Engine struct {
	cfg Config

	// work holds the running write loops and background collections, so
	// Close waits for them and refuses new ones.
	work background.Work

	mu       sync.Mutex
	mutators map[driver.CounterKey]*list.Element // of *mutator, most recent first
	lru      *list.List

	dedup    dedup
	bounds   bounds
	combiner *combine.Combiner[driver.WriteShardParams] // nil when MaxShardBatch is 1

	gcMu      sync.Mutex
	gcRunning map[driver.CounterKey]bool

	stats Stats
}

// Stats are running totals, read with Engine.Stats.
type Stats struct {
	Updates      atomic.Uint64 // updates acknowledged
	Deduplicated atomic.Uint64 // retries answered from the request-id window
	Births       atomic.Uint64 // mutators born
	GCRuns       atomic.Uint64 // collections that folded at least one shard
	GCSkips      atomic.Uint64 // collections skipped (a replica down, a read failed)
	Folded       atomic.Uint64 // shards folded into tallies
	// UnboundedReads counts reads (GC's included) of a whole partition,
	// folded shards' tombstones and all: the first of each counter in this
	// process, and any whose bounded read could not be trusted.
	UnboundedReads atomic.Uint64
	// StaleShards counts live shard rows that reads left out because they
	// expire before the tally's timestamp, so the tally already holds
	// them: a fold's delete that has not reached every replica yet, or a
	// row that came back after its tombstone was dropped.
	StaleShards atomic.Uint64
}

// New returns an engine. Call Close to wait for in-flight writes.
func New(cfg Config) (*Engine, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Engine{
		cfg:       cfg,
		mutators:  map[driver.CounterKey]*list.Element{},
		lru:       list.New(),
		gcRunning: map[driver.CounterKey]bool{},
	}
	e.dedup.init(cfg.DedupWindow, cfg.DedupMax)
	e.bounds.init(cfg.MaxReadBounds)
	if cfg.MaxShardBatch > 1 {
		e.combiner = newCombiner(cfg.Store, e.goBackground, cfg)
	}
	return e, nil
}

// writeShard persists one mutator's snapshot: through the combiner, or on
// its own when combining is off.
func (e *Engine) writeShard(p driver.WriteShardParams) error {
	if e.combiner != nil {
		return e.combiner.Write(context.Background(), p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.WriteTimeout)
	defer cancel()
	return e.cfg.Store.WriteShard(ctx, &p)
}

// Stats returns the engine's running totals.
func (e *Engine) Stats() *Stats { return &e.stats }

// LiveMutators returns how many mutators this process holds.
func (e *Engine) LiveMutators() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lru.Len()
}

// goBackground runs fn in a goroutine that Close waits for, unless the
// engine is closed, in which case it reports false and runs nothing.
func (e *Engine) goBackground(fn func()) bool { return e.work.Go(fn) }

// mutatorFor returns the live mutator for t, birthing one if needed. When
// retired is the current one, it is replaced.
func (e *Engine) mutatorFor(t Target, retired *mutator) (*mutator, error) {
	k := t.key()
	e.mu.Lock()
	defer e.mu.Unlock()
	if el, ok := e.mutators[k]; ok {
		m := el.Value.(*mutator)
		if m != retired && m.target.Kind == t.Kind {
			e.lru.MoveToFront(el)
			return m, nil
		}
		e.lru.Remove(el)
		delete(e.mutators, k)
	}
	m, err := e.newMutator(t)
	if err != nil {
		return nil, err
	}
	e.stats.Births.Add(1)
	e.mutators[k] = e.lru.PushFront(m)
	e.evictLocked()
	return m, nil
}

// evictLocked drops least recently used idle mutators beyond the bound. A
// mutator with unpersisted updates is kept, so the bound can be exceeded
// while writes are failing.
func (e *Engine) evictLocked() {
	for el := e.lru.Back(); el != nil && e.lru.Len() > e.cfg.MaxMutators; {
		prev := el.Prev()
		m := el.Value.(*mutator)
		if m.idle() {
			e.lru.Remove(el)
			delete(e.mutators, m.target.key())
		}
		el = prev
	}
}

// Apply applies op to the counter and returns once a shard write containing
// it has succeeded. requestID may be empty; when set, a retry with the same id
// that reaches this process within the dedup window is not applied twice.
func (e *Engine) Apply(ctx context.Context, t Target, op crdt.Op, requestID string) error {
	if requestID == "" {
		return e.apply(ctx, t, op)
	}
	key := dedupKey{ns: t.Namespace, counter: t.Counter, id: requestID}
	ent, fresh := e.dedup.claim(key, op, e.cfg.Clock.Now())
	if !fresh {
		return e.await(ctx, ent, op)
	}
	m, seq, r, err := e.applyOnce(t, op)
	e.dedup.settle(ent, m, seq, err)
	if err != nil {
		return err
	}
	return e.wait(ctx, r)
}

func (e *Engine) apply(ctx context.Context, t Target, op crdt.Op) error {
	_, _, r, err := e.applyOnce(t, op)
	if err != nil {
		return err
	}
	return e.wait(ctx, r)
}

// applyOnce applies op to the counter's live mutator, replacing retired ones.
func (e *Engine) applyOnce(t Target, op crdt.Op) (*mutator, uint64, *round, error) {
	var retired *mutator
	for {
		m, err := e.mutatorFor(t, retired)
		if err != nil {
			return nil, 0, nil, err
		}
		seq, r, err := m.apply(op)
		if errors.Is(err, errRetired) {
			retired = m
			continue
		}
		if err != nil {
			return nil, 0, nil, err
		}
		return m, seq, r, nil
	}
}

func (e *Engine) wait(ctx context.Context, r *round) error {
	select {
	case <-r.done:
		if r.err == nil {
			e.stats.Updates.Add(1)
		}
		return r.err
	case <-ctx.Done():
		return fmt.Errorf("%w: gave up waiting for the shard write: %w", ErrUnknownOutcome, ctx.Err())
	}
}

// await answers a retry of a request id this process has seen.
func (e *Engine) await(ctx context.Context, ent *dedupEntry, op crdt.Op) error {
	select {
	case <-ent.settled:
	case <-ctx.Done():
		return fmt.Errorf("%w: waiting for the original request: %w", ErrUnknownOutcome, ctx.Err())
	}
	if ent.op.Delta != op.Delta || string(ent.op.Item) != string(op.Item) {
		return ErrRequestConflict
	}
	if ent.err != nil {
		// The original was never applied (it was refused outright), so this
		// attempt is not a duplicate; the caller may retry with a new id.
		return ent.err
	}
	e.stats.Deduplicated.Add(1)
	for {
		r := ent.m.flush(ent.seq)
		if r == nil {
			return nil
		}
		if err := e.wait(ctx, r); err != nil {
			return err
		}
		if ent.m.isDurable(ent.seq) {
			return nil
		}
	}
}

// Reading is the result of Read.
type Reading struct {
	// State is the merged state. It is nil when the counter is a sum whose
	// shards, each within range, add up to more than one state can hold
	// (shards of different processes are written blindly, so no process
	// can refuse that exactly); Value and Total still tell the sum.
	State crdt.State
	// Value is the counter's value, the nearest int64 when Saturated.
	Value     int64
	Saturated bool
	// Total is the exact sum (sum counters).
	Total crdt.Wide
	// Empty is true when nothing was ever counted.
	Empty bool
	// Shards is how many live shards were merged (the tally not included).
	Shards int
	// Final is how many of them were final, i.e. waiting for GC.
	Final int
}

// Read merges the counter's tally and shards. If it sees more than one final
// shard it starts a collection in the background; the read itself never
// waits for or fails because of GC.
func (e *Engine) Read(ctx context.Context, t Target) (*Reading, error) {
	set, _, err := e.readShards(ctx, t.key(), t.ReadConsistency, false)
	if err != nil {
		return nil, err
	}
	r := &Reading{Shards: len(set.Shards)}
	st, err := Merge(t.Kind, set)
	switch {
	case t.Kind == crdt.KindSum && errors.Is(err, crdt.ErrOverflow):
		if r.Total, err = SumTotal(set); err != nil {
			return nil, err
		}
		var exact bool
		r.Value, exact = r.Total.Int64()
		r.Saturated = !exact
	case err != nil:
		return nil, err
	case st.Kind() != t.Kind:
		return nil, fmt.Errorf("counter %s/%s holds %s state, namespace says %s", t.Namespace, t.Counter, st.Kind(), t.Kind)
	default:
		r.State, r.Value, r.Empty = st, st.Value(), st.Empty()
		r.Total = crdt.WideOf(r.Value)
	}
	cutoff := e.cutoff()
	final := 0
	for _, s := range set.Shards {
		if s.ExpiresAt < cutoff {
			final++
		}
	}
	if e.cfg.Hooks.Read != nil {
		e.cfg.Hooks.Read(len(set.Shards))
	}
	if final > 1 {
		e.collectInBackground(t.key())
	}
	r.Final = final
	return r, nil
}

// readShards reads what is stored for counter k at consistency cl and
// returns the tally and the shards it does not already hold, without the
// anchor, and the ids of the live rows it left out as already held
// (dropFolded), which the next fold deletes. When this process knows a
// tally of k, the read starts at the bound its timestamp gives and so skips
// the tombstones of every shard folded into it. The result is used only if
// it carries a tally at least that new, which holds every skipped shard;
// otherwise (a replica behind, or no row at or above the bound, which in
// Cassandra also hides the tally) the whole partition is read, as a first
// read does.
//
// A bounded read raises the known bound; a whole-partition read sets it
// to what it found, even lower (a restored backup), so that later reads
// can trust their results again. When the bounds are full, only reads for
// counting make room, not GC's (gc): GC sweeps every counter and would
// push out the bounds of the counters that are read.
//
// A read that finds rows the tally holds marks the counter, and GC's next
// read of it reads the whole partition, so that its fold deletes them all:
// a bounded read does not see the ones below the bound.
func (e *Engine) readShards(ctx context.Context, k driver.CounterKey, cl driver.Consistency, gc bool) (_ *driver.ShardSet, stale []string, _ error) {
	p := &driver.ReadShardsParams{Namespace: k.Namespace, Counter: k.Counter, Consistency: cl}
	known := e.bounds.get(k)
	var set *driver.ShardSet
	if known.ts > 0 && !(gc && known.stale) {
		p.From = known.from
		bounded, err := e.cfg.Store.ReadShards(ctx, p)
		if err != nil {
			return nil, nil, err
		}
		if bounded.Tally != nil && bounded.Tally.Timestamp >= known.ts {
			set = bounded
		}
	}
	if set == nil {
		p.From = ""
		e.stats.UnboundedReads.Add(1)
		full, err := e.cfg.Store.ReadShards(ctx, p)
		if err != nil {
			return nil, nil, err
		}
		set = full
	}
	switch {
	case set.Tally != nil:
		e.bounds.learn(k, set.Tally.Timestamp, p.From == "", !gc)
		stale = dropFolded(set)
		if len(stale) > 0 {
			e.stats.StaleShards.Add(uint64(len(stale)))
			e.bounds.markStale(k, true)
		}
	case p.From == "":
		// No tally at all (a store restored from before the first fold):
		// a remembered bound would only make every read read twice.
		e.bounds.forget(k)
	}
	withoutAnchor(set)
	return set, stale, nil
}

func (e *Engine) cutoff() int64 {
	return e.cfg.Clock.Now().Add(-e.cfg.GCGrace).UnixMicro()
}

// TombstoneCutoff is the write timestamp (µs) below which a folded shard's
// tombstone may be dropped by a store that keeps them until told: twice
// the GC grace ago, by this engine's clock and grace (docs/architecture.md,
// "Purging the tombstones of folded shards").
func (e *Engine) TombstoneCutoff() int64 {
	return e.cfg.Clock.Now().Add(-2 * e.cfg.GCGrace).UnixMicro()
}

// GCResult describes one collection attempt.
type GCResult struct {
	Key driver.CounterKey
	// Folded is how many shards were folded; 0 when none was final.
	Folded int
	// Skipped is set when the collection could not run (for example a
	// replica is down, so the read at ALL failed); Err says why.
	Skipped bool
	Err     error
}

// Collect folds the counter's final shards into its tally. A failure to read
// at the GC consistency is reported as Skipped, not as an error: GC is only an
// optimisation and is retried later.
func (e *Engine) Collect(ctx context.Context, k driver.CounterKey) GCResult {
	res := e.collect(ctx, k)
	switch {
	case res.Skipped:
		e.stats.GCSkips.Add(1)
	case res.Folded > 0:
		e.stats.GCRuns.Add(1)
		e.stats.Folded.Add(uint64(res.Folded))
	}
	if e.cfg.Hooks.GC != nil {
		e.cfg.Hooks.GC(res)
	}
	return res
}

func (e *Engine) collect(ctx context.Context, k driver.CounterKey) GCResult {
	res := GCResult{Key: k}
	// The cutoff is taken before the read. A shard final at this cutoff
	// had every write land before the read began, so the read sees its
	// last state. A cutoff taken after a slow read could make final a
	// shard whose later writes the read missed; the fold would then
	// delete them unread.
	cutoff := e.cutoff()
	set, stale, err := e.readShards(ctx, k, e.cfg.GCConsistency, true)
	if err != nil {
		res.Skipped, res.Err = true, fmt.Errorf("read at %s: %w", e.cfg.GCConsistency, err)
		return res
	}
	plan, err := PlanFold(set, cutoff)
	if err != nil {
		res.Skipped, res.Err = true, err
		return res
	}
	if plan == nil && len(stale) > 0 {
		// Nothing new is final, but rows the tally already holds are
		// stored: delete them anyway, at the tally's own timestamp (above
		// their expires_at, so above every write they had), writing the
		// tally as it is. Left alone, an idle counter would keep them.
		prev, err := crdt.Decode(set.Tally.State)
		if err != nil {
			res.Skipped, res.Err = true, fmt.Errorf("decode tally: %w", err)
			return res
		}
		plan = &FoldPlan{Tally: prev, Timestamp: set.Tally.Timestamp}
	}
	if plan == nil {
		return res
	}
	tally, err := plan.Tally.MarshalBinary()
	if err != nil {
		res.Skipped, res.Err = true, err
		return res
	}
	anchor, err := anchorFor(plan.Tally.Kind())
	if err != nil {
		res.Skipped, res.Err = true, err
		return res
	}
	// Rows the tally already held are deleted too: the fold's timestamp is
	// above their expires_at, hence above every write they had.
	del := plan.Delete
	if len(stale) > 0 {
		del = append(slices.Clone(plan.Delete), stale...)
		slices.Sort(del)
	}
	err = e.cfg.Store.Fold(ctx, &driver.FoldParams{
		Namespace: k.Namespace, Counter: k.Counter, Delete: del,
		Tally:       driver.Tally{State: tally, Timestamp: plan.Timestamp},
		Write:       []driver.Shard{anchor},
		Consistency: e.cfg.FoldConsistency,
	})
	if err != nil {
		// The fold may have been applied; replaying it later is harmless.
		res.Skipped, res.Err = true, fmt.Errorf("fold: %w", err)
		return res
	}
	// The fold deleted every stale row its read saw (all of them, if the
	// counter was marked, since the read then covered the whole partition).
	e.bounds.markStale(k, false)
	res.Folded = len(plan.Delete)
	return res
}

// collectInBackground runs one collection of k unless one is already running.
func (e *Engine) collectInBackground(k driver.CounterKey) {
	e.gcMu.Lock()
	if e.gcRunning[k] {
		e.gcMu.Unlock()
		return
	}
	e.gcRunning[k] = true
	e.gcMu.Unlock()
	started := e.goBackground(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if res := e.Collect(ctx, k); res.Skipped {
			e.cfg.Logger.Warn("gc skipped", "namespace", k.Namespace, "counter", k.Counter, "err", res.Err)
		}
		e.gcMu.Lock()
		delete(e.gcRunning, k)
		e.gcMu.Unlock()
	})
	if !started {
		e.gcMu.Lock()
		delete(e.gcRunning, k)
		e.gcMu.Unlock()
	}
}

// CollectAll runs Collect on every counter (of one namespace if ns is set).
func (e *Engine) CollectAll(ctx context.Context, ns string) ([]GCResult, error) {
	keys, err := e.cfg.Store.ListCounters(ctx, &driver.ListCountersParams{Namespace: ns})
	if err != nil {
		return nil, err
	}
	out := make([]GCResult, 0, len(keys))
	for _, k := range keys {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		out = append(out, e.Collect(ctx, k))
	}
	return out, nil
}

// Close waits until every in-flight shard write and background collection
// has finished, so updates accepted before Close are persisted or reported.
func (e *Engine) Close(ctx context.Context) error {
	return e.work.Shutdown(ctx, "sharded: writes")
}
