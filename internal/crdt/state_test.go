package crdt

import (
	"bytes"
	"errors"
	"math"
	"sync"
	"testing"
)

func TestKindString(t *testing.T) {
	t.Parallel()
	for k, want := range map[Kind]string{
		KindSum: "sum", KindMax: "max", KindMin: "min", KindDistinct: "distinct",
		0: "Kind(0)", 5: "Kind(5)",
	} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", uint8(k), got, want)
		}
	}
}

func TestParseKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Kind
		ok   bool
	}{
		{"sum", KindSum, true},
		{"max", KindMax, true},
		{"min", KindMin, true},
		{"distinct", KindDistinct, true},
		{"Distinct", KindDistinct, true},
		{"", 0, false},
		{"count", 0, false},
		{"sum ", 0, false},
		{"Kind(1)", 0, false},
	} {
		got, err := ParseKind(tc.in)
		if tc.ok {
			if err != nil || got != tc.want {
				t.Errorf("ParseKind(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			continue
		}
		if !errors.Is(err, ErrUnknownKind) {
			t.Errorf("ParseKind(%q) error = %v, want ErrUnknownKind", tc.in, err)
		}
	}
	// The error must tell the user what would have been accepted.
	_, err := ParseKind("avg")
	for _, name := range []string{"sum", "max", "min", "distinct"} {
		if !bytes.Contains([]byte(err.Error()), []byte(name)) {
			t.Errorf("ParseKind error %q does not list %q", err, name)
		}
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	for _, k := range allKinds {
		s := mustNew(t, k)
		if s.Kind() != k || !s.Empty() || s.Value() != 0 {
			t.Errorf("New(%v) = kind %v, empty %v, value %d", k, s.Kind(), s.Empty(), s.Value())
		}
	}
	for _, k := range []Kind{0, 5, 255} {
		if _, err := New(k); !errors.Is(err, ErrUnknownKind) {
			t.Errorf("New(%d) error = %v, want ErrUnknownKind", uint8(k), err)
		}
	}
}

// The zero values of the concrete types must behave like New's results,
// since callers may embed them in structs.
func TestZeroValues(t *testing.T) {
	t.Parallel()
	for _, s := range []State{&Sum{}, &Max{}, &Min{}, &Distinct{}} {
		fresh := mustNew(t, s.Kind())
		requireSame(t, "zero value vs New", s, fresh)
		requireSame(t, "zero value clone", s.Clone(), fresh)
		mustApply(t, s, Op{Delta: 3, Item: []byte("x")})
		if s.Empty() || s.Value() == 0 {
			t.Errorf("zero %v after Apply: empty %v, value %d", s.Kind(), s.Empty(), s.Value())
		}
	}
	var d Distinct
	mustMerge(t, &d, mustApply(t, NewDistinct(), Op{Item: []byte("a")}))
	if d.Value() != 1 {
		t.Errorf("zero Distinct after Merge: value %d, want 1", d.Value())
	}
}

func TestSumApply(t *testing.T) {
	t.Parallel()
	const maxU = math.MaxUint64
	for _, tc := range []struct {
		name      string
		p, n      uint64
		delta     int64
		want      int64
		wantEmpty bool
		overflow  bool
	}{
		{name: "zero delta keeps empty", delta: 0, want: 0, wantEmpty: true},
		{name: "positive", delta: 5, want: 5},
		{name: "negative", delta: -5, want: -5},
		{name: "back to zero is not empty", p: 5, delta: -5, want: 0},
		{name: "max int64", delta: math.MaxInt64, want: math.MaxInt64},
		{name: "min int64", delta: math.MinInt64, want: math.MinInt64},
		{name: "max plus one", p: math.MaxInt64, delta: 1, overflow: true},
		{name: "min minus one", n: 1 << 63, delta: -1, overflow: true},
		{name: "min plus one", n: 1 << 63, delta: 1, want: math.MinInt64 + 1},
		{name: "max plus min", p: math.MaxInt64, delta: math.MinInt64, want: -1},
		{name: "min plus max", n: 1 << 63, delta: math.MaxInt64, want: -1},
		{name: "max plus max", p: math.MaxInt64, delta: math.MaxInt64, overflow: true},
		{name: "min plus min", n: 1 << 63, delta: math.MinInt64, overflow: true},
		{name: "P wraps though value fits", p: maxU, n: maxU, delta: 1, overflow: true},
		{name: "N wraps though value fits", p: maxU, n: maxU, delta: -1, overflow: true},
		{name: "large P and N", p: maxU - 1, n: maxU, delta: 1, want: 0},
		{name: "large P and N negative", p: maxU, n: maxU - 1, delta: -1, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &Sum{p: tc.p, n: tc.n}
			err := s.Apply(Op{Delta: tc.delta})
			if tc.overflow {
				if !errors.Is(err, ErrOverflow) {
					t.Fatalf("Apply(%d) error = %v, want ErrOverflow", tc.delta, err)
				}
				if s.p != tc.p || s.n != tc.n {
					t.Fatalf("state changed on error: P=%d N=%d, was P=%d N=%d", s.p, s.n, tc.p, tc.n)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply(%d): %v", tc.delta, err)
			}
			if s.Value() != tc.want || s.Empty() != tc.wantEmpty {
				t.Fatalf("value %d empty %v, want %d %v", s.Value(), s.Empty(), tc.want, tc.wantEmpty)
			}
		})
	}
}

func TestSumMerge(t *testing.T) {
	t.Parallel()
	const maxU = math.MaxUint64
	for _, tc := range []struct {
		name         string
		ap, an       uint64
		bp, bn       uint64
		wantP, wantN uint64
		overflow     bool
	}{
		{name: "empty", wantP: 0, wantN: 0},
		{name: "adds P and N", ap: 3, an: 1, bp: 4, bn: 2, wantP: 7, wantN: 3},
		{name: "value at max", ap: math.MaxInt64 - 1, bp: 1, wantP: math.MaxInt64},
		{name: "value past max", ap: math.MaxInt64, bp: 1, overflow: true},
		{name: "value at min", an: 1 << 62, bn: 1 << 62, wantN: 1 << 63},
		{name: "value past min", an: 1 << 63, bn: 1, overflow: true},
		{name: "P wraps", ap: maxU, an: maxU, bp: 1, overflow: true},
		{name: "N wraps", ap: maxU, an: maxU, bn: 1, overflow: true},
		{name: "big halves cancel", ap: 1 << 63, an: 1 << 63, bp: 1<<63 - 1, bn: 1<<63 - 1, wantP: maxU, wantN: maxU},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, b := &Sum{p: tc.ap, n: tc.an}, &Sum{p: tc.bp, n: tc.bn}
			err := a.Merge(b)
			if tc.overflow {
				if !errors.Is(err, ErrOverflow) {
					t.Fatalf("Merge error = %v, want ErrOverflow", err)
				}
				if a.p != tc.ap || a.n != tc.an {
					t.Fatalf("receiver changed on error: P=%d N=%d", a.p, a.n)
				}
				return
			}
			if err != nil {
				t.Fatalf("Merge: %v", err)
			}
			if a.p != tc.wantP || a.n != tc.wantN {
				t.Fatalf("P=%d N=%d, want P=%d N=%d", a.p, a.n, tc.wantP, tc.wantN)
			}
			if b.p != tc.bp || b.n != tc.bn {
				t.Fatalf("argument changed: P=%d N=%d", b.p, b.n)
			}
		})
	}
}

func TestExtremeApply(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		k       Kind
		obs     []int64
		want    int64
		wantSet bool
	}{
		{name: "max empty", k: KindMax},
		{name: "min empty", k: KindMin},
		{name: "max single", k: KindMax, obs: []int64{-7}, want: -7, wantSet: true},
		{name: "min single", k: KindMin, obs: []int64{7}, want: 7, wantSet: true},
		{name: "max keeps largest", k: KindMax, obs: []int64{3, 9, -2, 9, 4}, want: 9, wantSet: true},
		{name: "min keeps smallest", k: KindMin, obs: []int64{3, 9, -2, -2, 4}, want: -2, wantSet: true},
		{name: "max of only MinInt64", k: KindMax, obs: []int64{math.MinInt64}, want: math.MinInt64, wantSet: true},
		{name: "min of only MaxInt64", k: KindMin, obs: []int64{math.MaxInt64}, want: math.MaxInt64, wantSet: true},
		{name: "max reaches MaxInt64", k: KindMax, obs: []int64{math.MinInt64, 0, math.MaxInt64, 1}, want: math.MaxInt64, wantSet: true},
		{name: "min reaches MinInt64", k: KindMin, obs: []int64{math.MaxInt64, 0, math.MinInt64, -1}, want: math.MinInt64, wantSet: true},
		// Zero is a real observation: it must make the state non-empty.
		{name: "max of zero", k: KindMax, obs: []int64{0}, want: 0, wantSet: true},
		{name: "min of zero", k: KindMin, obs: []int64{0}, want: 0, wantSet: true},
		{name: "max below zero", k: KindMax, obs: []int64{-5, -3}, want: -3, wantSet: true},
		{name: "min above zero", k: KindMin, obs: []int64{5, 3}, want: 3, wantSet: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := mustNew(t, tc.k)
			for _, v := range tc.obs {
				// Item is ignored by max and min.
				mustApply(t, s, Op{Delta: v, Item: []byte("ignored")})
			}
			if s.Value() != tc.want || s.Empty() == tc.wantSet {
				t.Fatalf("value %d empty %v, want %d %v", s.Value(), s.Empty(), tc.want, !tc.wantSet)
			}
		})
	}
}

func TestDistinctApply(t *testing.T) {
	t.Parallel()
	d := NewDistinct()
	before := mustEncode(t, d)
	for _, op := range []Op{{}, {Delta: 5}, {Item: []byte{}}} {
		if err := d.Apply(op); !errors.Is(err, ErrEmptyItem) {
			t.Fatalf("Apply(%+v) error = %v, want ErrEmptyItem", op, err)
		}
	}
	if !d.Empty() || !bytes.Equal(before, mustEncode(t, d)) {
		t.Fatal("failed Apply changed the state")
	}
	for _, tc := range []struct {
		item string
		want int64
	}{{"a", 1}, {"a", 1}, {"b", 2}, {"c", 3}, {"b", 3}} {
		mustApply(t, d, Op{Item: []byte(tc.item), Delta: 100})
		if d.Empty() || d.Value() != tc.want {
			t.Fatalf("after %q: value %d empty %v, want %d", tc.item, d.Value(), d.Empty(), tc.want)
		}
	}
}

func TestMergeKindMismatch(t *testing.T) {
	t.Parallel()
	for _, dk := range allKinds {
		dst := mustApply(t, mustNew(t, dk), Op{Delta: 1, Item: []byte("x")})
		before := mustEncode(t, dst)
		others := []State{nil, (*Sum)(nil), (*Max)(nil), (*Min)(nil), (*Distinct)(nil)}
		for _, ok := range allKinds {
			if ok != dk {
				others = append(others, mustApply(t, mustNew(t, ok), Op{Delta: 2, Item: []byte("y")}))
			}
		}
		for _, o := range others {
			if err := dst.Merge(o); !errors.Is(err, ErrKindMismatch) {
				t.Errorf("%v.Merge(%T) error = %v, want ErrKindMismatch", dk, o, err)
			}
		}
		if !bytes.Equal(before, mustEncode(t, dst)) {
			t.Errorf("%v changed by failed merges", dk)
		}
	}
}

func TestCloneIsDeep(t *testing.T) {
	t.Parallel()
	skipHeavyInShort(t)
	for _, k := range allKinds {
		orig := mustApply(t, mustNew(t, k), Op{Delta: 1, Item: []byte("a")})
		before := mustEncode(t, orig)
		c := orig.Clone()
		requireSame(t, "clone", orig, c)
		for i := range 20_000 { // enough to turn a sketch dense
			if err := c.Apply(Op{Delta: 7, Item: item(i)}); err != nil {
				t.Fatal(err)
			}
		}
		mustMerge(t, c, mustApply(t, mustNew(t, k), Op{Delta: -50, Item: []byte("z")}))
		if !bytes.Equal(before, mustEncode(t, orig)) {
			t.Errorf("%v: changing the clone changed the original", k)
		}
	}
}

// Value, Empty, Clone and MarshalBinary are documented as read-only, so they
// may run concurrently; the race detector checks that claim. The distinct
// states have buffered insertions, the case where reading must not compact
// the receiver.
func TestConcurrentReads(t *testing.T) {
	t.Parallel()
	states := []State{
		mustApply(t, &Sum{}, Op{Delta: 4}, Op{Delta: -9}),
		mustApply(t, &Max{}, Op{Delta: 4}),
		mustApply(t, &Min{}, Op{Delta: 4}),
		mustApply(t, NewDistinct(), Op{Item: []byte("a")}, Op{Item: []byte("b")}),
	}
	dense := NewDistinct()
	for i := range 20_000 {
		if err := dense.Apply(Op{Item: item(i)}); err != nil {
			t.Fatal(err)
		}
	}
	states = append(states, dense, NewDistinct(), mustDecode(t, mustEncode(t, states[3])))
	for _, s := range states {
		want := mustEncode(t, s.Clone())
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				_ = s.Value()
				_ = s.Empty()
				_ = s.Clone()
				if b, err := s.MarshalBinary(); err != nil || !bytes.Equal(b, want) {
					t.Errorf("%v: concurrent MarshalBinary = %d bytes, %v", s.Kind(), len(b), err)
				}
			})
		}
		wg.Wait()
	}
}

func TestAddInt64(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b, want int64
		ok         bool
	}{
		{1, 2, 3, true}, {-5, 3, -2, true}, {math.MaxInt64, 0, math.MaxInt64, true},
		{math.MaxInt64, 1, 0, false}, {math.MinInt64, -1, 0, false}, {math.MinInt64, math.MaxInt64, -1, true},
		{math.MaxInt64, math.MaxInt64, 0, false}, {math.MinInt64, math.MinInt64, 0, false}, {-1, math.MinInt64 + 1, math.MinInt64, true},
	} {
		got, ok := AddInt64(c.a, c.b)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("AddInt64(%d, %d) = %d, %v; want %d, %v", c.a, c.b, got, ok, c.want, c.ok)
		}
	}
}

// PNTotal decides fit on the total, whatever the order: merging one state
// at a time fails on an intermediate result that PNTotal accepts.
func TestPNTotalIsOrderFree(t *testing.T) {
	t.Parallel()
	top := mustApply(t, &Sum{}, Op{Delta: math.MaxInt64}).(*Sum)
	up := mustApply(t, &Sum{}, Op{Delta: 1}).(*Sum)
	down := mustApply(t, &Sum{}, Op{Delta: -5}).(*Sum)
	if err := top.Clone().Merge(up); err == nil {
		t.Fatal("Merge(MaxInt64, +1) did not overflow; the test shows nothing")
	}
	for _, order := range [][]*Sum{{top, up, down}, {up, top, down}, {down, up, top}} {
		var total PNTotal
		for _, s := range order {
			total.Add(s)
		}
		got, ok := total.Sum()
		if !ok || got.Value() != math.MaxInt64-4 || got.P() != math.MaxInt64+1 || got.N() != 5 {
			t.Fatalf("total of %v = %+v, %v; want MaxInt64-4 (P=2^63, N=5)", order, got, ok)
		}
	}
	var over PNTotal
	for range 3 {
		over.Add(top) // P = 3·(2^63-1) needs 65 bits
	}
	if s, ok := over.Sum(); ok {
		t.Fatalf("P past 64 bits fitted: %+v", s)
	}
	var low PNTotal
	low.Add(mustApply(t, &Sum{}, Op{Delta: math.MinInt64}).(*Sum))
	low.Add(mustApply(t, &Sum{}, Op{Delta: -1}).(*Sum))
	if s, ok := low.Sum(); ok {
		t.Fatalf("value below MinInt64 fitted: %+v", s)
	}
}
