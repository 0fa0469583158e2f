// Package ledger implements the ledger model (“riak-ruby-ledger: Implementation”, approach 2b): a
// PN-counter whose actors remember the request ids they applied, so that a
// retried credit or debit is recognised and not applied twice.
//
// # State
//
// Each actor (one per process and ledger) owns two sections, positive
// (credits) and negative (debits). A section is a running total plus the
// most recent entries (request id, amount), oldest first, numbered in the
// order the actor appended them. The ledger's value is Σ P − Σ N over all
// actors. When a merge finds more than history_length entries in a
// section, the oldest entries' amounts move into the total and their
// request ids are forgotten: the overflow rule.
//
// Versions of one actor's row are views of one log (a folded prefix and
// the entries after it), so merging them keeps the latest view: the merge
// is commutative, associative and idempotent (laws_test.go). Rows of
// different actors never overlap; merging a ledger is their union.
//
// # Writes
//
// A credit, debit or update reads every actor's row, merges, and looks the
// request id up in every history. If it is there the request is a retry:
// nothing is written and the result says Applied false. Otherwise the
// request is appended to this process's actor, after the overflow rule,
// and only that actor's row is written — blind, at a write timestamp
// higher than the actor's previous one. An actor's operations run one at a
// time inside its process, so its row only ever grows along one log.
//
// A write whose outcome is unknown is resubmitted (same row, higher
// timestamp) up to retry_count times. If none is known to have succeeded
// the request is reported as ErrUnknownOutcome, never as success, and the
// actor is retired: its in-memory state may hold an entry that never
// landed, and no later write may carry that entry into the ledger (without
// strict mode a retry elsewhere may have applied it meanwhile). The next
// request gets a fresh actor, which costs one more row in the ledger.
//
// # Actor ids must never be shared
//
// An actor's row is replaced whole by each of its writes, and
// last-write-wins keeps the write with the highest timestamp. Two
// processes writing under one actor id would each replace the row with
// their own entries at independent timestamps, so whichever wrote last
// would silently erase the other's acknowledged entries (and strict mode's
// claims, which name an actor's entry number, would point at the wrong
// entry). Actor ids are therefore a random per-process prefix plus a
// counter, and a configured prefix (Config.ActorID) must be unique among
// all processes, including earlier runs. A process that finds its own row
// ahead of, or contradicting, what it wrote reports ErrActorConflict.
//
// # Strict mode
//
// Without strict mode two actors that receive the same request at the
// same moment both read before either writes, neither sees the id, and
// both apply it (the design's drift). Strict mode claims the request id
// before appending, with a compare-and-set that expires after claim_ttl
// (a lightweight transaction on Cassandra). The claim names the actor and
// the entry number it will use. An actor that loses the claim defers to
// the claimant: the request is already applied if the id is in a history
// or the claimant's section has reached the claimed entry (it was applied
// and since folded), and otherwise its outcome is not known yet — the
// loser waits briefly for the claimant's write and then answers
// ErrUnknownOutcome. Claims a process will not fulfil are withdrawn, and
// writes it gave up on are finished in the background while their claim
// lives (settle.go).
//
// Files: state.go and encoding.go hold the pure state and its stored form
// (no I/O); engine.go and settle.go store it through a driver.Ledgers.
package ledger
