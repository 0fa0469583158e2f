package api

import "time"

// DefaultLedgerNamespace is the namespace of ledgers addressed without one;
// the server creates it (model ledger, default options) on first use.
const DefaultLedgerNamespace = "ledgers"

// LedgerOptions are the options of a namespace of model "ledger". In a
// create request zero fields take the defaults (retry_count -1 means no
// resubmission); in a namespace description every field is filled in.
type LedgerOptions struct {
	// HistoryLength is how many request ids each actor keeps per section.
	// Default 10, at most 1000.
	HistoryLength int `json:"history_length"`
	// Mode is how retries are recognised: "exact" (the default) claims
	// every request id with a lightweight transaction before applying it,
	// so a request is applied once whichever servers its copies reach;
	// "concurrent_retries_may_double" skips the claim — cheaper, but copies
	// of one request running at the same time on two servers may both be
	// applied. In a namespace description it is always filled in.
	Mode string `json:"mode,omitempty"`
	// Strict is the older spelling of mode "exact": true in a create
	// request asks for it, false leaves the choice to Mode. In a
	// description it is true exactly when the mode is "exact".
	Strict bool `json:"strict"`
	// RetryCount is how many times a write with an unknown outcome is
	// resubmitted before the update is answered unknown_outcome. Default 10.
	RetryCount int `json:"retry_count"`
	// ClaimTTLSeconds is how long a strict-mode claim lives. Default 86400.
	ClaimTTLSeconds int64 `json:"claim_ttl_seconds"`
	// EntryRetentionSeconds is how long the ledger's history keeps each
	// applied request. Default 2592000 (30 days), at most 220752000 (7
	// years); -1 keeps no history, in a create request and in a
	// description (namespaces made before ledgers had a history show -1).
	EntryRetentionSeconds int64 `json:"entry_retention_seconds"`
	// Floor, when present, is the lowest value a debit may leave a ledger
	// at: 0 for a wallet, negative for an overdraft line, at least
	// -4611686018427387904 (-2^62). A debit that would cross it is refused
	// with below_floor (or rights_held) and nothing is written. Absent: no
	// floor. Set only when the namespace is made.
	Floor *int64 `json:"floor,omitempty"`
	// ActorMaxAgeSeconds is how long each server's actor writes a ledger
	// before a fresh one replaces it; the rows of retired actors are then
	// folded into one base that reads skip, so a ledger's reads stay as
	// cheap after months of restarts as on its first day. Default 86400,
	// at least 60; -1: actors never retire and ledgers never fold, in a create request
	// and in a description (namespaces made before folding show -1). Set
	// only when the namespace is made.
	ActorMaxAgeSeconds int64 `json:"actor_max_age_seconds"`
}

// Ledger modes (LedgerOptions.Mode).
const (
	LedgerModeExact                      = "exact"
	LedgerModeConcurrentRetriesMayDouble = "concurrent_retries_may_double"
)

// LedgerUpdateRequest is the body of POST
// /v1/namespaces/{ns}/ledgers/{ledger}/credits, …/debits and …/updates.
type LedgerUpdateRequest struct {
	// Amount must be positive for credits and debits; for updates it is
	// signed (negative debits) and must not be zero.
	Amount int64 `json:"amount"`
	// RequestID identifies the request: a retry with the same id is
	// recognised and not applied again. When empty the server generates one
	// and returns it (also in the Abacus-Request-Id header).
	RequestID string `json:"request_id,omitempty"`
}

// LedgerTransferRequest is the body of POST
// /v1/namespaces/{ns}/ledgers/{ledger}/transfers: move Amount from the
// path's ledger to To, a ledger of the same namespace.
type LedgerTransferRequest struct {
	To string `json:"to"`
	// Amount must be positive.
	Amount int64 `json:"amount"`
	// RequestID identifies the transfer, as a ledger update's does; it is
	// a request id of both ledgers. When empty the server generates one.
	RequestID string `json:"request_id,omitempty"`
}

// LedgerTransferResponse is the body of a successful transfer.
type LedgerTransferResponse struct {
	Namespace string `json:"namespace"`
	From      string `json:"from"`
	To        string `json:"to"`
	RequestID string `json:"request_id"`
	// Applied and Replayed mean what they mean in LedgerUpdateResponse.
	Applied  bool `json:"applied"`
	Replayed bool `json:"replayed,omitempty"`
}

// LedgerUpdateResponse is the body of a successful ledger update.
type LedgerUpdateResponse struct {
	Namespace string `json:"namespace"`
	Ledger    string `json:"ledger"`
	RequestID string `json:"request_id"`
	// Applied is true when the request is in the ledger, whether this
	// attempt or an earlier one with the same request id added it.
	Applied bool `json:"applied"`
	// Replayed is true when an earlier attempt applied the request (its
	// request id was recorded with this amount) and this one wrote
	// nothing: a retry gets the first attempt's answer, marked as such.
	Replayed bool `json:"replayed,omitempty"`
}

// LedgerEntry is one applied request in a ledger's history.
type LedgerEntry struct {
	RequestID string `json:"request_id"`
	// Amount is signed: negative for a debit.
	Amount int64 `json:"amount"`
	// At is when the server first wrote the entry.
	At time.Time `json:"at"`
	// Actor is the server process's writer that applied it.
	Actor string `json:"actor"`
}

// LedgerHistory is the body of GET
// /v1/namespaces/{ns}/ledgers/{ledger}/entries?limit=&after=: up to limit
// entries (default 100, at most 1000), newest first.
type LedgerHistory struct {
	Namespace string        `json:"namespace"`
	Ledger    string        `json:"ledger"`
	Entries   []LedgerEntry `json:"entries"`
	// Next is the ?after= of the next page; empty at the end. A page may
	// hold fewer entries than the limit, even none, and still have one.
	Next string `json:"next,omitempty"`
}

// LedgerValue is the body of GET /v1/namespaces/{ns}/ledgers/{ledger} and
// of POST …/find.
type LedgerValue struct {
	Namespace string `json:"namespace"`
	Ledger    string `json:"ledger"`
	// Value is Credits − Debits.
	Value   int64 `json:"value"`
	Credits int64 `json:"credits"`
	Debits  int64 `json:"debits"`
	// Actors is how many actor rows the read merged: those of actors
	// that may still write.
	Actors int `json:"actors"`
	// Folds is how many folds have passed retired actors' rows into the
	// ledger's base; 0 for a ledger never folded.
	Folds uint64 `json:"folds"`
}

// RequestIDStatus is the body of GET
// /v1/namespaces/{ns}/ledgers/{ledger}/requests/{request_id}.
type RequestIDStatus struct {
	Namespace string `json:"namespace"`
	Ledger    string `json:"ledger"`
	RequestID string `json:"request_id"`
	// Known is true when the request id is in an actor's history, that is
	// when a retry of it would be recognised.
	Known bool `json:"known"`
}

// LedgerBatchRequest is the body of POST /v1/ledger-updates: up to
// MaxBatchItems ledger updates.
type LedgerBatchRequest struct {
	Updates []LedgerBatchUpdate `json:"updates"`
}

// LedgerBatchUpdate is one update of a ledger batch: a signed, non-zero
// amount (positive credits, negative debits) under a request id.
type LedgerBatchUpdate struct {
	// Namespace defaults to DefaultLedgerNamespace.
	Namespace string `json:"namespace,omitempty"`
	Ledger    string `json:"ledger"`
	Amount    int64  `json:"amount"`
	// RequestID defaults to a fresh id, returned in the result.
	RequestID string `json:"request_id,omitempty"`
}

// LedgerBatchResponse is the body of a POST /v1/ledger-updates that
// passed validation: one result per update, in order.
type LedgerBatchResponse struct {
	Results []LedgerBatchResult `json:"results"`
}

// LedgerBatchResult is the outcome of one update of a ledger batch: Applied
// as in LedgerUpdateResponse, or Error, the error that update alone got
// (for example unknown_outcome: retry it with its request id).
type LedgerBatchResult struct {
	Namespace string `json:"namespace"`
	Ledger    string `json:"ledger"`
	RequestID string `json:"request_id"`
	Applied   bool   `json:"applied"`
	Replayed  bool   `json:"replayed,omitempty"`
	Error     *Error `json:"error,omitempty"`
}
