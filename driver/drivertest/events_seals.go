package drivertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/abacusdb/abacus/driver"
)

// sealCL is the level of every seal call here. A seal is read back right
// after it is written, maybe from another replica, so both sides ask for
// a quorum: the level a single node and any healthy cluster give.
const sealCL = driver.Quorum

// exerciseEventSeals checks the contracts of driver.EventSeals: a seal is
// stored once per start, and whoever comes second, or races, gets the
// first back; a read finds the seal with the greatest start below a
// time, in its bucket only; and DeleteEventSeals removes whole buckets.
// open is only used to get a handle to close.
//
// The races run in one process on one handle: the Opener may return a
// fresh store on every call (the embedded driver's does), so a second
// handle cannot be relied on to share the first one's seals.
func exerciseEventSeals(t *testing.T, d driver.Events, open Opener) {
	t.Run("SealThenRead", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-seal")
		b := evBase
		s := driver.EventSeal{Start: b + 10, End: b + 70, Value: -42, Events: []byte("engine's encoding \x00\xff")}
		if stored, applied := sealEvents(t, d, ns, "c", b, s); !applied || !sameSeal(*stored, s) {
			t.Fatalf("first SealEvents = %s, applied %v; want %s applied", fmtSeal(stored), applied, fmtSeal(&s))
		}
		wantSeal(t, d, ns, "c", b, s.Start+1, s)
		wantSeal(t, d, ns, "c", b, s.End, s)
		wantSeal(t, d, ns, "c", b, math.MaxInt64, s)
		// The seal covers times after its start, not the start itself.
		wantNoSeal(t, d, ns, "c", b, s.Start)
		wantNoSeal(t, d, ns, "c", b, math.MinInt64)
		// Another bucket of the counter, and a counter never sealed.
		wantNoSeal(t, d, ns, "c", b+evWidth, math.MaxInt64)
		wantNoSeal(t, d, ns, "never", b, math.MaxInt64)

		// A clear round-trips too.
		clear := driver.EventSeal{Start: b + 70, End: b + 90, Clear: true, Events: []byte{1}}
		if stored, applied := sealEvents(t, d, ns, "c", b, clear); !applied || !sameSeal(*stored, clear) {
			t.Fatalf("SealEvents of a clear = %s, applied %v; want %s applied", fmtSeal(stored), applied, fmtSeal(&clear))
		}
		wantSeal(t, d, ns, "c", b, clear.End, clear)
		wantSeal(t, d, ns, "c", b, clear.Start, s)
	})

	t.Run("SecondSealSameStartLoses", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-sealtwice")
		b := evBase
		first := driver.EventSeal{Start: b + 5, End: b + 100, Value: 5, Events: []byte("first")}
		sealEvents(t, d, ns, "c", b, first)
		for _, other := range []driver.EventSeal{
			{Start: b + 5, End: b + 200, Value: 9, Clear: true, Events: []byte("second")},
			{Start: b + 5, End: b + 100, Value: 5},                          // the same but for its events
			{Start: b + 5, End: b + 100, Value: 5, Events: []byte("first")}, // a replay
		} {
			stored, applied := sealEvents(t, d, ns, "c", b, other)
			if applied || !sameSeal(*stored, first) {
				t.Errorf("SealEvents(%s) over %s = %s, applied %v; want the first, not applied",
					fmtSeal(&other), fmtSeal(&first), fmtSeal(stored), applied)
			}
		}
		wantSeal(t, d, ns, "c", b, math.MaxInt64, first)
	})

	// Eight racers seal one start, each with a seal of its own, in a few
	// rounds. On Cassandra racing Paxos rounds may time out with an
	// unknown outcome; the racer then calls again, which settles it, and
	// may find its own seal stored without being told it applied.
	t.Run("RacingSealsOneWinner", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-sealrace")
		b := evBase
		const racers, rounds = 8, 4
		for round := range rounds {
			start := b + int64(round)*100
			mine := func(i int) driver.EventSeal {
				return driver.EventSeal{Start: start, End: start + 10 + int64(i), Value: int64(1000*round + i), Events: []byte{byte(round), byte(i)}}
			}
			stored := make([]*driver.EventSeal, racers)
			applied := make([]bool, racers)
			unknown := make([]bool, racers)
			errs := race(racers, func(i int) error {
				var err error
				for range 10 {
					stored[i], applied[i], err = d.SealEvents(ctx(t), &driver.SealEventsParams{
						Namespace: ns, Counter: "c", Bucket: b, Seal: mine(i), Consistency: sealCL,
					})
					if !errors.Is(err, driver.ErrUnknownOutcome) {
						return err
					}
					unknown[i] = true
				}
				return err
			})
			if err := errors.Join(errs...); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			winner := -1
			for i := range racers {
				if sameSeal(*stored[0], mine(i)) {
					winner = i
				}
			}
			if winner < 0 {
				t.Fatalf("round %d: the stored seal %s is none of the racers'", round, fmtSeal(stored[0]))
			}
			for i := range racers {
				if !sameSeal(*stored[i], *stored[0]) {
					t.Errorf("round %d: racer %d got %s, racer 0 got %s", round, i, fmtSeal(stored[i]), fmtSeal(stored[0]))
				}
				if applied[i] && i != winner {
					t.Errorf("round %d: racer %d applied, but the stored seal is racer %d's", round, i, winner)
				}
			}
			if !applied[winner] && !unknown[winner] {
				t.Errorf("round %d: racer %d's seal is stored, but no racer applied it", round, winner)
			}
			wantSeal(t, d, ns, "c", b, start+1, mine(winner))
		}
	})

	t.Run("GreatestStartBelow", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-sealseek")
		b := evBase
		chain := []driver.EventSeal{
			{Start: b + 100, End: b + 200, Value: 1, Events: []byte("a")},
			{Start: b + 200, End: b + 300, Value: 3, Events: []byte("b")},
			{Start: b + 300, End: b + 400, Value: 6, Events: []byte("c")},
		}
		// Sealed out of order: the store orders them, not the writes.
		for _, i := range []int{2, 0, 1} {
			sealEvents(t, d, ns, "c", b, chain[i])
		}
		for _, tc := range []struct {
			before int64
			want   int // index in chain, -1 for none
		}{
			{b + 250, 1}, {b + 1000, 2}, {b + 100, -1}, {b + 101, 0},
			{b + 200, 0}, {b + 201, 1}, {b + 300, 1}, {b + 301, 2}, {math.MaxInt64, 2}, {b, -1},
		} {
			if tc.want < 0 {
				wantNoSeal(t, d, ns, "c", b, tc.before)
			} else {
				wantSeal(t, d, ns, "c", b, tc.before, chain[tc.want])
			}
		}
	})

	t.Run("Isolation", func(t *testing.T) {
		t.Parallel()
		// Names chosen so that a key layout that merely concatenates
		// components would mix them up, next to another counter, bucket
		// and namespace.
		ns := unique("ns-sealiso")
		type where struct {
			ns, counter string
			bucket      int64
		}
		places := []where{
			{ns + "a", "bc", evBase},
			{ns + "ab", "c", evBase},
			{ns + "a", "b", evBase},
			{ns + "a", "bc", evBase + evWidth},
			{ns + "a", "other", evBase},
			{ns + "-other", "bc", evBase},
		}
		seals := make([]driver.EventSeal, len(places))
		for i, p := range places {
			// Each place gets a seal of its own at the same start, and
			// every one applies: none sees another's.
			seals[i] = driver.EventSeal{Start: evBase + 1, End: evBase + 2 + int64(i), Value: int64(i), Events: []byte{byte(i)}}
			if stored, applied := sealEvents(t, d, p.ns, p.counter, p.bucket, seals[i]); !applied || !sameSeal(*stored, seals[i]) {
				t.Errorf("SealEvents at %+v = %s, applied %v; want its own seal applied", p, fmtSeal(stored), applied)
			}
		}
		for i, p := range places {
			wantSeal(t, d, p.ns, p.counter, p.bucket, math.MaxInt64, seals[i])
		}
		wantNoSeal(t, d, ns+"a", "bc", evBase-evWidth, math.MaxInt64)
		wantNoSeal(t, d, ns+"a", "bcd", evBase, math.MaxInt64)
		wantNoSeal(t, d, ns, "abc", evBase, math.MaxInt64)
	})

	t.Run("EventsEmptyAndLarge", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-sealsize")
		b := evBase
		large := make([]byte, 1<<20)
		for i := range large {
			large[i] = byte(i*7 + i>>8)
		}
		for i, s := range []driver.EventSeal{
			{Start: b + 1, End: b + 2, Value: 1},
			{Start: b + 2, End: b + 3, Value: 2, Events: []byte{}},
			{Start: b + 3, End: b + 4, Value: 3, Events: large},
		} {
			stored, applied := sealEvents(t, d, ns, "c", b, s)
			if !applied || !sameSeal(*stored, s) {
				t.Errorf("seal %d: SealEvents = %s, applied %v; want %s applied", i, fmtSeal(stored), applied, fmtSeal(&s))
			}
			wantSeal(t, d, ns, "c", b, s.End, s)
			// The loser gets the whole blob back too.
			if stored, _ := sealEvents(t, d, ns, "c", b, driver.EventSeal{Start: s.Start, End: s.End}); !sameSeal(*stored, s) {
				t.Errorf("seal %d: a second SealEvents returned %s, want %s", i, fmtSeal(stored), fmtSeal(&s))
			}
		}
	})

	t.Run("TimesBeforeTheEpoch", func(t *testing.T) {
		t.Parallel()
		// Negative times are valid microseconds. Drivers do not check
		// that a seal's start is in its bucket, so one bucket holds a
		// chain across zero, whose order the key encoding must keep.
		ns := unique("ns-sealneg")
		b := -evWidth
		chain := []driver.EventSeal{
			{Start: math.MinInt64, End: -2 * evWidth, Value: -1, Events: []byte("min")},
			{Start: -2 * evWidth, End: -20, Value: -2, Events: []byte("neg")},
			{Start: -20, End: 20, Value: math.MinInt64, Events: []byte("across")},
			{Start: 20, End: math.MaxInt64, Value: math.MaxInt64, Events: []byte("pos")},
		}
		for _, i := range []int{3, 1, 2, 0} {
			sealEvents(t, d, ns, "c", b, chain[i])
		}
		wantNoSeal(t, d, ns, "c", b, math.MinInt64)
		wantSeal(t, d, ns, "c", b, math.MinInt64+1, chain[0])
		wantSeal(t, d, ns, "c", b, -2*evWidth, chain[0])
		wantSeal(t, d, ns, "c", b, -2*evWidth+1, chain[1])
		wantSeal(t, d, ns, "c", b, -20, chain[1])
		wantSeal(t, d, ns, "c", b, -1, chain[2])
		wantSeal(t, d, ns, "c", b, 0, chain[2])
		wantSeal(t, d, ns, "c", b, 20, chain[2])
		wantSeal(t, d, ns, "c", b, 21, chain[3])
		wantSeal(t, d, ns, "c", b, math.MaxInt64, chain[3])
		// Negative buckets are apart from the positive ones.
		wantNoSeal(t, d, ns, "c", evWidth, math.MaxInt64)
	})

	t.Run("DeleteEventSeals", func(t *testing.T) {
		t.Parallel()
		ns := unique("ns-sealdel")
		b1, b2, b3 := evBase, evBase+evWidth, evBase+2*evWidth
		for i := range int64(5) {
			sealEvents(t, d, ns, "c", b1, driver.EventSeal{Start: b1 + 10*i, End: b1 + 10*i + 10, Value: i})
		}
		keep := driver.EventSeal{Start: b2 + 1, End: b2 + 2, Value: 2, Events: []byte("b2")}
		sealEvents(t, d, ns, "c", b2, keep)
		sealEvents(t, d, ns, "c", b3, driver.EventSeal{Start: b3 + 1, End: b3 + 2, Value: 3})
		other := driver.EventSeal{Start: b1 + 10, End: b1 + 20, Value: 9, Events: []byte("other counter")}
		sealEvents(t, d, ns, "c2", b1, other)

		check := func(step string) {
			t.Helper()
			for _, b := range []int64{b1, b3} {
				if s, err := readSeal(t, d, ns, "c", b, math.MaxInt64); !errors.Is(err, driver.ErrNotFound) {
					t.Errorf("%s: bucket %d still holds %s (error %v)", step, b, fmtSeal(s), err)
				}
			}
			wantSeal(t, d, ns, "c", b2, math.MaxInt64, keep)
			wantSeal(t, d, ns, "c2", b1, math.MaxInt64, other)
		}
		deleteSeals(t, d, ns, "c", b1, b3)
		check("after the delete")
		deleteSeals(t, d, ns, "c", b1, b3)
		check("after a replay")
		deleteSeals(t, d, ns, "c")
		check("after deleting no buckets")
		deleteSeals(t, d, ns, "never", b1)
		check("after deleting a counter never sealed")
	})

	t.Run("PurgeTakesSeals", func(t *testing.T) {
		t.Parallel()
		l, ok := d.(driver.Lifecycle)
		if !ok {
			t.Skip("the driver has no Lifecycle")
		}
		// Names that share a prefix, as in exercisePurge: the purged one,
		// one of its later generations and a longer name. Each holds
		// what a sealed events counter holds: a marked bucket with an
		// event, a rollup and seals in the bucket.
		ns := unique("ns-sealpurge")
		purged, gen, longer := "c", "c\uffff0000000000000001", "cx"
		b := evBase
		seal := driver.EventSeal{Start: b + 1, End: b + 5, Value: 1, Events: []byte("e")}
		for _, k := range []string{purged, gen, longer} {
			markBucket(t, d, ns, k, b)
			writeEvent(t, d, ns, k, b, driver.Event{ID: "e", Time: b + 2, Delta: 1})
			writeRollup(t, d, ns, k, driver.Rollup{Value: 1, Epoch: b + 5})
			sealEvents(t, d, ns, k, b, seal)
			sealEvents(t, d, ns, k, b, driver.EventSeal{Start: b + 5, End: b + 6})
		}
		if err := l.PurgeCounter(ctx(t), &driver.PurgeCounterParams{Namespace: ns, Counter: purged, Model: "events"}); err != nil {
			t.Fatalf("PurgeCounter: %v", err)
		}
		if s, err := readSeal(t, d, ns, purged, b, math.MaxInt64); !errors.Is(err, driver.ErrNotFound) {
			t.Errorf("the purged counter still holds %s (error %v)", fmtSeal(s), err)
		}
		for _, k := range []string{gen, longer} {
			wantSeal(t, d, ns, k, b, b+5, seal)
		}
	})

	t.Run("Closed", func(t *testing.T) {
		d2 := capability[driver.Events](t, openClosed(t, open))
		c := context.Background()
		_, _, err := d2.SealEvents(c, &driver.SealEventsParams{Namespace: "x", Counter: "y", Bucket: 1, Seal: driver.EventSeal{Start: 1, End: 2}, Consistency: sealCL})
		wantClosed(t, "SealEvents", err)
		_, err = d2.ReadEventSeal(c, &driver.ReadEventSealParams{Namespace: "x", Counter: "y", Bucket: 1, Before: 2, Consistency: sealCL})
		wantClosed(t, "ReadEventSeal", err)
		err = d2.DeleteEventSeals(c, &driver.DeleteEventSealsParams{Namespace: "x", Counter: "y", Buckets: []int64{1}, Consistency: sealCL})
		wantClosed(t, "DeleteEventSeals", err)
	})
}

// sameSeal reports whether a and b are the same seal. Empty events may
// come back nil or empty.
func sameSeal(a, b driver.EventSeal) bool {
	return a.Start == b.Start && a.End == b.End && a.Value == b.Value && a.Clear == b.Clear && bytes.Equal(a.Events, b.Events)
}

// fmtSeal renders a seal with a digest of its events, which may be a
// mebibyte.
func fmtSeal(s *driver.EventSeal) string {
	if s == nil {
		return "<nil>"
	}
	events := fmt.Sprintf("%q", s.Events)
	if len(s.Events) > 32 {
		events = fmt.Sprintf("%d bytes %x…", len(s.Events), s.Events[:16])
	}
	return fmt.Sprintf("{(%d, %d] value %d clear %v events %s}", s.Start, s.End, s.Value, s.Clear, events)
}

// sealEvents seals s and returns what the store holds under its start and
// whether this call stored it. An unknown outcome is settled by calling
// again; a seal then found to be s counts as applied.
func sealEvents(t *testing.T, d driver.Events, ns, counter string, bucket int64, s driver.EventSeal) (*driver.EventSeal, bool) {
	t.Helper()
	retried := false
	for range 10 {
		stored, applied, err := d.SealEvents(ctx(t), &driver.SealEventsParams{
			Namespace: ns, Counter: counter, Bucket: bucket, Seal: s, Consistency: sealCL,
		})
		if errors.Is(err, driver.ErrUnknownOutcome) {
			retried = true
			continue
		}
		if err != nil {
			t.Fatalf("SealEvents(%s/%s/%d %s): %v", ns, counter, bucket, fmtSeal(&s), err)
		}
		if stored == nil {
			t.Fatalf("SealEvents(%s/%s/%d %s) returned no seal", ns, counter, bucket, fmtSeal(&s))
		}
		return stored, applied || retried && sameSeal(*stored, s)
	}
	t.Fatalf("SealEvents(%s/%s/%d %s): ten unknown outcomes", ns, counter, bucket, fmtSeal(&s))
	return nil, false
}

func readSeal(t *testing.T, d driver.Events, ns, counter string, bucket, before int64) (*driver.EventSeal, error) {
	t.Helper()
	return d.ReadEventSeal(ctx(t), &driver.ReadEventSealParams{Namespace: ns, Counter: counter, Bucket: bucket, Before: before, Consistency: sealCL})
}

func wantSeal(t *testing.T, d driver.Events, ns, counter string, bucket, before int64, want driver.EventSeal) {
	t.Helper()
	got, err := readSeal(t, d, ns, counter, bucket, before)
	if err != nil {
		t.Errorf("ReadEventSeal(%s/%s/%d before %d): %v; want %s", ns, counter, bucket, before, err, fmtSeal(&want))
		return
	}
	if got == nil || !sameSeal(*got, want) {
		t.Errorf("ReadEventSeal(%s/%s/%d before %d) = %s, want %s", ns, counter, bucket, before, fmtSeal(got), fmtSeal(&want))
	}
}

func wantNoSeal(t *testing.T, d driver.Events, ns, counter string, bucket, before int64) {
	t.Helper()
	if got, err := readSeal(t, d, ns, counter, bucket, before); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("ReadEventSeal(%s/%s/%d before %d) = %s, %v; want ErrNotFound", ns, counter, bucket, before, fmtSeal(got), err)
	}
}

func deleteSeals(t *testing.T, d driver.Events, ns, counter string, buckets ...int64) {
	t.Helper()
	err := d.DeleteEventSeals(ctx(t), &driver.DeleteEventSealsParams{Namespace: ns, Counter: counter, Buckets: buckets, Consistency: sealCL})
	if err != nil {
		t.Fatalf("DeleteEventSeals(%s/%s %v): %v", ns, counter, buckets, err)
	}
}
