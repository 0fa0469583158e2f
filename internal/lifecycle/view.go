package lifecycle

import (
	"slices"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// View is what one process knows of a namespace's cuts, as read at ReadAt.
// It is immutable once built.
type View struct {
	// ReadAt is when the read that built the view started; the view is
	// trusted until ReadAt plus the cache's refresh interval.
	ReadAt time.Time
	// CreatedAt is the namespace record's creation time as read with the
	// cuts; a different one means the namespace was deleted and made again.
	CreatedAt time.Time

	cuts      []driver.Cut       // as read
	counters  map[string][]int64 // sorted cut times per counter
	namespace []int64            // sorted namespace-wide cut times
	deletedAt int64              // when this incarnation is deleted; 0: never
}

// NewView builds a view from a namespace's cuts in any order. A deleting
// cut deletes the incarnation of the namespace made before it: the earliest
// one after createdAt is when the namespace read is deleted. Deleting cuts
// stay flagged for good; a namespace made again under the name (which the
// purge allows only long after the cut) was created after them, so they
// do not delete it.
func NewView(readAt, createdAt time.Time, cuts []driver.Cut) *View {
	v := &View{ReadAt: readAt, CreatedAt: createdAt, cuts: cuts, counters: map[string][]int64{}}
	born := createdAt.UnixMicro()
	if createdAt.IsZero() {
		born = 0
	}
	for _, c := range cuts {
		if c.Counter == "" {
			v.namespace = append(v.namespace, c.At)
			if c.DeletesNamespace && c.At > born && (v.deletedAt == 0 || c.At < v.deletedAt) {
				v.deletedAt = c.At
			}
			continue
		}
		v.counters[c.Counter] = append(v.counters[c.Counter], c.At)
	}
	slices.Sort(v.namespace)
	v.namespace = slices.Compact(v.namespace)
	for counter, ts := range v.counters {
		slices.Sort(ts)
		v.counters[counter] = slices.Compact(ts)
	}
	return v
}

// Generation is the generation of counter at time t (microseconds): the
// latest cut at or before t, of the counter or of its namespace, or the
// start of t's TTL period when ttl is positive, whichever is latest; 0
// when there is none.
func (v *View) Generation(counter string, t int64, ttl time.Duration) int64 {
	gen := max(latestAtOrBefore(v.counters[counter], t), latestAtOrBefore(v.namespace, t))
	if p := ttl.Microseconds(); p > 0 && t > 0 {
		gen = max(gen, t-t%p)
	}
	return gen
}

// Deleted reports whether the namespace, as created at CreatedAt, is
// deleted at time t.
func (v *View) Deleted(t int64) bool { return v.deletedAt != 0 && t >= v.deletedAt }

// DeletedAt is when a recorded delete of the namespace created at
// CreatedAt takes effect; 0 when none is recorded.
func (v *View) DeletedAt() int64 { return v.deletedAt }

// Cuts returns the cuts the view was built from.
func (v *View) Cuts() []driver.Cut { return slices.Clone(v.cuts) }

func latestAtOrBefore(sorted []int64, t int64) int64 {
	i, found := slices.BinarySearch(sorted, t)
	if found {
		return sorted[i]
	}
	if i == 0 {
		return 0
	}
	return sorted[i-1]
}

// End is when generation gen of counter ended: the first cut after gen, of
// the counter or of its namespace, or the end of gen's TTL period, whichever
// is first; 0 while gen has not ended (no such boundary is known).
func (v *View) End(counter string, gen int64, ttl time.Duration) int64 {
	end := earliest(firstAfter(v.counters[counter], gen), firstAfter(v.namespace, gen))
	if p := ttl.Microseconds(); p > 0 && gen >= 0 {
		end = earliest(end, gen-gen%p+p)
	}
	return end
}

// earliest is the smaller of two boundaries, where 0 means none.
func earliest(a, b int64) int64 {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

func firstAfter(sorted []int64, t int64) int64 {
	i, _ := slices.BinarySearch(sorted, t+1)
	if i == len(sorted) {
		return 0
	}
	return sorted[i]
}

// Unneeded returns the cuts that no longer decide any generation in use:
// every cut with a later cut of the same counter, or of the namespace, at
// or before settled. The generations such a cut began ended at or before
// that later cut; once they are purged, a process whose clock reads after
// settled never asks for them, and stray data under their names is still
// found and purged, since it ends at the later cut.
func Unneeded(cuts []driver.Cut, settled int64) []driver.Cut {
	var nsSettled int64 // the latest namespace-wide cut at or before settled
	latest := map[string]int64{}
	for _, c := range cuts {
		if c.At > settled {
			continue
		}
		if c.Counter == "" {
			nsSettled = max(nsSettled, c.At)
		} else {
			latest[c.Counter] = max(latest[c.Counter], c.At)
		}
	}
	var out []driver.Cut
	for _, c := range cuts {
		if c.At < nsSettled || c.Counter != "" && c.At < latest[c.Counter] {
			out = append(out, c)
		}
	}
	return out
}
