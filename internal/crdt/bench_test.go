package crdt

import (
	"strconv"
	"testing"
)

func BenchmarkApplySum(b *testing.B) {
	s := &Sum{}
	op := Op{Delta: 1}
	for b.Loop() {
		if err := s.Apply(op); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkApplyDistinct(b *testing.B) {
	items := make([][]byte, 1<<16)
	for i := range items {
		items[i] = item(i)
	}
	d := NewDistinct()
	i := 0
	for b.Loop() {
		if err := d.Apply(Op{Item: items[i&(len(items)-1)]}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func distinctOf(b *testing.B, from, n int) *Distinct {
	d := NewDistinct()
	for i := range n {
		mustApply(b, d, Op{Item: item(from + i)})
	}
	return d
}

// The fold path: a tally absorbing one shard, for shards that are still
// sparse and ones that have gone dense.
func BenchmarkMergeDistinct(b *testing.B) {
	for _, bc := range []struct {
		name string
		n    int
	}{{"sparse", 1_000}, {"dense", 50_000}} {
		b.Run(bc.name, func(b *testing.B) {
			tally, shard := distinctOf(b, 0, bc.n), distinctOf(b, bc.n/2, bc.n)
			for b.Loop() {
				mustMerge(b, tally.Clone(), shard)
			}
		})
	}
}

func BenchmarkEncodeSum(b *testing.B) {
	s := mustApply(b, &Sum{}, Op{Delta: 123}, Op{Delta: -7})
	for b.Loop() {
		if _, err := s.MarshalBinary(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeMax(b *testing.B) {
	s := mustApply(b, &Max{}, Op{Delta: 123})
	for b.Loop() {
		if _, err := s.MarshalBinary(); err != nil {
			b.Fatal(err)
		}
	}
}

// "buffered" has insertions not yet drained into the sparse list, so
// encoding pays for canonicalizing a copy; "decoded" states are canonical.
func BenchmarkEncodeDistinct(b *testing.B) {
	for _, bc := range []struct {
		name string
		n    int
	}{{"sparse-buffered", 1_000}, {"dense", 50_000}} {
		d := distinctOf(b, 0, bc.n)
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := d.MarshalBinary(); err != nil {
					b.Fatal(err)
				}
			}
		})
		decoded := mustDecode(b, mustEncode(b, d))
		b.Run(bc.name+"-decoded", func(b *testing.B) {
			for b.Loop() {
				if _, err := decoded.MarshalBinary(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, s := range []State{
		mustApply(b, &Sum{}, Op{Delta: 1}),
		distinctOf(b, 0, 1_000),
		distinctOf(b, 0, 50_000),
	} {
		enc := mustEncode(b, s)
		b.Run(s.Kind().String()+"-"+strconv.Itoa(len(enc))+"B", func(b *testing.B) {
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				if _, err := Decode(enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
