package embedded

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/abacusdb/abacus/driver"
)

// op is one step of an LWW scenario on shard "m" of one counter.
type op struct {
	fold    bool   // a fold deleting "m" (and writing tally), else a shard write
	state   string // shard state, or tally state for a fold
	expires int64
	ts      int64
}

func w(state string, expires, ts int64) op { return op{state: state, expires: expires, ts: ts} }
func del(tally string, ts int64) op        { return op{fold: true, state: tally, ts: ts} }

// TestLWW checks Cassandra's conflict rules directly, each scenario three
// ways: with every cell still in the memtable, flushed to separate sstables
// (merged when read), and compacted after every step (merged by compaction,
// often without the base value).
func TestLWW(t *testing.T) {
	t.Parallel()
	const noShard = "<none>"
	cases := []struct {
		name      string
		ops       []op
		wantShard string // state of "m", or noShard
		wantExp   int64
		wantTally string // "" = no tally
	}{
		{"newer then older: newer survives", []op{w("new", 100, 10), w("old", 100, 5)}, "new", 100, ""},
		{"older then newer: newer survives", []op{w("old", 100, 5), w("new", 100, 10)}, "new", 100, ""},
		{"delete 10 then write 9 stays deleted", []op{w("a", 100, 1), del("T", 10), w("late", 100, 9)}, noShard, 0, "T"},
		{"delete 10 then write 10 stays deleted", []op{w("a", 100, 1), del("T", 10), w("tie", 100, 10)}, noShard, 0, "T"},
		{"write 10 then delete 10 is deleted", []op{w("tie", 100, 10), del("T", 10)}, noShard, 0, "T"},
		{"write 11 after delete 10 is visible", []op{w("a", 100, 1), del("T", 10), w("new", 200, 11)}, "new", 200, "T"},
		{"delete before any write hides older write", []op{del("T", 10), w("a", 100, 3)}, noShard, 0, "T"},
		{"equal ts: greater bytes win (a then b)", []op{w("a", 100, 7), w("b", 100, 7)}, "b", 100, ""},
		{"equal ts: greater bytes win (b then a)", []op{w("b", 100, 7), w("a", 100, 7)}, "b", 100, ""},
		{"equal ts: longer extension wins", []op{w("ab", 100, 7), w("a", 100, 7)}, "ab", 100, ""},
		// The row encodes expires_at before state, so it decides first.
		{"equal ts: row compared as a whole", []op{w("z", 100, 7), w("a", 200, 7)}, "a", 200, ""},
		{"replayed write is a no-op", []op{w("x", 100, 4), w("x", 100, 4), w("x", 100, 4)}, "x", 100, ""},
		{"older fold never overwrites newer tally", []op{del("AB", 201), del("A", 101)}, noShard, 0, "AB"},
		{"equal ts folds: greater tally wins", []op{del("A", 50), del("B", 50), del("A", 50)}, noShard, 0, "B"},
		{"negative timestamps order numerically", []op{w("neg", 100, -5), w("zero", 100, 0)}, "zero", 100, ""},
	}
	modes := []string{"memtable", "flush", "compact"}
	for _, tc := range cases {
		for _, mode := range modes {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				t.Parallel()
				d := openMem(t)
				for _, o := range tc.ops {
					if o.fold {
						mustFold(t, d, "ns", "c", []string{"m"}, []byte(o.state), o.ts)
					} else {
						mustWrite(t, d, "ns", "c", "m", []byte(o.state), o.expires, o.ts)
					}
					switch mode {
					case "flush":
						if err := d.db.Flush(); err != nil {
							t.Fatal(err)
						}
					case "compact":
						if err := d.db.Flush(); err != nil {
							t.Fatal(err)
						}
						if err := d.db.Compact(context.Background(), []byte{0}, []byte{0xff}, false); err != nil {
							t.Fatal(err)
						}
					}
				}
				set := mustRead(t, d, "ns", "c")
				var got []string
				for _, s := range set.Shards {
					got = append(got, fmt.Sprintf("%s=%s@%d", s.ID, s.State, s.ExpiresAt))
				}
				var want []string
				if tc.wantShard != noShard {
					want = []string{fmt.Sprintf("m=%s@%d", tc.wantShard, tc.wantExp)}
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("shards = %v, want %v", got, want)
				}
				switch {
				case tc.wantTally == "" && set.Tally != nil:
					t.Errorf("tally = %q, want none", set.Tally.State)
				case tc.wantTally != "" && (set.Tally == nil || string(set.Tally.State) != tc.wantTally):
					t.Errorf("tally = %+v, want %q", set.Tally, tc.wantTally)
				}
			})
		}
	}
}

// TestMergerIsAMax feeds the merge operator every order of a set of
// operands, in both directions and split into runs merged separately (as a
// compaction without the base value does), and wants one answer: the cell
// cellWins ranks highest.
func TestMergerIsAMax(t *testing.T) {
	t.Parallel()
	enc := func(c cell) []byte { return appendCell(nil, c) }
	pool := [][]byte{
		enc(cell{Timestamp: 1, Payload: []byte("b")}),
		enc(cell{Timestamp: 2, Payload: []byte("a")}),
		enc(cell{Timestamp: 2, Payload: []byte("b")}),
		enc(cell{Timestamp: 2, Tombstone: true}),
		enc(cell{Timestamp: 2, Payload: nil}),
		enc(cell{Timestamp: 1, Tombstone: true}),
		enc(cell{Timestamp: -1, Payload: []byte("zzz")}),
	}
	mergeRun := func(t *testing.T, ops [][]byte, newer bool) []byte {
		t.Helper()
		vm, err := lwwMergeOperator.Merge(nil, ops[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range ops[1:] {
			if newer {
				err = vm.MergeNewer(o)
			} else {
				err = vm.MergeOlder(o)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		out, closer, err := vm.Finish(false)
		if err != nil || closer != nil {
			t.Fatalf("Finish: %v, closer %v", err, closer)
		}
		return bytes.Clone(out)
	}

	for size := 1; size <= 5; size++ {
		subset := pool[:size]
		if size == 5 {
			subset = [][]byte{pool[0], pool[2], pool[3], pool[5], pool[6]}
		}
		var want []byte
		for _, v := range subset {
			c, _ := decodeCell(v)
			if want == nil {
				want = v
				continue
			}
			wc, _ := decodeCell(want)
			if cellWins(c, v, wc, want) {
				want = v
			}
		}
		permute(subset, func(perm [][]byte) {
			for _, newer := range []bool{true, false} {
				if got := mergeRun(t, perm, newer); !bytes.Equal(got, want) {
					t.Fatalf("merge %x (newer=%v) = %x, want %x", perm, newer, got, want)
				}
				for split := 1; split < len(perm); split++ {
					left := mergeRun(t, perm[:split], newer)
					right := mergeRun(t, perm[split:], newer)
					if got := mergeRun(t, [][]byte{left, right}, newer); !bytes.Equal(got, want) {
						t.Fatalf("merge of runs split at %d of %x = %x, want %x", split, perm, got, want)
					}
				}
			}
		})
	}
}

func permute(xs [][]byte, f func([][]byte)) {
	var rec func(k int)
	rec = func(k int) {
		if k == len(xs) {
			f(xs)
			return
		}
		for i := k; i < len(xs); i++ {
			xs[k], xs[i] = xs[i], xs[k]
			rec(k + 1)
			xs[k], xs[i] = xs[i], xs[k]
		}
	}
	rec(0)
}

func TestMergerRejectsCorruptOperand(t *testing.T) {
	t.Parallel()
	good := appendCell(nil, cell{Timestamp: 1, Payload: []byte("x")})
	if _, err := lwwMergeOperator.Merge(nil, []byte{9, 9}); err == nil {
		t.Error("Merge accepted a corrupt first operand")
	}
	vm, err := lwwMergeOperator.Merge(nil, good)
	if err != nil {
		t.Fatal(err)
	}
	if err := vm.MergeNewer([]byte{cellVersion + 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}); err == nil {
		t.Error("MergeNewer accepted an unknown cell version")
	}
}

// TestCorruptCellFailsRead stores bytes the merge operator cannot read and
// expects reads to report them, not panic or skip them.
func TestCorruptCellFailsRead(t *testing.T) {
	t.Parallel()
	for _, raw := range [][]byte{{}, {1}, {2, 0, 0, 0, 0, 0, 0, 0, 0, 1}, {1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 3}} {
		t.Run(fmt.Sprintf("%x", raw), func(t *testing.T) {
			t.Parallel()
			d := openMem(t)
			if err := d.db.Set(shardKey("ns", "c", "m"), raw, nil); err != nil {
				t.Fatal(err)
			}
			_, err := d.ReadShards(context.Background(), &driver.ReadShardsParams{Namespace: "ns", Counter: "c"})
			if err == nil {
				t.Fatal("ReadShards of a corrupt shard succeeded")
			}
			if _, err := d.ListCounters(context.Background(), &driver.ListCountersParams{}); err == nil {
				t.Fatal("ListCounters over a corrupt shard succeeded")
			}
		})
	}
}
