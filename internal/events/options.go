package events

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Options are the per-namespace settings of the events model. Every
// process writing or rolling up a namespace must use the same options, so
// they are stored with the namespace.
type Options struct {
	// Bucket is the width of the time buckets events and seals are
	// partitioned by. Default 10m; whole seconds, at least 1s.
	Bucket time.Duration
	// AcceptWindow is the de-duplication horizon: how long after its
	// event time a retry of an increment is still recognised, answered
	// as counted (replayed) or not (ErrTooLate) from any server. An
	// older one is refused with ErrTooLate. Default 1h; whole seconds,
	// from 1s to 24h.
	AcceptWindow time.Duration
	// Seal is how long after its event time a new increment can still be
	// acknowledged. A rollup seals the counter's events up to now - Seal -
	// RollupDelay; an increment older than Seal is answered from the seal
	// (a retry) rather than written. Reads re-add about Seal + RollupDelay
	// of events, so a short seal keeps hot counters fast; it must exceed
	// the time from making a request id to the end of its write. Default
	// 4s; whole seconds, from 1s to AcceptWindow. Namespaces stored
	// before seals existed read back with Seal = AcceptWindow.
	Seal time.Duration
	// RollupDelay is how much further behind Seal a rollup's epoch trails:
	// at least the worst clock skew between processes. Default 2s; whole
	// seconds, at least 1s.
	RollupDelay time.Duration
	// FutureLimit is how far ahead of this process's clock an event time
	// may be. Default 1m; whole seconds.
	FutureLimit time.Duration
}

// WithDefaults fills zero fields with the documented defaults.
func (o Options) WithDefaults() Options {
	o.Bucket = cmp.Or(o.Bucket, DefaultBucket)
	o.AcceptWindow = cmp.Or(o.AcceptWindow, DefaultAcceptWindow)
	o.Seal = cmp.Or(o.Seal, min(DefaultSeal, o.AcceptWindow))
	o.RollupDelay = cmp.Or(o.RollupDelay, DefaultRollupDelay)
	o.FutureLimit = cmp.Or(o.FutureLimit, DefaultFutureLimit)
	return o
}

// The defaults of Options.
const (
	DefaultBucket       = 10 * time.Minute
	DefaultAcceptWindow = time.Hour
	DefaultSeal         = 4 * time.Second
	DefaultRollupDelay  = 2 * time.Second
	DefaultFutureLimit  = time.Minute
	// MaxAcceptWindow bounds the de-duplication horizon: seals are kept
	// that long, and a day of them is what a counter can afford.
	MaxAcceptWindow = 24 * time.Hour
)

// maxSpan keeps every option far from overflowing microsecond arithmetic.
const maxSpan = 10 * 365 * 24 * time.Hour

// Validate reports options that cannot work.
func (o Options) Validate() error {
	var errs []error
	check := func(name string, d time.Duration, min time.Duration) {
		switch {
		case d < min:
			errs = append(errs, fmt.Errorf("%s %v is below %v", name, d, min))
		case d > maxSpan:
			errs = append(errs, fmt.Errorf("%s %v is above %v", name, d, maxSpan))
		case d%time.Second != 0:
			errs = append(errs, fmt.Errorf("%s %v is not a whole number of seconds", name, d))
		}
	}
	check("bucket", o.Bucket, time.Second)
	check("accept window", o.AcceptWindow, time.Second)
	check("seal", o.Seal, time.Second)
	check("rollup delay", o.RollupDelay, time.Second)
	check("future limit", o.FutureLimit, 0)
	if o.AcceptWindow > MaxAcceptWindow {
		errs = append(errs, fmt.Errorf("accept window %v is above %v", o.AcceptWindow, MaxAcceptWindow))
	}
	if o.Seal > o.AcceptWindow {
		errs = append(errs, fmt.Errorf("seal %v is above the accept window %v", o.Seal, o.AcceptWindow))
	}
	return errors.Join(errs...)
}

// Keys of the options in the stored namespace record.
const (
	storedBucket       = "bucket_seconds"
	storedAcceptWindow = "accept_window_seconds"
	storedRollupDelay  = "rollup_delay_seconds"
	storedSeal         = "seal_seconds"
	storedFutureLimit  = "future_limit_seconds"
)

// Stored is the options' stored form: every option in whole seconds,
// defaults filled in, so a later release with other defaults does not
// change existing namespaces.
func (o Options) Stored() map[string]string {
	o = o.WithDefaults()
	secs := func(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }
	return map[string]string{
		storedBucket: secs(o.Bucket), storedAcceptWindow: secs(o.AcceptWindow),
		storedRollupDelay: secs(o.RollupDelay), storedFutureLimit: secs(o.FutureLimit),
		storedSeal: secs(o.Seal),
	}
}

// OptionsFromStored reads stored options strictly: every process must
// agree on them, so a missing or damaged one is an error, not a default.
func OptionsFromStored(m map[string]string) (Options, error) {
	var o Options
	for _, f := range []struct {
		key string
		dst *time.Duration
	}{{storedBucket, &o.Bucket}, {storedAcceptWindow, &o.AcceptWindow}, {storedRollupDelay, &o.RollupDelay}, {storedFutureLimit, &o.FutureLimit}, {storedSeal, &o.Seal}} {
		v, ok := m[f.key]
		if !ok && f.key == storedSeal {
			// Stored before seals existed: every increment inside the
			// accept window was acknowledged, so the window is the seal.
			o.Seal = o.AcceptWindow
			continue
		}
		if !ok {
			return o, fmt.Errorf("%s is missing", f.key)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > int64(maxSpan/time.Second) {
			return o, fmt.Errorf("%s %q is not a valid number of seconds", f.key, v)
		}
		*f.dst = time.Duration(n) * time.Second
	}
	// A stored zero future limit means zero, not the default.
	if err := o.Validate(); err != nil {
		return o, err
	}
	return o, nil
}

// BucketOf returns the start (µs) of the bucket holding event time t (µs).
func (o Options) BucketOf(t int64) int64 {
	w := o.Bucket.Microseconds()
	b := t - t%w
	if t < 0 && t%w != 0 {
		b -= w
	}
	return b
}

// bucketLast is the last microsecond of the bucket starting at b.
func (o Options) bucketLast(b int64) int64 { return b + o.Bucket.Microseconds() - 1 }

// RollupEpoch is the epoch a rollup started at now may move to.
func (o Options) RollupEpoch(now time.Time) int64 {
	return now.Add(-o.Seal - o.RollupDelay).UnixMicro()
}

// acceptFloor is the event time at or below which an increment is beyond
// the de-duplication horizon: too late to write or to answer.
func (o Options) acceptFloor(now time.Time) int64 {
	return now.Add(-o.AcceptWindow).UnixMicro()
}

// ackFloor is the event time at or below which a new increment cannot be
// acknowledged: a rollup may already have sealed past it.
func (o Options) ackFloor(now time.Time) int64 {
	return now.Add(-o.Seal).UnixMicro()
}

// sealBucket is the bucket a seal starting at start is stored in: the one
// holding the first microsecond it covers, so that a seal holding events
// lies inside the bucket it is stored in.
func (o Options) sealBucket(start int64) int64 { return o.BucketOf(start + 1) }

// keepFloor is the time below which a bucket's events and seals may go:
// every time in it is beyond the de-duplication horizon of any process
// whose clock is within RollupDelay of now.
func (o Options) keepFloor(now time.Time) int64 {
	return now.Add(-o.AcceptWindow - o.RollupDelay).UnixMicro()
}
