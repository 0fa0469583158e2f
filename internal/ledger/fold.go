package ledger

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/bytereader"
)

// Folding retired actors.
//
// Every process writes a ledger through an actor of its own, and a new
// actor replaces it after each restart or unknown outcome, so a ledger
// written for months collects rows of actors that will never write again,
// and each read merged all of them. In a namespace whose actors retire by
// age (Options.ActorMaxAge), an actor id starts with its birth time, so
// the actors that can no longer write are those below a *cut*: the id
// prefix of now minus the fold age. A fold adds the rows between the old
// cut and the new one into the ledger's base row (driver.LedgerBaseActor),
// and reads start at the cut. The argument, case by case, is in
// docs/ledger-folding.md.

// DefaultActorMaxAge is how long a new namespace's actors write before
// they retire.
const DefaultActorMaxAge = 24 * time.Hour

// MaxActorMaxAge is the longest ActorMaxAge, the longest claim TTL.
const MaxActorMaxAge = driver.MaxClaimTTL

const (
	// datedLen is the length of an actor id's birth prefix: Unix seconds
	// in 10 lowercase hex digits, which sort as text as they do as
	// numbers until the year 36812.
	datedLen = 10
	// foldSkew is the clock skew between the process that dated an actor
	// and the one folding it that the fold age allows for: servers keep
	// within --max-clock-skew of the store (1 min by default), so two of
	// them within twice that; this leaves room for settings up to 5 min.
	foldSkew = 10 * time.Minute
	// foldRetry is the least time between two folds one process starts
	// for one ledger from its reads; foldIdleRetry, after a fold that
	// passed nothing or failed (a rights holder pins the cut, a node is
	// down), so a ledger read often does not fold in vain each time.
	foldRetry     = 10 * time.Second
	foldIdleRetry = 10 * time.Minute
	// maxFolding bounds the folds one engine runs at once, apart from the
	// background settling of writes, which must not be starved.
	maxFolding = 4
	// MinActorMaxAge is the shortest ActorMaxAge: an actor stops taking
	// batches a tenth of its age early, which must leave a batch time to
	// reach its write.
	MinActorMaxAge = time.Minute
	// maxRememberedCuts bounds the cuts an engine remembers. Forgetting
	// one costs one read from the ledger's first row, nothing more.
	maxRememberedCuts = 100_000
	// maxCutLen bounds a stored cut: a date prefix, or at most an actor
	// id (a floored ledger's cut stops at its lowest rights holder).
	maxCutLen = datedLen + 1 + 128 + 1 + 20
)

// errActorAged refuses a new write of an actor past ActorMaxAge.
var errActorAged = errors.New("the actor has reached its maximum age")

// datePrefix is the birth prefix of an actor born at t.
// Every read of a folding ledger makes one (maybeFold), so it is built by
// hand: fmt took half of maybeFold's time.
func datePrefix(t time.Time) string {
	var b [datedLen]byte
	u := uint64(max(t.Unix(), 0))
	for i := datedLen - 1; i >= 0; i-- {
		b[i] = "0123456789abcdef"[u&15]
		u >>= 4
	}
	return string(b[:])
}

// CutTime is the birth time a cut stands for: every actor born in an
// earlier second sorts below it, so a fold has passed it. ok is false for
// a cut that starts with no birth prefix (the empty cut of a ledger never
// folded).
func CutTime(cut string) (t time.Time, ok bool) {
	if len(cut) < datedLen {
		return time.Time{}, false
	}
	var u int64
	for _, c := range []byte(cut[:datedLen]) {
		switch {
		case c >= '0' && c <= '9':
			u = u<<4 | int64(c-'0')
		case c >= 'a' && c <= 'f':
			u = u<<4 | int64(c-'a'+10)
		default:
			return time.Time{}, false
		}
	}
	return time.Unix(u, 0), true
}

// dated reports whether an actor id starts with a birth prefix.
func dated(id string) bool {
	if len(id) <= datedLen+1 || id[datedLen] != '.' {
		return false
	}
	for _, c := range []byte(id[:datedLen]) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// folds reports whether the namespace's actors retire by age, so that its
// ledgers fold.
func (o Options) folds() bool { return o.ActorMaxAge > 0 }

// foldAge is how long after an actor's birth no write of it can still
// land: it sends no new write after ActorMaxAge; its resubmissions end
// within the claim TTL (background settling stops at half of it) or the
// resubmissions one write is allowed; a write lands at most
// LateWriteWindow after it is sent; and the birth date is the creating
// process's clock. The writes were sent by other processes, whose
// settings may differ from the folder's (a command-line run beside the
// servers): the write timeout and late-write window taken are at least
// the defaults, which servers run with unless told otherwise.
func (e *Engine) foldAge(o Options) time.Duration {
	timeout := max(e.cfg.WriteTimeout, defaultWriteTimeout)
	writes := time.Duration(max(o.RetryCount, 0)+1) * (timeout + time.Second)
	return o.ActorMaxAge + max(o.ClaimTTL, writes) + max(e.cfg.LateWriteWindow, DefaultLateWriteWindow) + foldSkew
}

// retireEarly is how long before ActorMaxAge an actor stops taking new
// batches, so that the write of a batch it takes goes out before the age.
func retireEarly(maxAge time.Duration) time.Duration { return min(time.Minute, maxAge/10) }

// aged reports whether the slot's actor is within margin of its maximum
// age, or past it.
func (e *Engine) aged(o Options, s *slot, margin time.Duration) bool {
	return o.folds() && e.cfg.Clock.Now().Sub(s.born) >= o.ActorMaxAge-margin
}

// retireAged retires the slot's actor if it is too old to take a batch,
// and reports whether it did. Called with s.sem held.
func (e *Engine) retireAged(o Options, s *slot) bool {
	if s.retired || !e.aged(o, s, retireEarly(o.ActorMaxAge)) {
		return false
	}
	e.retire(s)
	return true
}

// checkAge refuses a new write of an actor past its maximum age: nothing
// is sent, so the batch's requests were not applied.
func (e *Engine) checkAge(o Options, s *slot) error {
	if e.aged(o, s, 0) {
		return fmt.Errorf("%w: %w (retry: the next write uses a new actor)", ErrNotApplied, errActorAged)
	}
	return nil
}

// Base is what folds have left of the actors they passed: their totals,
// and the cut below which every actor is counted here and nowhere else.
// Version 0 is a ledger never folded.
type Base struct {
	Version uint64
	Cut     string
	P, N    int64
}

// baseFormat is the first byte of an encoded base.
const baseFormat byte = 1

// A base, format 1:
//
//	format   byte (1)
//	version  uvarint (≥ 1)
//	cut      uvarint length (1..maxCutLen) + bytes
//	P, N     uvarint each (≤ MaxInt64)
//
// Minimal varints and nothing after N: one encoding per base.

// EncodeBase returns the stored form of a base.
func EncodeBase(b Base) []byte {
	out := make([]byte, 0, 1+4*binary.MaxVarintLen64+len(b.Cut))
	out = append(out, baseFormat)
	out = binary.AppendUvarint(out, b.Version)
	out = binary.AppendUvarint(out, uint64(len(b.Cut)))
	out = append(out, b.Cut...)
	out = binary.AppendUvarint(out, uint64(b.P))
	return binary.AppendUvarint(out, uint64(b.N))
}

// DecodeBase parses a stored base. Stored bytes are untrusted: any input
// yields a well-formed base or an error wrapping ErrCorrupt.
func DecodeBase(raw []byte) (Base, error) {
	r := bytereader.Reader{B: raw, Corrupt: ErrCorrupt}
	if v := r.Byte("base format"); r.Err == nil && v != baseFormat {
		return Base{}, fmt.Errorf("%w: base format %d, this build reads only format %d", ErrCorrupt, v, baseFormat)
	}
	var b Base
	b.Version = r.Uvarint("base version")
	n := r.Uvarint("cut length")
	if r.Err != nil {
		return Base{}, r.Err
	}
	if n == 0 || n > maxCutLen || n > uint64(len(r.B)) {
		return Base{}, fmt.Errorf("%w: a cut of %d bytes", ErrCorrupt, n)
	}
	b.Cut = string(r.B[:n])
	r.B = r.B[n:]
	p, neg := r.Uvarint("folded credits"), r.Uvarint("folded debits")
	switch {
	case r.Err != nil:
		return Base{}, r.Err
	case b.Version == 0:
		return Base{}, fmt.Errorf("%w: a stored base of version 0", ErrCorrupt)
	case p > math.MaxInt64 || neg > math.MaxInt64:
		return Base{}, fmt.Errorf("%w: folded totals %d and %d overflow int64", ErrCorrupt, p, neg)
	case len(r.B) != 0:
		return Base{}, fmt.Errorf("%w: %d trailing bytes after the base", ErrCorrupt, len(r.B))
	}
	b.P, b.N = int64(p), int64(neg)
	return b, nil
}

// cutMemory remembers, per ledger, the last cut a read saw, so the next
// read starts there. A remembered cut is never above the stored one: cuts
// only move forward, and the memory holds one that was stored.
type cutMemory struct {
	mu sync.Mutex
	m  map[slotKey]cutEntry
}

type cutEntry struct {
	cut  string
	next time.Time // the earliest this process starts another fold of the ledger
	// wholeRead is when this process's folds last read every row of the
	// ledger, and pruneAt the earliest a row below the cut may become
	// deletable (pruneDue).
	wholeRead, pruneAt time.Time
}

// pruneGap is the least time between two folds of a ledger, in one
// process, that read every row in order to prune; the folds between them
// read from the cut. A tenth of the entry retention, and at least
// minPruneGap: once the history is full a row becomes deletable every
// time an actor's entries expire, and a gap shorter than the time between
// folds would make every fold read every row again. Deletable rows wait
// up to this long, so a ledger keeps at most a tenth more rows than its
// retention needs.
func pruneGap(o Options) time.Duration {
	if !o.keepsEntries() {
		return minPruneGap
	}
	return max(minPruneGap, o.EntryRetention/10)
}

// minPruneGap is pruneGap's floor, for short retentions and namespaces
// without history (whose folds delete what they pass, reading every row
// only after a delete failed).
const minPruneGap = time.Hour

// earlier is the earlier of two times.
func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// pruneDue reports whether the next fold of the ledger should read every
// row rather than from the cut: when this process has not done so yet,
// or when a row below the cut may be deletable now and the last such
// read is gap ago (pruneGap).
func (c *cutMemory) pruneDue(k slotKey, now time.Time, gap time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	en := c.m[k]
	return en.wholeRead.IsZero() || !now.Before(en.pruneAt) && now.Sub(en.wholeRead) >= gap
}

// pruned records what a fold's prune left: due is the earliest a row it
// kept below the cut becomes deletable. After a read of every row that
// replaces what was known; after a read from the cut, which saw only
// some rows, it can only bring the time closer. latest bounds it: a row
// folded by another process, which reads from the cut do not see, may be
// deletable from then on (foldOnce).
func (c *cutMemory) pruned(k slotKey, whole bool, due, latest, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxRememberedCuts {
		c.m = map[slotKey]cutEntry{}
	}
	en := c.m[k]
	switch {
	case whole:
		en.wholeRead, en.pruneAt = now, earlier(due, latest)
	case en.wholeRead.IsZero():
		return // not known to read every row: nothing to bound
	default:
		en.pruneAt = earlier(en.pruneAt, due)
	}
	c.m[k] = en
}

func (c *cutMemory) cut(k slotKey) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k].cut
}

func (c *cutMemory) remember(k slotKey, cut string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxRememberedCuts {
		c.m = map[slotKey]cutEntry{}
	}
	en := c.m[k]
	en.cut = cut
	c.m[k] = en
}

// mayTry reports whether a fold of the ledger may start now, and if so
// records that one did.
func (c *cutMemory) mayTry(k slotKey, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	en := c.m[k]
	if now.Before(en.next) {
		return false
	}
	if c.m == nil || len(c.m) >= maxRememberedCuts {
		c.m = map[slotKey]cutEntry{}
	}
	en.next = now.Add(foldRetry)
	c.m[k] = en
	return true
}

// idle puts the ledger's next fold off until after foldIdleRetry.
func (c *cutMemory) idle(k slotKey, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if en, ok := c.m[k]; ok {
		en.next = now.Add(foldIdleRetry)
		c.m[k] = en
	}
}

// maybeFold starts a fold of the ledger in the background if the state
// just read holds actors below the cut a fold would make now, unless
// this process started one within foldRetry.
func (e *Engine) maybeFold(t Target, st *State) {
	now := e.cfg.Clock.Now()
	cut := datePrefix(now.Add(-e.foldAge(t.Options)))
	below := false
	for id := range st.actors {
		if id < cut {
			below = true
			break
		}
	}
	k := slotKey{t.Namespace, t.Ledger}
	if !below || !e.cuts.mayTry(k, now) {
		return
	}
	if e.folding.Add(1) > maxFolding {
		e.folding.Add(-1)
		return
	}
	started := e.goSettle(func(stop <-chan struct{}) {
		defer e.folding.Add(-1)
		ctx, cancel := context.WithTimeout(context.Background(), 2*e.cfg.WriteTimeout)
		defer cancel()
		go func() {
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		b, err := e.Fold(ctx, t)
		if err != nil {
			e.cfg.Logger.Warn("ledger: could not fold retired actors; a read tries again later",
				"namespace", t.Namespace, "ledger", t.Ledger, "err", err)
		}
		if err != nil || b.Cut < cut {
			// Failed, or held below the cut (a rights holder): not again
			// at every read.
			e.cuts.idle(k, e.cfg.Clock.Now())
		}
	})
	if !started {
		e.folding.Add(-1)
	}
}

// Fold moves the ledger's cut up to the actors born a fold age ago (in a
// floored ledger, no further than its lowest rights holder), adding the
// rows it passes into the base. It reports the base it stored, or the
// one it found when there was nothing to fold. Any process may fold any
// ledger at any time: racing folds contend on the base's compare-and-set
// and the loser folds nothing. Reads fold on their own (maybeFold);
// Fold is for tests and operators.
func (e *Engine) Fold(ctx context.Context, t Target) (Base, error) {
	t.Options = t.Options.WithDefaults()
	if err := t.Options.Validate(); err != nil {
		return Base{}, err
	}
	if !t.Options.folds() {
		return Base{}, fmt.Errorf("ledger %s/%s: the namespace's actors do not retire by age, so its ledgers do not fold", t.Namespace, t.Ledger)
	}
	// A fold that loses the race starts over from the winner's base,
	// which usually leaves it nothing to do. So does one whose swap's
	// outcome is unknown (racing Paxos rounds): the read of the next round
	// shows whether it was applied, and a swap from a base that has moved
	// on is refused, so nothing is added twice.
	for round := 1; ; round++ {
		b, err := e.foldOnce(ctx, t)
		again := errors.Is(err, errFoldLost) || errors.Is(err, driver.ErrUnknownOutcome) || errors.Is(err, driver.ErrUnavailable)
		if !again || round == foldRounds || ctx.Err() != nil {
			return b, err
		}
	}
}

// foldRounds bounds the rounds of one Fold: each lost round means
// another fold moved the cut, which is progress.
const foldRounds = 4

// errFoldLost: the base changed between a fold's read and its swap.
var errFoldLost = errors.New("the base changed since it was read (another fold won)")

func (e *Engine) foldOnce(ctx context.Context, t Target) (Base, error) {
	now := e.cfg.Clock.Now()
	cut := datePrefix(now.Add(-e.foldAge(t.Options)))
	if t.Options.Floored {
		// An actor in the rights record may still be reclaimed, which
		// rewrites its row: the cut stays at or below it. An actor
		// granted rights after this read is alive, so above the cut.
		r, err := e.readRights(ctx, t, "")
		if err != nil {
			return Base{}, fmt.Errorf("ledger %s/%s: fold: reading the rights record: %w", t.Namespace, t.Ledger, err)
		}
		for a := range r.grants {
			if dc, ok := shareHolder(a); ok {
				// The actors of a data center's share are in its record.
				// Another data center's is read here as far as its
				// commits have reached this one, which may lag: like the
				// rest of this bound it backs up the timing that keeps
				// every live actor far above the cut (an actor lives at
				// most ActorMaxAge, and holds rights at most a lease and
				// the late-write window longer).
				rdc, err := e.readRights(ctx, t, dc)
				if err != nil {
					return Base{}, fmt.Errorf("ledger %s/%s: fold: reading the rights record of data center %s: %w", t.Namespace, t.Ledger, dc, err)
				}
				for a := range rdc.grants {
					cut = min(cut, a)
				}
				continue
			}
			cut = min(cut, a)
		}
	}
	// Every row at ALL: a row that reached one replica only is counted.
	// From the cut this process last saw, as value reads start: the rows
	// below it are in the base, and the rows the fold passes are above
	// it. From the first row when a prune may be due, since prune deletes
	// folded rows, or when the base turns out to be below that cut (a
	// ledger deleted and written again): the rows between its cut and the
	// remembered one would go uncounted. So a fold reads the rows that
	// may still write and the ones it passes, not every row the history
	// keeps.
	k := slotKey{t.Namespace, t.Ledger}
	whole := e.cuts.pruneDue(k, now, pruneGap(t.Options))
	from := ""
	if !whole {
		from = e.cuts.cut(k)
	}
	rows, err := e.readRows(ctx, t, driver.All, from)
	if err == nil && rows.base.Cut < from {
		whole = true
		rows, err = e.readRows(ctx, t, driver.All, "")
	}
	if err != nil {
		return Base{}, fmt.Errorf("ledger %s/%s: fold: %w", t.Namespace, t.Ledger, err)
	}
	whole = whole || from == ""
	stored := rows.base
	next, passed, err := rows.fold(cut)
	if err != nil {
		return Base{}, fmt.Errorf("ledger %s/%s: fold: %w", t.Namespace, t.Ledger, err)
	}
	// Moving the cut past no row would only cost a transaction, and
	// would store a base for a ledger never written.
	if passed > 0 {
		var expect []byte
		if stored.Version > 0 {
			expect = EncodeBase(stored)
		}
		wctx, cancel := context.WithTimeout(ctx, e.cfg.WriteTimeout)
		defer cancel()
		applied, err := e.cfg.Store.SwapLedgerBase(wctx, &driver.SwapLedgerBaseParams{
			Namespace: t.Namespace, Ledger: t.Ledger, Expect: expect, Next: EncodeBase(next),
			Consistency: t.WriteConsistency,
		})
		switch {
		case err != nil:
			return Base{}, fmt.Errorf("ledger %s/%s: fold: %w", t.Namespace, t.Ledger, err)
		case !applied:
			return Base{}, fmt.Errorf("ledger %s/%s: fold: %w", t.Namespace, t.Ledger, errFoldLost)
		}
		stored = next
	}
	e.cuts.remember(k, stored.Cut)
	due := e.prune(ctx, t, rows, stored.Cut, now)
	// A row another process folds later may never show below the cut in
	// this process's reads from the cut. Bounding the next read of every
	// row by the entry retention (and the skew allowance) from now makes
	// that read see it: a row written after now is not deletable before
	// then, and one written before now but above the cut (born within
	// the fold age) is deleted by that read at most the fold age late.
	latest := now.Add(foldSkew)
	if t.Options.keepsEntries() {
		latest = latest.Add(t.Options.EntryRetention)
	}
	e.cuts.pruned(k, whole, due, latest, now)
	return stored, nil
}

// fold returns the base that moving the cut up to cut would store, and
// how many rows it passes: those between the stored base's cut and cut.
// A cut at or below the stored one passes none.
func (r *ledgerRows) fold(cut string) (next Base, passed int, err error) {
	old := r.base
	if cut <= old.Cut {
		return old, 0, nil
	}
	next = Base{Version: old.Version + 1, Cut: cut, P: old.P, N: old.N}
	for _, id := range r.actors {
		if id < old.Cut || id >= cut {
			continue
		}
		passed++
		if !dated(id) {
			return Base{}, 0, fmt.Errorf("actor %q has no birth date, so nothing says it stopped writing", id)
		}
		a := r.state[id]
		for neg, acc := range []*int64{&next.P, &next.N} {
			sum, ok := a.Section(neg == 1).Sum()
			if !ok || *acc > math.MaxInt64-sum {
				return Base{}, 0, fmt.Errorf("%w: folding actor %q passes int64", ErrOverflow, id)
			}
			*acc += sum
		}
	}
	return next, passed, nil
}

// prune deletes the rows of folded actors that nothing reads any more:
// below the stored cut, so value reads skip them and the base counts
// them, and, where the namespace keeps a history, last written more than
// the entry retention ago (and the skew allowance), so every entry the
// history would check against them has expired. No write of them can
// land any more (the fold age), so a delete as of the row's write time
// is final. A fenced row, written at a timestamp far in the future, is
// never old enough, and stays. A failure leaves the rows for a later
// fold that reads every row. It returns the earliest a row it kept below
// the cut becomes deletable: now after a failure, far in the future when
// it kept none.
func (e *Engine) prune(ctx context.Context, t Target, rows *ledgerRows, cut string, now time.Time) (due time.Time) {
	due = now.Add(100 * 365 * 24 * time.Hour)
	var gone []driver.LedgerRow
	for _, id := range rows.actors {
		if id >= cut {
			continue
		}
		ts := rows.stamps[id]
		if t.Options.keepsEntries() {
			if at := time.UnixMicro(ts).Add(t.Options.EntryRetention + foldSkew); at.After(now) {
				due = earlier(due, at)
				continue
			}
		}
		gone = append(gone, driver.LedgerRow{Actor: id, Timestamp: ts})
	}
	for len(gone) > 0 {
		n := min(len(gone), driver.MaxLedgerRowDeletes)
		dctx, cancel := context.WithTimeout(ctx, e.cfg.WriteTimeout)
		err := e.cfg.Store.DeleteLedgerRows(dctx, &driver.DeleteLedgerRowsParams{
			Namespace: t.Namespace, Ledger: t.Ledger, Rows: gone[:n], Consistency: t.WriteConsistency,
		})
		cancel()
		if err != nil {
			e.cfg.Logger.Warn("ledger: could not delete folded rows; a later fold tries again",
				"namespace", t.Namespace, "ledger", t.Ledger, "rows", len(gone), "err", err)
			return now
		}
		gone = gone[n:]
	}
	return due
}

// ledgerRows is a ledger as stored: the base, and every actor row
// returned, none dropped.
type ledgerRows struct {
	base   Base
	actors []string // sorted, as the store returns them
	state  map[string]*Actor
	stamps map[string]int64 // each row's write time
	fenced map[string]bool
}

// readRows reads the ledger's rows from the actor id from on.
func (e *Engine) readRows(ctx context.Context, t Target, cl driver.Consistency, from string) (*ledgerRows, error) {
	raw, err := e.cfg.Store.ReadLedger(ctx, &driver.ReadLedgerParams{
		Namespace: t.Namespace, Ledger: t.Ledger, Consistency: cl, From: from,
	})
	if err != nil {
		return nil, err
	}
	out := &ledgerRows{state: make(map[string]*Actor, len(raw)), stamps: make(map[string]int64, len(raw))}
	for _, r := range raw {
		if r.Actor == driver.LedgerBaseActor {
			if out.base, err = DecodeBase(r.State); err != nil {
				return nil, fmt.Errorf("ledger %s/%s: base: %w", t.Namespace, t.Ledger, err)
			}
			continue
		}
		a, err := DecodeActor(r.State)
		if err != nil {
			return nil, fmt.Errorf("ledger %s/%s: actor %q: %w", t.Namespace, t.Ledger, r.Actor, err)
		}
		out.actors = append(out.actors, r.Actor)
		out.state[r.Actor] = a
		out.stamps[r.Actor] = r.Timestamp
		if r.Timestamp >= minFenceTimestamp {
			if out.fenced == nil {
				out.fenced = map[string]bool{}
			}
			out.fenced[r.Actor] = true
		}
	}
	return out, nil
}

// String is the base as logs and errors show it.
func (b Base) String() string {
	return "base v" + strconv.FormatUint(b.Version, 10) + " cut " + strconv.Quote(b.Cut) +
		" +" + strconv.FormatInt(b.P, 10) + " -" + strconv.FormatInt(b.N, 10)
}

// value is the ledger's state for its value: the base, and the actors at
// or above the base's cut. The ones below are counted in the base.
func (r *ledgerRows) value() *State {
	st := &State{actors: make(map[string]*Actor, len(r.state)), base: r.base}
	for id, a := range r.state {
		if id >= r.base.Cut {
			st.actors[id] = a
			if r.fenced[id] {
				st.markFenced(id)
			}
		}
	}
	return st
}

// whole is the ledger's state with every actor row, folded ones too, for
// a history that checks entries against their rows. Its totals would
// count the folded actors twice: only history reads it.
func (r *ledgerRows) whole() *State {
	return &State{actors: r.state, fenced: r.fenced, base: r.base}
}
