package drivertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/abacusdb/abacus/driver"
)

// exerciseLedgerRights checks driver.LedgerRightsStore: a record is stored
// only by a swap from the version stored, every refusal returns the record
// stored and changes nothing, a swap that would not step the version by one
// is an error, of racing swaps from one version exactly one is applied, and
// records of different ledgers and namespaces are independent.
func exerciseLedgerRights(t *testing.T, d driver.Driver, open Opener) {
	t.Run("NeverStoredIsVersion0", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-rights")
		for _, cl := range []driver.Consistency{driver.Default, driver.Quorum, driver.LocalQuorum, driver.One} {
			got, err := d.ReadLedgerRights(ctx(t), &driver.ReadLedgerRightsParams{Namespace: ns, Ledger: "never", Consistency: cl})
			if err != nil || got.Version != 0 || len(got.State) != 0 {
				t.Errorf("ReadLedgerRights at %v of a record never stored = %+v, %v; want version 0, no state", cl, got, err)
			}
		}
	})

	t.Run("SwapsStepTheVersion", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-rights-swap")
		v1 := driver.LedgerRights{Version: 1, State: []byte("granted a=5")}
		if applied, cur := swapRights(t, d, ns, "l", 0, v1); !applied {
			t.Fatalf("swap from 0 of a ledger without a record refused, found %+v", cur)
		}
		for _, cl := range []driver.Consistency{driver.Default, driver.Quorum, driver.LocalQuorum, driver.One} {
			got, err := d.ReadLedgerRights(ctx(t), &driver.ReadLedgerRightsParams{Namespace: ns, Ledger: "l", Consistency: cl})
			if err != nil || !sameRights(got, v1) {
				t.Errorf("ReadLedgerRights at %v = %+v, %v; want %+v", cl, got, err, v1)
			}
		}
		// A second swap from 0 is refused and learns what is stored.
		if applied, cur := swapRights(t, d, ns, "l", 0, driver.LedgerRights{Version: 1, State: []byte("other")}); applied || !sameRights(cur, v1) {
			t.Fatalf("second swap from 0 = applied %v, found %+v; want refused, finding %+v", applied, cur, v1)
		}
		wantRights(t, d, ns, "l", v1)
		// An empty state is a state like any other; the swap runs at a
		// local level too.
		v2 := driver.LedgerRights{Version: 2}
		applied, cur, err := d.SwapLedgerRights(ctx(t), &driver.SwapLedgerRightsParams{
			Namespace: ns, Ledger: "l", Expect: 1, Next: v2, Consistency: driver.LocalQuorum,
		})
		if err != nil || !applied {
			t.Fatalf("swap from 1 to 2 = applied %v, found %+v, %v; want applied", applied, cur, err)
		}
		wantRights(t, d, ns, "l", v2)
		v3 := driver.LedgerRights{Version: 3, State: bytes.Repeat([]byte{0, 0xff}, 300)}
		if applied, cur := swapRights(t, d, ns, "l", 2, v3); !applied {
			t.Fatalf("swap from 2 to 3 refused, found %+v", cur)
		}
		wantRights(t, d, ns, "l", v3)
	})

	t.Run("StaleSwapsAreRefused", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-rights-stale")
		stored := driver.LedgerRights{}
		for v := int64(1); v <= 3; v++ {
			next := driver.LedgerRights{Version: v, State: fmt.Appendf(nil, "state %d", v)}
			if applied, cur := swapRights(t, d, ns, "l", v-1, next); !applied {
				t.Fatalf("swap from %d refused, found %+v", v-1, cur)
			}
			stored = next
		}
		// Versions behind the stored one (the last of them stores the
		// stored version again) and ahead of it.
		for _, expect := range []int64{0, 1, 2, 4, 1000} {
			next := driver.LedgerRights{Version: expect + 1, State: []byte("stale")}
			if applied, cur := swapRights(t, d, ns, "l", expect, next); applied || !sameRights(cur, stored) {
				t.Errorf("swap from %d = applied %v, found %+v; want refused, finding %+v", expect, applied, cur, stored)
			}
		}
		wantRights(t, d, ns, "l", stored)
		// A swap from a version of a ledger without a record finds none.
		if applied, cur := swapRights(t, d, ns, "none", 1, driver.LedgerRights{Version: 2, State: []byte("x")}); applied || cur.Version != 0 || len(cur.State) != 0 {
			t.Errorf("swap from 1 of a ledger without a record = applied %v, found %+v; want refused, finding version 0", applied, cur)
		}
		wantRights(t, d, ns, "none", driver.LedgerRights{})
	})

	t.Run("SwapsThatDoNotStepByOneAreErrors", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-rights-bad")
		for _, p := range []driver.SwapLedgerRightsParams{
			{Expect: 0, Next: driver.LedgerRights{Version: 0, State: []byte("x")}},
			{Expect: 0, Next: driver.LedgerRights{Version: 2, State: []byte("x")}},
			{Expect: -1, Next: driver.LedgerRights{Version: 0, State: []byte("x")}},
			{Expect: math.MaxInt64, Next: driver.LedgerRights{Version: math.MinInt64, State: []byte("x")}},
		} {
			p.Namespace, p.Ledger = ns, "l"
			if applied, cur, err := d.SwapLedgerRights(ctx(t), &p); err == nil || applied {
				t.Errorf("swap from %d to %d = applied %v, found %+v, %v; want an error", p.Expect, p.Next.Version, applied, cur, err)
			}
		}
		wantRights(t, d, ns, "l", driver.LedgerRights{})
		v1 := driver.LedgerRights{Version: 1, State: []byte("one")}
		swapRights(t, d, ns, "l", 0, v1)
		for _, next := range []int64{1, 3, 0} {
			p := driver.SwapLedgerRightsParams{Namespace: ns, Ledger: "l", Expect: 1, Next: driver.LedgerRights{Version: next, State: []byte("x")}}
			if applied, cur, err := d.SwapLedgerRights(ctx(t), &p); err == nil || applied {
				t.Errorf("swap from 1 to %d = applied %v, found %+v, %v; want an error", next, applied, cur, err)
			}
		}
		wantRights(t, d, ns, "l", v1)
	})

	// Eight racers swap their own record in from one version, first onto
	// a ledger without a record (Cassandra: INSERT ... IF NOT EXISTS),
	// then from version 1 (UPDATE ... IF version = 1). Racing Paxos rounds
	// may time out with an unknown outcome, or a refused swap's read of
	// the record may find no quorum (unavailable); the racer then swaps
	// again, and finding its own record stored means it won.
	t.Run("RacingSwapsOneApplied", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-rights-race")
		for _, expect := range []int64{0, 1} {
			ledger := fmt.Sprint("l", expect)
			if expect == 1 {
				swapRights(t, d, ns, ledger, 0, driver.LedgerRights{Version: 1, State: []byte("start")})
			}
			const racers = 8
			mine := func(i int) driver.LedgerRights {
				return driver.LedgerRights{Version: expect + 1, State: fmt.Appendf(nil, "racer %d", i)}
			}
			won := make([]bool, racers)
			errs := race(racers, func(i int) error {
				var err error
				for range 10 {
					var (
						applied bool
						cur     driver.LedgerRights
					)
					applied, cur, err = d.SwapLedgerRights(ctx(t), &driver.SwapLedgerRightsParams{
						Namespace: ns, Ledger: ledger, Expect: expect, Next: mine(i),
					})
					if errors.Is(err, driver.ErrUnknownOutcome) || errors.Is(err, driver.ErrUnavailable) {
						continue
					}
					if err == nil {
						won[i] = applied || sameRights(cur, mine(i))
						if !applied && cur.Version <= expect {
							err = fmt.Errorf("racer %d: refused, but the record found is %+v", i, cur)
						}
					}
					return err
				}
				return err
			})
			if err := errors.Join(errs...); err != nil {
				t.Fatalf("from %d: %v", expect, err)
			}
			winner := -1
			for i, w := range won {
				if !w {
					continue
				}
				if winner >= 0 {
					t.Fatalf("from %d: racers %d and %d both applied their swap", expect, winner, i)
				}
				winner = i
			}
			if winner < 0 {
				t.Fatalf("from %d: no racer's swap was applied", expect)
			}
			wantRights(t, d, ns, ledger, mine(winner))
		}
	})

	// A data center's share of a ledger's rights is a record of its own:
	// apart from the ledger's record and from other data centers', with
	// the same compare-and-set, which racing swaps show.
	t.Run("DataCenterRecordsAreTheirOwn", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-rights-dc")
		dc := dataCenterOf(d)
		own := driver.LedgerRights{Version: 1, State: []byte("own")}
		swapRights(t, d, ns, "l", 0, own)
		read := func(ledger, dc string) driver.LedgerRights {
			t.Helper()
			r, err := d.ReadLedgerRights(ctx(t), &driver.ReadLedgerRightsParams{Namespace: ns, Ledger: ledger, DataCenter: dc, Consistency: driver.LocalQuorum})
			if err != nil {
				t.Fatalf("ReadLedgerRights(%s/%s in %q): %v", ns, ledger, dc, err)
			}
			return r
		}
		if got := read("l", dc); got.Version != 0 {
			t.Fatalf("the share of %s before any swap = %+v; want none (the ledger's own record is another)", dc, got)
		}
		const racers = 4
		won := make([]bool, racers)
		errs := race(racers, func(i int) error {
			next := driver.LedgerRights{Version: 1, State: fmt.Appendf(nil, "share %d", i)}
			for range 10 {
				applied, cur, err := d.SwapLedgerRights(ctx(t), &driver.SwapLedgerRightsParams{
					Namespace: ns, Ledger: "l", DataCenter: dc, Expect: 0, Next: next, Consistency: driver.LocalQuorum,
				})
				if errors.Is(err, driver.ErrUnknownOutcome) || errors.Is(err, driver.ErrUnavailable) {
					continue
				}
				if err == nil {
					won[i] = applied || sameRights(cur, next)
				}
				return err
			}
			return errors.New("no answer in 10 swaps")
		})
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		winners := 0
		for i, w := range won {
			if w {
				winners++
				if got := read("l", dc); !sameRights(got, driver.LedgerRights{Version: 1, State: fmt.Appendf(nil, "share %d", i)}) {
					t.Errorf("the share after racer %d won = %+v", i, got)
				}
			}
		}
		if winners != 1 {
			t.Fatalf("%d racers applied their swap of the share from version 0; want 1", winners)
		}
		wantRights(t, d, ns, "l", own)
		for _, other := range [][2]string{{"l", dc + "x"}, {"l2", dc}} {
			if got := read(other[0], other[1]); got.Version != 0 {
				t.Errorf("record %s in %q = %+v; want none", other[0], other[1], got)
			}
		}
	})

	t.Run("LedgersAndNamespacesAreIndependent", func(t *testing.T) {
		t.Parallel()
		// Names chosen so that a key layout that merely concatenates
		// components would mix them up.
		ns := unique("ns-rights-iso")
		keys := [][2]string{{ns + "a", "bc"}, {ns + "ab", "c"}, {ns + "a", "b"}, {ns + "a", "bcd"}}
		for i, k := range keys[:2] {
			r := driver.LedgerRights{Version: 1, State: []byte{byte(i + 1)}}
			if applied, cur := swapRights(t, d, k[0], k[1], 0, r); !applied {
				t.Fatalf("swap from 0 in %s/%s refused, found %+v", k[0], k[1], cur)
			}
		}
		wantRights(t, d, keys[0][0], keys[0][1], driver.LedgerRights{Version: 1, State: []byte{1}})
		wantRights(t, d, keys[1][0], keys[1][1], driver.LedgerRights{Version: 1, State: []byte{2}})
		for _, k := range keys[2:] {
			wantRights(t, d, k[0], k[1], driver.LedgerRights{})
		}
		// Moving one ledger on leaves the others where they are.
		swapRights(t, d, keys[0][0], keys[0][1], 1, driver.LedgerRights{Version: 2, State: []byte{3}})
		wantRights(t, d, keys[1][0], keys[1][1], driver.LedgerRights{Version: 1, State: []byte{2}})
		if applied, cur := swapRights(t, d, keys[1][0], keys[1][1], 1, driver.LedgerRights{Version: 2, State: []byte{4}}); !applied {
			t.Fatalf("swap from 1 in %s/%s refused, found %+v", keys[1][0], keys[1][1], cur)
		}
		wantRights(t, d, keys[0][0], keys[0][1], driver.LedgerRights{Version: 2, State: []byte{3}})
		wantRights(t, d, keys[1][0], keys[1][1], driver.LedgerRights{Version: 2, State: []byte{4}})
	})

	t.Run("Closed", func(t *testing.T) {
		d2 := openClosed(t, open)
		c := context.Background()
		if _, err := d2.ReadLedgerRights(c, &driver.ReadLedgerRightsParams{Namespace: "x", Ledger: "y"}); !errors.Is(err, driver.ErrClosed) {
			t.Errorf("ReadLedgerRights after Close: got %v, want ErrClosed", err)
		}
		_, _, err := d2.SwapLedgerRights(c, &driver.SwapLedgerRightsParams{Namespace: "x", Ledger: "y", Next: driver.LedgerRights{Version: 1}})
		if !errors.Is(err, driver.ErrClosed) {
			t.Errorf("SwapLedgerRights after Close: got %v, want ErrClosed", err)
		}
	})
}

// sameRights compares two records, an empty State equal to a nil one.
func sameRights(a, b driver.LedgerRights) bool {
	return a.Version == b.Version && bytes.Equal(a.State, b.State)
}

// swapRights swaps next in from expect and returns whether it was applied
// and, if not, the record found.
func swapRights(t *testing.T, d driver.Driver, ns, ledger string, expect int64, next driver.LedgerRights) (bool, driver.LedgerRights) {
	t.Helper()
	applied, cur, err := d.SwapLedgerRights(ctx(t), &driver.SwapLedgerRightsParams{Namespace: ns, Ledger: ledger, Expect: expect, Next: next})
	if err != nil {
		t.Fatalf("SwapLedgerRights(%s/%s from %d to %d): %v", ns, ledger, expect, next.Version, err)
	}
	return applied, cur
}

func readRights(t *testing.T, d driver.Driver, ns, ledger string) driver.LedgerRights {
	t.Helper()
	r, err := d.ReadLedgerRights(ctx(t), &driver.ReadLedgerRightsParams{Namespace: ns, Ledger: ledger})
	if err != nil {
		t.Fatalf("ReadLedgerRights(%s/%s): %v", ns, ledger, err)
	}
	return r
}

func wantRights(t *testing.T, d driver.Driver, ns, ledger string, want driver.LedgerRights) {
	t.Helper()
	if got := readRights(t, d, ns, ledger); !sameRights(got, want) {
		t.Errorf("ReadLedgerRights(%s/%s) = %+v, want %+v", ns, ledger, got, want)
	}
}

// dataCenterOf names a data center of d's cluster, for the records of a
// data center's share: the first of a driver that reports its data
// centers (Cassandra's purge knows only those), any name otherwise.
func dataCenterOf(d driver.Driver) string {
	if r, ok := d.(interface{ DataCenters() map[string]int }); ok {
		var names []string
		for dc := range r.DataCenters() {
			names = append(names, dc)
		}
		if len(names) > 0 {
			slices.Sort(names)
			return names[0]
		}
	}
	return "dc1"
}
