package shard

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func mustNew(t *testing.T, n int, d time.Duration) Math {
	t.Helper()
	m, err := New(n, d)
	if err != nil {
		t.Fatalf("New(%d, %v): %v", n, d, err)
	}
	return m
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n       int
		d       time.Duration
		wantErr string
		few     bool
	}{
		{n: 4, d: time.Minute},
		{n: MaxShards, d: time.Second},
		{n: 16, d: MaxDuration},
		{n: 3, d: time.Minute, wantErr: "at least 4 shards, got 3", few: true},
		{n: 0, d: time.Minute, wantErr: "at least 4 shards, got 0", few: true},
		{n: -5, d: time.Minute, wantErr: "at least 4 shards", few: true},
		{n: MaxShards + 1, d: time.Minute, wantErr: "at most 4096 shards"},
		{n: 8, d: 500 * time.Millisecond, wantErr: "outside"},
		{n: 8, d: 0, wantErr: "outside"},
		{n: 8, d: 25 * time.Hour, wantErr: "outside"},
		{n: 8, d: 1500 * time.Millisecond, wantErr: "whole number of seconds"},
	} {
		t.Run(fmt.Sprintf("%d/%v", tc.n, tc.d), func(t *testing.T) {
			t.Parallel()
			m, err := New(tc.n, tc.d)
			if tc.wantErr == "" {
				if err != nil || m.Shards() != tc.n || m.Window() != tc.d {
					t.Fatalf("New = %+v, %v", m, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("New error = %v, want one containing %q", err, tc.wantErr)
			}
			if errors.Is(err, ErrTooFewShards) != tc.few {
				t.Fatalf("errors.Is(%v, ErrTooFewShards) = %v, want %v", err, !tc.few, tc.few)
			}
		})
	}
}

// boundaries are instants where calendar-based numbering jumps.
var boundaries = []struct {
	name string
	at   time.Time // first instant after the boundary
}{
	{"hour", time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)},
	{"midnight", time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC)},
	{"leap day", time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC)},
	{"new year after a leap year", time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)},
	{"new year after a common year", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
	{"new year into a leap year", time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC)},
	{"unix epoch", time.Unix(0, 0).UTC()},
	{"before the epoch", time.Date(1969, 12, 31, 23, 59, 0, 0, time.UTC)},
}

// Across every boundary, consecutive windows use consecutive shards, so the
// rotation never skips or repeats a shard.
func TestConsecutiveWindowsAtBoundaries(t *testing.T) {
	t.Parallel()
	for _, b := range boundaries {
		for _, d := range []time.Duration{time.Second, time.Minute, 7 * time.Minute, time.Hour} {
			for n := MinShards; n <= 64; n++ {
				m := mustNew(t, n, d)
				prev := m.Of(b.at.Add(-3 * d))
				for i := -2; i <= 3; i++ {
					at := b.at.Add(time.Duration(i) * d)
					got := m.Of(at)
					if want := (prev + 1) % n; got != want {
						t.Fatalf("%s, N=%d, d=%v: shard at %v is %d, want %d (one after %d)", b.name, n, d, at, got, want, prev)
					}
					prev = got
				}
			}
		}
	}
}

func TestWindowEdges(t *testing.T) {
	t.Parallel()
	m := mustNew(t, 16, time.Minute)
	for _, b := range boundaries {
		last := b.at.Add(-time.Millisecond)
		if m.Bucket(last)+1 != m.Bucket(b.at) {
			t.Errorf("%s: %v and %v are not in adjacent windows", b.name, last, b.at)
		}
		if m.Bucket(b.at) != m.Bucket(b.at.Add(59*time.Second+999*time.Millisecond)) {
			t.Errorf("%s: a minute window starting at %v is split", b.name, b.at)
		}
		if got := m.Start(m.Bucket(b.at.Add(30 * time.Second))); !got.Equal(b.at) {
			t.Errorf("%s: Start = %v, want %v", b.name, got, b.at)
		}
	}
}

func TestLabels(t *testing.T) {
	t.Parallel()
	minute := mustNew(t, 8, time.Minute)
	second := mustNew(t, 8, 5*time.Second)
	for _, tc := range []struct {
		m    Math
		at   time.Time
		want string
	}{
		{minute, time.Date(2024, 12, 31, 23, 59, 30, 0, time.UTC), "20243662359"},
		{minute, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), "20250010000"},
		{minute, time.Date(2025, 12, 31, 23, 59, 0, 0, time.UTC), "20253652359"},
		{minute, time.Date(2028, 2, 29, 12, 5, 0, 0, time.UTC), "20280601205"},
		// Labels are UTC whatever the zone of the input.
		{minute, time.Date(2026, 1, 1, 1, 0, 0, 0, time.FixedZone("CET", 3600)), "20260010000"},
		{second, time.Date(2025, 1, 1, 0, 0, 7, 0, time.UTC), "2025001000005"},
	} {
		if got := tc.m.Label(tc.m.Bucket(tc.at)); got != tc.want {
			t.Errorf("Label(%v, window %v) = %s, want %s", tc.at, tc.m.Window(), got, tc.want)
		}
	}
}

// The consumers' shard is the one producers used exactly Lag windows ago,
// and a producer whose clock is up to one window off either way never
// writes it.
func TestProducerConsumerIsolation(t *testing.T) {
	t.Parallel()
	for _, b := range boundaries {
		for _, d := range []time.Duration{time.Second, time.Minute, time.Hour} {
			for n := MinShards; n <= 40; n++ {
				m := mustNew(t, n, d)
				for step := -3 * d; step <= 3*d; step += d / 4 {
					now := b.at.Add(step)
					c := m.Consumer(now)
					if c != m.Of(now.Add(-Lag*d)) {
						t.Fatalf("%s N=%d d=%v at %v: consumer shard %d is not the shard of two windows ago", b.name, n, d, now, c)
					}
					if got := m.Behind(now, c); got != Lag {
						t.Fatalf("%s N=%d: consumer shard is %d windows behind, want %d", b.name, n, got, Lag)
					}
					for _, skew := range []time.Duration{-d, -d / 2, 0, d / 2, d - time.Millisecond} {
						if p := m.Producer(now.Add(skew)); p == c {
							t.Fatalf("%s N=%d d=%v at %v: a producer %v off writes the consumers' shard %d", b.name, n, d, now, skew, c)
						}
					}
				}
			}
		}
	}
}

// Numbering minutes YYYYdddHHMM, as the original design does, jumps by 41 at the top
// of every hour. With 13 shards (41-2 = 39 = 3*13) the shard consumers read
// at 10:00 is the one producers wrote at 09:59 — one window back instead of
// two, inside the clock skew the design promises to tolerate. Counting
// windows from the epoch does not have this problem.
func TestSeedStampCollidesAtHourBoundary(t *testing.T) {
	t.Parallel()
	const n = 13
	at := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	seedProducer := func(t time.Time) int64 { return SeedStamp(t) % n }
	seedConsumer := (seedProducer(at) - Lag + n) % n
	if seedConsumer != seedProducer(at.Add(-time.Minute)) {
		t.Fatalf("expected the original design's numbering to put the consumer in the previous minute's shard")
	}
	m := mustNew(t, n, time.Minute)
	if m.Consumer(at) == m.Of(at.Add(-time.Minute)) {
		t.Fatalf("epoch windows: consumer shard equals the previous minute's shard")
	}
}

func TestSeedStamp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		at   time.Time
		want int64
	}{
		{time.Date(2024, 12, 31, 23, 59, 59, 0, time.UTC), 20243662359},
		{time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), 20250010000},
		{time.Date(2026, 11, 22, 6, 57, 0, 0, time.UTC), 20263260657},
	} {
		if got := SeedStamp(tc.at); got != tc.want {
			t.Errorf("SeedStamp(%v) = %d, want %d", tc.at, got, tc.want)
		}
	}
}

func TestOldestAndLatest(t *testing.T) {
	t.Parallel()
	m := mustNew(t, 6, time.Minute)
	now := time.Date(2025, 1, 1, 0, 1, 30, 0, time.UTC)
	old := m.Oldest(now)
	if len(old) != 5 {
		t.Fatalf("Oldest = %v, want 5 shards", old)
	}
	seen := map[int]bool{m.Producer(now): true}
	for i, s := range old {
		if seen[s] {
			t.Fatalf("Oldest = %v repeats %d or includes the producers' shard", old, s)
		}
		seen[s] = true
		if want := 5 - i; m.Behind(now, s) != want {
			t.Errorf("Oldest[%d] = %d is %d behind, want %d", i, s, m.Behind(now, s), want)
		}
		b := m.Latest(now, s)
		if m.ShardOf(b) != s || b > m.Bucket(now) || b <= m.Bucket(now)-6 {
			t.Errorf("Latest(%d) = window %d (shard %d), not the last started window of that shard", s, b, m.ShardOf(b))
		}
	}
}

func TestBucketBeforeEpoch(t *testing.T) {
	t.Parallel()
	m := mustNew(t, 4, time.Minute)
	if got := m.Bucket(time.Unix(-1, 0)); got != -1 {
		t.Fatalf("Bucket(-1s) = %d, want -1", got)
	}
	if got := m.Bucket(time.Unix(-60, 0)); got != -1 {
		t.Fatalf("Bucket(-60s) = %d, want -1", got)
	}
	if got := m.Bucket(time.Unix(-61, 0)); got != -2 {
		t.Fatalf("Bucket(-61s) = %d, want -2", got)
	}
	if got := m.ShardOf(-1); got != 3 {
		t.Fatalf("ShardOf(-1) = %d, want 3", got)
	}
}

func TestNewSpreadValidates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n, spread int
		ok, few   bool
	}{
		{n: 4, spread: 1, ok: true},
		{n: 16, spread: 4, ok: true},
		{n: 32, spread: 8, ok: true},
		{n: 256, spread: MaxSpread, ok: true},
		{n: 16, spread: 3},
		{n: 16, spread: 8, few: true},
		{n: 12, spread: 4, few: true},
		{n: 16, spread: 0},
		{n: 4 * (MaxSpread + 1), spread: MaxSpread + 1},
	} {
		m, err := NewSpread(tc.n, tc.spread, time.Minute)
		switch {
		case tc.ok && err != nil:
			t.Errorf("NewSpread(%d, %d): %v", tc.n, tc.spread, err)
		case tc.ok && m.Spread() != tc.spread:
			t.Errorf("NewSpread(%d, %d).Spread() = %d", tc.n, tc.spread, m.Spread())
		case !tc.ok && err == nil:
			t.Errorf("NewSpread(%d, %d) accepted", tc.n, tc.spread)
		case !tc.ok && errors.Is(err, ErrTooFewShards) != tc.few:
			t.Errorf("NewSpread(%d, %d): %v; wraps ErrTooFewShards: %v, want %v", tc.n, tc.spread, err, errors.Is(err, ErrTooFewShards), tc.few)
		}
	}
}

// With a spread, groups of shards rotate as single shards do without one:
// each window writes one group, producers up to a window off never write
// the group consumers read two windows back, the sweep visits every shard
// outside the producers' group once, oldest first, and every shard's
// latest window is one that writes it.
func TestSpreadRotatesGroups(t *testing.T) {
	t.Parallel()
	for _, spread := range []int{1, 2, 4, 8} {
		for _, groups := range []int{MinShards, 5, 7} {
			n, d := spread*groups, time.Minute
			m, err := NewSpread(n, spread, d)
			if err != nil {
				t.Fatal(err)
			}
			for _, bd := range boundaries {
				for step := -3 * d; step <= 3*d; step += d / 4 {
					now := bd.at.Add(step)
					b := m.Bucket(now)
					ws := m.WindowShards(b)
					picked := map[int]bool{}
					for pick := range uint64(spread) {
						s := m.Stripe(b, pick)
						if !slices.Contains(ws, s) || m.First(s) != m.ShardOf(b) || m.Behind(now, s) != 0 {
							t.Fatalf("n=%d spread=%d at %v: pick %d writes shard %d, outside the window's %v", n, spread, now, pick, s, ws)
						}
						picked[s] = true
					}
					if len(picked) != spread || len(ws) != spread {
						t.Fatalf("n=%d spread=%d: picks reach %d shards of %v, want %d", n, spread, len(picked), ws, spread)
					}
					consumers := m.WindowShards(b - Lag)
					for _, s := range consumers {
						if m.Behind(now, s) != Lag {
							t.Fatalf("n=%d spread=%d: consumers' shard %d is %d behind, want %d", n, spread, s, m.Behind(now, s), Lag)
						}
					}
					for _, skew := range []time.Duration{-d, -d / 2, 0, d / 2, d - time.Millisecond} {
						for pick := range uint64(spread) {
							if p := m.Stripe(m.Bucket(now.Add(skew)), pick); slices.Contains(consumers, p) {
								t.Fatalf("n=%d spread=%d at %v: a producer %v off writes the consumers' shard %d", n, spread, now, skew, p)
							}
						}
					}
					old := m.Oldest(now)
					if len(old) != n-spread {
						t.Fatalf("n=%d spread=%d: Oldest has %d shards, want %d", n, spread, len(old), n-spread)
					}
					seen := map[int]bool{}
					for _, s := range ws {
						seen[s] = true
					}
					for i, s := range old {
						if seen[s] {
							t.Fatalf("n=%d spread=%d: Oldest = %v repeats %d or includes a producers' shard", n, spread, old, s)
						}
						seen[s] = true
						if i > 0 && m.Behind(now, s) > m.Behind(now, old[i-1]) {
							t.Fatalf("n=%d spread=%d: Oldest = %v is not oldest first", n, spread, old)
						}
						lb := m.Latest(now, s)
						if !slices.Contains(m.WindowShards(lb), s) || lb > b || lb <= b-int64(groups) {
							t.Fatalf("n=%d spread=%d: Latest(%d) = window %d, not the last started window writing it", n, spread, s, lb)
						}
					}
				}
			}
		}
	}
}

// A lane is the same rotation moved up by its level's shards: every shard
// number it gives lies in its own range, and is the level-0 number plus
// the base, so lanes never share a shard and level 0 is the queue as it
// was.
func TestLanesAreTheRotationMovedUp(t *testing.T) {
	t.Parallel()
	for _, spread := range []int{1, 4} {
		n := spread * 5
		m, err := NewSpread(n, spread, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for levels := 1; levels <= MaxLevels; levels++ {
			for l := range levels {
				lane, err := m.Lane(l, levels)
				if err != nil {
					t.Fatal(err)
				}
				base := l * n
				if lane.Base() != base || lane.Shards() != n {
					t.Fatalf("lane %d of %d: base %d, %d shards", l, levels, lane.Base(), lane.Shards())
				}
				for _, bd := range boundaries {
					for step := -3 * time.Minute; step <= 3*time.Minute; step += 20 * time.Second {
						now := bd.at.Add(step)
						b := m.Bucket(now)
						for pick := range uint64(spread) {
							if got, want := lane.Stripe(b, pick), m.Stripe(b, pick)+base; got != want {
								t.Fatalf("lane %d: Stripe = %d, want %d", l, got, want)
							}
						}
						old0, old := m.Oldest(now), lane.Oldest(now)
						for i, s := range old {
							if s != old0[i]+base || s < base || s >= base+n {
								t.Fatalf("lane %d: Oldest = %v, level 0's %v", l, old, old0)
							}
							if lane.Behind(now, s) != m.Behind(now, old0[i]) || lane.Latest(now, s) != m.Latest(now, old0[i]) || lane.First(s) != m.First(old0[i])+base {
								t.Fatalf("lane %d: shard %d is not placed as level 0's %d", l, s, old0[i])
							}
						}
					}
				}
			}
		}
	}
	m, _ := New(1024, time.Minute)
	for _, bad := range [][2]int{{0, 0}, {0, MaxLevels + 1}, {2, 2}, {-1, 2}} {
		if _, err := m.Lane(bad[0], bad[1]); err == nil {
			t.Errorf("Lane(%d, %d) of 1024 shards accepted", bad[0], bad[1])
		}
	}
	if _, err := m.Lane(3, 4); err != nil {
		t.Errorf("Lane(3, 4) of 1024 shards (4096 in all): %v", err)
	}
	m2, _ := New(1025, time.Minute)
	if _, err := m2.Lane(0, 4); err == nil {
		t.Error("4 levels of 1025 shards (4100 in all) accepted")
	}
}
