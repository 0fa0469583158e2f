package abacus

import (
	"context"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// ClockReading is one comparison of this process's clock (Config.Clock)
// with the store's.
type ClockReading struct {
	// Skew is this process's clock minus the store's: positive when this
	// process runs ahead.
	Skew time.Duration
	// Uncertainty bounds the error of Skew: half the round trip plus the
	// store clock's rounding.
	Uncertainty time.Duration
}

// Beyond reports whether the skew is certainly larger than limit in
// either direction.
func (r ClockReading) Beyond(limit time.Duration) bool {
	return r.Skew.Abs()-r.Uncertainty > limit
}

// ClockSkew measures how far this process's clock is from the store's.
// ok is false when the store has no clock of its own (the embedded store:
// one process writes it, so there is nobody to disagree with).
//
// Every write timestamp comes from the writing process's clock, and the
// models' safety margins (GC grace for sharded counters, the rollup delay
// for events counters) assume the processes' clocks agree within them. A
// server uses this to notice a clock that drifted beyond its margin and to
// stop taking writes rather than silently risk them.
func (c *Client) ClockSkew(ctx context.Context) (r ClockReading, ok bool, err error) {
	ts, ok := c.cfg.Driver.(driver.TimeSource)
	if !ok {
		return ClockReading{}, false, nil
	}
	before := c.cfg.Clock.Now()
	st, err := ts.StoreTime(ctx)
	after := c.cfg.Clock.Now()
	if err != nil {
		return ClockReading{}, true, publicError(err)
	}
	rtt := after.Sub(before)
	mid := before.Add(rtt / 2)
	// now() has millisecond precision: the store's reading is up to 1 ms
	// below the true instant.
	return ClockReading{Skew: mid.Sub(st.Add(500 * time.Microsecond)), Uncertainty: rtt/2 + time.Millisecond}, true, nil
}
