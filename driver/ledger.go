package driver

import (
	"context"
	"fmt"
	"math"
	"time"
)

// MaxClaimTTL is the longest claim TTL a driver must accept: Cassandra's
// limit on TTLs (20 years).
const MaxClaimTTL = 630_720_000 * time.Second

// FenceTimestamp is the write timestamp of a fence: an actor's row written
// again, as last read, so that any write of that actor landing later
// loses to it (last write wins). Above every timestamp an actor uses (the
// clock's microseconds), below the purges' deletes, which must still
// shadow it.
const FenceTimestamp int64 = math.MaxInt64 - 2

// MaxEntryTTL is the longest TTL of ledger history entries: two days
// short of Cassandra's limit, which leaves room for the Cassandra driver's
// day markers to outlive the entries they list.
const MaxEntryTTL = MaxClaimTTL - 48*time.Hour

// LedgerRow is one actor's row of a ledger (the ledger model, “riak-ruby-ledger: Implementation”).
type LedgerRow struct {
	// Actor is the writer's actor id. Each actor id has exactly one writer.
	Actor string
	// State is the encoded actor state (package ledger). Drivers store it
	// as opaque bytes.
	State []byte
	// Timestamp is the row's write timestamp in microseconds; ReadLedger
	// fills it in.
	Timestamp int64
}

// WriteLedgerRowParams are the parameters of Ledgers.WriteLedgerRow.
type WriteLedgerRowParams struct {
	Namespace string
	Ledger    string
	// Row is stored; its Timestamp is ignored in favour of Timestamp below.
	Row LedgerRow
	// Timestamp is the write timestamp in microseconds. An actor's writes
	// carry strictly increasing timestamps.
	Timestamp int64
	// Entries are the ledger history entries of the requests this write
	// appends to Row (see LedgerEntry); none when the namespace keeps no
	// history. They are stored before the row, or with it, never after it.
	Entries []LedgerEntry
	// EntryTTL is how long Entries are kept: whole seconds, at least a
	// second, at most MaxEntryTTL. Required when Entries is not empty.
	EntryTTL    time.Duration
	Consistency Consistency
}

// CheckEntries checks the entries a write is asked to store with its row:
// each names the row's actor, a number from 1, a positive amount, and a
// valid TTL comes with them. It also refuses the base row's reserved
// actor id, which only SwapLedgerBase writes: a plain write to a row that
// lightweight transactions keep would break their guarantees. Drivers
// refuse a write that fails it.
func (p *WriteLedgerRowParams) CheckEntries() error {
	if p.Row.Actor == LedgerBaseActor {
		return fmt.Errorf("actor id %q is reserved for the base row", LedgerBaseActor)
	}
	if len(p.Entries) == 0 {
		return nil
	}
	if p.EntryTTL < time.Second || p.EntryTTL > MaxEntryTTL || p.EntryTTL%time.Second != 0 {
		return fmt.Errorf("entry TTL %v is not whole seconds within 1s..%v", p.EntryTTL, MaxEntryTTL)
	}
	for i := range p.Entries {
		e := &p.Entries[i]
		if e.At < 0 || e.Seq == 0 || e.Seq > math.MaxInt64 || e.Amount <= 0 || e.Actor != p.Row.Actor {
			return fmt.Errorf("entry %d (actor %q, at %d, number %d, amount %d) is not one of actor %q's entries",
				i, e.Actor, e.At, e.Seq, e.Amount, p.Row.Actor)
		}
	}
	return nil
}

// MaxLedgerRowWrites is the most rows one Ledgers.WriteLedgerRows call may
// write: a transfer needs two, and a logged batch should stay small.
const MaxLedgerRowWrites = 16

// CheckLedgerRowWrites reports whether ws is a WriteLedgerRows call the
// drivers take: 1 to MaxLedgerRowWrites rows, all at one consistency
// level, no row twice (its outcome would depend on how the store breaks
// the tie), and each row's entries valid (CheckEntries).
func CheckLedgerRowWrites(ws []WriteLedgerRowParams) error {
	if len(ws) == 0 || len(ws) > MaxLedgerRowWrites {
		return fmt.Errorf("%d ledger rows in one write: from 1 to %d may be written together", len(ws), MaxLedgerRowWrites)
	}
	type rowKey struct{ ns, ledger, actor string }
	seen := make(map[rowKey]bool, len(ws))
	for i := range ws {
		w := &ws[i]
		if w.Consistency != ws[0].Consistency {
			return fmt.Errorf("ledger rows at consistency levels %v and %v in one write", ws[0].Consistency, w.Consistency)
		}
		k := rowKey{w.Namespace, w.Ledger, w.Row.Actor}
		if seen[k] {
			return fmt.Errorf("row %s/%s/%s twice in one write", w.Namespace, w.Ledger, w.Row.Actor)
		}
		seen[k] = true
		if err := w.CheckEntries(); err != nil {
			return fmt.Errorf("row %s/%s/%s: %w", w.Namespace, w.Ledger, w.Row.Actor, err)
		}
	}
	return nil
}

// LedgerEntry is one applied request as a ledger's history shows it. An
// actor numbers the entries of each of its two sections from 1 and never
// gives a number to two requests, so (Actor, Negative, Seq) names one
// request for good.
//
// Entries are written before (or with) the actor row that holds them, and
// a write can fail after its entries landed. So an entry is part of the
// ledger only when its actor's row has reached its number: readers check
// that against the rows (package ledger does).
type LedgerEntry struct {
	// At is when the write that carried the entry was first made, in
	// microseconds; a resubmission keeps it.
	At        int64
	Actor     string
	Negative  bool
	Seq       uint64
	RequestID string
	// Amount is positive; Negative says whether it was a debit.
	Amount int64
}

// Signed is the entry's amount with its sign: negative for a debit.
func (e *LedgerEntry) Signed() int64 {
	if e.Negative {
		return -e.Amount
	}
	return e.Amount
}

// LedgerEntryBefore reports whether a comes before b in a history's order:
// newest first, then by actor, side and number, each descending.
func LedgerEntryBefore(a, b *LedgerEntry) bool {
	switch {
	case a.At != b.At:
		return a.At > b.At
	case a.Actor != b.Actor:
		return a.Actor > b.Actor
	case a.Negative != b.Negative:
		return a.Negative
	}
	return a.Seq > b.Seq
}

// ReadLedgerEntriesParams are the parameters of Ledgers.ReadLedgerEntries.
type ReadLedgerEntriesParams struct {
	Namespace string
	Ledger    string
	// Since leaves out entries older than it (microseconds): the
	// namespace's retention, measured back from now.
	Since int64
	// After, when set, leaves out After itself and every entry before it
	// in the history's order: the last entry of the previous page.
	After *LedgerEntry
	// Limit is the most entries returned; at least 1.
	Limit int
	// Now is the caller's clock in microseconds; the embedded driver
	// measures entry TTLs on it, Cassandra on its own clock.
	Now         int64
	Consistency Consistency
}

// ReadLedgerParams are the parameters of Ledgers.ReadLedger.
type ReadLedgerParams struct {
	Namespace   string
	Ledger      string
	Consistency Consistency
	// From, when not empty, limits the read to the rows whose actor id
	// sorts at or after it (byte order), the base row among them: a
	// folding ledger's value read starts at its cut.
	From string
}

// LedgerBaseActor is the reserved actor id of a ledger's base row, which
// holds the totals of the actors a fold has passed (package ledger,
// "Folding retired actors"). It sorts after every actor id of a folding
// namespace, so every read from a cut returns it. It is written only by
// Ledgers.SwapLedgerBase, never by WriteLedgerRow.
const LedgerBaseActor = "~base"

// DeleteLedgerRowsParams are the parameters of Ledgers.DeleteLedgerRows.
type DeleteLedgerRowsParams struct {
	Namespace string
	Ledger    string
	// Rows are the rows to delete, each as it was read: its Actor and
	// its Timestamp. State is ignored.
	Rows        []LedgerRow
	Consistency Consistency
}

// MaxLedgerRowDeletes is the most rows one Ledgers.DeleteLedgerRows call
// may delete.
const MaxLedgerRowDeletes = 100

// Check refuses a delete the drivers do not take: 1 to
// MaxLedgerRowDeletes rows, none of them the base.
func (p *DeleteLedgerRowsParams) Check() error {
	if len(p.Rows) == 0 || len(p.Rows) > MaxLedgerRowDeletes {
		return fmt.Errorf("%d ledger rows in one delete: from 1 to %d may be deleted together", len(p.Rows), MaxLedgerRowDeletes)
	}
	for _, r := range p.Rows {
		if r.Actor == LedgerBaseActor {
			return fmt.Errorf("the base row (%q) is never deleted", LedgerBaseActor)
		}
	}
	return nil
}

// SwapLedgerBaseParams are the parameters of Ledgers.SwapLedgerBase.
type SwapLedgerBaseParams struct {
	Namespace string
	Ledger    string
	// Expect is the base row's state as read; nil when none is stored.
	Expect []byte
	// Next replaces it. It must not be empty.
	Next []byte
	// Consistency is the commit level of the lightweight transaction; the
	// Paxos phase uses SERIAL (LOCAL_SERIAL for a data center's record).
	Consistency Consistency
}

// Claim records which actor is applying a request id in a strict-mode
// ledger, and where that actor puts the entry.
type Claim struct {
	// Actor is the claiming actor's id.
	Actor string
	// Negative says the entry goes into the actor's negative (debit) section.
	Negative bool
	// Seq is the number the entry gets in that section.
	Seq uint64
	// Amount is the request's signed amount; a claim with another amount
	// for the same request id is a caller's mistake.
	Amount int64
}

// ClaimRequestParams are the parameters of Ledgers.ClaimRequest.
type ClaimRequestParams struct {
	Namespace string
	Ledger    string
	RequestID string
	Claim     Claim
	// TTL is how long the claim lives: at least a second, at most
	// MaxClaimTTL. Cassandra counts whole seconds and rounds down.
	TTL time.Duration
	// Now is the caller's clock in microseconds. The embedded driver
	// measures TTLs on it (so tests can move time); Cassandra uses its own
	// clock.
	Now int64
	// Consistency is the commit level of the lightweight transaction; the
	// Paxos phase uses SERIAL (LOCAL_SERIAL for a data center's record).
	Consistency Consistency
}

// ClaimResult is what ClaimRequest found.
type ClaimResult struct {
	// Won is true when the call stored p.Claim.
	Won bool
	// Current is the claim stored for the request id after the call: p.Claim
	// when Won, the earlier claim otherwise.
	Current Claim
}

// ReleaseClaimParams are the parameters of Ledgers.ReleaseClaim.
type ReleaseClaimParams struct {
	Namespace string
	Ledger    string
	RequestID string
	// Expect is the claim to remove; another claim is left alone.
	Expect      Claim
	Consistency Consistency
}

// ReadClaimParams are the parameters of Ledgers.ReadClaim.
type ReadClaimParams struct {
	Namespace string
	Ledger    string
	RequestID string
	// Now is the caller's clock in microseconds (see ClaimRequestParams).
	Now int64
	// Consistency is the level of the commit the claim was made with; the
	// read itself is a Paxos round at SERIAL on Cassandra, whatever the
	// level, since claims are decided across data centers.
	Consistency Consistency
}

// Ledgers stores the ledger model: one row per (namespace, ledger, actor),
// and, for strict-mode ledgers, one claim per request id.
type Ledgers interface {
	// WriteLedgerRow replaces the actor's row at p.Timestamp. A row written
	// at a higher timestamp is left as it is; between two writes at the
	// same timestamp the one with the greater State bytes wins; replaying a
	// write is harmless. The write is blind: it reads nothing. p.Entries
	// are stored first (or atomically with the row): a write that fails
	// may leave some of them behind, never the row without them.
	WriteLedgerRow(ctx context.Context, p *WriteLedgerRowParams) error

	// WriteLedgerRows writes several rows, of any actors and ledgers, all
	// or none: each as WriteLedgerRow writes one (its entries first), and
	// the rows together. An error other than ErrUnknownOutcome means no
	// row was written (some entries may have been). After
	// ErrUnknownOutcome either every row lands, now or later, or none
	// does, never some. Cassandra writes the rows in a logged batch, which
	// a reader may see land one row at a time while it is applied; the
	// embedded store writes one Pebble batch. ws must pass
	// CheckLedgerRowWrites.
	WriteLedgerRows(ctx context.Context, ws []WriteLedgerRowParams) error

	// ReadLedger returns every actor's row of the ledger, sorted by actor,
	// with their write timestamps. A ledger never written returns no rows,
	// not ErrNotFound.
	ReadLedger(ctx context.Context, p *ReadLedgerParams) ([]LedgerRow, error)

	// SwapLedgerBase stores p.Next as the ledger's base row
	// (LedgerBaseActor) if the stored base row's state is p.Expect (no
	// row, for a nil p.Expect), atomically: of racing swaps from one
	// state at most one is applied. ReadLedger returns the base row like
	// any other. An error means the swap may or may not have been
	// applied.
	SwapLedgerBase(ctx context.Context, p *SwapLedgerBaseParams) (applied bool, err error)

	// DeleteLedgerRows deletes each of p.Rows as of its Timestamp: the
	// row as read and every older write of it are gone, and a write at a
	// later timestamp stays. It is for rows no one writes any more (the
	// rows of folded actors): a write racing the delete may be lost.
	DeleteLedgerRows(ctx context.Context, p *DeleteLedgerRowsParams) error

	// ClaimRequest stores p.Claim for the request id unless an unexpired
	// claim is stored already, atomically: of any number of racing calls
	// exactly one wins, and every call learns the claim that is stored.
	// A claim expires p.TTL after it was stored. Repeating a call whose
	// outcome was unknown is safe: it finds its own claim. A claim is
	// durable once the caller's next ledger row write has succeeded (the
	// embedded store does not sync the claim on its own).
	ClaimRequest(ctx context.Context, p *ClaimRequestParams) (ClaimResult, error)

	// ReleaseClaim removes the request id's claim if it is exactly
	// p.Expect, atomically with the check; otherwise it does nothing. It
	// reports whether it removed the claim.
	ReleaseClaim(ctx context.Context, p *ReleaseClaimParams) (bool, error)

	// ReadClaim returns the unexpired claim stored for the request id, and
	// false when there is none. A ClaimRequest or ReleaseClaim that
	// returned before the call began is seen (Cassandra reads at SERIAL,
	// which also finishes a Paxos round a replica has accepted). A call
	// whose outcome was unknown may still change the claim afterwards.
	ReadClaim(ctx context.Context, p *ReadClaimParams) (Claim, bool, error)

	// ReadLedgerEntries returns up to p.Limit history entries of the
	// ledger in the history's order (LedgerEntryBefore), newest first,
	// without checking them against the rows. Expired entries and entries
	// older than p.Since are left out.
	ReadLedgerEntries(ctx context.Context, p *ReadLedgerEntriesParams) ([]LedgerEntry, error)

	// ListLedgers returns the ledgers with at least one actor row, in
	// namespace p.Namespace (every namespace when empty), sorted; a
	// CounterKey's Counter is the ledger's name.
	ListLedgers(ctx context.Context, p *ListCountersParams) ([]CounterKey, error)

	LedgerRightsStore
}

// LedgerRights is a ledger's rights record: who may debit how much, in a
// ledger namespace with a balance floor (package ledger encodes State).
// It changes only by compare-and-set on Version, so changes to it are
// serialised across every server.
type LedgerRights struct {
	// Version is 0 for a record never stored, and grows by one with each
	// change: a record is stored with Version ≥ 1.
	Version int64
	// State is opaque to drivers.
	State []byte
}

// ReadLedgerRightsParams are the parameters of Ledgers.ReadLedgerRights.
type ReadLedgerRightsParams struct {
	Namespace string
	Ledger    string
	// DataCenter, when set, names the record of that data center's share
	// of the ledger's rights instead of the ledger's own record: a record
	// of its own, read and changed only by that data center's servers,
	// with Paxos among its replicas only (LOCAL_SERIAL on Cassandra), so
	// that it stays available while the data centers are cut apart.
	DataCenter string
	// Consistency is the level of the commit the record's swaps are made
	// with; the read itself is a Paxos round at SERIAL on Cassandra,
	// whatever the level, since grants are decided across data centers
	// (LOCAL_SERIAL for a data center's record).
	Consistency Consistency
}

// SwapLedgerRightsParams are the parameters of Ledgers.SwapLedgerRights.
type SwapLedgerRightsParams struct {
	Namespace string
	Ledger    string
	// DataCenter names a data center's record, as in
	// ReadLedgerRightsParams.
	DataCenter string
	// Expect is the Version the stored record must have (0: none stored).
	Expect int64
	// Next is stored in its place; Next.Version must be Expect+1.
	Next LedgerRights
	// Consistency is the commit level of the lightweight transaction; the
	// Paxos phase uses SERIAL (LOCAL_SERIAL for a data center's record).
	Consistency Consistency
}

// Check refuses a swap that would not move the version forward by one.
func (p *SwapLedgerRightsParams) Check() error {
	if p.Expect < 0 || p.Expect == math.MaxInt64 || p.Next.Version != p.Expect+1 {
		return fmt.Errorf("a rights swap from version %d must store version %d, not %d", p.Expect, p.Expect+1, p.Next.Version)
	}
	return nil
}

// LedgerRightsStore keeps ledgers' rights records. Drivers that implement
// Ledgers implement it too.
type LedgerRightsStore interface {
	// ReadLedgerRights returns the ledger's rights record, Version 0 and
	// no State when none is stored. A swap that returned before the call
	// began is seen (Cassandra reads at SERIAL, which also finishes a
	// Paxos round a replica has accepted).
	ReadLedgerRights(ctx context.Context, p *ReadLedgerRightsParams) (LedgerRights, error)

	// SwapLedgerRights stores p.Next if the stored record's version is
	// p.Expect, atomically: of racing swaps from one version at most one
	// is applied. It reports whether it applied p.Next and, when it did
	// not, the record it found. An error means the swap may or may not
	// have been applied: read the record to learn which.
	SwapLedgerRights(ctx context.Context, p *SwapLedgerRightsParams) (applied bool, current LedgerRights, err error)
}
