package drivertest

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// exerciseLedgerEntries checks the history half of driver.Ledgers: a row's
// entries come back newest first in the history's order, page by page
// through After, cut at Since, isolated per ledger, gone after their TTL,
// and a write with entries that are not the row's own stores nothing.
func exerciseLedgerEntries(t *testing.T, d driver.Driver) {
	const day = int64(24 * time.Hour / time.Microsecond)
	t.Run("EntriesPageNewestFirst", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-entries")
		now := driver.Micros(time.Now())
		var all []driver.LedgerEntry
		write := func(actor string, ts, at int64, entries ...driver.LedgerEntry) {
			t.Helper()
			for i := range entries {
				entries[i].Actor, entries[i].At = actor, at
			}
			writeRowWithEntries(t, d, ns, "l", actor, ts, 72*time.Hour, entries...)
			all = append(all, entries...)
		}
		// Three actors, two days (yesterday's entries sit in another
		// Cassandra partition), two writes at one time, both sides, and
		// an actor whose id holds a zero byte and is a prefix of another.
		write("b", now-day, now-day, driver.LedgerEntry{Seq: 1, RequestID: "r1", Amount: 5})
		write("a", now-10, now-10, driver.LedgerEntry{Seq: 1, RequestID: "r2", Amount: 7},
			driver.LedgerEntry{Negative: true, Seq: 1, RequestID: "r3", Amount: 2})
		write("a", now, now-10, driver.LedgerEntry{Seq: 2, RequestID: "r4", Amount: 1}) // a resubmission keeps its time
		write("a\x00z", now, now, driver.LedgerEntry{Seq: 1, RequestID: "r5", Amount: 3})
		write("a", now+1, now, driver.LedgerEntry{Seq: 3, RequestID: "r6", Amount: 4},
			driver.LedgerEntry{Seq: 4, RequestID: "r7", Amount: 4})
		writeRowWithEntries(t, d, ns, "other", "a", now, time.Hour,
			driver.LedgerEntry{Actor: "a", At: now, Seq: 1, RequestID: "elsewhere", Amount: 1})
		slices.SortFunc(all, func(x, y driver.LedgerEntry) int {
			if driver.LedgerEntryBefore(&x, &y) {
				return -1
			}
			return 1
		})

		if got := readEntries(t, d, ns, "l", now-2*day, nil, 100); !reflect.DeepEqual(got, all) {
			t.Fatalf("one page = %+v\nwant %+v", got, all)
		}
		var paged []driver.LedgerEntry
		var after *driver.LedgerEntry
		for range len(all) + 1 {
			page := readEntries(t, d, ns, "l", now-2*day, after, 2)
			if len(page) == 0 {
				break
			}
			paged = append(paged, page...)
			after = &page[len(page)-1]
		}
		if !reflect.DeepEqual(paged, all) {
			t.Fatalf("pages of 2 = %+v\nwant %+v", paged, all)
		}
		if got := readEntries(t, d, ns, "l", now-day+1, nil, 100); !reflect.DeepEqual(got, all[:len(all)-1]) {
			t.Fatalf("since a day ago = %+v\nwant %+v", got, all[:len(all)-1])
		}
		if got := readEntries(t, d, ns, "never", now-2*day, nil, 100); len(got) != 0 {
			t.Fatalf("entries of a ledger never written = %+v", got)
		}
	})

	t.Run("EntriesExpire", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-entries-ttl")
		now := driver.Micros(time.Now())
		// Cassandra counts expiry in whole seconds of its own clock, so a
		// TTL of s seconds can end up to a second early: 4 s leaves at
		// least 3 for the first read, on a loaded machine too.
		writeRowWithEntries(t, d, ns, "l", "a", now, 4*time.Second,
			driver.LedgerEntry{Actor: "a", At: now, Seq: 1, RequestID: "r1", Amount: 1})
		if got := readEntries(t, d, ns, "l", 0, nil, 10); len(got) != 1 {
			t.Fatalf("before its TTL: %+v, want one entry", got)
		}
		time.Sleep(5100 * time.Millisecond)
		if got := readEntries(t, d, ns, "l", 0, nil, 10); len(got) != 0 {
			t.Fatalf("after its TTL: %+v, want none", got)
		}
		if rows := readLedger(t, d, ns, "l"); len(rows) != 1 {
			t.Fatalf("the row went with its entries: %+v", rows)
		}
	})

	t.Run("EntriesOfAnotherActorWriteNothing", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-entries-bad")
		now := driver.Micros(time.Now())
		for name, p := range map[string]*driver.WriteLedgerRowParams{
			"another actor": {Entries: []driver.LedgerEntry{{Actor: "b", At: now, Seq: 1, RequestID: "r", Amount: 1}}, EntryTTL: time.Hour},
			"number 0":      {Entries: []driver.LedgerEntry{{Actor: "a", At: now, Seq: 0, RequestID: "r", Amount: 1}}, EntryTTL: time.Hour},
			"amount 0":      {Entries: []driver.LedgerEntry{{Actor: "a", At: now, Seq: 1, RequestID: "r", Amount: 0}}, EntryTTL: time.Hour},
			"no TTL":        {Entries: []driver.LedgerEntry{{Actor: "a", At: now, Seq: 1, RequestID: "r", Amount: 1}}},
		} {
			p.Namespace, p.Ledger, p.Row, p.Timestamp = ns, "l", driver.LedgerRow{Actor: "a", State: []byte{1}}, now
			if err := d.WriteLedgerRow(ctx(t), p); err == nil {
				t.Errorf("%s: WriteLedgerRow succeeded", name)
			}
		}
		if rows := readLedger(t, d, ns, "l"); len(rows) != 0 {
			t.Errorf("refused writes left rows: %+v", rows)
		}
		if got := readEntries(t, d, ns, "l", 0, nil, 10); len(got) != 0 {
			t.Errorf("refused writes left entries: %+v", got)
		}
	})
}

func writeRowWithEntries(t *testing.T, d driver.Driver, ns, ledger, actor string, ts int64, ttl time.Duration, entries ...driver.LedgerEntry) {
	t.Helper()
	err := d.WriteLedgerRow(ctx(t), &driver.WriteLedgerRowParams{
		Namespace: ns, Ledger: ledger, Row: driver.LedgerRow{Actor: actor, State: []byte{byte(ts)}}, Timestamp: ts,
		Entries: entries, EntryTTL: ttl,
	})
	if err != nil {
		t.Fatalf("WriteLedgerRow(%s/%s/%s @%d with %d entries): %v", ns, ledger, actor, ts, len(entries), err)
	}
}

func readEntries(t *testing.T, d driver.Driver, ns, ledger string, since int64, after *driver.LedgerEntry, limit int) []driver.LedgerEntry {
	t.Helper()
	got, err := d.ReadLedgerEntries(ctx(t), &driver.ReadLedgerEntriesParams{
		Namespace: ns, Ledger: ledger, Since: since, After: after, Limit: limit, Now: driver.Micros(time.Now()),
	})
	if err != nil {
		t.Fatalf("ReadLedgerEntries(%s/%s): %v", ns, ledger, err)
	}
	return got
}
