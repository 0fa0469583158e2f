package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/cockroachdb/pebble/v2"
)

func FuzzDecodeClaim(f *testing.F) {
	f.Add(encodeClaim(driver.Claim{Actor: "a1b2-1", Seq: 7, Amount: 50}, 1_700_000_000_000_000))
	f.Add(encodeClaim(driver.Claim{Actor: "x", Negative: true, Seq: 1 << 40, Amount: -9}, -1))
	f.Add([]byte{claimVersion})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, exp, err := decodeClaim(b)
		if err != nil {
			if !errors.Is(err, errCorrupt) {
				t.Fatalf("error %v does not wrap errCorrupt", err)
			}
			return
		}
		if got := encodeClaim(c, exp); !bytes.Equal(got, b) {
			t.Fatalf("decodeClaim(%x) re-encodes as %x", b, got)
		}
	})
}

func TestDecodeClaimRefusesMalformed(t *testing.T) {
	t.Parallel()
	good := encodeClaim(driver.Claim{Actor: "a", Seq: 1, Amount: 5}, 100)
	bad := map[string][]byte{
		"future version": append([]byte{2}, good[1:]...),
		"negative flag":  func() []byte { b := bytes.Clone(good); b[9] = 2; return b }(),
		"zero amount":    encodeClaim(driver.Claim{Actor: "a", Seq: 1}, 100),
		"trailing":       append(bytes.Clone(good), 0),
		"truncated":      good[:len(good)-1],
	}
	for name, b := range bad {
		if _, _, err := decodeClaim(b); !errors.Is(err, errCorrupt) {
			t.Errorf("%s: got %v, want errCorrupt", name, err)
		}
	}
}

// Expiry is measured on the caller's clock (ClaimRequestParams.Now), so the
// engine's tests can expire claims without waiting.
func TestClaimExpiresOnCallersClock(t *testing.T) {
	t.Parallel()
	d := openMem(t)
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	claim := func(actor string, at time.Time) driver.ClaimResult {
		t.Helper()
		r, err := d.ClaimRequest(context.Background(), &driver.ClaimRequestParams{
			Namespace: "ns", Ledger: "l", RequestID: "r", Claim: driver.Claim{Actor: actor, Seq: 1, Amount: 1},
			TTL: time.Hour, Now: driver.Micros(at),
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if !claim("a", now).Won {
		t.Fatal("first claim lost")
	}
	if claim("b", now.Add(time.Hour-time.Microsecond)).Won {
		t.Fatal("claim taken over a microsecond before expiry")
	}
	if !claim("b", now.Add(time.Hour)).Won {
		t.Fatal("claim not taken over at expiry")
	}
}

// Pebble would keep expired claims forever; the driver sweeps them once
// enough new claims were stored, and leaves live ones alone.
func TestExpiredClaimsAreSwept(t *testing.T) {
	t.Parallel()
	d := openMem(t)
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	claim := func(id string, at time.Time, ttl time.Duration) {
		t.Helper()
		_, err := d.ClaimRequest(ctx, &driver.ClaimRequestParams{
			Namespace: "ns", Ledger: "l", RequestID: id, Claim: driver.Claim{Actor: "a", Seq: 1, Amount: 1},
			TTL: ttl, Now: driver.Micros(at),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// 10 long-lived claims, then short-lived ones until a sweep has run
	// after they all expired.
	for i := range 10 {
		claim(fmt.Sprint("keep", i), t0, 24*time.Hour)
	}
	for i := range claimSweepMin - 10 {
		claim(fmt.Sprint("short", i), t0, time.Second)
	}
	later := t0.Add(time.Minute)
	for i := range claimSweepMin {
		claim(fmt.Sprint("later", i), later, 24*time.Hour)
	}
	if n := countClaims(t, d); n != 10+claimSweepMin {
		t.Fatalf("%d claims stored after the sweep, want %d (the expired ones gone)", n, 10+claimSweepMin)
	}
}

func countClaims(t *testing.T, d *Driver) int {
	t.Helper()
	return countKeys(t, d, []byte{tableLedgerClaims}, func(key []byte) error {
		_, _, err := decodeKey(key)
		return err
	})
}

// countKeys counts the keys under prefix, failing the test on a key that
// check (when set) refuses.
func countKeys(t *testing.T, d *Driver, prefix []byte, check func(key []byte) error) int {
	t.Helper()
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for v := it.First(); v; v = it.Next() {
		if check != nil {
			if err := check(it.Key()); err != nil {
				t.Fatalf("key %x: %v", it.Key(), err)
			}
		}
		n++
	}
	return n
}

// A ledger row and a shard never share a key, and the key decoder knows the
// ledger tables.
func TestLedgerKeysDecode(t *testing.T) {
	t.Parallel()
	for _, k := range [][]byte{ledgerRowKey("ns", "l", "actor"), claimKey("ns", "l", "req")} {
		table, parts, err := decodeKey(k)
		if err != nil || len(parts) != 3 || (table != tableLedgers && table != tableLedgerClaims) {
			t.Fatalf("decodeKey(%x) = %x, %q, %v", k, table, parts, err)
		}
	}
}
