package drivertest

import (
	"bytes"
	"errors"
	"reflect"
	"sync"
	"testing"

	"github.com/abacusdb/abacus/driver"
)

// exerciseLedgerBase checks the base row and reads from a cut (package
// ledger, "Folding retired actors"): a read from a cut returns the rows
// at or after it, the base among them; the base changes only by
// compare-and-set, and of racing swaps from one state one wins; a plain
// row write may not name the base; rows are deleted as of their write.
func exerciseLedgerBase(t *testing.T, d driver.Driver, open Opener) {
	swap := func(t *testing.T, ns, ledger string, expect, next []byte) bool {
		t.Helper()
		ok, err := d.SwapLedgerBase(ctx(t), &driver.SwapLedgerBaseParams{Namespace: ns, Ledger: ledger, Expect: expect, Next: next})
		if err != nil {
			t.Fatalf("SwapLedgerBase(%x → %x): %v", expect, next, err)
		}
		return ok
	}
	readFrom := func(t *testing.T, ns, ledger, from string) []string {
		t.Helper()
		rows, err := d.ReadLedger(ctx(t), &driver.ReadLedgerParams{Namespace: ns, Ledger: ledger, From: from})
		if err != nil {
			t.Fatalf("ReadLedger(from %q): %v", from, err)
		}
		var actors []string
		for _, r := range rows {
			actors = append(actors, r.Actor)
		}
		return actors
	}

	t.Run("ReadFromACutReturnsTheRowsAtOrAfterItAndTheBase", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-cut")
		// Ids of several lengths: a store may keep them by length first.
		actors := []string{"0", "0000000a.x-1", "0000000a.x-10", "0000000b.x-1", "0000000b.y-2", "0000000c.longer-100", "0000000c.x-3", "zz"}
		for i, a := range actors {
			writeRow(t, d, ns, "l", a, []byte{byte(i)}, int64(10+i))
		}
		if !swap(t, ns, "l", nil, []byte{7}) {
			t.Fatal("the first base was refused")
		}
		// The last one: no actor row at or after the cut; the base still
		// comes back, or a ledger whose actors were all folded would read
		// as 0.
		for _, from := range []string{"", "0", "00", "0000000b", "0000000b.y-2", "0000000c.x", "0000000d", "z", "zz0"} {
			var want []string
			for _, a := range actors {
				if a >= from {
					want = append(want, a)
				}
			}
			want = append(want, driver.LedgerBaseActor)
			if got := readFrom(t, ns, "l", from); !reflect.DeepEqual(got, want) {
				t.Errorf("from %q: %v, want %v", from, got, want)
			}
		}
		if got := readFrom(t, ns, "other", "0"); len(got) != 0 {
			t.Errorf("another ledger from a cut: %v, want nothing", got)
		}
	})

	t.Run("BaseChangesOnlyFromTheStateItExpects", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-base")
		if swap(t, ns, "l", []byte{1}, []byte{2}) {
			t.Fatal("a swap expecting a base was applied where none is stored")
		}
		if !swap(t, ns, "l", nil, []byte{1}) {
			t.Fatal("the first base was refused")
		}
		if swap(t, ns, "l", nil, []byte{9}) {
			t.Fatal("a second first base was applied")
		}
		if swap(t, ns, "l", []byte{3}, []byte{9}) {
			t.Fatal("a swap from a state not stored was applied")
		}
		if !swap(t, ns, "l", []byte{1}, []byte{2}) {
			t.Fatal("a swap from the stored state was refused")
		}
		rows := readLedger(t, d, ns, "l")
		if len(rows) != 1 || rows[0].Actor != driver.LedgerBaseActor || !bytes.Equal(rows[0].State, []byte{2}) {
			t.Fatalf("rows after the swaps = %+v, want only the base with state 02", rows)
		}
		// Actor rows written around it leave it alone.
		writeRow(t, d, ns, "l", "0000000a.x-1", []byte{5}, 1<<50)
		if !swap(t, ns, "l", []byte{2}, []byte{3}) {
			t.Fatal("a swap after an actor's write was refused")
		}
	})

	// Racing Paxos rounds may end with an unknown outcome; a racer then
	// swaps again, and a refusal means some racer's swap is stored, which
	// may be its own earlier one. Afterwards the stored base is exactly
	// one racer's, and no other racer was told it applied.
	t.Run("OneOfRacingSwapsWins", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-race")
		if !swap(t, ns, "l", nil, []byte{0}) {
			t.Fatal("the first base was refused")
		}
		const racers = 4
		applied := make([]bool, racers)
		errs := make([]error, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() {
				for range 10 {
					ok, err := d.SwapLedgerBase(ctx(t), &driver.SwapLedgerBaseParams{Namespace: ns, Ledger: "l", Expect: []byte{0}, Next: []byte{byte(i + 1)}})
					if errors.Is(err, driver.ErrUnknownOutcome) || errors.Is(err, driver.ErrUnavailable) {
						errs[i] = err
						continue
					}
					applied[i], errs[i] = ok, err
					return
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("racers failed: %v", err)
		}
		rows := readLedger(t, d, ns, "l")
		if len(rows) != 1 || len(rows[0].State) != 1 || rows[0].State[0] < 1 || rows[0].State[0] > racers {
			t.Fatalf("stored base %+v, want one racer's", rows)
		}
		winner := int(rows[0].State[0]) - 1
		for i, ok := range applied {
			if ok && i != winner {
				t.Fatalf("racer %d was told its swap applied, but racer %d's is stored", i, winner)
			}
		}
	})

	t.Run("PlainWritesMayNotNameTheBase", func(t *testing.T) {
		t.Parallel()
		err := d.WriteLedgerRow(ctx(t), &driver.WriteLedgerRowParams{Namespace: unique("ns-res"), Ledger: "l", Row: driver.LedgerRow{Actor: driver.LedgerBaseActor, State: []byte{1}}, Timestamp: 1})
		if err == nil {
			t.Fatal("a plain write of the base row was accepted")
		}
	})

	t.Run("DeletesRowsAsOfTheirWrite", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-del")
		writeRow(t, d, ns, "l", "a", []byte{1}, 10)
		writeRow(t, d, ns, "l", "b", []byte{2}, 20)
		writeRow(t, d, ns, "l", "c", []byte{3}, 30)
		writeRow(t, d, ns, "other", "a", []byte{4}, 10)
		err := d.DeleteLedgerRows(ctx(t), &driver.DeleteLedgerRowsParams{Namespace: ns, Ledger: "l", Rows: []driver.LedgerRow{
			{Actor: "a", Timestamp: 10},
			{Actor: "b", Timestamp: 15}, // written again since: it stays
			{Actor: "c", Timestamp: 30},
			{Actor: "never-written", Timestamp: 40},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if got := readFrom(t, ns, "l", ""); !reflect.DeepEqual(got, []string{"b"}) {
			t.Fatalf("rows after the delete: %v, want only b, written after the time it was deleted as of", got)
		}
		if got := readFrom(t, ns, "other", ""); !reflect.DeepEqual(got, []string{"a"}) {
			t.Fatalf("another ledger's rows after the delete: %v, want a", got)
		}
		for _, bad := range [][]driver.LedgerRow{nil, {{Actor: driver.LedgerBaseActor, Timestamp: 1}}} {
			if err := d.DeleteLedgerRows(ctx(t), &driver.DeleteLedgerRowsParams{Namespace: ns, Ledger: "l", Rows: bad}); err == nil {
				t.Errorf("a delete of %v was accepted", bad)
			}
		}
	})

	t.Run("Closed", func(t *testing.T) {
		d2 := openClosed(t, open)
		_, err := d2.SwapLedgerBase(ctx(t), &driver.SwapLedgerBaseParams{Namespace: "x", Ledger: "y", Next: []byte{1}})
		if !errors.Is(err, driver.ErrClosed) {
			t.Errorf("SwapLedgerBase after Close: got %v, want ErrClosed", err)
		}
		err = d2.DeleteLedgerRows(ctx(t), &driver.DeleteLedgerRowsParams{Namespace: "x", Ledger: "y", Rows: []driver.LedgerRow{{Actor: "a", Timestamp: 1}}})
		if !errors.Is(err, driver.ErrClosed) {
			t.Errorf("DeleteLedgerRows after Close: got %v, want ErrClosed", err)
		}
	})
}
