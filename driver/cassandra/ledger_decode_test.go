package cassandra

import (
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
