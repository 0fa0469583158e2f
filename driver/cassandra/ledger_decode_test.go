package cassandra

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/abacusdb/abacus/driver"
)

func TestLedgerRowsFromScan(t *testing.T) {
	t.Parallel()
	got, err := ledgerRowsFromScan([]ledgerRow{
		{Actor: ptr("b"), State: ptr([]byte{1}), WriteTime: ptr(int64(20))},
		{Actor: ptr("a"), State: ptr([]byte(nil)), WriteTime: ptr(int64(10))}, // gocql scans an empty blob as nil
	})
	want := []driver.LedgerRow{{Actor: "a", State: []byte{}, Timestamp: 10}, {Actor: "b", State: []byte{1}, Timestamp: 20}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ledgerRowsFromScan = %+v, %v; want %+v", got, err, want)
	}
	for name, rows := range map[string][]ledgerRow{
		"null actor":      {{State: ptr([]byte{1}), WriteTime: ptr(int64(1))}},
		"null state":      {{Actor: ptr("a")}},
		"null write time": {{Actor: ptr("a"), State: ptr([]byte{1})}},
		"duplicate actor": {
			{Actor: ptr("a"), State: ptr([]byte{1}), WriteTime: ptr(int64(1))},
			{Actor: ptr("a"), State: ptr([]byte{2}), WriteTime: ptr(int64(2))},
		},
	} {
		if got, err := ledgerRowsFromScan(rows); !errors.Is(err, errBadRow) || got != nil {
			t.Errorf("%s: got %+v, %v; want errBadRow", name, got, err)
		}
	}
}

// FuzzLedgerRowsFromScan: rows a misbehaving writer left behind either
// decode into sorted, distinct, non-nil rows or are refused as malformed.
func FuzzLedgerRowsFromScan(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 'a', 1, 7, 0, 0, 0, 0, 0, 0, 0, 9})
	f.Add([]byte{0, 1, 'b', 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 'a', 1, 7, 0, 0, 0, 0, 0, 0, 0, 2})
	f.Add([]byte{3, 1, 'a'})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzBytes(data)
		var rows []ledgerRow
		for len(in) > 0 {
			var r ledgerRow
			nulls := in.byte()
			actor, state := string(in.lenPrefixed()), in.lenPrefixed()
			ts := in.bigEndian()
			r.Actor, r.State, r.WriteTime = unlessNull(nulls, 0, actor), unlessNull(nulls, 1, state), unlessNull(nulls, 2, ts)
			rows = append(rows, r)
		}
		out, err := ledgerRowsFromScan(rows)
		if !decodedAll(t, rows, out, err) {
			return
		}
		for i, r := range out {
			if r.State == nil {
				t.Fatalf("actor %q has a nil state", r.Actor)
			}
			if i > 0 && out[i-1].Actor >= r.Actor {
				t.Fatalf("rows not strictly sorted: %q then %q", out[i-1].Actor, r.Actor)
			}
		}
	})
}

func TestClaimFromMap(t *testing.T) {
	t.Parallel()
	good := map[string]any{"actor": "a", "negative": true, "seq": int64(3), "amount": int64(-5), "[applied]": false}
	got, err := claimFromMap(good)
	if want := (driver.Claim{Actor: "a", Negative: true, Seq: 3, Amount: -5}); err != nil || got != want {
		t.Fatalf("claimFromMap = %+v, %v; want %+v", got, err, want)
	}
	for _, tc := range []struct {
		key string
		val any
	}{
		{"actor", nil}, {"negative", nil}, {"seq", nil}, {"seq", int64(0)}, {"seq", int64(-1)},
		{"amount", nil}, {"amount", int64(0)}, {"seq", "3"},
	} {
		m := map[string]any{}
		for k, v := range good {
			m[k] = v
		}
		if tc.val == nil {
			delete(m, tc.key)
		} else {
			m[tc.key] = tc.val
		}
		if _, err := claimFromMap(m); !errors.Is(err, errBadRow) {
			t.Errorf("%s=%v: got %v, want errBadRow", tc.key, tc.val, err)
		}
	}
}

func TestRightsFromCAS(t *testing.T) {
	t.Parallel()
	var (
		versionSeed *int64
		stateSeed   *[]byte
	)
	for name, tc := range map[string]struct {
		m        map[string]any
		want     driver.LedgerRights
		complete bool
	}{
		// What MapScanCAS leaves: see the comments in SwapLedgerRights.
		"no row, no columns":      {map[string]any{"version": &versionSeed, "state": &stateSeed}, driver.LedgerRights{}, true},
		"no row, null version":    {map[string]any{"version": (*int64)(nil), "state": &stateSeed}, driver.LedgerRights{}, true},
		"row, from IF version =":  {map[string]any{"version": ptr(int64(4)), "state": &stateSeed}, driver.LedgerRights{Version: 4}, false},
		"row, from IF NOT EXISTS": {map[string]any{"ns": "n", "ledger": "l", "version": ptr(int64(2)), "state": ptr([]byte("s"))}, driver.LedgerRights{Version: 2, State: []byte("s")}, true},
		"empty state":             {map[string]any{"version": ptr(int64(1)), "state": ptr([]byte(nil))}, driver.LedgerRights{Version: 1, State: []byte{}}, true},
	} {
		got, complete, err := rightsFromCAS(tc.m)
		if err != nil || complete != tc.complete || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, complete %v, %v; want %+v, complete %v", name, got, complete, err, tc.want, tc.complete)
		}
	}
	for name, m := range map[string]map[string]any{
		"unseeded map":      {},
		"gocql's own zero":  {"version": int64(0), "state": &stateSeed},
		"version 0":         {"version": ptr(int64(0)), "state": ptr([]byte{})},
		"version 0, alone":  {"version": ptr(int64(0)), "state": &stateSeed},
		"negative version":  {"version": ptr(int64(-2)), "state": ptr([]byte{})},
		"null state":        {"version": ptr(int64(1)), "state": (*[]byte)(nil)},
		"wrong column type": {"version": ptr("1"), "state": ptr([]byte{})},
		"state of a type":   {"version": ptr(int64(1)), "state": "s"},
	} {
		if got, _, err := rightsFromCAS(m); !errors.Is(err, errBadRow) {
			t.Errorf("%s: got %+v, %v; want errBadRow", name, got, err)
		}
	}
}

// FuzzRightsFromCAS: whatever shape the non-applied result of a swap or
// the columns of a read take, decoding either yields a record with a
// version of at least 1 (or none at all), consistent with the input, or
// refuses it as malformed.
func FuzzRightsFromCAS(f *testing.F) {
	f.Add(byte(0), int64(0), []byte(nil))
	f.Add(byte(1), int64(3), []byte("s"))
	f.Add(byte(5), int64(1), []byte{})
	f.Add(byte(9), int64(0), []byte("s"))
	f.Fuzz(func(t *testing.T, shape byte, v int64, s []byte) {
		var (
			versionSeed *int64
			stateSeed   *[]byte
		)
		m := map[string]any{"ns": "n", "ledger": "l"}
		switch shape % 4 { // version: seed, value, null, plain int64
		case 0:
			m["version"] = &versionSeed
		case 1:
			m["version"] = &v
		case 2:
			m["version"] = (*int64)(nil)
		case 3:
			m["version"] = v
		}
		switch shape / 4 % 4 { // state: seed, value, null, absent
		case 0:
			m["state"] = &stateSeed
		case 1:
			m["state"] = &s
		case 2:
			m["state"] = (*[]byte)(nil)
		}
		got, complete, err := rightsFromCAS(m)
		if err != nil {
			if !errors.Is(err, errBadRow) || !reflect.DeepEqual(got, driver.LedgerRights{}) || complete {
				t.Fatalf("shape %d: got %+v, complete %v, with error %v", shape%16, got, complete, err)
			}
			return
		}
		switch {
		case got.Version == 0:
			if !complete || got.State != nil || shape%4 != 0 && shape%4 != 2 {
				t.Fatalf("shape %d: no record, complete %v, state %x", shape%16, complete, got.State)
			}
		case got.Version != v || v < 1 || shape%4 != 1:
			t.Fatalf("shape %d: version %d decoded as %+v", shape%16, v, got)
		case complete && (!bytes.Equal(got.State, s) || got.State == nil || shape/4%4 != 1):
			t.Fatalf("shape %d: state %x decoded as %+v", shape%16, s, got)
		case !complete && (got.State != nil || shape/4%4 != 0):
			t.Fatalf("shape %d: incomplete record %+v", shape%16, got)
		}
	})
}
