package shard

import (
	"errors"
	"fmt"
	"time"
)

// Limits on a queue's shape.
const (
	// MinShards is the fewest shards a queue may have. Producers write the
	// current window's shard and consumers read the one Lag windows back;
	// with clocks up to one window apart either way, the two sides need Lag
	// shards of room in both directions to never share a shard. With a
	// spread, the same holds of groups: a queue needs MinShards groups.
	MinShards = 2 * Lag
	// MaxSpread bounds how many shards one window's puts spread over.
	MaxSpread = 64
	// MaxShards bounds the catch-up sweep, which looks at every shard. A
	// queue's levels together (Lane) stay within it.
	MaxShards = 4096
	// MaxLevels bounds a queue's priority levels: each is a lane of shards
	// that every receive may look at.
	MaxLevels = 4
	// Lag is how many windows consumers stay behind producers.
	Lag = 2
	// MinDuration and MaxDuration bound a shard's window. Durations are
	// whole seconds: CQL timestamps have millisecond precision, and
	// sub-second windows would only add lease traffic.
	MinDuration = time.Second
	MaxDuration = 24 * time.Hour
)

// ErrTooFewShards is returned by New for fewer than MinShards shards.
var ErrTooFewShards = errors.New("too few shards")

// Math maps times to shards for a queue with a fixed shard count and
// window. The zero value is not usable; build one with New.
type Math struct {
	shards int
	spread int // shards per window; shards/spread groups rotate
	window time.Duration
	// base is the number of the math's first shard: 0, or, for a lane of
	// a queue with priority levels, the level times shards (Lane).
	base int
}

// New returns the shard math for n shards of window d, each window's puts
// going to one shard. It refuses n below MinShards (wrapping
// ErrTooFewShards), n above MaxShards, and windows that are not a whole
// number of seconds between MinDuration and MaxDuration.
func New(n int, d time.Duration) (Math, error) { return NewSpread(n, 1, d) }

// NewSpread is New with each window's puts spread over spread shards (a
// group): window b writes group b mod (n/spread), shards g·spread to
// g·spread+spread-1. spread must divide n and leave at least MinShards
// groups, so that the rotation of groups keeps producers and consumers
// apart as the rotation of single shards does with spread 1.
func NewSpread(n, spread int, d time.Duration) (Math, error) {
	switch {
	case spread < 1 || spread > MaxSpread:
		return Math{}, fmt.Errorf("a window spreads over 1 to %d shards, got %d", MaxSpread, spread)
	case n%spread != 0:
		return Math{}, fmt.Errorf("%d shards do not divide into groups of %d (the spread)", n, spread)
	case n/spread < MinShards && spread > 1:
		return Math{}, fmt.Errorf("%w: a queue whose windows spread over %d shards needs at least %d shards (%d groups), got %d",
			ErrTooFewShards, spread, MinShards*spread, MinShards, n)
	case n < MinShards:
		return Math{}, fmt.Errorf("%w: a queue needs at least %d shards, got %d (consumers read %d windows behind producers, so with fewer shards clock skew would put both in one shard)",
			ErrTooFewShards, MinShards, n, Lag)
	case n > MaxShards:
		return Math{}, fmt.Errorf("a queue has at most %d shards, got %d", MaxShards, n)
	case d < MinDuration || d > MaxDuration:
		return Math{}, fmt.Errorf("shard duration %v is outside %v to %v", d, MinDuration, MaxDuration)
	case d%time.Second != 0:
		return Math{}, fmt.Errorf("shard duration %v is not a whole number of seconds", d)
	}
	return Math{shards: n, spread: spread, window: d}, nil
}

// Lane returns the math of priority level l of a queue with levels
// levels: the same rotation over shards l·n to l·n+n-1, where n is
// Shards. Level 0 is m itself, so a queue of one level keeps the shard
// numbers it always had. It refuses a level outside 0..levels-1, and
// levels whose shards together exceed MaxShards.
func (m Math) Lane(l, levels int) (Math, error) {
	switch {
	case levels < 1 || levels > MaxLevels:
		return Math{}, fmt.Errorf("a queue has 1 to %d priority levels, got %d", MaxLevels, levels)
	case l < 0 || l >= levels:
		return Math{}, fmt.Errorf("priority %d is not one of the queue's levels 0 to %d", l, levels-1)
	case m.shards*levels > MaxShards:
		return Math{}, fmt.Errorf("%d shards at %d priority levels are %d shards; a queue has at most %d", m.shards, levels, m.shards*levels, MaxShards)
	}
	m.base = l * m.shards
	return m, nil
}

// Base returns the math's first shard: 0 for level 0.
func (m Math) Base() int { return m.base }

// Spread returns how many shards one window's puts spread over.
func (m Math) Spread() int { return m.spread }

// groups is how many groups of Spread shards rotate.
func (m Math) groups() int64 { return int64(m.shards / m.spread) }

// Shards returns the number of shards.
func (m Math) Shards() int { return m.shards }

// Window returns the shard duration.
func (m Math) Window() time.Duration { return m.window }

// Bucket returns the number of the window holding t, counted from the Unix
// epoch (negative before 1970).
func (m Math) Bucket(t time.Time) int64 {
	return floorDiv(t.UnixMilli(), m.window.Milliseconds())
}

// Start returns the first instant of window b.
func (m Math) Start(b int64) time.Time {
	return time.UnixMilli(b * m.window.Milliseconds()).UTC()
}

// ShardOf returns the first shard of window b (its only one when the
// spread is 1).
func (m Math) ShardOf(b int64) int {
	return m.base + int(floorMod(b, m.groups()))*m.spread
}

// First returns the first shard of the group shard s belongs to: the
// ShardOf of every window that writes s.
func (m Math) First(s int) int { return m.base + (s-m.base)/m.spread*m.spread }

// WindowShards returns the shards of window b, in order.
func (m Math) WindowShards(b int64) []int {
	first := m.ShardOf(b)
	out := make([]int, m.spread)
	for i := range out {
		out[i] = first + i
	}
	return out
}

// Stripe returns the shard of window b that a put picking pick writes:
// each pick names one of the window's shards.
func (m Math) Stripe(b int64, pick uint64) int {
	return m.ShardOf(b) + int(pick%uint64(m.spread))
}

// Of returns the first shard of the window holding t.
func (m Math) Of(t time.Time) int { return m.ShardOf(m.Bucket(t)) }

// Producer returns the first shard producers write at time now: the
// current window's.
func (m Math) Producer(now time.Time) int { return m.Of(now) }

// Consumer returns the first shard consumers work at time now: Lag windows
// back.
func (m Math) Consumer(now time.Time) int { return m.ShardOf(m.Bucket(now) - Lag) }

// Behind returns how many windows shard s is behind the current one at
// time now: 0 for the producers' shards, Lag for the consumers', up to
// N/spread-1.
func (m Math) Behind(now time.Time, s int) int {
	return int(floorMod(int64((m.Producer(now)-m.First(s))/m.spread), m.groups()))
}

// Latest returns the most recent window of shard s that has started by
// time now (the current window if s is the producers' shard).
func (m Math) Latest(now time.Time, s int) int64 {
	return m.Bucket(now) - int64(m.Behind(now, s))
}

// Oldest returns every shard except the producers' current ones, the
// furthest behind first. This is the order of the catch-up sweep: the
// shards behind longest have waited longest.
func (m Math) Oldest(now time.Time) []int {
	cur := m.Bucket(now)
	out := make([]int, 0, m.shards-m.spread)
	for back := m.groups() - 1; back >= 1; back-- {
		out = append(out, m.WindowShards(cur-back)...)
	}
	return out
}

// Label renders the start of window b in the design's readable form,
// YYYYdddHHMM in UTC (with seconds, YYYYdddHHMMSS, when the window is not
// a whole number of minutes).
func (m Math) Label(b int64) string {
	t := m.Start(b)
	if m.window%time.Minute == 0 {
		return fmt.Sprintf("%04d%03d%02d%02d", t.Year(), t.YearDay(), t.Hour(), t.Minute())
	}
	return fmt.Sprintf("%04d%03d%02d%02d%02d", t.Year(), t.YearDay(), t.Hour(), t.Minute(), t.Second())
}

// SeedStamp returns the original design's minute number YYYYdddHHMM of t (in
// UTC) as an integer. It is not used to place messages (see the package
// documentation); it documents, and lets tests demonstrate, why.
func SeedStamp(t time.Time) int64 {
	t = t.UTC()
	return int64(t.Year())*10_000_000 + int64(t.YearDay())*10_000 + int64(t.Hour())*100 + int64(t.Minute())
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 {
	r := a % b
	if r < 0 {
		r += b
	}
	return r
}
