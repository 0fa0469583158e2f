package sharded

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/crdt"
)

func sumState(t *testing.T, deltas ...int64) []byte {
	t.Helper()
	s, _ := crdt.New(crdt.KindSum)
	for _, d := range deltas {
		if err := s.Apply(crdt.Op{Delta: d}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPlanFold(t *testing.T) {
	t.Parallel()
	shards := func() []driver.Shard {
		return []driver.Shard{
			{ID: "c", State: sumState(t, 3), ExpiresAt: 300},
			{ID: "a", State: sumState(t, 1), ExpiresAt: 100},
			{ID: "b", State: sumState(t, 2), ExpiresAt: 200},
		}
	}
	tests := []struct {
		name      string
		tally     *driver.Tally
		cutoff    int64
		wantNil   bool
		wantIDs   []string
		wantValue int64
		wantTS    int64
	}{
		{name: "nothing final", cutoff: 100, wantNil: true},
		{name: "prefix of one", cutoff: 101, wantIDs: []string{"a"}, wantValue: 1, wantTS: 101},
		{name: "prefix of two", cutoff: 250, wantIDs: []string{"a", "b"}, wantValue: 3, wantTS: 201},
		{name: "all", cutoff: 1000, wantIDs: []string{"a", "b", "c"}, wantValue: 6, wantTS: 301},
		{name: "previous tally merged", cutoff: 250, tally: &driver.Tally{State: sumState(t, 40), Timestamp: 51},
			wantIDs: []string{"a", "b"}, wantValue: 43, wantTS: 201},
		{name: "timestamp stays above previous tally", cutoff: 150, tally: &driver.Tally{State: sumState(t, 40), Timestamp: 500},
			wantIDs: []string{"a"}, wantValue: 41, wantTS: 501},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			plan, err := PlanFold(&driver.ShardSet{Tally: tt.tally, Shards: shards()}, tt.cutoff)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantNil {
				if plan != nil {
					t.Fatalf("plan = %+v, want nil", plan)
				}
				return
			}
			if plan == nil {
				t.Fatal("plan is nil")
			}
			if got := plan.Tally.Value(); got != tt.wantValue {
				t.Errorf("tally value = %d, want %d", got, tt.wantValue)
			}
			if plan.Timestamp != tt.wantTS {
				t.Errorf("timestamp = %d, want %d", plan.Timestamp, tt.wantTS)
			}
			if len(plan.Delete) != len(tt.wantIDs) {
				t.Fatalf("delete = %v, want %v", plan.Delete, tt.wantIDs)
			}
			for i := range plan.Delete {
				if plan.Delete[i] != tt.wantIDs[i] {
					t.Fatalf("delete = %v, want %v", plan.Delete, tt.wantIDs)
				}
			}
		})
	}
}

// Collectors that read the same shards in any order must write byte-identical
// tallies, otherwise racing folds at the same timestamp could disagree.
func TestPlanFoldDeterministic(t *testing.T) {
	t.Parallel()
	for _, kind := range []crdt.Kind{crdt.KindSum, crdt.KindMax, crdt.KindMin, crdt.KindDistinct} {
		rng := rand.New(rand.NewPCG(uint64(kind), 7))
		var shards []driver.Shard
		for i := range 20 {
			s, _ := crdt.New(kind)
			for j := range 50 {
				op := crdt.Op{Delta: rng.Int64N(1000) - 500}
				if kind == crdt.KindDistinct {
					op = crdt.Op{Item: []byte{byte(i), byte(j), byte(rng.IntN(256))}}
				}
				if err := s.Apply(op); err != nil {
					t.Fatal(err)
				}
			}
			b, _ := s.MarshalBinary()
			shards = append(shards, driver.Shard{ID: string(rune('a' + i)), State: b, ExpiresAt: int64(100 + i)})
		}
		var first []byte
		for trial := range 5 {
			shuffled := append([]driver.Shard(nil), shards...)
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			plan, err := PlanFold(&driver.ShardSet{Shards: shuffled}, 1000)
			if err != nil {
				t.Fatal(err)
			}
			b, err := plan.Tally.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if trial == 0 {
				first = b
			} else if !bytes.Equal(first, b) {
				t.Fatalf("%v: tally bytes differ between collectors that read the same shards", kind)
			}
		}
	}
}

func TestPlanFoldCorruptShard(t *testing.T) {
	t.Parallel()
	set := &driver.ShardSet{Shards: []driver.Shard{{ID: "a", State: []byte{0xff, 0x01}, ExpiresAt: 1}}}
	if _, err := PlanFold(set, 100); err == nil {
		t.Fatal("PlanFold accepted a corrupt shard; folding it would destroy data")
	}
}
