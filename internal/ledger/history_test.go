package ledger

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// history reads a ledger's whole history in pages of size and returns it
// as "request id:signed amount" strings, newest first.
func history(t *testing.T, e *Engine, tg Target, size int) []string {
	t.Helper()
	var out []string
	cursor := ""
	for range 1000 {
		page, err := e.Entries(ctxT(t), tg, cursor, size)
		if err != nil {
			t.Fatalf("Entries: %v", err)
		}
		for _, en := range page.Entries {
			out = append(out, fmt.Sprintf("%s:%d", en.RequestID, en.Signed()))
		}
		if cursor = page.Next; cursor == "" {
			return out
		}
	}
	t.Fatal("the history did not end after 1000 pages")
	return nil
}

// Every applied request is in the history once, newest first, whichever
// actor applied it and however often it was retried; retries and refused
// requests are not.
func TestHistoryListsEachAppliedRequestOnce(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		for _, mode := range []Mode{ModeExact, ModeConcurrentRetriesMayDouble} {
			a, b := h.engine(), h.engine()
			tg := h.target("history-"+string(mode), Options{Mode: mode})
			mustUpdate(t, a, tg, 100, "c1")
			h.clk.Advance(time.Millisecond)
			mustUpdate(t, b, tg, -30, "d1")
			h.clk.Advance(time.Millisecond)
			mustUpdate(t, a, tg, 7, "c2")
			for _, e := range []*Engine{a, b} {
				mustUpdate(t, e, tg, 100, "c1")
				mustUpdate(t, e, tg, -30, "d1")
			}
			if _, err := a.Update(ctxT(t), tg, 5, "c2"); !errors.Is(err, ErrRequestConflict) {
				t.Fatalf("%s: reusing c2: %v", mode, err)
			}
			want := []string{"c2:7", "d1:-30", "c1:100"}
			for _, size := range []int{1, 2, 100} {
				if got := history(t, b, tg, size); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: history in pages of %d = %v, want %v", mode, size, got, want)
				}
			}
		}
	})
}

// A write whose entries landed but whose row did not (the store failed in
// between) adds nothing to the history; once such a row lands late, its
// entries show. An entry is listed exactly when it counts in the value.
func TestHistoryHidesEntriesOfARowThatDidNotLand(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		fs := &faultyStore{Ledgers: h.store}
		h.store = fs
		e := h.engine()
		tg := h.target("history-unlanded", Options{Mode: ModeConcurrentRetriesMayDouble, RetryCount: -1})
		mustUpdate(t, e, tg, 10, "landed")

		// The next write stores its entries, then "fails": its row is
		// written just below the actor's stored row, so it loses.
		rows, err := fs.ReadLedger(ctxT(t), &driver.ReadLedgerParams{Namespace: tg.Namespace, Ledger: tg.Ledger})
		if err != nil || len(rows) != 1 {
			t.Fatalf("rows = %+v, %v", rows, err)
		}
		var lost *driver.WriteLedgerRowParams
		fs.setWriteFault(func(p *driver.WriteLedgerRowParams) fault {
			if len(p.Entries) > 0 && lost == nil {
				c := *p
				lost = &c
				entriesOnly := c
				entriesOnly.Timestamp = rows[0].Timestamp - 1
				if err := fs.Ledgers.WriteLedgerRow(context.Background(), &entriesOnly); err != nil {
					t.Errorf("storing the entries alone: %v", err)
				}
				return unknownNoLand
			}
			return pass
		})
		if _, err := e.Update(ctxT(t), tg, 5, "unlanded"); !isUnknown(err) {
			t.Fatalf("the failed write: %v, want unknown outcome", err)
		}
		fs.setWriteFault(nil)
		wantValue(t, e, tg, 10)
		if got := history(t, e, tg, 10); !reflect.DeepEqual(got, []string{"landed:10"}) {
			t.Fatalf("history with the row not landed = %v, want only landed:10", got)
		}
		// A page whose only entry is hidden comes back empty, and goes on.
		first, err := e.Entries(ctxT(t), tg, "", 1)
		if err != nil || len(first.Entries) != 0 || first.Next == "" {
			t.Fatalf("first page of 1 = %+v, %v; want no entry and a next page", first, err)
		}
		if got := history(t, e, tg, 1); !reflect.DeepEqual(got, []string{"landed:10"}) {
			t.Fatalf("history in pages of 1 = %v", got)
		}
		raw, err := fs.ReadLedgerEntries(ctxT(t), &driver.ReadLedgerEntriesParams{Namespace: tg.Namespace, Ledger: tg.Ledger, Limit: 10, Now: driver.Micros(h.clk.Now())})
		if err != nil || len(raw) != 2 {
			t.Fatalf("stored entries = %+v, %v; want both, the unlanded one hidden by the read", raw, err)
		}

		// The row lands late (a replica delivers it): now it counts, and
		// it is listed.
		if err := fs.Ledgers.WriteLedgerRow(context.Background(), lost); err != nil {
			t.Fatal(err)
		}
		wantValue(t, e, tg, 15)
		if got := history(t, e, tg, 10); !reflect.DeepEqual(got, []string{"unlanded:5", "landed:10"}) {
			t.Fatalf("history after the late landing = %v", got)
		}
	})
}

// An exact-mode write whose outcome stayed unknown is finished in the
// background (settleWrite); the resubmission carries the entries, so the
// request is listed once its row lands.
func TestHistoryOfAWriteFinishedInTheBackground(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		fs := &faultyStore{Ledgers: h.store}
		e := h.engine(func(c *Config) { c.Store = fs })
		tg := h.target("history-settled", Options{Mode: ModeExact, RetryCount: -1})
		var failed atomic.Bool
		fs.setWriteFault(func(p *driver.WriteLedgerRowParams) fault {
			if failed.CompareAndSwap(false, true) {
				return unknownNoLand // the first attempt; the background ones pass
			}
			return pass
		})
		if _, err := e.Update(ctxT(t), tg, 8, "late"); !isUnknown(err) {
			t.Fatalf("the first write: %v, want unknown outcome", err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			if v, err := mustRead(t, e, tg).Value(); err == nil && v == 8 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the background write never landed")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if got := history(t, e, tg, 10); !reflect.DeepEqual(got, []string{"late:8"}) {
			t.Fatalf("history after the background write = %v, want late:8", got)
		}
	})
}

// Entries older than the retention are not listed; a namespace without a
// history writes no entries and says so when asked for them.
func TestHistoryRetentionAndNamespacesWithout(t *testing.T) {
	onEachHarness(t, func(t *testing.T, h *harness) {
		e := h.engine()
		tg := h.target("history-retention", Options{EntryRetention: time.Hour})
		mustUpdate(t, e, tg, 1, "old")
		h.clk.Advance(59 * time.Minute)
		mustUpdate(t, e, tg, 2, "new")
		if got := history(t, e, tg, 10); !reflect.DeepEqual(got, []string{"new:2", "old:1"}) {
			t.Fatalf("within the hour: %v", got)
		}
		h.clk.Advance(2 * time.Minute)
		if got := history(t, e, tg, 10); !reflect.DeepEqual(got, []string{"new:2"}) {
			t.Fatalf("after the first entry's hour: %v", got)
		}

		off := h.target("history-off", Options{EntryRetention: -1})
		mustUpdate(t, e, off, 1, "r")
		if _, err := e.Entries(ctxT(t), off, "", 10); !errors.Is(err, ErrNoHistory) {
			t.Fatalf("Entries of a namespace without history: %v, want ErrNoHistory", err)
		}
		raw, err := h.store.ReadLedgerEntries(ctxT(t), &driver.ReadLedgerEntriesParams{Namespace: off.Namespace, Ledger: off.Ledger, Limit: 10, Now: driver.Micros(h.clk.Now())})
		if err != nil || len(raw) != 0 {
			t.Fatalf("a namespace without history stored entries: %+v, %v", raw, err)
		}
		for _, bad := range []struct {
			cursor string
			limit  int
		}{{"", 0}, {"", MaxEntriesPage + 1}, {"not a cursor", 10}, {"AQ", 10}} {
			if _, err := e.Entries(ctxT(t), tg, bad.cursor, bad.limit); !errors.Is(err, ErrInvalidEntry) {
				t.Errorf("Entries(cursor %q, limit %d): %v, want ErrInvalidEntry", bad.cursor, bad.limit, err)
			}
		}
	})
}

// Options stored before ledgers had a history keep none; new ones keep
// 30 days unless told otherwise, and "none" survives storing.
func TestEntryRetentionStored(t *testing.T) {
	t.Parallel()
	old := Options{}.Stored()
	delete(old, storedEntryRetention)
	for name, tc := range map[string]struct {
		stored map[string]string
		want   time.Duration
	}{
		"made before histories": {old, -1},
		"default":               {Options{}.Stored(), DefaultEntryRetention},
		"none":                  {Options{EntryRetention: -1}.Stored(), -1},
		"an hour":               {Options{EntryRetention: time.Hour}.Stored(), time.Hour},
	} {
		o, err := OptionsFromStored(tc.stored)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := o.Effective().EntryRetention; got != tc.want {
			t.Errorf("%s: effective retention %v, want %v", name, got, tc.want)
		}
	}
	bad := Options{}.Stored()
	bad[storedEntryRetention] = "-5"
	if _, err := OptionsFromStored(bad); err == nil {
		t.Error("a negative stored retention was accepted")
	}
}

// FuzzDecodeCursor checks that a cursor from a caller is refused or read
// back as the cursor of the entry it names.
func FuzzDecodeCursor(f *testing.F) {
	f.Add(EncodeCursor(&driver.LedgerEntry{At: 1_800_000_000_000_000, Actor: "a1b2-3", Negative: true, Seq: 9}))
	f.Add("")
	f.Add("AQ")
	// Stray bits after the last byte: refused, not read as the same cursor.
	c := EncodeCursor(&driver.LedgerEntry{At: 1, Actor: "ab", Seq: 1})
	f.Add(c[:len(c)-1] + string(c[len(c)-1]+1))
	f.Fuzz(func(t *testing.T, s string) {
		e, err := DecodeCursor(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidEntry) {
				t.Fatalf("error %v does not wrap ErrInvalidEntry", err)
			}
			return
		}
		if e == nil {
			if s != "" {
				t.Fatalf("DecodeCursor(%q) = nil without an error", s)
			}
			return
		}
		if got := EncodeCursor(e); got != s {
			t.Fatalf("DecodeCursor(%q) re-encodes as %q", s, got)
		}
	})
}
