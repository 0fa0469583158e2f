package drivertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// exerciseLedgers checks the driver.Ledgers contracts: actor rows follow
// the last-write-wins rules, a ledger's rows come back sorted and isolated
// from other ledgers, and claims admit exactly one winner, can be released
// only by whoever matches them, and expire.
func exerciseLedgers(t *testing.T, d driver.Driver, open Opener) {
	t.Run("EmptyLedgerHasNoRows", func(t *testing.T) {
		t.Parallel()
		rows := readLedger(t, d, unique("ns"), "never-written")
		if len(rows) != 0 {
			t.Fatalf("ReadLedger of an unwritten ledger = %+v, want no rows", rows)
		}
	})

	t.Run("RowsRoundTripSortedByActor", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-ledger")
		writeRow(t, d, ns, "l", "b-actor", []byte{1, 2, 3}, 200)
		writeRow(t, d, ns, "l", "a", []byte{9}, 100)
		writeRow(t, d, ns, "l", "c-actor", []byte{}, 300) // an empty state is a state, not a null
		want := []driver.LedgerRow{
			{Actor: "a", State: []byte{9}, Timestamp: 100},
			{Actor: "b-actor", State: []byte{1, 2, 3}, Timestamp: 200},
			{Actor: "c-actor", State: []byte{}, Timestamp: 300},
		}
		if got := readLedger(t, d, ns, "l"); !reflect.DeepEqual(got, want) {
			t.Fatalf("ReadLedger = %+v, want %+v", got, want)
		}
	})

	t.Run("LedgersAndNamespacesAreIsolated", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-iso")
		// Names that concatenate to the same bytes must stay apart.
		writeRow(t, d, ns, "ab", "c", []byte{1}, 10)
		writeRow(t, d, ns, "a", "bc", []byte{2}, 10)
		writeRow(t, d, ns+"x", "ab", "c", []byte{3}, 10)
		for _, tc := range []struct {
			ns, ledger, actor string
			state             byte
		}{{ns, "ab", "c", 1}, {ns, "a", "bc", 2}, {ns + "x", "ab", "c", 3}} {
			rows := readLedger(t, d, tc.ns, tc.ledger)
			if len(rows) != 1 || rows[0].Actor != tc.actor || !bytes.Equal(rows[0].State, []byte{tc.state}) {
				t.Errorf("%s/%s = %+v, want only actor %s with state %d", tc.ns, tc.ledger, rows, tc.actor, tc.state)
			}
		}
	})

	t.Run("LastWriteWins", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-lww")
		writeRow(t, d, ns, "l", "a", []byte("new"), 200)
		writeRow(t, d, ns, "l", "a", []byte("old"), 100) // arrives late, older
		wantRow(t, d, ns, "l", "a", []byte("new"), 200)
		writeRow(t, d, ns, "l", "a", []byte("new"), 200) // a replay
		wantRow(t, d, ns, "l", "a", []byte("new"), 200)
		writeRow(t, d, ns, "l", "a", []byte("newer"), 201)
		wantRow(t, d, ns, "l", "a", []byte("newer"), 201)
	})

	t.Run("EqualTimestampsGreaterStateWins", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-tie")
		for i, order := range [][2][]byte{{{1, 5}, {1, 7}}, {{1, 7}, {1, 5}}} {
			ledger := fmt.Sprint("l", i)
			writeRow(t, d, ns, ledger, "a", order[0], 50)
			writeRow(t, d, ns, ledger, "a", order[1], 50)
			wantRow(t, d, ns, ledger, "a", []byte{1, 7}, 50)
		}
	})

	t.Run("RowsWrittenTogether", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-rows")
		now := driver.Micros(time.Now())
		writeRow(t, d, ns, "to", "x", []byte("newer"), now+50) // the write below arrives late for this row
		debit := driver.LedgerEntry{At: now, Actor: "x", Negative: true, Seq: 1, RequestID: "t1", Amount: 5}
		credit := driver.LedgerEntry{At: now, Actor: "x", Seq: 1, RequestID: "t1", Amount: 5}
		err := d.WriteLedgerRows(ctx(t), []driver.WriteLedgerRowParams{
			{Namespace: ns, Ledger: "from", Row: driver.LedgerRow{Actor: "x", State: []byte{1}}, Timestamp: now,
				Entries: []driver.LedgerEntry{debit}, EntryTTL: time.Hour},
			{Namespace: ns, Ledger: "to", Row: driver.LedgerRow{Actor: "x", State: []byte{2}}, Timestamp: now,
				Entries: []driver.LedgerEntry{credit}, EntryTTL: time.Hour},
			{Namespace: ns, Ledger: "to", Row: driver.LedgerRow{Actor: "y", State: []byte{3}}, Timestamp: now},
		})
		if err != nil {
			t.Fatalf("WriteLedgerRows: %v", err)
		}
		wantRow(t, d, ns, "from", "x", []byte{1}, now)
		want := []driver.LedgerRow{{Actor: "x", State: []byte("newer"), Timestamp: now + 50}, {Actor: "y", State: []byte{3}, Timestamp: now}}
		if got := readLedger(t, d, ns, "to"); !reflect.DeepEqual(got, want) {
			t.Fatalf("ledger \"to\" = %+v, want %+v (each row by the last-write-wins rules)", got, want)
		}
		for ledger, e := range map[string]driver.LedgerEntry{"from": debit, "to": credit} {
			if got := readEntries(t, d, ns, ledger, now-1, nil, 10); len(got) != 1 || got[0] != e {
				t.Errorf("entries of %s = %+v, want %+v", ledger, got, e)
			}
		}
	})

	t.Run("RowsWrittenTogetherRefused", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-rows-bad")
		row := func(ledger, actor string) driver.WriteLedgerRowParams {
			return driver.WriteLedgerRowParams{Namespace: ns, Ledger: ledger, Row: driver.LedgerRow{Actor: actor, State: []byte{1}}, Timestamp: 10}
		}
		mixed := []driver.WriteLedgerRowParams{row("a", "x"), row("b", "x")}
		mixed[1].Consistency = driver.All
		badEntry := []driver.WriteLedgerRowParams{row("a", "x"), row("b", "x")}
		badEntry[1].Entries, badEntry[1].EntryTTL = []driver.LedgerEntry{{Actor: "someone else", Seq: 1, RequestID: "r", Amount: 1}}, time.Hour
		many := make([]driver.WriteLedgerRowParams, driver.MaxLedgerRowWrites+1)
		for i := range many {
			many[i] = row("a", fmt.Sprint("x", i))
		}
		for name, ws := range map[string][]driver.WriteLedgerRowParams{
			"none": nil, "a row twice": {row("a", "x"), row("b", "x"), row("a", "x")},
			"two levels": mixed, "an entry of another actor": badEntry, "too many": many,
		} {
			if err := d.WriteLedgerRows(ctx(t), ws); err == nil {
				t.Errorf("WriteLedgerRows of %s: no error", name)
			}
		}
		for _, ledger := range []string{"a", "b"} {
			if rows := readLedger(t, d, ns, ledger); len(rows) != 0 {
				t.Errorf("ledger %s after refused writes: %+v, want no rows", ledger, rows)
			}
		}
	})

	claim := func(actor string, seq uint64) driver.Claim {
		return driver.Claim{Actor: actor, Negative: seq%2 == 0, Seq: seq, Amount: -int64(seq) * 10}
	}

	t.Run("FirstClaimWins", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-claim")
		first, second := claim("a1", 3), claim("a2", 4)
		if r := claimRequest(t, d, ns, "l", "req", first, time.Hour); !r.Won || r.Current != first {
			t.Fatalf("first claim = %+v, want won with %+v", r, first)
		}
		if r := claimRequest(t, d, ns, "l", "req", second, time.Hour); r.Won || r.Current != first {
			t.Fatalf("second claim = %+v, want lost to %+v", r, first)
		}
		// Repeating the winner's call (its outcome was unknown) finds its claim.
		if r := claimRequest(t, d, ns, "l", "req", first, time.Hour); r.Won || r.Current != first {
			t.Fatalf("repeated claim = %+v, want to find %+v", r, first)
		}
		// Other request ids, ledgers and namespaces are unaffected.
		for _, k := range [][3]string{{ns, "l", "req2"}, {ns, "l2", "req"}, {ns + "x", "l", "req"}} {
			if r := claimRequest(t, d, k[0], k[1], k[2], second, time.Hour); !r.Won {
				t.Errorf("claim of %v lost to %+v", k, r.Current)
			}
		}
	})

	t.Run("RacingClaimsOneWinner", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-claimrace")
		const racers = 8
		results := make([]driver.ClaimResult, racers)
		errs := race(racers, func(i int) error {
			mine := claim(fmt.Sprint("actor", i), uint64(i+1))
			// Contending Paxos rounds may time out with an unknown
			// outcome; repeating the call is the documented remedy,
			// and finding its own claim then means it won.
			var err error
			for range 10 {
				results[i], err = d.ClaimRequest(ctx(t), &driver.ClaimRequestParams{
					Namespace: ns, Ledger: "l", RequestID: "req", Claim: mine,
					TTL: time.Hour, Now: driver.Micros(time.Now()),
				})
				if !errors.Is(err, driver.ErrUnknownOutcome) {
					break
				}
			}
			if err == nil && results[i].Current == mine {
				results[i].Won = true
			}
			return err
		})
		winners := 0
		for i := range racers {
			if errs[i] != nil {
				t.Fatalf("racer %d: %v", i, errs[i])
			}
			if results[i].Won {
				winners++
			}
			if results[i].Current != results[0].Current {
				t.Fatalf("racers disagree on the stored claim: %+v vs %+v", results[i].Current, results[0].Current)
			}
		}
		if winners != 1 {
			t.Fatalf("%d winners, want 1", winners)
		}
	})

	t.Run("ReleaseOnlyTheExpectedClaim", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-release")
		c := claim("a1", 5)
		claimRequest(t, d, ns, "l", "req", c, time.Hour)
		for _, wrong := range []driver.Claim{claim("a2", 5), claim("a1", 6), {Actor: "a1", Negative: c.Negative, Seq: 5, Amount: 1}} {
			if ok := releaseClaim(t, d, ns, "l", "req", wrong); ok {
				t.Fatalf("release expecting %+v removed %+v", wrong, c)
			}
		}
		if r := claimRequest(t, d, ns, "l", "req", claim("a2", 1), time.Hour); r.Won {
			t.Fatal("the claim was gone after releases that did not match it")
		}
		if ok := releaseClaim(t, d, ns, "l", "req", c); !ok {
			t.Fatal("release of the stored claim reported nothing removed")
		}
		if ok := releaseClaim(t, d, ns, "l", "req", c); ok {
			t.Fatal("a second release reported a removal")
		}
		if r := claimRequest(t, d, ns, "l", "req", claim("a2", 1), time.Hour); !r.Won {
			t.Fatalf("claim after release lost to %+v", r.Current)
		}
	})

	t.Run("ReadClaimSeesStoresAndRemovals", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-readclaim")
		if c, ok := readClaim(t, d, ns, "l", "req"); ok {
			t.Fatalf("ReadClaim of a request never claimed = %+v", c)
		}
		c := driver.Claim{Actor: "a1", Negative: true, Seq: 7, Amount: -3}
		claimRequest(t, d, ns, "l", "req", c, time.Hour)
		if got, ok := readClaim(t, d, ns, "l", "req"); !ok || got != c {
			t.Fatalf("ReadClaim after ClaimRequest = %+v, %v; want %+v", got, ok, c)
		}
		if got, ok := readClaim(t, d, ns, "l2", "req"); ok {
			t.Fatalf("ReadClaim in another ledger = %+v; claims are per ledger", got)
		}
		releaseClaim(t, d, ns, "l", "req", c)
		if got, ok := readClaim(t, d, ns, "l", "req"); ok {
			t.Fatalf("ReadClaim after ReleaseClaim = %+v; want none", got)
		}
	})

	t.Run("ClaimsExpire", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-ttl")
		// Cassandra counts TTLs in whole seconds on its own clock, so a
		// claim of 3s may end 2s after it was stored (the embedded store
		// counts on the Now given). Both have ended 4s after the start.
		start := time.Now()
		claimRequest(t, d, ns, "l", "req", claim("a1", 1), 3*time.Second)
		r := claimRequest(t, d, ns, "l", "req", claim("a2", 2), time.Second)
		if r.Won && time.Since(start) < 1900*time.Millisecond {
			t.Fatal("a fresh claim was overtaken")
		}
		time.Sleep(4*time.Second - time.Since(start))
		if c, ok := readClaim(t, d, ns, "l", "req"); ok {
			t.Fatalf("ReadClaim of an expired claim = %+v", c)
		}
		if r := claimRequest(t, d, ns, "l", "req", claim("a2", 2), time.Second); !r.Won {
			t.Fatalf("claim after expiry lost to %+v", r.Current)
		}
	})

	t.Run("Closed", func(t *testing.T) {
		d2 := openClosed(t, open)
		c := context.Background()
		_, err := d2.ReadLedger(c, &driver.ReadLedgerParams{Namespace: "x", Ledger: "y"})
		if !errors.Is(err, driver.ErrClosed) {
			t.Errorf("ReadLedger after Close: got %v, want ErrClosed", err)
		}
		err = d2.WriteLedgerRow(c, &driver.WriteLedgerRowParams{Namespace: "x", Ledger: "y", Row: driver.LedgerRow{Actor: "a"}, Timestamp: 1})
		if !errors.Is(err, driver.ErrClosed) {
			t.Errorf("WriteLedgerRow after Close: got %v, want ErrClosed", err)
		}
		err = d2.WriteLedgerRows(c, []driver.WriteLedgerRowParams{{Namespace: "x", Ledger: "y", Row: driver.LedgerRow{Actor: "a"}, Timestamp: 1}})
		if !errors.Is(err, driver.ErrClosed) {
			t.Errorf("WriteLedgerRows after Close: got %v, want ErrClosed", err)
		}
		_, err = d2.ClaimRequest(c, &driver.ClaimRequestParams{Namespace: "x", Ledger: "y", RequestID: "r", Claim: claim("a", 1), TTL: time.Hour})
		if !errors.Is(err, driver.ErrClosed) {
			t.Errorf("ClaimRequest after Close: got %v, want ErrClosed", err)
		}
		_, err = d2.ReleaseClaim(c, &driver.ReleaseClaimParams{Namespace: "x", Ledger: "y", RequestID: "r", Expect: claim("a", 1)})
		if !errors.Is(err, driver.ErrClosed) {
			t.Errorf("ReleaseClaim after Close: got %v, want ErrClosed", err)
		}
		_, _, err = d2.ReadClaim(c, &driver.ReadClaimParams{Namespace: "x", Ledger: "y", RequestID: "r"})
		if !errors.Is(err, driver.ErrClosed) {
			t.Errorf("ReadClaim after Close: got %v, want ErrClosed", err)
		}
	})
}

func writeRow(t *testing.T, d driver.Driver, ns, ledger, actor string, state []byte, ts int64) {
	t.Helper()
	err := d.WriteLedgerRow(ctx(t), &driver.WriteLedgerRowParams{
		Namespace: ns, Ledger: ledger, Row: driver.LedgerRow{Actor: actor, State: state}, Timestamp: ts,
	})
	if err != nil {
		t.Fatalf("WriteLedgerRow(%s/%s/%s @%d): %v", ns, ledger, actor, ts, err)
	}
}

func readLedger(t *testing.T, d driver.Driver, ns, ledger string) []driver.LedgerRow {
	t.Helper()
	rows, err := d.ReadLedger(ctx(t), &driver.ReadLedgerParams{Namespace: ns, Ledger: ledger})
	if err != nil {
		t.Fatalf("ReadLedger(%s/%s): %v", ns, ledger, err)
	}
	return rows
}

func wantRow(t *testing.T, d driver.Driver, ns, ledger, actor string, state []byte, ts int64) {
	t.Helper()
	rows := readLedger(t, d, ns, ledger)
	if len(rows) != 1 || rows[0].Actor != actor || !bytes.Equal(rows[0].State, state) || rows[0].Timestamp != ts {
		t.Fatalf("ReadLedger(%s/%s) = %+v, want actor %s state %x at %d", ns, ledger, rows, actor, state, ts)
	}
}

func claimRequest(t *testing.T, d driver.Driver, ns, ledger, id string, c driver.Claim, ttl time.Duration) driver.ClaimResult {
	t.Helper()
	r, err := d.ClaimRequest(ctx(t), &driver.ClaimRequestParams{
		Namespace: ns, Ledger: ledger, RequestID: id, Claim: c, TTL: ttl, Now: driver.Micros(time.Now()),
	})
	if err != nil {
		t.Fatalf("ClaimRequest(%s/%s/%s): %v", ns, ledger, id, err)
	}
	return r
}

func releaseClaim(t *testing.T, d driver.Driver, ns, ledger, id string, c driver.Claim) bool {
	t.Helper()
	ok, err := d.ReleaseClaim(ctx(t), &driver.ReleaseClaimParams{Namespace: ns, Ledger: ledger, RequestID: id, Expect: c})
	if err != nil {
		t.Fatalf("ReleaseClaim(%s/%s/%s): %v", ns, ledger, id, err)
	}
	return ok
}

func readClaim(t *testing.T, d driver.Driver, ns, ledger, id string) (driver.Claim, bool) {
	t.Helper()
	c, ok, err := d.ReadClaim(ctx(t), &driver.ReadClaimParams{Namespace: ns, Ledger: ledger, RequestID: id, Now: driver.Micros(time.Now())})
	if err != nil {
		t.Fatalf("ReadClaim(%s/%s/%s): %v", ns, ledger, id, err)
	}
	return c, ok
}
