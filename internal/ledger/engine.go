package ledger

import (
	"cmp"
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/outcome"
	"github.com/abacusdb/abacus/internal/randomid"
)

// Errors of the engine. They are wrapped with detail; test with errors.Is.
var (
	// ErrUnknownOutcome means the request may or may not have been applied:
	// a write (or claim) timed out on every attempt, or, in strict mode,
	// another actor holds the request id's claim and its write has not
	// been seen yet. Retrying with the same request id is safe.
	ErrUnknownOutcome = outcome.ErrUnknownOutcome

	// ErrNotApplied means the request was definitely not applied; retrying
	// is safe anywhere.
	ErrNotApplied = outcome.Tag(outcome.ErrNotApplied, errors.New("request not applied"))

	// ErrRequestConflict means the request id is recorded (or claimed) with
	// a different amount: the id was reused for another request.
	ErrRequestConflict = outcome.Tag(outcome.ErrRequestConflict, errors.New("request id already used for a different amount"))

	// ErrBelowFloor means a debit would take the ledger below its floor;
	// it was not applied (it is also ErrNotApplied).
	ErrBelowFloor = outcome.Tag(outcome.ErrBelowFloor, outcome.Tag(ErrNotApplied, errors.New("debit refused: it would take the balance below the floor")))

	// ErrRightsHeld means the balance above the floor would cover the
	// debit but other actors hold it as their rights to debit; it was not
	// applied (it is also ErrNotApplied), and may succeed when retried.
	ErrRightsHeld = outcome.Tag(outcome.ErrRightsHeld, outcome.Tag(ErrNotApplied, errors.New("debit refused: the balance above the floor is held as debit rights by other servers")))
)

// defaultWriteTimeout is Config.WriteTimeout's default.
const defaultWriteTimeout = 10 * time.Second

// Option defaults.
const (
	DefaultRetryCount = 10
	DefaultClaimTTL   = 24 * time.Hour
	// DefaultEntryRetention is how long a new namespace's history keeps
	// an entry.
	DefaultEntryRetention = 30 * 24 * time.Hour
	// MaxEntryRetention is the longest retention, 7 years: Cassandra
	// before 5.0 refuses a TTL that ends after January 2038.
	MaxEntryRetention = 7 * 365 * 24 * time.Hour
	// MaxRetryCount bounds retry_count; each resubmission is a write.
	MaxRetryCount = 100
	// MinFloor is the lowest floor a namespace may set: room enough for
	// any overdraft line, and far enough from int64's bound that the
	// arithmetic on balance minus floor stays simple.
	MinFloor = -(1 << 62)
)

// Options are a ledger namespace's settings.
type Options struct {
	// HistoryLength is how many request ids each section of an actor keeps
	// after a merge; a write appends one more, and the next merge folds the
	// oldest into the total. Default 10, at most MaxHistoryLength.
	HistoryLength int
	// Mode says how retries are recognised across servers. ModeExact, the
	// default, claims each request id with a compare-and-set (a lightweight
	// transaction on Cassandra) before applying it, so two actors can
	// never both apply it. ModeConcurrentRetriesMayDouble skips the claim:
	// cheaper, but copies of one request running at the same time on two
	// servers may both be applied.
	Mode Mode
	// RetryCount is how many times a write (or claim) whose outcome is
	// unknown is resubmitted before the request is reported as
	// ErrUnknownOutcome. Zero means the default, 10; a negative value
	// means no resubmission.
	RetryCount int
	// ClaimTTL is how long a strict-mode claim lives. It must exceed the
	// longest time after which a caller may retry, and the store's longest
	// delay for a timed-out write (Cassandra's hint window, 3h by default).
	// Default 24h; whole seconds from 1s to 20 years.
	ClaimTTL time.Duration
	// EntryRetention is how long the ledger's history (Engine.Entries)
	// keeps each applied request. Zero means the default, 30 days; a
	// negative value means no history is kept, which saves a write per
	// batch on Cassandra. Whole seconds up to 20 years.
	EntryRetention time.Duration
	// Floored says the namespace's ledgers have a floor: a debit that
	// would take a ledger's value below Floor is refused with
	// ErrBelowFloor, across any number of servers (docs/ledger.md,
	// "Balance floors"). Floor is 0 (a wallet) or negative (an overdraft
	// line), at least MinFloor.
	Floored bool
	Floor   int64
	// ActorMaxAge is how long an actor writes before a fresh one replaces
	// it. Actor ids then start with their birth time, and a ledger's
	// rows of actors that can no longer write are folded into one base
	// row that reads skip past, so a ledger's read cost stays flat
	// however many processes wrote it over the months
	// (docs/ledger-folding.md). Zero means the default, 24h; a negative
	// value means actors never retire by age and nothing folds, as in
	// namespaces made before folding. Whole seconds from MinActorMaxAge (1 min) to MaxActorMaxAge.
	ActorMaxAge time.Duration
}

// Mode is how a ledger namespace recognises retried requests.
type Mode string

const (
	// ModeExact applies every request id once, whichever servers its
	// copies reach and whenever they arrive (while its claim lives).
	ModeExact Mode = "exact"
	// ModeConcurrentRetriesMayDouble recognises a retry only when it comes
	// after the first copy's write (within the actor's history window):
	// copies running at the same time on different servers may both be
	// applied. The design's original behaviour; opt-in only.
	ModeConcurrentRetriesMayDouble Mode = "concurrent_retries_may_double"
)

// claims reports whether the mode claims request ids before applying them;
// the zero Mode is the default, exact.
func (m Mode) claims() bool { return m != ModeConcurrentRetriesMayDouble }

// WithDefaults fills in zero fields.
func (o Options) WithDefaults() Options {
	o.Mode = cmp.Or(o.Mode, ModeExact)
	o.HistoryLength = cmp.Or(o.HistoryLength, DefaultHistoryLength)
	o.RetryCount = cmp.Or(o.RetryCount, DefaultRetryCount)
	o.ClaimTTL = cmp.Or(o.ClaimTTL, DefaultClaimTTL)
	o.EntryRetention = cmp.Or(o.EntryRetention, DefaultEntryRetention)
	o.ActorMaxAge = cmp.Or(o.ActorMaxAge, DefaultActorMaxAge)
	return o
}

// Validate checks options that have their defaults filled in.
func (o Options) Validate() error {
	switch {
	case o.Mode != ModeExact && o.Mode != ModeConcurrentRetriesMayDouble:
		return fmt.Errorf("mode %q is neither %q nor %q", o.Mode, ModeExact, ModeConcurrentRetriesMayDouble)
	case o.HistoryLength < 1 || o.HistoryLength > MaxHistoryLength:
		return fmt.Errorf("history_length %d is outside 1..%d", o.HistoryLength, MaxHistoryLength)
	case o.RetryCount > MaxRetryCount:
		return fmt.Errorf("retry_count %d is above %d", o.RetryCount, MaxRetryCount)
	case o.ClaimTTL < time.Second || o.ClaimTTL > driver.MaxClaimTTL:
		return fmt.Errorf("claim_ttl %v is outside 1s..%v", o.ClaimTTL, driver.MaxClaimTTL)
	case o.ClaimTTL%time.Second != 0:
		return fmt.Errorf("claim_ttl %v is not a whole number of seconds", o.ClaimTTL)
	case o.EntryRetention > MaxEntryRetention:
		return fmt.Errorf("entry_retention %v is above %v", o.EntryRetention, MaxEntryRetention)
	case o.EntryRetention > 0 && o.EntryRetention%time.Second != 0:
		return fmt.Errorf("entry_retention %v is not a whole number of seconds", o.EntryRetention)
	case o.Floored && (o.Floor > 0 || o.Floor < MinFloor):
		return fmt.Errorf("floor %d is outside %d..0", o.Floor, int64(MinFloor))
	case !o.Floored && o.Floor != 0:
		return fmt.Errorf("floor %d is set but Floored is false", o.Floor)
	case o.ActorMaxAge > MaxActorMaxAge:
		return fmt.Errorf("actor_max_age %v is above %v", o.ActorMaxAge, MaxActorMaxAge)
	case o.ActorMaxAge > 0 && (o.ActorMaxAge < MinActorMaxAge || o.ActorMaxAge%time.Second != 0):
		return fmt.Errorf("actor_max_age %v is not a whole number of seconds from %v", o.ActorMaxAge, MinActorMaxAge)
	}
	return nil
}

// Target names a ledger and how it is stored.
type Target struct {
	Namespace        string
	Ledger           string
	Options          Options
	ReadConsistency  driver.Consistency
	WriteConsistency driver.Consistency
}

// Config configures an Engine. Zero fields take the documented defaults.
type Config struct {
	// Store holds the ledgers. Required.
	Store driver.Ledgers
	// Clock gives write timestamps and claim times. Default: system clock.
	Clock clock.Clock
	// ActorID names this process's actors. Every ledger this process
	// writes gets its own actor, <birth>.ActorID-<counter>, where <birth>
	// is the actor's creation time (fold.go). Default: 16
	// random hex digits. A configured id must never be used by two
	// processes, at the same time or one after the other: see the package
	// documentation for why.
	ActorID string
	// MaxActors bounds the ledgers whose actor state this process keeps
	// in memory (LRU). A ledger dropped from memory gets a new actor the
	// next time, which costs one more row in its partition. Default 10,000.
	MaxActors int
	// WriteTimeout bounds each write or claim attempt. Default 10s.
	WriteTimeout time.Duration
	// RetryBackoff is the wait before the first resubmission; it doubles
	// per attempt up to one second. Default 20ms; negative means no wait.
	RetryBackoff time.Duration
	// ClaimWait is how long a strict-mode write that lost the claim waits
	// for the winner's write to appear before reporting ErrUnknownOutcome.
	// Default 2s.
	ClaimWait time.Duration
	// RightsLease is how long a grant of debit rights in a floored ledger
	// lasts before its actor must renew it (it renews when half is left).
	// An actor sends no write with debits after its lease ends. Default
	// 10 minutes; at least a second.
	RightsLease time.Duration
	// LateWriteWindow is how long after it was sent a write may still
	// land: the store's longest delivery of a timed-out write (Cassandra's
	// max_hint_window, 3h by default) plus WriteTimeout plus the clock
	// skew between servers. A dead actor's rights are reclaimed only this
	// long after its lease ended. Default 3h10m.
	LateWriteWindow time.Duration
	// RightsIdle is how long an actor holding debit rights goes without a
	// batch before it gives back the part it has not used, so other
	// servers can debit it. Default 1s.
	RightsIdle time.Duration
	// DataCenter is the data center this process runs in, when the store
	// spans several (the Cassandra driver's local data center). A floored
	// ledger's actors then take their rights from the data center's share
	// of the ledger's rights, held in a record of the data center's own,
	// so that debits within the share go on while the data centers are
	// cut apart (docs/ledger.md, "Rights per data center"). Every process
	// of a cluster of several data centers must set it.
	DataCenter string
	// Logger receives warnings. Default: slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.ActorID == "" {
		c.ActorID = randomid.Hex(8)
	}
	c.MaxActors = cmp.Or(c.MaxActors, 10_000)
	c.WriteTimeout = cmp.Or(c.WriteTimeout, defaultWriteTimeout)
	c.RetryBackoff = cmp.Or(c.RetryBackoff, 20*time.Millisecond)
	c.ClaimWait = cmp.Or(c.ClaimWait, 2*time.Second)
	// Long enough to cover a batch's writes whatever WriteTimeout is.
	c.RightsLease = cmp.Or(c.RightsLease, max(DefaultRightsLease, 3*c.WriteTimeout))
	c.LateWriteWindow = cmp.Or(c.LateWriteWindow, DefaultLateWriteWindow)
	c.RightsIdle = cmp.Or(c.RightsIdle, DefaultRightsIdle)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

func (c Config) validate() error {
	switch {
	case c.Store == nil:
		return errors.New("ledger: Config.Store is required")
	case c.MaxActors < 0 || c.WriteTimeout < 0 || c.ClaimWait < 0 || c.LateWriteWindow < 0:
		return errors.New("ledger: MaxActors, WriteTimeout, ClaimWait and LateWriteWindow must not be negative")
	case c.RightsLease < time.Second || c.RightsLease <= 2*c.WriteTimeout:
		// A batch starts its writes only with more than WriteTimeout of
		// lease left, and renews at half the lease.
		return fmt.Errorf("ledger: RightsLease %v must be at least a second and more than twice WriteTimeout (%v)", c.RightsLease, c.WriteTimeout)
	case c.RightsIdle < 0:
		return errors.New("ledger: RightsIdle must not be negative")
	case len(c.ActorID) > 128:
		return fmt.Errorf("ledger: ActorID is %d bytes, the limit is 128", len(c.ActorID))
	}
	return nil
}

// Stats are running totals, read with Engine.Stats.
type Stats struct {
	Applied       atomic.Uint64 // requests this process added to a ledger
	Duplicates    atomic.Uint64 // requests found already recorded (answered as replays)
	Resubmissions atomic.Uint64 // writes and claims sent again after an unknown outcome
	Unknown       atomic.Uint64 // requests reported as ErrUnknownOutcome
	ClaimsLost    atomic.Uint64 // strict-mode claims another actor held
	// LateClaimsWithdrawn counts claims that landed after their first
	// withdrawal found nothing, and were withdrawn by the background check.
	LateClaimsWithdrawn atomic.Uint64
	Retired             atomic.Uint64 // actors abandoned after a failed write
}

type slotKey struct{ ns, ledger string }

// slot is this process's actor for one ledger. sem serialises everything
// the actor does: one read-merge-write at a time, so its writes carry
// increasing timestamps and each extends the state the previous one wrote.
// Requests wait in queue until the goroutine serving the slot takes them
// into a batch (group.go).
type slot struct {
	key   slotKey
	actor string
	born  time.Time // on the engine's clock; the actor's id is dated with it (fold.go)
	sem   chan struct{}
	// Guarded by sem:
	own     *Actor // everything this actor has written; never ahead of a successful write
	lastTS  int64
	retired bool // no longer in the engine's map; callers must fetch a new slot
	rights  slotRights

	mu      sync.Mutex
	queue   []*request // guarded by mu
	serving bool       // guarded by mu: a goroutine runs the queue's batches
	closed  bool       // guarded by mu: retired or evicted; submit elsewhere
}

func (s *slot) unlock() { <-s.sem }

// Engine runs the ledger model for one process. It is safe for concurrent use.
type Engine struct {
	cfg   Config
	stats Stats
	gen   atomic.Uint64

	cuts    cutMemory    // the last cut read of each folding ledger (fold.go)
	folding atomic.Int32 // folds running in the background

	mu    sync.Mutex
	slots map[slotKey]*list.Element // of *slot, most recent first
	lru   *list.List
	over  atomic.Bool // the last trim left more slots than MaxActors

	idle chan func() // to a worker waiting for a queue to serve (group.go)

	// inbound holds the queues of transfers into each ledger that a
	// goroutine serves (transfer.go).
	inbound struct {
		sync.Mutex
		m map[slotKey]*inboundQueue
	}

	// Background settling of strict-mode requests (settle.go).
	bg struct {
		sync.Mutex
		closing bool           // Close has begun: batches from now on are not waited for
		batches sync.WaitGroup // batches under way when Close began
		closed  bool
		pending int
		stop    chan struct{}
		wg      sync.WaitGroup
	}

	// afterRead, when set (by tests), runs after a write's first read and
	// before it claims or appends, so tests can interleave two actors.
	afterRead func(t Target, requestID string)
}

// New returns an engine.
func New(cfg Config) (*Engine, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, slots: map[slotKey]*list.Element{}, lru: list.New(), idle: make(chan func())}
	e.bg.stop = make(chan struct{})
	e.inbound.m = map[slotKey]*inboundQueue{}
	return e, nil
}

// Stats returns the engine's running totals.
func (e *Engine) Stats() *Stats { return &e.stats }

// ActorID returns what names this process's actors: each actor id is its
// birth prefix, a dot, ActorID, a dash and a number.
func (e *Engine) ActorID() string { return e.cfg.ActorID }

// lock returns the ledger's slot with its semaphore held.
func (e *Engine) lock(ctx context.Context, k slotKey) (*slot, error) {
	for {
		s := e.slotFor(k)
		select {
		case s.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: waiting for this process's actor of ledger %s/%s: %w", ErrNotApplied, k.ns, k.ledger, ctx.Err())
		}
		if !s.retired {
			return s, nil
		}
		s.unlock()
	}
}

func (e *Engine) slotFor(k slotKey) *slot {
	e.mu.Lock()
	defer e.mu.Unlock()
	if el, ok := e.slots[k]; ok {
		e.lru.MoveToFront(el)
		return el.Value.(*slot)
	}
	born := e.cfg.Clock.Now()
	s := &slot{
		key:   k,
		actor: datePrefix(born) + "." + e.cfg.ActorID + "-" + strconv.FormatUint(e.gen.Add(1), 10),
		born:  born,
		sem:   make(chan struct{}, 1),
		own:   &Actor{},
	}
	e.slots[k] = e.lru.PushFront(s)
	e.trimLocked()
	return s
}

// trimLocked drops idle slots beyond the bound, least recently used first.
// A slot in use is skipped, so the bound can be exceeded while many
// ledgers are busy at once; such a slot is dropped when it goes idle
// (trimIdle), which keeps the bound a bound rather than a hope that the
// next new ledger arrives after the busy ones are done. Called with e.mu
// held.
func (e *Engine) trimLocked() {
	// Raised before any slot is tried, not only after: a slot found busy
	// below may go idle at once, and its server must then see the flag
	// (trimIdle), or the slot stays past the bound until the next trim.
	if e.lru.Len() > e.cfg.MaxActors {
		e.over.Store(true)
	}
	for el := e.lru.Back(); el != nil && el != e.lru.Front() && e.lru.Len() > e.cfg.MaxActors; {
		prev := el.Prev()
		old := el.Value.(*slot)
		if old.evict(e) {
			e.lru.Remove(el)
			delete(e.slots, old.key)
		}
		el = prev
	}
	e.over.Store(e.lru.Len() > e.cfg.MaxActors)
}

// trimIdle is called by a slot's server as the slot goes idle. It costs
// an atomic load unless the bound is exceeded.
func (e *Engine) trimIdle() {
	if !e.over.Load() {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.trimLocked()
}

// evict closes the slot if it is idle: nothing running, nothing queued.
// It only tries the slot's locks, since the caller holds e.mu, which a
// slot's holder may be waiting for.
func (s *slot) evict(e *Engine) bool {
	select {
	case s.sem <- struct{}{}:
	default:
		return false
	}
	defer s.unlock()
	if !s.mu.TryLock() {
		return false
	}
	defer s.mu.Unlock()
	if s.serving || len(s.queue) > 0 {
		return false
	}
	s.retired, s.closed = true, true
	used, _ := s.own.N.Sum()
	e.returnRights(s, used)
	return true
}

// retire abandons the slot's actor: after a write or claim that may or may
// not have landed, that actor's next entry number may already be claimed
// or written with this request, so nothing else may ever use it. The next
// request gets a fresh actor. Called with s.sem held.
func (e *Engine) retire(s *slot) {
	used, _ := s.own.N.Sum()
	e.retireCounting(s, used)
}

// retireCounting is retire where the rights' return counts used as the
// actor's debit total: at least that of any of its rows that may land.
func (e *Engine) retireCounting(s *slot, used int64) {
	e.drop(s)
	e.stats.Retired.Add(1)
	e.returnRights(s, used)
}

// drop takes the slot out of the engine's map and marks it retired, so
// the ledger's next request gets a new actor. Called with s.sem held.
func (e *Engine) drop(s *slot) {
	e.mu.Lock()
	if el, ok := e.slots[s.key]; ok && el.Value.(*slot) == s {
		e.lru.Remove(el)
		delete(e.slots, s.key)
	}
	e.mu.Unlock()
	s.retired = true
}

// Result is the outcome of a successful Update.
type Result struct {
	// Applied is true when this call added the request to the ledger, and
	// false when the request id was already recorded (a retry of a request
	// that had been applied), in which case nothing was written.
	Applied bool
	// Actor is the actor whose history holds (or held) the request.
	Actor string
}

// Read returns the ledger's state as stored: every actor's row, merged.
// A ledger never written reads as an empty state.
func (e *Engine) Read(ctx context.Context, t Target) (*State, error) {
	t.Options = t.Options.WithDefaults()
	return e.read(ctx, t)
}

func (e *Engine) read(ctx context.Context, t Target) (*State, error) {
	if !t.Options.folds() {
		rows, err := e.readRows(ctx, t, t.ReadConsistency, "")
		if err != nil {
			return nil, err
		}
		return rows.value(), nil
	}
	// A folding ledger is read from the last cut seen. A base below it
	// (or none) comes from a replica that missed the latest fold, or from
	// a ledger deleted and written again: the rows between that base's
	// cut and the remembered one are then needed, so read them all.
	k := slotKey{t.Namespace, t.Ledger}
	from := e.cuts.cut(k)
	rows, err := e.readRows(ctx, t, t.ReadConsistency, from)
	if err == nil && from != "" && rows.base.Cut < from {
		rows, err = e.readRows(ctx, t, t.ReadConsistency, "")
	}
	if err != nil {
		return nil, err
	}
	e.cuts.remember(k, rows.base.Cut)
	st := rows.value()
	e.maybeFold(t, st)
	return st, nil
}

// readMerged reads the ledger and puts the slot's own state in place of
// its stored row. The slot's own state is never behind its row (it has
// one writer, which keeps it), so a row ahead of it, or one that
// contradicts it, means another process writes under this actor id.
func (e *Engine) readMerged(ctx context.Context, t Target, s *slot) (*State, error) {
	st, err := e.read(ctx, t)
	if err != nil {
		return nil, err
	}
	if st.fenced[s.actor] {
		return nil, fmt.Errorf("ledger %s/%s: actor %q: %w", t.Namespace, t.Ledger, s.actor, errReclaimed)
	}
	if stored := st.Actor(s.actor); stored != nil {
		j, err := Join(s.own, stored)
		if err == nil && !j.Equal(s.own) {
			err = errors.New("its stored row is ahead of what this process wrote")
		}
		if err != nil {
			return nil, fmt.Errorf("ledger %s/%s: actor %q: %w: %w", t.Namespace, t.Ledger, s.actor, ErrActorConflict, err)
		}
	}
	if s.own.P.Seq() > 0 || s.own.N.Seq() > 0 {
		st.Set(s.actor, s.own.Clone())
	}
	return st, nil
}

// applyBatch carries a batch through one read-merge-write, with s.sem
// held. Every request of the batch is finished when it returns, except
// those whose id another actor claimed: goroutines it starts finish them.
// It runs on its own context: its callers may give up, the write goes on
// (bounded by WriteTimeout and RetryCount) for the others.
func (e *Engine) applyBatch(s *slot, batch []*request) {
	ctx := context.Background()
	t := batch[0].t
	if e.retireAged(t.Options, s) {
		// Nothing read or written yet: the next actor takes the batch.
		e.moveOn(s, batch)
		return
	}
	st, err := e.readMerged(ctx, t, s)
	if errors.Is(err, errReclaimed) {
		e.moveOn(s, batch)
		return
	}
	if err != nil {
		switch {
		case errors.Is(err, ErrActorConflict):
			e.retire(s) // someone else writes under this actor id: stop writing it
		case errors.Is(err, ErrCorrupt):
			// retrying will not help
		default:
			err = fmt.Errorf("%w: reading the ledger: %w", ErrNotApplied, err) // nothing claimed or written yet
		}
		finishAll(batch, err)
		return
	}
	if e.afterRead != nil {
		for _, r := range batch {
			e.afterRead(t, r.id)
		}
	}
	fresh, err := checkBatch(st, batch)
	if err != nil {
		finishAll(batch, err)
		return
	}
	if t.Options.Floored {
		var (
			elsewhere []*request
			reclaimed bool
		)
		fresh, elsewhere, reclaimed = e.checkFloor(ctx, t, s, st, fresh)
		e.handOff(ctx, t, elsewhere)
		if reclaimed {
			e.moveOn(s, fresh)
			return
		}
	}
	// From here on the batch claims and writes: a caller that gave up
	// before this point has withdrawn its request.
	committed := fresh[:0]
	for _, r := range fresh {
		if r.state.CompareAndSwap(taken, committing) {
			committed = append(committed, r)
		} else {
			r.finish(Result{}, fmt.Errorf("%w: withdrawn by its caller", ErrNotApplied))
		}
	}
	fresh = committed
	if len(fresh) == 0 {
		return
	}

	// The overflow rule runs on merge, before the appends: so the row a
	// write leaves holds history_length entries plus the batch's in a
	// section, and the next merge (a write or a find) folds the oldest.
	// With a batch of one this is the design's behaviour.
	next := [2]uint64{}
	for _, neg := range []bool{false, true} {
		sec := s.own.Section(neg)
		for _, r := range fresh {
			if r.neg == neg {
				sec.Compact(t.Options.HistoryLength)
				break
			}
		}
		next[side(neg)] = sec.Seq()
	}
	// Each request's entry number, if every request before it is written.
	// A request written after another one is not gets a lower number than
	// this; never a higher one, which is what claims rely on.
	for _, r := range fresh {
		next[side(r.neg)]++
		r.claim = claimOutcome{mine: driver.Claim{Actor: s.actor, Negative: r.neg, Seq: next[side(r.neg)], Amount: r.amount}}
	}

	write, lost, again, retire := fresh, []*request(nil), []*request(nil), false
	// Background settling must stop well before a claim can expire; the
	// claims are at most as old as this moment.
	claimed := e.cfg.Clock.Now()
	if t.Options.Mode.claims() {
		write, lost, again, retire = e.claimBatch(t, fresh, claimed)
	}
	if len(write) > 0 {
		var (
			entries []driver.LedgerEntry
			debits  bool
		)
		at := driver.Micros(e.cfg.Clock.Now())
		sentBefore, _ := s.own.N.Sum()
		for _, r := range write {
			debits = debits || r.neg
			seq, err := s.own.Section(r.neg).Append(Entry{RequestID: r.id, Amount: r.abs})
			if err != nil {
				panic(err) // checkBatch bounded the totals, so no section can overflow
			}
			if t.Options.keepsEntries() {
				entries = append(entries, driver.LedgerEntry{At: at, Actor: s.actor, Negative: r.neg, Seq: seq, RequestID: r.id, Amount: r.abs})
			}
		}
		if err := e.writeOwn(ctx, t, s, entries, debits); err != nil {
			if errors.Is(err, ErrNotApplied) {
				// Nothing of this write landed: the rights' return counts
				// only the debits written before it.
				e.retireCounting(s, sentBefore)
			} else {
				e.retire(s)
			}
			if t.Options.Mode.claims() {
				if errors.Is(err, ErrNotApplied) {
					// Nothing landed and the actor is gone: withdraw the claims.
					for _, r := range write {
						e.releaseOrSettle(t, r.id, r.claim.mine, claimed, r.claim.resubmitted)
					}
				} else {
					// The claims keep other actors from applying the
					// requests, so this actor may finish its write late.
					// Until it does, retries anywhere answer "unknown".
					e.settleWrite(t, s, requestIDs(write), entries, debits, claimed)
					err = fmt.Errorf("%w (this process keeps resubmitting the write in the background while the claim lives)", err)
				}
			}
			finishAll(write, err)
		} else {
			for _, r := range write {
				r.finish(Result{Applied: true, Actor: s.actor}, nil)
			}
		}
	}
	if retire && !s.retired {
		e.retire(s)
	}
	e.answerLost(ctx, t, lost)
	if len(again) > 0 {
		s.requeue(again) // last: from here on the queue owns them
	}
}

// moveOn retires an actor whose debit rights were reclaimed (or returned)
// while it was idle and gives the batch's requests to the next actor:
// what it debited is counted in spent, and its row may be fenced, so it
// must never write again. A request its caller withdrew meanwhile stays
// withdrawn. Called with s.sem held.
func (e *Engine) moveOn(s *slot, rs []*request) {
	e.retire(s)
	s.requeue(rs)
}

// handOff hands requests that a batch took, and whose id another actor
// claimed (r.claim.cur), to answerLost before the batch commits anything:
// their callers can no longer withdraw them (a copy elsewhere may be
// applying the request), and a panic later in the batch leaves them to
// the goroutines answering them.
func (e *Engine) handOff(ctx context.Context, t Target, rs []*request) {
	var mine []*request
	for _, r := range rs {
		if r.state.CompareAndSwap(taken, handedOff) {
			mine = append(mine, r)
		} else {
			r.finish(Result{}, fmt.Errorf("%w: withdrawn by its caller", ErrNotApplied))
		}
	}
	e.answerLost(ctx, t, mine)
}

// answerLost answers, each in its own goroutine, the requests whose id
// another actor claimed (r.claim.cur), as lostClaim finds. From here on
// only that goroutine answers them, whatever happens to the batch: a
// panic after this point leaves handed-off requests alone.
func (e *Engine) answerLost(ctx context.Context, t Target, lost []*request) {
	for _, r := range lost {
		r.state.Store(handedOff)
		go func() {
			defer func() {
				if p := recover(); p != nil && !r.finished() {
					r.finish(Result{}, fmt.Errorf("%w: internal error while waiting for the claimant: %v", ErrUnknownOutcome, p))
				}
			}()
			r.finish(e.lostClaim(ctx, t, r.id, r.amount, r.claim.cur))
		}()
	}
}

// checkBatch answers the batch's retries and refuses requests that would
// take a side's total past int64, and returns the rest, each with its
// side and absolute amount set.
func checkBatch(st *State, batch []*request) ([]*request, error) {
	p, n, err := st.Totals()
	if err != nil {
		return nil, err
	}
	var fresh []*request
	for _, r := range batch {
		if f, ok := st.Lookup(r.id); ok {
			r.finish(duplicate(r.id, f.Actor, f.Amount, r.amount))
			continue
		}
		r.neg, r.abs = r.amount < 0, r.amount
		total := &p
		if r.neg {
			r.abs, total = -r.amount, &n
		}
		if *total > math.MaxInt64-r.abs {
			r.finish(Result{}, fmt.Errorf("%w: the ledger's %s total %d cannot take %d more", ErrOverflow, sideName(r.neg), *total, r.abs))
			continue
		}
		*total += r.abs
		fresh = append(fresh, r)
	}
	return fresh, nil
}

// claimBatch claims the requests' ids, all at once, and sorts them: the
// requests to write, those whose id another actor holds (to be answered
// by lostClaim), those to claim again in the next batch, and whether the
// actor must be retired after this batch. It finishes the others.
//
// A claim names the entry number its request gets if every request
// before it is written. Other actors read "the claimant's section reached
// that number without the id" as "applied, then folded", so a request
// must never sit below the number its claim names (a retry would wait on
// an entry that may never come) nor above it (a retry would be told
// "applied" for a request that is not). So on each side only the won
// requests numbered below the first request that is not written (a lost
// or failed claim) are written: their numbers are exact. The won ones
// after that gap have their claims withdrawn and go back to the queue, to
// be claimed again under the numbers the next batch gives them.
//
// A claim whose outcome stays unknown, or a withdrawal that fails, may
// leave a claim stored that names a number this actor would otherwise
// reach without its request; such a claim retires the actor after this
// batch, so no later write reaches it.
func (e *Engine) claimBatch(t Target, fresh []*request, claimed time.Time) (write, lost, again []*request, retire bool) {
	claim := func(r *request) {
		defer func() {
			if p := recover(); p != nil {
				// Whatever the store did is unknown: treat it as a claim
				// that may be stored.
				r.claim.err = fmt.Errorf("%w: internal error while claiming: %v", ErrUnknownOutcome, p)
				r.claim.unsure = true
			}
		}()
		e.claim(t, r, claimed)
	}
	if len(fresh) == 1 {
		claim(fresh[0])
	} else {
		var wg sync.WaitGroup
		for _, r := range fresh {
			wg.Go(func() { claim(r) })
		}
		wg.Wait()
	}
	gap := [2]uint64{math.MaxUint64, math.MaxUint64}
	for _, r := range fresh {
		if c := r.claim; c.err != nil || !c.won {
			gap[side(r.neg)] = min(gap[side(r.neg)], c.mine.Seq)
		}
	}
	var withdraw []*request
	for _, r := range fresh {
		c := r.claim
		switch {
		case c.err != nil:
			retire = retire || c.unsure
			r.finish(Result{}, c.err)
		case !c.won:
			e.stats.ClaimsLost.Add(1)
			retire = retire || c.unsure
			lost = append(lost, r)
		case c.mine.Seq < gap[side(r.neg)]:
			write = append(write, r)
		default:
			withdraw = append(withdraw, r)
		}
	}
	// The won claims after a gap are withdrawn, all at once. A claim won
	// on a resubmission is not: the attempt that timed out may still be
	// running on the store and store the claim again after the withdrawal,
	// naming a number this actor would reach without the request.
	gone := make([]bool, len(withdraw))
	var wg sync.WaitGroup
	for i, r := range withdraw {
		if !r.claim.resubmitted {
			wg.Go(func() { gone[i] = e.release(t, r.id, r.claim.mine) })
		}
	}
	wg.Wait()
	for i, r := range withdraw {
		if gone[i] {
			again = append(again, r)
			continue
		}
		// The claim may stay, or come back: never reach its number.
		retire = true
		e.releaseOrSettle(t, r.id, r.claim.mine, claimed, r.claim.resubmitted)
		r.finish(Result{}, fmt.Errorf("%w: its claim named entry %d, which a request before it in the same write left unused, and the claim could not be withdrawn for certain", ErrNotApplied, r.claim.mine.Seq))
	}
	return write, lost, again, retire
}

// release withdraws a claim this actor won and reports whether it is
// known to be gone.
func (e *Engine) release(t Target, id string, c driver.Claim) bool {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.WriteTimeout)
	defer cancel()
	removed, err := e.releaser(t, id, c)(ctx)
	return err == nil && removed
}

func finishAll(rs []*request, err error) {
	for _, r := range rs {
		r.finish(Result{}, err)
	}
}

func requestIDs(rs []*request) []string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.id
	}
	return ids
}

// side indexes per-section arrays: 0 credits, 1 debits.
func side(neg bool) int {
	if neg {
		return 1
	}
	return 0
}

func sideName(neg bool) string {
	if neg {
		return "debit"
	}
	return "credit"
}

func duplicate(id, actor string, recorded, amount int64) (Result, error) {
	if recorded != amount {
		return Result{}, conflict(fmt.Errorf("request id %q is recorded with amount %d, not %d", id, recorded, amount))
	}
	return Result{Applied: false, Actor: actor}, nil
}

// writeOwn writes the slot's row, with the history entries of the requests
// it appends, resubmitting (at a new, higher timestamp, with the same
// content) after an unknown outcome up to RetryCount times.
// It returns nil, an error wrapping ErrUnknownOutcome if any attempt might
// have landed, or one wrapping ErrNotApplied if none did.
//
// In a floored namespace a write that appends debits is sent only while
// the actor's lease on its rights lasts: once the lease has ended its
// rights may be reclaimed (after the late-write window), counting only
// what had been sent by then.
func (e *Engine) writeOwn(ctx context.Context, t Target, s *slot, entries []driver.LedgerEntry, debits bool) error {
	if err := e.checkAge(t.Options, s); err != nil {
		return err
	}
	w := newRowWrite(t, s.actor, EncodeActor(s.own), entries)
	// An actor that has held rights is in the rights record, and may be
	// reclaimed and fenced once its lease is over: any write of it, not
	// only one with debits, stops at the lease's end.
	leased := t.Options.Floored && (debits || s.rights.until != 0)
	return e.attempts(ctx, t.Options.RetryCount, "write", func(ctx context.Context) error {
		if leased && driver.Micros(e.cfg.Clock.Now()) >= s.rights.until {
			return errLeaseEnded
		}
		var p *driver.WriteLedgerRowParams
		p, s.lastTS = w.at(e.cfg.Clock, s.lastTS) // even if the write fails: it may still land
		return e.cfg.Store.WriteLedgerRow(ctx, p)
	})
}

// rowWrite is the write of an actor's row with the history entries of
// the requests it appends. The first attempt and every resubmission
// (writeOwn, settleWrite) send the same; only the timestamp moves on.
type rowWrite driver.WriteLedgerRowParams

func newRowWrite(t Target, actor string, state []byte, entries []driver.LedgerEntry) *rowWrite {
	return &rowWrite{
		Namespace: t.Namespace, Ledger: t.Ledger,
		Row:     driver.LedgerRow{Actor: actor, State: state},
		Entries: entries, EntryTTL: t.Options.EntryRetention,
		Consistency: t.WriteConsistency,
	}
}

// at returns the write's next attempt, at a timestamp above last (the
// actor's previous one) and at least the clock's now, and that timestamp.
func (w *rowWrite) at(clk clock.Clock, last int64) (*driver.WriteLedgerRowParams, int64) {
	p := driver.WriteLedgerRowParams(*w)
	p.Timestamp = max(driver.Micros(clk.Now()), last+1)
	return &p, p.Timestamp
}

// attempts runs op until it succeeds, fails in a way a retry cannot help,
// or has been resubmitted retries times. Only an unknown outcome or an
// unavailable store is retried: both leave the operation safe to repeat.
func (e *Engine) attempts(ctx context.Context, retries int, what string, op func(context.Context) error) error {
	unknown := false
	for n := 0; ; n++ {
		actx, cancel := context.WithTimeout(ctx, e.cfg.WriteTimeout)
		err := op(actx)
		cancel()
		if err == nil {
			return nil
		}
		if errors.Is(err, driver.ErrUnknownOutcome) {
			unknown = true
		}
		retryable := errors.Is(err, driver.ErrUnknownOutcome) || errors.Is(err, driver.ErrUnavailable)
		if !retryable || n >= max(retries, 0) || ctx.Err() != nil {
			if unknown {
				return fmt.Errorf("%w: %s failed %d times, the last with: %w", ErrUnknownOutcome, what, n+1, err)
			}
			return fmt.Errorf("%w: %s failed %d times, the last with: %w", ErrNotApplied, what, n+1, err)
		}
		e.stats.Resubmissions.Add(1)
		if err := e.backoff(ctx, n); err != nil {
			if unknown {
				return fmt.Errorf("%w: %s: %w", ErrUnknownOutcome, what, err)
			}
			return fmt.Errorf("%w: %s: %w", ErrNotApplied, what, err)
		}
	}
}

func (e *Engine) backoff(ctx context.Context, n int) error {
	if e.cfg.RetryBackoff < 0 {
		return ctx.Err()
	}
	d := min(e.cfg.RetryBackoff<<min(n, 20), time.Second)
	return sleep(ctx, d)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// claimOutcome is what claiming a request's id found.
type claimOutcome struct {
	mine driver.Claim // the claim made: this actor, the request's entry number
	won  bool         // mine is stored (now or by an earlier attempt)
	cur  driver.Claim // the stored claim when another actor holds it
	err  error
	// unsure: the claim may be stored although the claim failed or was
	// lost, so this actor must never write entry mine.Seq without the
	// request.
	unsure bool
	// resubmitted: an attempt's outcome was unknown before the last one
	// won or lost, so that attempt may still store the claim later.
	resubmitted bool
}

// claim claims the request's id, repeating after an unknown outcome (a
// repeat that finds the claim stored means the earlier attempt won). If it
// cannot tell whether the claim was stored it withdraws it.
func (e *Engine) claim(t Target, r *request, claimed time.Time) {
	c := &r.claim
	var res driver.ClaimResult
	err := e.attempts(context.Background(), t.Options.RetryCount, "claim", func(ctx context.Context) error {
		var err error
		res, err = e.cfg.Store.ClaimRequest(ctx, &driver.ClaimRequestParams{
			Namespace: t.Namespace, Ledger: t.Ledger, RequestID: r.id, Claim: c.mine,
			TTL: t.Options.ClaimTTL, Now: driver.Micros(e.cfg.Clock.Now()),
			Consistency: t.WriteConsistency,
		})
		if errors.Is(err, driver.ErrUnknownOutcome) {
			c.resubmitted = true
		}
		return err
	})
	if err != nil {
		if errors.Is(err, ErrUnknownOutcome) {
			c.unsure = true
			if e.releaseOrSettle(t, r.id, c.mine, claimed, c.resubmitted) {
				// The claim is gone, so the request was not applied: the
				// attempts' unknown outcome is told (%v), not wrapped, or the
				// error would match both outcomes.
				err = fmt.Errorf("%w: the claim was withdrawn after: %v", ErrNotApplied, err)
			}
		}
		c.err = err
		return
	}
	c.won, c.cur = res.Won || res.Current == c.mine, res.Current
	if !c.won && c.resubmitted {
		// Lost, but an attempt that timed out may still store this
		// actor's claim once the winner withdraws its own: a claim naming
		// a number this actor would give another request. Unsure, like a
		// claim that failed that way, and withdrawn if it lands.
		c.unsure = true
		e.releaseLateClaim(t, r.id, e.releaser(t, r.id, c.mine))
	}
}

// lostClaim answers a strict-mode request whose id another actor claimed.
// The claim names the entry the other actor gives the request, so:
//
//   - the request id is in a history: it was applied (Applied false);
//   - the claimant's section has reached the claimed entry number, no
//     longer holds the id, and the claim, read again, still names that
//     entry: it was applied and has since been folded out of the history
//     (Applied false). An actor writes an entry only for the request whose
//     claim names it, and gives a number to another request only once no
//     claim naming it for this one can be stored any more: after a certain
//     withdrawal, else never (it retires, also when an attempt to claim
//     timed out), so a claim that still stands after its entry was written
//     can only be that entry's;
//   - otherwise the claimant's write has not landed (or is still under
//     way): wait up to ClaimWait for it, then report ErrUnknownOutcome.
func (e *Engine) lostClaim(ctx context.Context, t Target, id string, amount int64, cur driver.Claim) (Result, error) {
	if cur.Amount != amount {
		return Result{}, conflict(fmt.Errorf("request id %q is claimed with amount %d, not %d", id, cur.Amount, amount))
	}
	deadline := time.Now().Add(e.cfg.ClaimWait)
	for n := 0; ; n++ {
		// A plain read: this actor's own state cannot hold the id, which
		// another actor claimed, and the batch that lost the claim has
		// let go of the actor.
		st, err := e.read(ctx, t)
		if err != nil {
			return Result{}, fmt.Errorf("%w: request id %q is claimed by actor %s and reading the ledger failed: %w", ErrUnknownOutcome, id, cur.Actor, err)
		}
		if f, ok := st.Lookup(id); ok {
			return duplicate(id, f.Actor, f.Amount, amount)
		}
		if a := st.Actor(cur.Actor); a != nil && a.Section(cur.Negative).Seq() >= cur.Seq {
			// The entry exists, but it is this request's only if the claim
			// still names it: a claim withdrawn (its batch stopped at a
			// gap, or its caller gave up) leaves its number to another
			// request of the same actor.
			stored, ok, err := e.cfg.Store.ReadClaim(ctx, &driver.ReadClaimParams{
				Namespace: t.Namespace, Ledger: t.Ledger, RequestID: id,
				Now: driver.Micros(e.cfg.Clock.Now()), Consistency: t.WriteConsistency,
			})
			switch {
			case err != nil:
				return Result{}, fmt.Errorf("%w: request id %q was claimed by actor %s and reading its claim failed: %w", ErrUnknownOutcome, id, cur.Actor, err)
			case ok && stored == cur:
				return Result{Applied: false, Actor: cur.Actor}, nil
			case ok && stored.Amount != amount:
				return Result{}, conflict(fmt.Errorf("request id %q is claimed with amount %d, not %d", id, stored.Amount, amount))
			case ok:
				cur = stored // claimed again, at another entry: wait for that one
			}
		}
		left := time.Until(deadline)
		if left <= 0 {
			return Result{}, fmt.Errorf("%w: request id %q is claimed by actor %s (entry %d), whose write has not appeared within %v; retry later",
				ErrUnknownOutcome, id, cur.Actor, cur.Seq, e.cfg.ClaimWait)
		}
		if err := sleep(ctx, min(left, (5*time.Millisecond)<<min(n, 8))); err != nil {
			return Result{}, fmt.Errorf("%w: request id %q is claimed by actor %s: %w", ErrUnknownOutcome, id, cur.Actor, err)
		}
	}
}

// Find reads the ledger, applies the overflow rule to this process's actor
// and writes that actor's row back if the rule changed it (the design's
// find!). It returns the merged state.
func (e *Engine) Find(ctx context.Context, t Target) (*State, error) {
	t.Options = t.Options.WithDefaults()
	if err := t.Options.Validate(); err != nil {
		return nil, err
	}
	s, err := e.lock(ctx, slotKey{t.Namespace, t.Ledger})
	for err == nil && e.retireAged(t.Options, s) {
		s.unlock()
		s, err = e.lock(ctx, slotKey{t.Namespace, t.Ledger})
	}
	if err != nil {
		return nil, err
	}
	defer s.unlock()
	st, err := e.readMerged(ctx, t, s)
	if err != nil {
		if errors.Is(err, ErrActorConflict) {
			e.retire(s)
		}
		return nil, err
	}
	if !s.own.Compact(t.Options.HistoryLength) {
		return st, nil
	}
	// Folding changes no entry and no sum, so a failed write-back leaves
	// the actor consistent: the next write carries the folded state.
	if err := e.writeOwn(ctx, t, s, nil, false); err != nil {
		return nil, err
	}
	st.Set(s.actor, s.own.Clone())
	return st, nil
}

// requestConflict is an ErrRequestConflict whose message is its detail
// alone ("request id "r" is recorded with amount 10, not 11"), which says
// everything the sentinel's text would say again.
type requestConflict struct{ err error }

func (c *requestConflict) Error() string   { return c.err.Error() }
func (c *requestConflict) Unwrap() []error { return []error{c.err, ErrRequestConflict} }

func conflict(err error) error { return &requestConflict{err: err} }
