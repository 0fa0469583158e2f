package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/abacusdb/abacus/driver"
)

// cassandraTieWinner is the value Cassandra keeps of two bigint cells
// written at one timestamp: it compares their big-endian encodings with
// Java's ByteBuffer.compareTo, byte by byte as signed bytes, and keeps the
// greater (measured on Cassandra 2.1.0; see the Actors conformance test).
func cassandraTieWinner(x, y int64) int64 {
	var bx, by [8]byte
	binary.BigEndian.PutUint64(bx[:], uint64(x))
	binary.BigEndian.PutUint64(by[:], uint64(y))
	for i := range bx {
		if bx[i] != by[i] {
			if int8(bx[i]) > int8(by[i]) {
				return x
			}
			return y
		}
	}
	return x
}

// mergeWinner merges two actor cells written at one version through the
// store's merge operator and returns the value it keeps.
func mergeWinner(t *testing.T, x, y int64) int64 {
	t.Helper()
	cx := appendCell(nil, cell{Timestamp: 9, Payload: appendActorPayload(nil, x)})
	cy := appendCell(nil, cell{Timestamp: 9, Payload: appendActorPayload(nil, y)})
	vm, err := lwwMergeOperator.Merge(nil, cx)
	if err != nil {
		t.Fatal(err)
	}
	if err := vm.MergeOlder(cy); err != nil {
		t.Fatal(err)
	}
	out, _, err := vm.Finish(true)
	if err != nil {
		t.Fatal(err)
	}
	v, _, live, err := decodeActorCell(out)
	if err != nil || !live {
		t.Fatalf("merged cell %x: live %v, %v", out, live, err)
	}
	return v
}

func TestActorTieOrderMatchesCassandra(t *testing.T) {
	t.Parallel()
	// Pairs measured on the Cassandra 2.1.0 dev cluster, winner last.
	for _, tc := range [][3]int64{
		{1000, 1500, 1500}, {127, 128, 127}, {-1, 1, 1}, {-5, -3, -3},
		{255, 256, 256}, {1, 2, 2}, {-128, 127, 127}, {0, -1, 0}, {-200, 100, 100},
	} {
		for _, pair := range [][2]int64{{tc[0], tc[1]}, {tc[1], tc[0]}} {
			if got := mergeWinner(t, pair[0], pair[1]); got != tc[2] {
				t.Errorf("tie of %d and %d kept %d, Cassandra keeps %d", pair[0], pair[1], got, tc[2])
			}
			if got := cassandraTieWinner(pair[0], pair[1]); got != tc[2] {
				t.Errorf("reference: tie of %d and %d keeps %d, measured %d", pair[0], pair[1], got, tc[2])
			}
		}
	}
}

// FuzzActorTieOrder: for any two values written at one version, the
// merge operator keeps the one Cassandra keeps, whichever arrives first.
func FuzzActorTieOrder(f *testing.F) {
	f.Add(int64(127), int64(128))
	f.Add(int64(-1), int64(1))
	f.Add(int64(math.MinInt64), int64(math.MaxInt64))
	f.Add(int64(1000), int64(1500))
	f.Fuzz(func(t *testing.T, x, y int64) {
		want := cassandraTieWinner(x, y)
		if got := mergeWinner(t, x, y); got != want {
			t.Fatalf("tie of %d and %d kept %d, Cassandra keeps %d", x, y, got, want)
		}
		if got := mergeWinner(t, y, x); got != want {
			t.Fatalf("tie of %d and %d (reversed) kept %d, Cassandra keeps %d", y, x, got, want)
		}
	})
}

// FuzzDecodeActorCell: a stored actor cell either decodes or is refused
// as corrupt, and what decodes re-encodes to the same bytes.
func FuzzDecodeActorCell(f *testing.F) {
	f.Add(appendCell(nil, cell{Timestamp: 2, Payload: appendActorPayload(nil, 1500)}))
	f.Add(appendCell(nil, cell{Timestamp: 1, Payload: appendActorPayload(nil, math.MinInt64)}))
	f.Add(appendCell(nil, cell{Timestamp: 0, Payload: appendActorPayload(nil, 1)}))
	f.Add(appendCell(nil, cell{Timestamp: 3, Tombstone: true}))
	f.Add(appendCell(nil, cell{Timestamp: 3, Payload: []byte{1, 2, 3}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, version, live, err := decodeActorCell(b)
		if err != nil {
			if !errors.Is(err, errCorrupt) {
				t.Fatalf("error %v does not wrap errCorrupt", err)
			}
			return
		}
		if version < 1 {
			t.Fatalf("accepted version %d", version)
		}
		c := cell{Timestamp: version, Tombstone: !live}
		if live {
			c.Payload = appendActorPayload(nil, v)
		}
		if got := appendCell(nil, c); !bytes.Equal(got, b) {
			t.Fatalf("decodeActorCell(%x) = %d@%d, which re-encodes as %x", b, v, version, got)
		}
	})
}

// FuzzDecodeCounterValue: the same for native and cas counter records.
func FuzzDecodeCounterValue(f *testing.F) {
	f.Add(encodeCounterValue(0))
	f.Add(encodeCounterValue(-42))
	f.Add(encodeCounterValue(math.MaxInt64))
	f.Add([]byte{counterValueVersion})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeCounterValue(b)
		if err != nil {
			if !errors.Is(err, errCorrupt) {
				t.Fatalf("error %v does not wrap errCorrupt", err)
			}
			return
		}
		if got := encodeCounterValue(v); !bytes.Equal(got, b) {
			t.Fatalf("decodeCounterValue(%x) = %d, which re-encodes as %x", b, v, got)
		}
	})
}

func TestDecodeCounterValueRefusesMalformed(t *testing.T) {
	t.Parallel()
	good := encodeCounterValue(7)
	for name, b := range map[string][]byte{
		"empty":          {},
		"future version": append([]byte{2}, good[1:]...),
		"truncated":      good[:len(good)-1],
		"trailing":       append(bytes.Clone(good), 0),
	} {
		if _, err := decodeCounterValue(b); !errors.Is(err, errCorrupt) {
			t.Errorf("%s: got %v, want errCorrupt", name, err)
		}
	}
	if _, err := decodeActorPayload(make([]byte, 7)); !errors.Is(err, errCorrupt) {
		t.Errorf("7-byte actor payload: got %v, want errCorrupt", err)
	}
}

func TestCounterKeysDecode(t *testing.T) {
	t.Parallel()
	for k, want := range map[string]struct {
		table byte
		parts []string
	}{
		string(actorKey("ns", "c", "P1")): {tableActorValues, []string{"ns", "c", "P1"}},
		string(nativeKey("ns", "c")):      {tableNativeCounters, []string{"ns", "c"}},
		string(casKey("ns", "c")):         {tableCASCounters, []string{"ns", "c"}},
	} {
		table, parts, err := decodeKey([]byte(k))
		if err != nil || table != want.table || !reflect.DeepEqual(parts, want.parts) {
			t.Errorf("decodeKey(%x) = %x, %q, %v; want %x, %q", k, table, parts, err, want.table, want.parts)
		}
	}
	// A native and a cas counter of the same name are different keys.
	if bytes.Equal(nativeKey("n", "c"), casKey("n", "c")) {
		t.Error("native and cas counters share a key")
	}
}

// TestNativeOverflowRefused: where Cassandra wraps, the embedded store
// refuses the add and keeps the counter as it was.
func TestNativeOverflowRefused(t *testing.T) {
	t.Parallel()
	d := openMem(t)
	ctx := context.Background()
	add := func(counter string, delta int64) error {
		return d.AddNative(ctx, &driver.AddNativeParams{Namespace: "n", Counter: counter, Delta: delta})
	}
	read := func(counter string) int64 {
		t.Helper()
		v, err := d.ReadNative(ctx, &driver.ReadNativeParams{Namespace: "n", Counter: counter})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		counter      string
		start, delta int64
	}{
		{"up", math.MaxInt64, 1},
		{"up-far", 1, math.MaxInt64},
		{"down", math.MinInt64, -1},
		{"down-far", -2, math.MinInt64},
	} {
		if err := add(tc.counter, tc.start); err != nil {
			t.Fatalf("%s: AddNative(%d): %v", tc.counter, tc.start, err)
		}
		err := add(tc.counter, tc.delta)
		if !errors.Is(err, ErrOverflow) {
			t.Errorf("%s: %d + %d: got %v, want ErrOverflow", tc.counter, tc.start, tc.delta, err)
		}
		if got := read(tc.counter); got != tc.start {
			t.Errorf("%s: counter changed to %d by a refused add, want %d", tc.counter, got, tc.start)
		}
	}
	// Right up to the ends is fine.
	if err := add("edge", math.MaxInt64-1); err != nil {
		t.Fatal(err)
	}
	if err := add("edge", 1); err != nil {
		t.Fatalf("add reaching MaxInt64: %v", err)
	}
	if err := add("edge", math.MinInt64); err != nil {
		t.Fatalf("add of MinInt64 to MaxInt64: %v", err)
	}
	if got := read("edge"); got != -1 {
		t.Fatalf("edge counter = %d, want -1", got)
	}
}

// TestCountersPersist reopens a store on disk: acknowledged actor values,
// native adds and compare-and-sets are all still there.
func TestCountersPersist(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	d := open(t, Config{Dir: dir})
	if err := d.SetActorValue(ctx, &driver.SetActorValueParams{Namespace: "n", Counter: "c", Actor: "P1", Value: 1500, Version: 2}); err != nil {
		t.Fatal(err)
	}
	if err := d.AddNative(ctx, &driver.AddNativeParams{Namespace: "n", Counter: "c", Delta: -9}); err != nil {
		t.Fatal(err)
	}
	if r, err := d.CompareAndSetCAS(ctx, &driver.CompareAndSetCASParams{Namespace: "n", Counter: "c", Value: 11}); err != nil || !r.Applied {
		t.Fatalf("CompareAndSetCAS = %+v, %v", r, err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = open(t, Config{Dir: dir})
	vals, err := d.ReadActorValues(ctx, &driver.ReadActorValuesParams{Namespace: "n", Counter: "c"})
	if want := []driver.ActorValue{{Actor: "P1", Value: 1500, Version: 2}}; err != nil || !reflect.DeepEqual(vals, want) {
		t.Errorf("actor values after reopen = %+v, %v; want %+v", vals, err, want)
	}
	if v, err := d.ReadNative(ctx, &driver.ReadNativeParams{Namespace: "n", Counter: "c"}); err != nil || v != -9 {
		t.Errorf("native after reopen = %d, %v; want -9", v, err)
	}
	if v, err := d.ReadCAS(ctx, &driver.ReadCASParams{Namespace: "n", Counter: "c"}); err != nil || v != (driver.CASValue{Exists: true, Value: 11}) {
		t.Errorf("cas after reopen = %+v, %v; want 11", v, err)
	}
}

// TestCorruptCounterValuesReported: a damaged record makes the operation
// fail loudly instead of being read as 0 or overwritten.
func TestCorruptCounterValuesReported(t *testing.T) {
	t.Parallel()
	d := openMem(t)
	ctx := context.Background()
	for _, k := range [][]byte{nativeKey("n", "c"), casKey("n", "c")} {
		if err := d.db.Set(k, []byte{counterValueVersion, 1, 2}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.db.Merge(actorKey("n", "c", "a"), appendCell(nil, cell{Timestamp: 1, Payload: []byte{1}}), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ReadNative(ctx, &driver.ReadNativeParams{Namespace: "n", Counter: "c"}); !errors.Is(err, errCorrupt) {
		t.Errorf("ReadNative: got %v, want errCorrupt", err)
	}
	if err := d.AddNative(ctx, &driver.AddNativeParams{Namespace: "n", Counter: "c", Delta: 1}); !errors.Is(err, errCorrupt) {
		t.Errorf("AddNative: got %v, want errCorrupt", err)
	}
	if _, err := d.ReadCAS(ctx, &driver.ReadCASParams{Namespace: "n", Counter: "c"}); !errors.Is(err, errCorrupt) {
		t.Errorf("ReadCAS: got %v, want errCorrupt", err)
	}
	if _, err := d.CompareAndSetCAS(ctx, &driver.CompareAndSetCASParams{Namespace: "n", Counter: "c", Value: 1}); !errors.Is(err, errCorrupt) {
		t.Errorf("CompareAndSetCAS: got %v, want errCorrupt", err)
	}
	if _, err := d.ReadActorValues(ctx, &driver.ReadActorValuesParams{Namespace: "n", Counter: "c"}); !errors.Is(err, errCorrupt) {
		t.Errorf("ReadActorValues: got %v, want errCorrupt", err)
	}
}
