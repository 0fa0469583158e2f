package bench

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultConcurrency = 64
	DefaultDuration    = 10 * time.Second
	DefaultWarmup      = 2 * time.Second
	DefaultDrain       = 10 * time.Second
)

// Options control one Run. Zero fields take the documented defaults.
type Options struct {
	// Concurrency is the number of goroutines calling the operation in a
	// closed loop: each issues its next call as soon as the previous one
	// returns. Default 64.
	Concurrency int `json:"concurrency"`

	// Duration is the measured part of the run. Default 10s.
	Duration time.Duration `json:"duration_ns"`

	// Warmup runs the same loop before the measured part and discards it,
	// so connection set-up, statement preparation, mutator births and
	// JIT/cache warm-up on the server are not measured. Zero means the
	// default (2s); negative means no warm-up.
	Warmup time.Duration `json:"warmup_ns"`

	// Drain bounds how long calls still running when Duration ends may
	// continue before their context is cancelled; such cancelled calls count
	// as errors. It keeps a stuck store from hanging the run. Default 10s.
	Drain time.Duration `json:"drain_ns"`
}

func (o Options) withDefaults() Options {
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Duration <= 0 {
		o.Duration = DefaultDuration
	}
	switch {
	case o.Warmup == 0:
		o.Warmup = DefaultWarmup
	case o.Warmup < 0:
		o.Warmup = 0
	}
	if o.Drain <= 0 {
		o.Drain = DefaultDrain
	}
	return o
}

// Op is one operation under test. worker is the calling goroutine's index
// in [0, Concurrency); a worker never runs two calls at once, so op may keep
// per-worker state in a slice indexed by worker without locking.
type Op func(ctx context.Context, worker int) error

// Workload is what a run calls: writes, and optionally reads mixed in.
type Workload struct {
	// Write is the operation whose successes are counted as Result.Ops and
	// checked against the store afterwards. Required.
	Write Op
	// Read, when not nil, is called instead of Write for a ReadRatio
	// fraction of the calls. Reads are tallied apart from writes, so
	// Result.Ops stays the number of acknowledged writes.
	Read Op
	// ReadRatio is the probability, per call, of a read: 0 means writes
	// only, 0.25 one read in four on average. It must be in [0, 1).
	ReadRatio float64
}

// Result is what one Run measured. Only calls that started inside the
// measured window are counted; latency percentiles cover successful calls.
// With a Workload that mixes in reads, the fields without "Read" in their
// name describe the writes alone.
type Result struct {
	// Ops is the number of calls that succeeded.
	Ops uint64 `json:"ops"`
	// Errors is the number of calls that returned an error.
	Errors uint64 `json:"errors"`
	// WarmupOps and WarmupErrors count the calls made during the warm-up
	// (WarmupOps includes the failed ones). They are not part of the
	// measurement, but their updates were applied, which matters when
	// checking a counter's final value.
	WarmupOps    uint64 `json:"warmup_ops"`
	WarmupErrors uint64 `json:"warmup_errors"`
	// Elapsed runs from the start of the measured window until the last
	// counted call returned.
	Elapsed time.Duration `json:"elapsed_ns"`
	// OpsPerSec is Ops / Elapsed: successful calls per second.
	OpsPerSec float64 `json:"ops_per_sec"`
	// Latency of successful calls. Max is exact; the percentiles are within
	// about 1% (see Histogram).
	Mean time.Duration `json:"mean_ns"`
	P50  time.Duration `json:"p50_ns"`
	P99  time.Duration `json:"p99_ns"`
	P999 time.Duration `json:"p999_ns"`
	Max  time.Duration `json:"max_ns"`

	// The same for the reads of a mixed Workload; all zero without reads.
	// WarmupReads counts the reads of the warm-up, failed ones included.
	ReadOps       uint64        `json:"read_ops,omitempty"`
	ReadErrors    uint64        `json:"read_errors,omitempty"`
	WarmupReads   uint64        `json:"warmup_reads,omitempty"`
	ReadOpsPerSec float64       `json:"read_ops_per_sec,omitempty"`
	ReadMean      time.Duration `json:"read_mean_ns,omitempty"`
	ReadP50       time.Duration `json:"read_p50_ns,omitempty"`
	ReadP99       time.Duration `json:"read_p99_ns,omitempty"`
	ReadP999      time.Duration `json:"read_p999_ns,omitempty"`
	ReadMax       time.Duration `json:"read_max_ns,omitempty"`

	// Latency and ReadLatency are the merged histograms behind the
	// percentiles, kept for CDF plots; never nil after Run.
	Latency     *Histogram `json:"-"`
	ReadLatency *Histogram `json:"-"`

	// FirstError is the text of the earliest error in the measured window,
	// of a write or a read.
	FirstError string `json:"first_error,omitempty"`
	// Interrupted is set when ctx ended the run before Duration was over.
	Interrupted bool `json:"interrupted,omitempty"`
}

// tally counts one kind of call of one worker.
type tally struct {
	hist       Histogram
	ops        uint64
	errors     uint64
	warmup     uint64
	warmupErrs uint64
}

// worker is one goroutine's private tally. Nothing in it is shared until
// Run merges the workers after they have all returned.
type worker struct {
	writes, reads tally
	firstErr      error
	firstErrAt    time.Time
}

// Run calls op from opts.Concurrency goroutines in a closed loop, first for
// opts.Warmup (discarded), then for opts.Duration, and reports throughput
// and latency. It returns early, with Result.Interrupted set, when ctx is
// cancelled. Run never fails: errors from op are counted, not returned.
func Run(ctx context.Context, opts Options, op Op) Result {
	return RunWorkload(ctx, opts, Workload{Write: op})
}

// RunWorkload is Run for a Workload that may mix reads into the writes.
// Each worker decides per call, with its own seeded generator, whether the
// call is a read; a ReadRatio outside [0, 1) or a nil Read means no reads.
func RunWorkload(ctx context.Context, opts Options, wl Workload) Result {
	opts = opts.withDefaults()
	ratio := wl.ReadRatio
	if wl.Read == nil || !(ratio > 0 && ratio < 1) {
		ratio = 0
	}
	start := time.Now()
	from := start.Add(opts.Warmup)
	end := from.Add(opts.Duration)

	// Calls get a context that survives the end of the window by Drain, so
	// a call in flight at the end finishes normally instead of being cut
	// off (which would turn the last calls into spurious errors).
	opCtx, cancel := context.WithDeadline(ctx, end.Add(opts.Drain))
	defer cancel()

	workers := make([]worker, opts.Concurrency)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func(w *worker, id int) {
			defer wg.Done()
			var mix *rand.Rand
			if ratio > 0 {
				// Fixed seeds, as in the picker: repeated runs issue the
				// same sequence of reads and writes.
				mix = rand.New(rand.NewPCG(uint64(id)+1, 0x2545f4914f6cdd1d))
			}
			// ctx.Err is an atomic load, cheap enough for every call, and
			// cancellation reaches it synchronously: once ctx is cancelled no
			// worker starts another call (each of which would apply an
			// update and then report it as an unknown outcome).
			for ctx.Err() == nil {
				op, t := wl.Write, &w.writes
				if mix != nil && mix.Float64() < ratio {
					op, t = wl.Read, &w.reads
				}
				t0 := time.Now()
				if !t0.Before(end) {
					return
				}
				err := op(opCtx, id)
				d := time.Since(t0)
				switch {
				case t0.Before(from):
					t.warmup++
					if err != nil {
						t.warmupErrs++
					}
				case err != nil:
					t.errors++
					if w.firstErr == nil {
						w.firstErr, w.firstErrAt = err, t0
					}
				default:
					t.ops++
					t.hist.Record(d)
				}
			}
		}(&workers[i], i)
	}
	wg.Wait()
	finished := time.Now()

	var (
		writes, reads Histogram
		res           Result
		firstErr      error
		firstErrAt    time.Time
	)
	for i := range workers {
		w := &workers[i]
		writes.Merge(&w.writes.hist)
		reads.Merge(&w.reads.hist)
		res.Ops += w.writes.ops
		res.Errors += w.writes.errors
		res.WarmupOps += w.writes.warmup
		res.WarmupErrors += w.writes.warmupErrs
		res.ReadOps += w.reads.ops
		res.ReadErrors += w.reads.errors
		res.WarmupReads += w.reads.warmup
		if w.firstErr != nil && (firstErr == nil || w.firstErrAt.Before(firstErrAt)) {
			firstErr, firstErrAt = w.firstErr, w.firstErrAt
		}
	}
	if firstErr != nil {
		res.FirstError = firstErr.Error()
	}
	res.Interrupted = ctx.Err() != nil && finished.Before(end)
	res.Elapsed = max(finished.Sub(from), 0)
	if res.Elapsed > 0 {
		res.OpsPerSec = float64(res.Ops) / res.Elapsed.Seconds()
		res.ReadOpsPerSec = float64(res.ReadOps) / res.Elapsed.Seconds()
	}
	res.Mean = writes.Mean()
	res.P50 = writes.Quantile(0.50)
	res.P99 = writes.Quantile(0.99)
	res.P999 = writes.Quantile(0.999)
	res.Max = writes.Max()
	res.ReadMean = reads.Mean()
	res.ReadP50 = reads.Quantile(0.50)
	res.ReadP99 = reads.Quantile(0.99)
	res.ReadP999 = reads.Quantile(0.999)
	res.ReadMax = reads.Max()
	res.Latency, res.ReadLatency = &writes, &reads
	return res
}
