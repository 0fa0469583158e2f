package driver

import (
	"context"
	"time"
)

// MaxClaimTTL is the longest claim TTL a driver must accept: Cassandra's
// limit on TTLs (20 years).
const MaxClaimTTL = 630_720_000 * time.Second

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
	Timestamp   int64
	Consistency Consistency
}

// ReadLedgerParams are the parameters of Ledgers.ReadLedger.
type ReadLedgerParams struct {
	Namespace   string
	Ledger      string
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
	// Paxos phase uses SERIAL (LOCAL_SERIAL for local levels).
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
	// Consistency picks the Paxos level of the read: SERIAL, or
	// LOCAL_SERIAL for local levels.
	Consistency Consistency
}

// Ledgers stores the ledger model: one row per (namespace, ledger, actor),
// and, for strict-mode ledgers, one claim per request id.
type Ledgers interface {
	// WriteLedgerRow replaces the actor's row at p.Timestamp. A row written
	// at a higher timestamp is left as it is; between two writes at the
	// same timestamp the one with the greater State bytes wins; replaying a
	// write is harmless. The write is blind: it reads nothing.
	WriteLedgerRow(ctx context.Context, p *WriteLedgerRowParams) error

	// ReadLedger returns every actor's row of the ledger, sorted by actor,
	// with their write timestamps. A ledger never written returns no rows,
	// not ErrNotFound.
	ReadLedger(ctx context.Context, p *ReadLedgerParams) ([]LedgerRow, error)

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

	// ListLedgers returns the ledgers with at least one actor row, in
	// namespace p.Namespace (every namespace when empty), sorted; a
	// CounterKey's Counter is the ledger's name.
	ListLedgers(ctx context.Context, p *ListCountersParams) ([]CounterKey, error)
}
