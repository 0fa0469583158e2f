package sharded

import (
	"errors"
	"fmt"
	"sort"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/crdt"
)

// FoldPlan is what one garbage collection of a counter writes.
type FoldPlan struct {
	// Delete are the ids of the final shards folded into Tally, sorted.
	Delete []string
	// Tally is the new tally: the previous tally merged with every final shard.
	Tally crdt.State
	// Timestamp is the fold's write timestamp: one microsecond past the
	// highest folded expires_at (and past the previous tally's timestamp).
	Timestamp int64
}

// PlanFold decides what to fold, given everything stored for a counter
// (read at consistency ALL) and the GC cutoff in microseconds. It returns nil
// when no shard is final.
//
// The plan is a pure function of its inputs, and shards are merged in id
// order, so collectors that read the same shards produce byte-identical
// batches: replaying or racing them is harmless.
func PlanFold(set *driver.ShardSet, cutoff int64) (*FoldPlan, error) {
	var final []driver.Shard
	for _, s := range set.Shards {
		if s.ExpiresAt < cutoff {
			final = append(final, s)
		}
	}
	if len(final) == 0 {
		return nil, nil
	}
	sort.Slice(final, func(i, j int) bool { return final[i].ID < final[j].ID })

	var tally crdt.State
	var ts int64
	if set.Tally != nil {
		t, err := crdt.Decode(set.Tally.State)
		if err != nil {
			return nil, fmt.Errorf("decode tally: %w", err)
		}
		tally, ts = t, set.Tally.Timestamp
	}
	plan := &FoldPlan{}
	for _, s := range final {
		st, err := crdt.Decode(s.State)
		if err != nil {
			return nil, fmt.Errorf("decode shard %s: %w", s.ID, err)
		}
		if tally == nil {
			tally = st
		} else if err := tally.Merge(st); err != nil {
			if errors.Is(err, crdt.ErrOverflow) {
				// A tally holds one state: this shard stays unfolded (reads
				// add it exactly, see SumTotal) until shards folded later
				// make room. Merge left the tally as it was, and skipping
				// by the same rule keeps racing plans identical.
				continue
			}
			return nil, fmt.Errorf("merge shard %s: %w", s.ID, err)
		}
		// Every write of a shard is below its expires_at, so a fold above the
		// highest expires_at shadows every write, late ones included.
		ts = max(ts, s.ExpiresAt)
		plan.Delete = append(plan.Delete, s.ID)
	}
	if len(plan.Delete) == 0 {
		return nil, fmt.Errorf("%w: no final shard fits into the tally (%d shards wait)", crdt.ErrOverflow, len(final))
	}
	plan.Tally = tally
	plan.Timestamp = ts + 1
	return plan, nil
}

// SumTotal adds the values of a sum counter's tally and shards exactly.
// Read uses it when Merge overflows: every stored state is within range on
// its own, but states written by different processes may add up to more.
func SumTotal(set *driver.ShardSet) (crdt.Wide, error) {
	var total crdt.Wide
	add := func(what string, raw []byte) error {
		st, err := crdt.Decode(raw)
		if err != nil {
			return fmt.Errorf("decode %s: %w", what, err)
		}
		if st.Kind() != crdt.KindSum {
			return fmt.Errorf("%s holds %s state, not sum", what, st.Kind())
		}
		total.Add(st.Value())
		return nil
	}
	if set.Tally != nil {
		if err := add("tally", set.Tally.State); err != nil {
			return total, err
		}
	}
	for _, s := range set.Shards {
		if err := add("shard "+s.ID, s.State); err != nil {
			return total, err
		}
	}
	return total, nil
}

// Merge folds the tally and every shard of a counter into one state. kind is
// used when the counter has no data yet.
func Merge(kind crdt.Kind, set *driver.ShardSet) (crdt.State, error) {
	total, err := crdt.New(kind)
	if err != nil {
		return nil, err
	}
	if set.Tally != nil {
		t, err := crdt.Decode(set.Tally.State)
		if err != nil {
			return nil, fmt.Errorf("decode tally: %w", err)
		}
		if err := total.Merge(t); err != nil {
			return nil, fmt.Errorf("merge tally: %w", err)
		}
	}
	for _, s := range set.Shards {
		st, err := crdt.Decode(s.State)
		if err != nil {
			return nil, fmt.Errorf("decode shard %s: %w", s.ID, err)
		}
		if err := total.Merge(st); err != nil {
			return nil, fmt.Errorf("merge shard %s: %w", s.ID, err)
		}
	}
	return total, nil
}
