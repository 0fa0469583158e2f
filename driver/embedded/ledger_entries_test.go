package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// FuzzDecodeLedgerEntry checks that the entry decoder refuses, with
// errCorrupt, or round-trips every input.
func FuzzDecodeLedgerEntry(f *testing.F) {
	f.Add(encodeEntry(&driver.LedgerEntry{At: 1_800_000_000_000_000, Actor: "a1b2-1", Seq: 7, RequestID: "order-1", Amount: 50}, 1_800_000_100_000_000))
	f.Add(encodeEntry(&driver.LedgerEntry{At: 0, Actor: "", Negative: true, Seq: 1, RequestID: "r", Amount: 1}, 0))
	f.Add([]byte{entryVersion})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, exp, err := decodeEntry(b)
		if err != nil {
			if !errors.Is(err, errCorrupt) {
				t.Fatalf("error %v does not wrap errCorrupt", err)
			}
			return
		}
		if got := encodeEntry(&e, exp); !bytes.Equal(got, b) {
			t.Fatalf("decodeEntry(%x) re-encodes as %x", b, got)
		}
	})
}

func TestDecodeLedgerEntryRefusesMalformed(t *testing.T) {
	t.Parallel()
	good := &driver.LedgerEntry{At: 5, Actor: "a", Seq: 1, RequestID: "r", Amount: 5}
	with := func(change func(*driver.LedgerEntry)) []byte {
		e := *good
		change(&e)
		return encodeEntry(&e, 100)
	}
	enc := encodeEntry(good, 100)
	bad := map[string][]byte{
		"future version": append([]byte{2}, enc[1:]...),
		"side byte 2":    func() []byte { b := bytes.Clone(enc); b[1+8+1+1] = 2; return b }(),
		"number 0":       with(func(e *driver.LedgerEntry) { e.Seq = 0 }),
		"amount 0":       with(func(e *driver.LedgerEntry) { e.Amount = 0 }),
		"negative time":  with(func(e *driver.LedgerEntry) { e.At = -1 }),
		"not UTF-8":      with(func(e *driver.LedgerEntry) { e.RequestID = "\xff" }),
		"trailing byte":  append(bytes.Clone(enc), 0),
		"truncated":      enc[:len(enc)-1],
	}
	for name, b := range bad {
		if _, _, err := decodeEntry(b); !errors.Is(err, errCorrupt) {
			t.Errorf("%s: decodeEntry(%x) = %v, want errCorrupt", name, b, err)
		}
	}
	if e, exp, err := decodeEntry(enc); err != nil || e != *good || exp != 100 {
		t.Errorf("decodeEntry(good) = %+v, %d, %v", e, exp, err)
	}
}

// TestExpiredEntriesAreDeleted checks that Pebble, which has no TTL, does
// not keep expired entries for ever: a write a while after they expired
// deletes them, and keeps the live ones.
func TestExpiredEntriesAreDeleted(t *testing.T) {
	t.Parallel()
	d := openMem(t)
	const minute = int64(60_000_000)
	t0 := int64(1_800_000_000_000_000)
	write := func(ts int64, ttl time.Duration, seq uint64) {
		t.Helper()
		err := d.WriteLedgerRow(context.Background(), &driver.WriteLedgerRowParams{
			Namespace: "ns", Ledger: "l", Timestamp: ts, Row: driver.LedgerRow{Actor: "a", State: []byte{byte(seq)}},
			Entries:  []driver.LedgerEntry{{At: ts, Actor: "a", Seq: seq, RequestID: fmt.Sprint("r", seq), Amount: 1}},
			EntryTTL: ttl,
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	stored := func() (n int) {
		t.Helper()
		if err := d.scanPrefix(entriesPrefix("ns", "l"), nil, func(_, _ []byte) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	write(t0, time.Second, 1)
	write(t0+1, time.Second, 2)
	write(t0+2, time.Hour, 3)
	if n := stored(); n != 3 {
		t.Fatalf("%d entries stored, want 3", n)
	}
	write(t0+30*1_000_000, time.Hour, 4) // the first two expired, but the last look was under a minute ago
	if n := stored(); n != 4 {
		t.Fatalf("%d entries stored after a write within the minute, want 4", n)
	}
	write(t0+2*minute, time.Hour, 5)
	if n := stored(); n != 3 {
		t.Fatalf("%d entries stored after a write two minutes on, want 3 (the expired two deleted)", n)
	}
	got, err := d.ReadLedgerEntries(context.Background(), &driver.ReadLedgerEntriesParams{Namespace: "ns", Ledger: "l", Limit: 10, Now: t0 + 2*minute})
	if err != nil || len(got) != 3 || got[2].Seq != 3 {
		t.Fatalf("entries after the purge = %+v, %v; want 5, 4, 3", got, err)
	}
}

// TestPurgeStopsAtItsScanLimitWithoutTouchingLiveEntries checks the purge
// when it stops at its scan limit, with the entries read from files (where
// the iterator reuses its key buffer), and that it never deletes a live
// entry or one that does not decode.
func TestPurgeStopsAtItsScanLimitWithoutTouchingLiveEntries(t *testing.T) {
	old := entryPurgeMaxScan
	entryPurgeMaxScan = 4
	t.Cleanup(func() { entryPurgeMaxScan = old })
	d := open(t, Config{Dir: t.TempDir()})
	const minute = int64(60_000_000)
	t0 := int64(1_800_000_000_000_000)
	ctx := context.Background()
	write := func(ts int64, ttl time.Duration, seqs ...uint64) {
		t.Helper()
		p := &driver.WriteLedgerRowParams{Namespace: "ns", Ledger: "l", Timestamp: ts, Row: driver.LedgerRow{Actor: "a", State: []byte{byte(ts)}}, EntryTTL: ttl}
		for _, seq := range seqs {
			p.Entries = append(p.Entries, driver.LedgerEntry{At: ts, Actor: "a", Seq: seq, RequestID: fmt.Sprint("r", seq), Amount: 1})
		}
		if err := d.WriteLedgerRow(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	stored := func() (seqs []uint64) {
		t.Helper()
		err := d.scanPrefix(entriesPrefix("ns", "l"), nil, func(_, v []byte) error {
			e, _, err := decodeEntry(v)
			if err != nil {
				seqs = append(seqs, 0) // the corrupt one
				return nil
			}
			seqs = append(seqs, e.Seq)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return seqs
	}
	write(t0, time.Second, 1, 2, 3, 4, 5) // five to expire: more than one purge scans
	write(t0+1, time.Hour, 6)             // live
	if err := d.db.Flush(); err != nil {
		t.Fatal(err)
	}
	write(t0+2*minute, time.Hour, 7)
	if got := stored(); !slices.Equal(got, []uint64{5, 6, 7}) {
		t.Fatalf("after one purge of at most 4: %v, want 5 6 7", got)
	}
	write(t0+4*minute, time.Hour, 8)
	if got := stored(); !slices.Equal(got, []uint64{6, 7, 8}) {
		t.Fatalf("after the second purge: %v, want 6 7 8 (the live ones)", got)
	}

	// A value that does not decode stops the purge; reads report it.
	bad := &driver.LedgerEntry{At: t0 - 1, Actor: "a", Seq: 99}
	if err := d.db.Set(entryKey("ns", "l", bad), []byte{entryVersion + 1}, nil); err != nil {
		t.Fatal(err)
	}
	write(t0+6*minute, time.Hour, 9)
	if got := stored(); !slices.Equal(got, []uint64{0, 6, 7, 8, 9}) {
		t.Fatalf("with a corrupt first entry: %v, want it kept", got)
	}
}
