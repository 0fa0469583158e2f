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
	// Bucket is the width of the time buckets events are partitioned by.
	// Smaller buckets make reads touch fewer old rows; larger ones make
	// fewer partitions. Default 1h; whole seconds, at least 1s.
	Bucket time.Duration
	// AcceptWindow is how long after its event time an increment, or a
	// retry of it, is accepted and de-duplicated. An older one is refused
	// with ErrTooLate. Default 1h; whole seconds, at least 1s.
	AcceptWindow time.Duration
	// RollupDelay is how much further behind the accept window a rollup's
	// epoch trails. It must exceed the worst clock skew between processes
	// plus the longest write. Default 5m; whole seconds, at least 1s.
	RollupDelay time.Duration
	// FutureLimit is how far ahead of this process's clock an event time
	// may be. Default 1m; whole seconds.
	FutureLimit time.Duration
}

// WithDefaults fills zero fields with the documented defaults.
func (o Options) WithDefaults() Options {
	o.Bucket = cmp.Or(o.Bucket, time.Hour)
	o.AcceptWindow = cmp.Or(o.AcceptWindow, time.Hour)
	o.RollupDelay = cmp.Or(o.RollupDelay, 5*time.Minute)
	o.FutureLimit = cmp.Or(o.FutureLimit, time.Minute)
	return o
}

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
	check("rollup delay", o.RollupDelay, time.Second)
	check("future limit", o.FutureLimit, 0)
	return errors.Join(errs...)
}

// Keys of the options in the stored namespace record.
const (
	storedBucket       = "bucket_seconds"
	storedAcceptWindow = "accept_window_seconds"
	storedRollupDelay  = "rollup_delay_seconds"
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
	}
}

// OptionsFromStored reads stored options strictly: every process must
// agree on them, so a missing or damaged one is an error, not a default.
func OptionsFromStored(m map[string]string) (Options, error) {
	var o Options
	for _, f := range []struct {
		key string
		dst *time.Duration
	}{{storedBucket, &o.Bucket}, {storedAcceptWindow, &o.AcceptWindow}, {storedRollupDelay, &o.RollupDelay}, {storedFutureLimit, &o.FutureLimit}} {
		v, ok := m[f.key]
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
	return now.Add(-o.AcceptWindow - o.RollupDelay).UnixMicro()
}

// acceptFloor is the event time at or below which an increment is too late.
func (o Options) acceptFloor(now time.Time) int64 {
	return now.Add(-o.AcceptWindow).UnixMicro()
}
