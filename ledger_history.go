package abacus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/abacusdb/abacus/internal/ledger"
)

// MaxLedgerHistoryPage is the most entries one LedgerHistory call returns.
const MaxLedgerHistoryPage = ledger.MaxEntriesPage

// LedgerEntry is one applied request in a ledger's history.
type LedgerEntry struct {
	RequestID string
	// Amount is signed: negative for a debit.
	Amount int64
	// At is when the server first wrote the entry (its clock).
	At time.Time
	// Actor is the writer that applied it: one server process's actor for
	// the ledger. Two entries with one request id and different actors
	// can happen only in mode concurrent_retries_may_double.
	Actor string
}

// LedgerHistory is one page of a ledger's history.
type LedgerHistory struct {
	Namespace string
	Ledger    string
	// Entries are newest first.
	Entries []LedgerEntry
	// Next is the cursor of the next page; empty at the end. A page may
	// hold fewer entries than asked for, even none, and still go on.
	Next string
}

// LedgerHistory returns up to limit (1 to MaxLedgerHistoryPage) entries of
// a ledger's history, newest first, after cursor (empty for the first
// page; pass LedgerHistory.Next for the next). An entry is listed once the
// write holding it has landed, for the namespace's EntryRetention (see
// LedgerOptions); a request is listed exactly when it counts in the
// ledger's value. ErrInvalid: a bad limit or cursor, or a namespace
// that keeps no history.
func (c *Client) LedgerHistory(ctx context.Context, namespace, name, cursor string, limit int) (*LedgerHistory, error) {
	ns, t, err := c.ledgerTarget(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	page, err := c.ledger.Entries(ctx, t, cursor, limit)
	switch {
	case errors.Is(err, ledger.ErrNoHistory) || errors.Is(err, ledger.ErrInvalidEntry):
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	case err != nil:
		return nil, publicError(err)
	}
	h := &LedgerHistory{Namespace: ns.Name, Ledger: name, Entries: make([]LedgerEntry, len(page.Entries)), Next: page.Next}
	for i, e := range page.Entries {
		h.Entries[i] = LedgerEntry{RequestID: e.RequestID, Amount: e.Signed(), At: time.UnixMicro(e.At).UTC(), Actor: e.Actor}
	}
	return h, nil
}
