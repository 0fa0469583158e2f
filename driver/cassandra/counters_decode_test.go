package cassandra

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/abacusdb/abacus/driver"
)

func TestCounterSchema(t *testing.T) {
	t.Parallel()
	schemaHas(t,
		"k1.actor_values", "PRIMARY KEY ((ns, counter), actor)",
		"k1.native_counters", "value counter",
		"k1.cas_counters",
	)
}

func TestActorValuesFromScan(t *testing.T) {
	t.Parallel()
	got, err := actorValuesFromScan([]actorRow{
		{Actor: ptr("p2"), Value: ptr(int64(500)), WriteTime: ptr(int64(1))},
		{Actor: ptr("p1"), Value: ptr(int64(-1500)), WriteTime: ptr(int64(2))},
	})
	want := []driver.ActorValue{{Actor: "p1", Value: -1500, Version: 2}, {Actor: "p2", Value: 500, Version: 1}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("actorValuesFromScan = %+v, %v; want %+v", got, err, want)
	}
	if got, err := actorValuesFromScan(nil); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("no rows: got %#v, %v; want an empty, non-nil slice", got, err)
	}
	for name, rows := range map[string][]actorRow{
		"null actor":      {{Value: ptr(int64(1)), WriteTime: ptr(int64(1))}},
		"null value":      {{Actor: ptr("a"), WriteTime: ptr(int64(1))}},
		"null write time": {{Actor: ptr("a"), Value: ptr(int64(1))}},
		"version zero":    {{Actor: ptr("a"), Value: ptr(int64(1)), WriteTime: ptr(int64(0))}},
		"duplicate actor": {
			{Actor: ptr("a"), Value: ptr(int64(1)), WriteTime: ptr(int64(1))},
			{Actor: ptr("a"), Value: ptr(int64(2)), WriteTime: ptr(int64(2))},
		},
	} {
		if got, err := actorValuesFromScan(rows); !errors.Is(err, errBadRow) || got != nil {
			t.Errorf("%s: got %+v, %v; want errBadRow", name, got, err)
		}
	}
}

// FuzzActorValuesFromScan: rows someone else left in actor_values either
// decode into sorted, distinct actors with positive versions, or are
// refused as malformed; nothing panics.
//
// Input: per row one null-mask byte (bit 0 actor, 1 value, 2 write time),
// a length-prefixed actor, then 8 bytes of value and 8 of write time.
func FuzzActorValuesFromScan(f *testing.F) {
	row := func(nulls byte, actor string, value, wt int64) []byte {
		b := append([]byte{nulls, byte(len(actor))}, actor...)
		b = binary.BigEndian.AppendUint64(b, uint64(value))
		return binary.BigEndian.AppendUint64(b, uint64(wt))
	}
	f.Add([]byte{})
	f.Add(append(row(0, "P2", 500, 1), row(0, "P1", 1500, 2)...))
	f.Add(row(2, "a", 0, 1))
	f.Add(append(row(0, "a", 1, 1), row(0, "a", 2, 2)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzBytes(data)
		var rows []actorRow
		for len(in) > 0 {
			nulls := in.byte()
			actor := string(in.lenPrefixed())
			value, wt := in.bigEndian(), in.bigEndian()
			rows = append(rows, actorRow{Actor: unlessNull(nulls, 0, actor), Value: unlessNull(nulls, 1, value),
				WriteTime: unlessNull(nulls, 2, wt)})
		}
		out, err := actorValuesFromScan(rows)
		if !decodedAll(t, rows, out, err) {
			return
		}
		for i, v := range out {
			if v.Version < 1 {
				t.Fatalf("actor %q accepted at version %d", v.Actor, v.Version)
			}
			if i > 0 && out[i-1].Actor >= v.Actor {
				t.Fatalf("actors not strictly sorted: %q then %q", out[i-1].Actor, v.Actor)
			}
		}
	})
}

func TestCASValueFromMap(t *testing.T) {
	t.Parallel()
	var seed *int64
	for name, tc := range map[string]struct {
		m    map[string]any
		want driver.CASValue
	}{
		// What MapScanCAS leaves: see the comments in CompareAndSetCAS.
		"no row":                  {map[string]any{"value": &seed}, driver.CASValue{}},
		"row, from IF value = ?":  {map[string]any{"value": ptr(int64(7))}, driver.CASValue{Exists: true, Value: 7}},
		"row, from IF NOT EXISTS": {map[string]any{"ns": "n", "counter": "c", "value": ptr(int64(-3))}, driver.CASValue{Exists: true, Value: -3}},
		"zero is a value":         {map[string]any{"value": ptr(int64(0))}, driver.CASValue{Exists: true}},
	} {
		if got, err := casValueFromMap(tc.m); err != nil || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v", name, got, err, tc.want)
		}
	}
	for name, m := range map[string]map[string]any{
		"null value":        {"value": (*int64)(nil)},
		"unseeded map":      {},
		"gocql's own zero":  {"value": int64(0)}, // a scan that lost the seed must not pass as 0
		"wrong column type": {"value": ptr("7")},
	} {
		if got, err := casValueFromMap(m); !errors.Is(err, errBadRow) {
			t.Errorf("%s: got %+v, %v; want errBadRow", name, got, err)
		}
	}
}

// FuzzCASValueFromMap: whatever shape the non-applied result of a
// conditional write takes, decoding either yields a value consistent with
// the map or refuses it as malformed.
func FuzzCASValueFromMap(f *testing.F) {
	f.Add(byte(0), int64(0))
	f.Add(byte(1), int64(7))
	f.Add(byte(2), int64(0))
	f.Add(byte(3), int64(-1))
	f.Add(byte(4), int64(1))
	f.Fuzz(func(t *testing.T, shape byte, v int64) {
		var seed *int64
		m := map[string]any{"ns": "n", "counter": "c"}
		switch shape % 6 {
		case 0:
			m["value"] = &seed
		case 1:
			m["value"] = &v
		case 2:
			m["value"] = (*int64)(nil)
		case 3:
			m["value"] = v
		case 4:
			m["value"] = &m // a type nobody scans into
		case 5:
			// no value key at all
		}
		got, err := casValueFromMap(m)
		if err != nil {
			if !errors.Is(err, errBadRow) || got != (driver.CASValue{}) {
				t.Fatalf("shape %d: got %+v with error %v", shape%6, got, err)
			}
			return
		}
		switch shape % 6 {
		case 0:
			if got.Exists {
				t.Fatalf("no row decoded as %+v", got)
			}
		case 1:
			if !got.Exists || got.Value != v {
				t.Fatalf("value %d decoded as %+v", v, got)
			}
		default:
			t.Fatalf("shape %d accepted as %+v", shape%6, got)
		}
	})
}

func TestCASReadLevel(t *testing.T) {
	t.Parallel()
	// A serial read is a Paxos round at SERIAL whatever the level, even
	// a local one (casReadLevel says why).
	serial := map[driver.Consistency]gocql.Consistency{
		driver.Default: gocql.Serial, driver.Quorum: gocql.Serial, driver.All: gocql.Serial,
		driver.EachQuorum: gocql.Serial, driver.LocalQuorum: gocql.Serial,
		driver.LocalOne: gocql.Serial, driver.One: gocql.Serial,
	}
	plain := map[driver.Consistency]gocql.Consistency{
		driver.Default: gocql.LocalQuorum, // the configured level below
		driver.Quorum:  gocql.Quorum, driver.All: gocql.All, driver.LocalQuorum: gocql.LocalQuorum,
		driver.One: gocql.One, driver.Two: gocql.Two, driver.Three: gocql.Three,
	}
	for _, tc := range []struct {
		serial bool
		want   map[driver.Consistency]gocql.Consistency
	}{{true, serial}, {false, plain}} {
		for c, want := range tc.want {
			if got, err := casReadLevel(c, tc.serial, driver.LocalQuorum); err != nil || got != want {
				t.Errorf("casReadLevel(%v, serial %v) = %v, %v; want %v", c, tc.serial, got, err, want)
			}
		}
	}
	if _, err := casReadLevel(driver.Consistency(200), false, driver.Quorum); err == nil {
		t.Error("casReadLevel accepted an unknown level")
	}
}
