package sharded

import (
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
// The folded shards are always the final shards expiring before some
// instant, never a selection, and the fold's timestamp is past each of
// them: so every shard expiring before a tally's timestamp is in that tally,
// which is what lets reads skip them (docs/architecture.md, "Reads that skip
// folded shards"). Normally that is every final shard. A sum tally holds one
// P/N state, and shards written blindly by different processes may add up
// to more (crdt.ErrOverflow); then the fold takes the longest such run of
// shards whose total fits, counted exactly so that the order of the shards
// does not matter, and the rest wait (reads add them exactly, see
// SumTotal).
//
// The plan is a pure function of its inputs, so collectors that read the
// same shards produce byte-identical batches: replaying or racing them is
// harmless. A collector that sees more final shards chooses a run at least
// as long, at a timestamp at least as high.
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
	sort.Slice(final, func(i, j int) bool {
		if final[i].ExpiresAt != final[j].ExpiresAt {
			return final[i].ExpiresAt < final[j].ExpiresAt
		}
		return final[i].ID < final[j].ID
	})
	var (
		prev crdt.State
		ts   int64
	)
	if set.Tally != nil {
		t, err := crdt.Decode(set.Tally.State)
		if err != nil {
			return nil, fmt.Errorf("decode tally: %w", err)
		}
		prev, ts = t, set.Tally.Timestamp
	}
	states := make([]crdt.State, len(final))
	for i, s := range final {
		st, err := crdt.Decode(s.State)
		if err != nil {
			return nil, fmt.Errorf("decode shard %s: %w", s.ID, err)
		}
		states[i] = st
	}
	tally, n, err := foldRun(prev, states, final)
	if err != nil {
		return nil, err
	}
	plan := &FoldPlan{Tally: tally}
	for _, s := range final[:n] {
		// Every write of a shard is below its expires_at, so a fold above the
		// highest expires_at shadows every write, late ones included.
		ts = max(ts, s.ExpiresAt)
		plan.Delete = append(plan.Delete, s.ID)
	}
	sort.Strings(plan.Delete)
	plan.Timestamp = ts + 1
	return plan, nil
}

// foldRun merges the longest run states[:n] into prev that fits, where n
// ends a group of shards expiring at the same instant, and returns the
// merged state and n.
func foldRun(prev crdt.State, states []crdt.State, shards []driver.Shard) (crdt.State, int, error) {
	kind := states[0].Kind()
	if prev != nil {
		kind = prev.Kind()
	}
	if kind != crdt.KindSum {
		// Only sums can overflow; any error here is a real one.
		tally := prev
		for i, st := range states {
			if tally == nil {
				tally = st
				continue
			}
			if err := tally.Merge(st); err != nil {
				return nil, 0, fmt.Errorf("merge shard %s: %w", shards[i].ID, err)
			}
		}
		return tally, len(states), nil
	}
	var total crdt.PNTotal
	if prev != nil {
		total.Add(prev.(*crdt.Sum))
	}
	var (
		best *crdt.Sum
		n    int
	)
	for i, st := range states {
		s, ok := st.(*crdt.Sum)
		if !ok {
			return nil, 0, fmt.Errorf("shard %s holds %s state, the counter sum", shards[i].ID, st.Kind())
		}
		total.Add(s)
		if i+1 < len(states) && shards[i+1].ExpiresAt == shards[i].ExpiresAt {
			continue // not the end of a group
		}
		if sum, fits := total.Sum(); fits {
			best, n = sum, i+1
		}
	}
	if best == nil {
		return nil, 0, fmt.Errorf("%w: no run of final shards from the first fits into the tally (%d shards wait)", crdt.ErrOverflow, len(states))
	}
	return best, n, nil
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
