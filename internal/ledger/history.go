package ledger

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/abacusdb/abacus/driver"
)

// The history of a ledger.
//
// Every write that appends requests to an actor's row stores one entry per
// request with it (driver.LedgerEntry): the request id, the amount, the
// actor, the entry's number in its section, and when the write was made.
// The store keeps them for the namespace's EntryRetention.
//
// The store writes the entries before the row (Cassandra) or with it (the
// embedded store), never after, so a row that landed has its entries. The
// other way round does not hold: a write can fail after its entries
// landed. Such an entry names a number its actor's row never reaches,
// because an actor whose write failed is retired and writes nothing more
// (a background resubmission writes the same row, holding the same
// entries). So a reader keeps an entry only when the actor's row, read
// after the entries, has reached the entry's number: then the row holds,
// or has folded, exactly that request. An entry whose write lands late
// shows from the moment its row does. docs/ledger.md ("History") states
// what a listing promises.

// ErrNoHistory is returned by Entries for a namespace that keeps none.
var ErrNoHistory = errors.New("the ledger's namespace keeps no history (entry_retention 0)")

// MaxEntriesPage is the most entries one call to Entries returns.
const MaxEntriesPage = 1000

// HistoryPage is one page of a ledger's history.
type HistoryPage struct {
	// Entries are newest first.
	Entries []driver.LedgerEntry
	// Next continues the history after this page; empty at its end. A
	// page may hold fewer entries than asked for (even none) and still
	// have a Next.
	Next string
}

// Entries returns up to limit entries of the ledger's history, newest
// first, starting after the cursor (empty for the newest).
func (e *Engine) Entries(ctx context.Context, t Target, cursor string, limit int) (*HistoryPage, error) {
	t.Options = t.Options.WithDefaults()
	if err := t.Options.Validate(); err != nil {
		return nil, err
	}
	if !t.Options.keepsEntries() {
		return nil, ErrNoHistory
	}
	if limit < 1 || limit > MaxEntriesPage {
		return nil, fmt.Errorf("%w: limit %d is outside 1..%d", ErrInvalidEntry, limit, MaxEntriesPage)
	}
	after, err := DecodeCursor(cursor)
	if err != nil {
		return nil, err
	}
	now := driver.Micros(e.cfg.Clock.Now())
	raw, err := e.cfg.Store.ReadLedgerEntries(ctx, &driver.ReadLedgerEntriesParams{
		Namespace: t.Namespace, Ledger: t.Ledger, After: after, Limit: limit,
		Since: now - t.Options.EntryRetention.Microseconds(), Now: now,
		Consistency: t.ReadConsistency,
	})
	if err != nil {
		return nil, err
	}
	// The rows are read after the entries: every entry kept is one a
	// row had reached when this call read it. Every row, from the first:
	// a folded actor's entries are checked against its row, which stays
	// while they live.
	rows, err := e.readRows(ctx, t, t.ReadConsistency, "")
	if err != nil {
		return nil, err
	}
	st := rows.whole()
	page := &HistoryPage{Entries: make([]driver.LedgerEntry, 0, len(raw))}
	for _, en := range raw {
		if counts(st, &en) {
			page.Entries = append(page.Entries, en)
		}
	}
	if len(raw) == limit {
		page.Next = EncodeCursor(&raw[len(raw)-1])
	}
	return page, nil
}

// counts reports whether the entry's request counts in the state: its
// actor's section has reached the entry's number and, while the section
// still holds that entry, holds this request there. The second check
// matters only if an actor id was ever reused (which the package forbids):
// an entry stored by an earlier writer of the id, whose row never landed,
// must not be listed beside the request that has its number now.
func counts(st *State, en *driver.LedgerEntry) bool {
	a := st.Actor(en.Actor)
	if a == nil {
		return false
	}
	sec := a.Section(en.Negative)
	if sec.Seq() < en.Seq {
		return false
	}
	if e, ok := sec.EntryAt(en.Seq); ok && (e.RequestID != en.RequestID || e.Amount != en.Amount) {
		return false
	}
	return true
}

const cursorVersion byte = 1

// EncodeCursor is the cursor that continues a history after e: the
// fields that order entries, URL-safe.
func EncodeCursor(e *driver.LedgerEntry) string {
	b := []byte{cursorVersion}
	b = binary.BigEndian.AppendUint64(b, uint64(e.At))
	if e.Negative {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.BigEndian.AppendUint64(b, e.Seq)
	b = append(b, e.Actor...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor reads a cursor made by EncodeCursor. It comes from callers,
// so anything else is refused with ErrInvalidEntry; empty means the start.
func DecodeCursor(s string) (*driver.LedgerEntry, error) {
	if s == "" {
		return nil, nil
	}
	// Strict: a cursor with stray bits after its last byte is not one
	// EncodeCursor made.
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	const fixed = 1 + 8 + 1 + 8
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: cursor is not one this server made: %v", ErrInvalidEntry, err)
	case len(b) < fixed || b[0] != cursorVersion:
		return nil, fmt.Errorf("%w: cursor is not one this server made", ErrInvalidEntry)
	}
	e := &driver.LedgerEntry{
		At:       int64(binary.BigEndian.Uint64(b[1:])),
		Negative: b[9] == 1,
		Seq:      binary.BigEndian.Uint64(b[10:]),
		Actor:    string(b[fixed:]),
	}
	if b[9] > 1 || e.At < 0 || e.Seq == 0 || e.Seq > math.MaxInt64 || len(e.Actor) > 256 || !utf8.ValidString(e.Actor) {
		return nil, fmt.Errorf("%w: cursor is not one this server made", ErrInvalidEntry)
	}
	return e, nil
}
