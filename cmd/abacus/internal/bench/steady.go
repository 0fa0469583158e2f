package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/internal/sharded"
)

// The steady scenario (ScenarioSteady) is a steady load, not a
// max-throughput test: events counters are driven at a fixed rate, open
// loop, while three readers each read once per Config.SteadyReadEvery:
//
//   - full: Client.Get of the events counter, from the store: its rollup
//     plus every event after the rollup's epoch;
//   - stale: Client.GetWithin with Config.SteadyStaleness, answered from
//     memory when this process saw a reading or rollup fresh enough;
//   - native: Client.Get of a native counter written once at the start,
//     the baseline a read of a counter costs on this store.
//
// Nothing writes the native counter during the run: the only load on the
// store is the events counter's, so the three kinds of read compete with
// the same writes and are compared with each other. Every full read also
// reports how far the counter's rollup trails (the rollup lag) and how
// many events it added after the rollup; both stay bounded when the
// background rollups that activity starts keep up.
//
// Two shapes: for each Config.SteadyRates rate one counter at that rate,
// and with Config.SteadyCounters = N, N counters at one increment a
// second each (N/s in all, round robin), where each read picks a random
// counter.
//
// After each one-counter run, unless Config.SteadyRollupCost is negative,
// a rollup-cost phase (SteadyRollupCost) measures the store CPU of
// rollups apart from that of the writes: a client that starts no
// background rollups writes that many increments at the run's rate to a
// new counter, waits until they can be sealed, and rolls them up with
// Client.GC. The many-counter run has none.

// Defaults of the steady scenario's Config fields.
const (
	DefaultSteadyReadEvery = 100 * time.Millisecond
	DefaultSteadyStaleness = 2 * time.Second
)

// DefaultSteadyRollupCost is how many increments the rollup-cost phase
// of each one-counter steady run writes (Config.SteadyRollupCost).
const DefaultSteadyRollupCost = 60_000

// steadyMaxRollupCost bounds Config.SteadyRollupCost.
const steadyMaxRollupCost = 10_000_000

// DefaultSteadyRates are the rates, in increments per second of one
// counter, that the steady scenario drives by default.
var DefaultSteadyRates = []int{1000, 10_000}

const (
	// steadyTick is the pacer's period: every tick issues the increments
	// due since the start (rate/100 of them at a steady pace).
	steadyTick = 10 * time.Millisecond
	// steadyWindow is the length of the steady scenario's windows.
	steadyWindow = 10 * time.Second
	// steadySustainedShare is the share of the target rate a run must
	// acknowledge, with nothing dropped, to count as sustained.
	steadySustainedShare = 0.98
	// steadyMaxRate bounds a steady rate (and the many-counter shape's N).
	steadyMaxRate = 1_000_000
)

// SteadyRun is one run of the steady scenario: one shape at one rate.
type SteadyRun struct {
	// Shape names the run: "1 counter at 1000/s", "10000 counters at 1/s
	// each".
	Shape    string `json:"shape"`
	Counters int    `json:"counters"`
	// TargetRate is the increments per second asked for, over all the
	// counters; AchievedRate the acknowledged increments per second of
	// the measured window. Sustained is set when AchievedRate is at
	// least 98% of the target and no increment was dropped.
	TargetRate   float64 `json:"target_rate"`
	AchievedRate float64 `json:"achieved_rate"`
	Sustained    bool    `json:"sustained"`
	// Writers is the number of goroutines the increments were spread over.
	Writers int `json:"writers"`
	// Issued, Acknowledged and Errors count the increments of the
	// measured window; Dropped those the pacer could not hand to a writer
	// because every writer was busy and the queue full (never sent).
	Issued       uint64 `json:"issued"`
	Acknowledged uint64 `json:"acknowledged"`
	Errors       uint64 `json:"errors"`
	Dropped      uint64 `json:"dropped"`
	// Write latency, from the tick that issued the increment (so queueing
	// for a writer counts) to its acknowledgement.
	WriteP50 time.Duration `json:"write_p50_ns"`
	WriteP99 time.Duration `json:"write_p99_ns"`
	WriteMax time.Duration `json:"write_max_ns"`
	// Duration is the measured window (shorter when interrupted).
	Duration  time.Duration `json:"duration_ns"`
	ReadEvery time.Duration `json:"read_every_ns"`
	Staleness time.Duration `json:"staleness_ns"`

	// Full, Stale and Native are the three readers' latencies.
	Full   SteadyReads `json:"full"`
	Stale  SteadyReads `json:"stale"`
	Native SteadyReads `json:"native"`
	// NativeNote says why there is no native baseline, when there is none.
	NativeNote string `json:"native_note,omitempty"`
	// Read latency ratios against the native read: 0 without a baseline.
	FullNativeP50  float64 `json:"full_native_p50_ratio,omitempty"`
	FullNativeP99  float64 `json:"full_native_p99_ratio,omitempty"`
	StaleNativeP50 float64 `json:"stale_native_p50_ratio,omitempty"`
	StaleNativeP99 float64 `json:"stale_native_p99_ratio,omitempty"`

	// Lag is the rollup lag the full reads saw: the read's time
	// (Value.AsOf) minus the counter's rollup epoch (Value.RolledUpTo).
	Lag SteadyLag `json:"lag"`
	// Events added by each full read after the rollup (Value.Events).
	EventsMean float64 `json:"events_per_read_mean"`
	EventsP99  int     `json:"events_per_read_p99"`
	EventsMax  int     `json:"events_per_read_max"`
	// Cached is how many stale reads were answered from memory, and
	// Staleness* how old those answers were (read start - Value.AsOf).
	// StaleTooOld counts answers older than the bound: a bug if not 0.
	Cached       uint64        `json:"cached"`
	StalenessP50 time.Duration `json:"staleness_p50_ns"`
	StalenessP99 time.Duration `json:"staleness_p99_ns"`
	StalenessMax time.Duration `json:"staleness_max_ns"`
	StaleTooOld  uint64        `json:"stale_too_old"`
	// ReadMismatches counts full reads whose value was below the
	// increments acknowledged before the read began or above those sent
	// by its end: a lost or double-counted increment if not 0.
	ReadMismatches uint64 `json:"read_mismatches"`
	FirstMismatch  string `json:"first_mismatch,omitempty"`

	// CPU over the measured window: seconds used by this process (load
	// generator, readers, library and, embedded, the store) and by the
	// store's process (Config.StorePID, -1 without), the same per 1,000
	// acknowledged increments, and the machine's busy cores. Writes and
	// the background rollups run on the same store, so their CPU is not
	// told apart: Stats says how many rollups it paid for.
	ProcessCPUSeconds float64 `json:"process_cpu_seconds"`
	StoreCPUSeconds   float64 `json:"store_cpu_seconds"`
	ProcessCPUPer1k   float64 `json:"process_cpu_seconds_per_1k"`
	StoreCPUPer1k     float64 `json:"store_cpu_seconds_per_1k"`
	HostCPU           float64 `json:"host_cpu_cores"`

	// Stats is what the events engine did during the measured window
	// (Client.EventsStats).
	Stats SteadyStats `json:"events_stats"`

	// Windows are the measured window in steps of 10 s (the last may be
	// shorter).
	Windows []SteadyWindow `json:"windows"`

	// RollupCost is the rollup-cost phase run after the measured window
	// (one-counter runs only; nil when Config.SteadyRollupCost is
	// negative or the run was interrupted).
	RollupCost *SteadyRollupCost `json:"rollup_cost,omitempty"`

	Interrupted bool   `json:"interrupted,omitempty"`
	FirstError  string `json:"first_error,omitempty"`
}

// SteadyReads are one reader's results.
type SteadyReads struct {
	Reads      uint64        `json:"reads"`
	Errors     uint64        `json:"errors"`
	Mean       time.Duration `json:"mean_ns"`
	P50        time.Duration `json:"p50_ns"`
	P99        time.Duration `json:"p99_ns"`
	P999       time.Duration `json:"p999_ns"`
	Max        time.Duration `json:"max_ns"`
	FirstError string        `json:"first_error,omitempty"`
}

// SteadyLag is the rollup lag the full reads saw. NeverRolledUp counts
// reads of a counter no rollup had reached yet (no lag to take).
type SteadyLag struct {
	Samples       uint64        `json:"samples"`
	NeverRolledUp uint64        `json:"never_rolled_up"`
	Min           time.Duration `json:"min_ns"`
	P50           time.Duration `json:"p50_ns"`
	P99           time.Duration `json:"p99_ns"`
	Max           time.Duration `json:"max_ns"`
}

// SteadyStats are the events engine's totals over a measured window (see
// internal/events.Stats).
type SteadyStats struct {
	Adds          uint64 `json:"adds"`
	Replayed      uint64 `json:"replayed"`
	TooLate       uint64 `json:"too_late"`
	Rollups       uint64 `json:"rollups"`
	RollupSkips   uint64 `json:"rollup_skips"`
	Seals         uint64 `json:"seals"`
	EventsRolled  uint64 `json:"events_rolled"`
	BucketsFreed  uint64 `json:"buckets_freed"`
	Reads         uint64 `json:"reads"`
	CachedReads   uint64 `json:"cached_reads"`
	SharedReads   uint64 `json:"shared_reads"`
	EventsScanned uint64 `json:"events_scanned"`
}

func snapStats(st *abacus.EventsStats) SteadyStats {
	return SteadyStats{
		Adds: st.Adds.Load(), Replayed: st.Replayed.Load(), TooLate: st.TooLate.Load(),
		Rollups: st.Rollups.Load(), RollupSkips: st.RollupSkips.Load(), Seals: st.Seals.Load(),
		EventsRolled: st.EventsRolled.Load(), BucketsFreed: st.BucketsFreed.Load(),
		Reads: st.Reads.Load(), CachedReads: st.CachedReads.Load(), SharedReads: st.SharedReads.Load(),
		EventsScanned: st.EventsScanned.Load(),
	}
}

func (a SteadyStats) minus(b SteadyStats) SteadyStats {
	return SteadyStats{
		Adds: a.Adds - b.Adds, Replayed: a.Replayed - b.Replayed, TooLate: a.TooLate - b.TooLate,
		Rollups: a.Rollups - b.Rollups, RollupSkips: a.RollupSkips - b.RollupSkips, Seals: a.Seals - b.Seals,
		EventsRolled: a.EventsRolled - b.EventsRolled, BucketsFreed: a.BucketsFreed - b.BucketsFreed,
		Reads: a.Reads - b.Reads, CachedReads: a.CachedReads - b.CachedReads, SharedReads: a.SharedReads - b.SharedReads,
		EventsScanned: a.EventsScanned - b.EventsScanned,
	}
}

// SteadyWindow is one 10 s window of a steady run.
type SteadyWindow struct {
	// Start is the window's start from the start of the measured window.
	Start  time.Duration `json:"start_ns"`
	Length time.Duration `json:"length_ns"`
	// WriteRate is the increments acknowledged in the window per second,
	// Errors the increments that failed in it.
	WriteRate float64 `json:"write_rate"`
	Errors    uint64  `json:"errors"`
	// The readers' latencies, by when each read began.
	Full   WindowReads `json:"full"`
	Stale  WindowReads `json:"stale"`
	Native WindowReads `json:"native"`
	// Events added per full read, and the rollup lag the full reads saw.
	EventsMean float64       `json:"events_per_read_mean"`
	EventsMax  int           `json:"events_per_read_max"`
	LagP50     time.Duration `json:"lag_p50_ns"`
	LagP99     time.Duration `json:"lag_p99_ns"`
	LagMax     time.Duration `json:"lag_max_ns"`
	// What the events engine rolled up in the window.
	Rollups      uint64 `json:"rollups"`
	Seals        uint64 `json:"seals"`
	EventsRolled uint64 `json:"events_rolled"`
	// Cores busy in the window: this process, and the store's process
	// (-1 without Config.StorePID).
	ProcessCPU float64 `json:"process_cpu_cores"`
	StoreCPU   float64 `json:"store_cpu_cores"`
}

// WindowReads are one reader's reads in one window.
type WindowReads struct {
	Reads  uint64        `json:"reads"`
	Errors uint64        `json:"errors"`
	P50    time.Duration `json:"p50_ns"`
	P99    time.Duration `json:"p99_ns"`
}

// steadyShape is one run's load: counters at rate increments per second
// over all of them.
type steadyShape struct {
	counters int
	rate     float64
	shape    string // SteadyRun.Shape
	kind     string // in the counters' names
}

// steadyShapes lists the runs the configuration asks for.
func (c Config) steadyShapes() []steadyShape {
	var out []steadyShape
	for _, r := range c.SteadyRates {
		out = append(out, steadyShape{counters: 1, rate: float64(r), shape: fmt.Sprintf("1 counter at %d/s", r), kind: fmt.Sprintf("steady%d-", r)})
	}
	if n := c.SteadyCounters; n > 0 {
		out = append(out, steadyShape{counters: n, rate: float64(n), shape: fmt.Sprintf("%d counters at 1/s each", n), kind: "steadymany"})
	}
	return out
}

// steadyWriters is how many goroutines carry a rate's increments: enough
// for a mean latency of 50 ms at that rate, at least 4.
func steadyWriters(rate float64) int {
	return min(max(int(rate/20+0.5), 4), 4096)
}

// steady runs every shape of the steady scenario in turn.
func (s *suite) steady(ctx context.Context) ([]Row, []SteadyRun, error) {
	var rows []Row
	var runs []SteadyRun
	for _, sh := range s.cfg.steadyShapes() {
		row, run, err := s.steadyRun(ctx, sh)
		if err != nil {
			return rows, runs, err
		}
		// The run's client has stopped by now, and its background
		// rollups with it: the phase has the store to itself.
		if sh.counters == 1 && s.cfg.SteadyRollupCost > 0 && ctx.Err() == nil {
			run.RollupCost, err = s.steadyRollupCost(ctx, sh, s.cfg.SteadyRollupCost)
		}
		rows, runs = append(rows, row), append(runs, run)
		if err != nil {
			return rows, runs, err
		}
		if ctx.Err() != nil {
			return rows, runs, ctx.Err()
		}
	}
	return rows, runs, nil
}

// steadyJob is one increment handed to a writer: the counter's index and
// the tick that issued it.
type steadyJob struct {
	counter int
	at      time.Time
}

// steadyWrites is the writers' shared tally, under mu: a histogram per
// writer would cost 30 KB each, and a few thousand increments a second
// hardly contend for one lock.
type steadyWrites struct {
	mu                  sync.Mutex
	hist                Histogram
	ok, errs            uint64
	warm, warmErrs      uint64
	firstErr            error
	firstErrAt          time.Time
	ackedAll, errorsAll atomic.Uint64 // any phase, for the windows
	sent, acked         []atomic.Int64
	issued, dropped     uint64 // the pacer's, read after it ended
}

func (w *steadyWrites) record(at, from time.Time, d time.Duration, err error) {
	if err == nil {
		w.ackedAll.Add(1)
	} else {
		w.errorsAll.Add(1)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case at.Before(from):
		w.warm++
		if err != nil {
			w.warmErrs++
		}
	case err != nil:
		w.errs++
		if w.firstErr == nil || at.Before(w.firstErrAt) {
			w.firstErr, w.firstErrAt = err, at
		}
	default:
		w.ok++
		w.hist.Record(d)
	}
}

// steadySample is taken at every window boundary: at is the boundary,
// taken the moment the sample is (a little later).
type steadySample struct {
	at, taken   time.Time
	cpu         cpuSample
	acked, errs uint64
	stats       SteadyStats
}

// steadyRun drives one shape for the warm-up and the measured window.
func (s *suite) steadyRun(ctx context.Context, sh steadyShape) (Row, SteadyRun, error) {
	o := s.cfg.Options
	run := SteadyRun{
		Shape: sh.shape, Counters: sh.counters, TargetRate: sh.rate, Writers: steadyWriters(sh.rate),
		ReadEvery: s.cfg.SteadyReadEvery, Staleness: s.cfg.SteadyStaleness,
	}
	c, err := s.newClient(ctx, sharded.Hooks{})
	if err != nil {
		return Row{}, run, err
	}
	defer s.stopClient(c)
	ns, err := s.modelNamespace(ctx, c, ModelEvents)
	if err != nil {
		return Row{}, run, err
	}
	names := s.names(sh.kind, sh.counters)
	nativeNS, native, note, err := s.steadyNative(ctx, c, sh)
	if err != nil {
		return Row{}, run, err
	}
	run.NativeNote = note

	w := &steadyWrites{sent: make([]atomic.Int64, sh.counters), acked: make([]atomic.Int64, sh.counters)}
	row := Row{Scenario: "steady, " + sh.shape, Kind: "steady", Model: ModelEvents, Via: "library", Counters: sh.counters, Concurrency: run.Writers}
	label := fmt.Sprintf("%-34s %-15s counters=%-4d", row.Scenario, row.label(), row.Counters)
	pr := startProgress(s.cfg.Progress, s.cfg.ProgressBar, label, o.Warmup, o.Duration)
	row.Started = time.Now().UTC()
	rss := startRSS(rssInterval)

	start := time.Now()
	from := start.Add(o.Warmup)
	end := from.Add(o.Duration)
	// As in Run: calls in flight at the end may finish within Drain.
	opCtx, cancel := context.WithDeadline(ctx, end.Add(o.Drain))
	defer cancel()
	stop := make(chan struct{})

	// The writers, fed by the pacer.
	jobs := make(chan steadyJob, run.Writers)
	var writers sync.WaitGroup
	for range run.Writers {
		writers.Go(func() {
			for j := range jobs {
				w.sent[j.counter].Add(1)
				err := c.Apply(opCtx, abacus.Update{Namespace: ns, Counter: names[j.counter], Delta: 1, RequestID: abacus.NewRequestID()})
				d := time.Since(j.at)
				if err == nil {
					w.acked[j.counter].Add(1)
				}
				w.record(j.at, from, d, err)
			}
		})
	}
	// The pacer: open loop, whatever the writers' latency.
	paced := make(chan struct{})
	go func() {
		defer close(paced)
		defer close(jobs)
		t := time.NewTicker(steadyTick)
		defer t.Stop()
		var issued int64
		next := 0
		for {
			var now time.Time
			select {
			case <-stop:
				return
			case now = <-t.C:
			}
			if !now.Before(end) {
				return
			}
			for due := int64(sh.rate*now.Sub(start).Seconds()) - issued; due > 0; due-- {
				issued++
				j := steadyJob{counter: next, at: now}
				next = (next + 1) % sh.counters
				measured := !now.Before(from)
				select {
				case jobs <- j:
					if measured {
						w.issued++
					}
				default:
					if measured {
						w.dropped++
					}
				}
			}
		}
	}()

	// The readers.
	full := &steadyReader{every: s.cfg.SteadyReadEvery, seed: 1}
	full.read = func(ctx context.Context, rng *rand.Rand) (readSample, error) {
		i := rng.IntN(sh.counters)
		lo := w.acked[i].Load()
		v, err := c.Get(ctx, ns, names[i])
		if err != nil {
			return readSample{}, err
		}
		hi := w.sent[i].Load()
		rs := readSample{events: v.Events, full: true}
		if !v.RolledUpTo.IsZero() {
			rs.lag, rs.rolled = v.AsOf.Sub(v.RolledUpTo), true
		}
		if v.Value < lo || v.Value > hi {
			rs.mismatch = fmt.Sprintf("%s read %d, with %d increments acknowledged before the read and %d sent by its end", names[i], v.Value, lo, hi)
		}
		return rs, nil
	}
	stale := &steadyReader{every: s.cfg.SteadyReadEvery, seed: 2}
	stale.read = func(ctx context.Context, rng *rand.Rand) (readSample, error) {
		t0 := time.Now()
		v, err := c.GetWithin(ctx, ns, names[rng.IntN(sh.counters)], s.cfg.SteadyStaleness)
		if err != nil {
			return readSample{}, err
		}
		rs := readSample{cached: v.Cached}
		if v.Cached {
			rs.staleness = max(t0.Sub(v.AsOf), 0)
			rs.tooOld = v.AsOf.Before(t0.Add(-s.cfg.SteadyStaleness))
		}
		return rs, nil
	}
	readers := []*steadyReader{full, stale}
	var nat *steadyReader
	if native != "" {
		nat = &steadyReader{every: s.cfg.SteadyReadEvery, seed: 3}
		nat.read = func(ctx context.Context, _ *rand.Rand) (readSample, error) {
			_, err := c.Get(ctx, nativeNS, native)
			return readSample{}, err
		}
		readers = append(readers, nat)
	}
	var reading sync.WaitGroup
	for _, r := range readers {
		reading.Go(func() { r.loop(opCtx, stop, from, end) })
	}

	// This goroutine samples CPU, the engine's stats and the writes at
	// every window boundary.
	sample := func(at time.Time) steadySample {
		return steadySample{at: at, taken: time.Now(), cpu: sampleCPU(s.cfg.StorePID), acked: w.ackedAll.Load(), errs: w.errorsAll.Load(), stats: snapStats(c.EventsStats())}
	}
	var samples []steadySample
	interrupted := false
	if !sleepUntil(ctx, from) {
		interrupted = true
	} else {
		samples = append(samples, sample(from))
		for at := from.Add(steadyWindow); ; at = at.Add(steadyWindow) {
			if at.After(end) {
				at = end
			}
			if !sleepUntil(ctx, at) {
				interrupted = true
				samples = append(samples, sample(time.Now()))
				break
			}
			samples = append(samples, sample(at))
			if !at.Before(end) {
				break
			}
		}
	}
	close(stop)
	<-paced
	reading.Wait()
	writers.Wait()
	row.RSSPeak, row.RSSEnd = rss.Stop()

	// The writes.
	run.Issued, run.Dropped = w.issued, w.dropped
	run.Acknowledged, run.Errors = w.ok, w.errs
	run.WriteP50, run.WriteP99, run.WriteMax = w.hist.Quantile(0.5), w.hist.Quantile(0.99), w.hist.Max()
	run.Interrupted = interrupted
	if w.firstErr != nil {
		run.FirstError = w.firstErr.Error()
	}
	if len(samples) >= 2 {
		first, last := samples[0], samples[len(samples)-1]
		run.Duration = last.at.Sub(first.at)
		run.Stats = last.stats.minus(first.stats)
		proc, store := cpuSeconds(first.cpu, last.cpu)
		run.ProcessCPUSeconds, run.StoreCPUSeconds = proc, store
		run.ProcessCPUPer1k, run.StoreCPUPer1k = per1k(proc, run.Acknowledged), per1k(store, run.Acknowledged)
		co := last.cpu.coresSince(first.cpu)
		run.HostCPU = co.host
		row.ProcessCPU, row.HostCPU, row.StoreCPU = co.proc, co.host, co.store
	} else {
		run.ProcessCPUSeconds, run.StoreCPUSeconds, run.ProcessCPUPer1k, run.StoreCPUPer1k, run.HostCPU = -1, -1, -1, -1, -1
		row.ProcessCPU, row.HostCPU, row.StoreCPU = -1, -1, -1
	}
	if run.Duration > 0 {
		run.AchievedRate = float64(run.Acknowledged) / run.Duration.Seconds()
	}
	run.Sustained = !interrupted && run.Dropped == 0 && run.AchievedRate >= steadySustainedShare*run.TargetRate

	// The reads.
	run.Full, run.Stale = full.result(), stale.result()
	if nat != nil {
		run.Native = nat.result()
		ratio := func(a, b time.Duration) float64 {
			if a <= 0 || b <= 0 {
				return 0
			}
			return float64(a) / float64(b)
		}
		run.FullNativeP50, run.FullNativeP99 = ratio(run.Full.P50, run.Native.P50), ratio(run.Full.P99, run.Native.P99)
		run.StaleNativeP50, run.StaleNativeP99 = ratio(run.Stale.P50, run.Native.P50), ratio(run.Stale.P99, run.Native.P99)
	}
	run.Lag = SteadyLag{Samples: full.lag.Count(), NeverRolledUp: full.neverRolled, Min: full.lag.Min(), P50: full.lag.Quantile(0.5), P99: full.lag.Quantile(0.99), Max: full.lag.Max()}
	// The events histogram counts events in its nanosecond unit.
	run.EventsMean = full.eventsMean()
	run.EventsP99, run.EventsMax = int(full.events.Quantile(0.99)), int(full.events.Max())
	run.Cached, run.StaleTooOld = stale.cached, stale.tooOld
	run.StalenessP50, run.StalenessP99, run.StalenessMax = stale.staleness.Quantile(0.5), stale.staleness.Quantile(0.99), stale.staleness.Max()
	run.ReadMismatches, run.FirstMismatch = full.mismatches, full.firstMismatch

	// The windows.
	for k := 0; k+1 < len(samples); k++ {
		a, b := samples[k], samples[k+1]
		win := SteadyWindow{Start: a.at.Sub(from), Length: b.at.Sub(a.at), Errors: b.errs - a.errs}
		if d := b.taken.Sub(a.taken); d > 0 {
			win.WriteRate = float64(b.acked-a.acked) / d.Seconds()
		}
		st := b.stats.minus(a.stats)
		win.Rollups, win.Seals, win.EventsRolled = st.Rollups, st.Seals, st.EventsRolled
		co := b.cpu.coresSince(a.cpu)
		win.ProcessCPU, win.StoreCPU = co.proc, co.store
		fw := full.window(k)
		win.Full, win.Stale = fw.reads, stale.window(k).reads
		if nat != nil {
			win.Native = nat.window(k).reads
		}
		win.EventsMean, win.EventsMax = fw.eventsMean, fw.eventsMax
		win.LagP50, win.LagP99, win.LagMax = fw.lagP50, fw.lagP99, fw.lagMax
		run.Windows = append(run.Windows, win)
	}

	// The row of the main table: the writes.
	row.Result = Result{
		Ops: w.ok, Errors: w.errs, WarmupOps: w.warm, WarmupErrors: w.warmErrs,
		Elapsed: run.Duration, OpsPerSec: run.AchievedRate,
		Mean: w.hist.Mean(), P50: run.WriteP50, P99: run.WriteP99, P999: w.hist.Quantile(0.999), Max: run.WriteMax,
		Latency: &w.hist, ReadLatency: &Histogram{}, FirstError: run.FirstError, Interrupted: interrupted,
	}
	row.Check = s.check(ctx, row.Result, func() (int64, error) { return sumParallel(ctx, c, ns, names) })
	if run.ReadMismatches > 0 {
		row.Check = fmt.Sprintf("MISMATCH: %d full reads out of bounds, first: %s; read back: %s", run.ReadMismatches, run.FirstMismatch, row.Check)
	}
	res := fmt.Sprintf("%.0f of %.0f increments/s, errors %d, dropped %d; full read p99 %s, native p99 %s, rollup lag p99 %s",
		run.AchievedRate, run.TargetRate, run.Errors, run.Dropped, fmtDuration(run.Full.P99), fmtDuration(run.Native.P99), fmtDuration(run.Lag.P99))
	pr.finish(res)
	return row, run, nil
}

// SteadyRollupCost is the rollup-cost phase of a one-counter steady run.
// In the measured window writes and the background rollups they start
// share the store at once, so their CPU cannot be told apart; here they
// run one after the other. A client of its own that starts no background
// rollups (abacus.Config.RollupEvery -1, no sweeper) writes Events
// increments of 1 to a new events counter, in a new namespace with the
// default events options, at the run's rate; once the last of them is
// older than Seal + RollupDelay + 1 s, Client.GC rolls the counter up
// until nothing is left to fold. The store's CPU is measured over each
// phase.
type SteadyRollupCost struct {
	// Events is the increments asked for, each a new event with a new
	// request id; Acknowledged and Errors count them.
	Events       int    `json:"events"`
	Acknowledged uint64 `json:"acknowledged"`
	Errors       uint64 `json:"errors"`
	// TargetRate is the run's rate; AchievedRate the increments
	// acknowledged per second of the write phase (below the target when
	// the writers could not keep up: nothing is dropped here).
	TargetRate   float64 `json:"target_rate"`
	AchievedRate float64 `json:"achieved_rate"`
	Writers      int     `json:"writers"`
	// WriteTime is the write phase, from the first increment issued to
	// the last acknowledged; Wait the pause until the last event could be
	// sealed; RollupTime the rollup phase (the GC calls).
	WriteTime  time.Duration `json:"write_time_ns"`
	Wait       time.Duration `json:"wait_ns"`
	RollupTime time.Duration `json:"rollup_time_ns"`

	// StoreCPUFrom says whose CPU the store figures are: "store process"
	// (Config.StorePID), "this process" (the embedded store runs in it)
	// or "" (unknown: Cassandra without a store pid; the store figures
	// are then -1).
	StoreCPUFrom string `json:"store_cpu_from"`
	// Store CPU seconds of each phase, the same per 1,000 increments
	// acknowledged (write) or events folded (rollup), and the rollup's as
	// a percentage of the writes': -1 where unknown.
	WriteStoreCPUSeconds  float64 `json:"write_store_cpu_seconds"`
	RollupStoreCPUSeconds float64 `json:"rollup_store_cpu_seconds"`
	WriteStoreCPUPer1k    float64 `json:"write_store_cpu_seconds_per_1k"`
	RollupStoreCPUPer1k   float64 `json:"rollup_store_cpu_seconds_per_1k"`
	RollupWritePercent    float64 `json:"rollup_write_cpu_percent"`
	// This process's CPU seconds in each phase (the library and the load
	// generator; embedded, the store too); -1 where unknown.
	WriteProcessCPUSeconds  float64 `json:"write_process_cpu_seconds"`
	RollupProcessCPUSeconds float64 `json:"rollup_process_cpu_seconds"`

	// EventsFolded and Seals are what the GC calls reported and the
	// events engine counted (GCResult.Folded, EventsStats.Seals); GCCalls
	// how many calls it took, GCSkips how many of them were skipped.
	EventsFolded uint64 `json:"events_folded"`
	Seals        uint64 `json:"seals"`
	GCCalls      int    `json:"gc_calls"`
	GCSkips      int    `json:"gc_skips"`
	// RollupsBefore counts the rollups the client ran before the rollup
	// phase, and RolledUpBefore is set when a read before it found the
	// counter rolled up: the write phase would then have paid for some
	// rollups, and Check says INVALID.
	RollupsBefore  uint64 `json:"rollups_before"`
	RolledUpBefore bool   `json:"rolled_up_before,omitempty"`
	// Value is the counter read after the rollup phase; Check compares
	// it with the increments (Events × 1 when none failed).
	Value int64  `json:"value"`
	Check string `json:"check"`

	Interrupted bool   `json:"interrupted,omitempty"`
	FirstError  string `json:"first_error,omitempty"`
}

// steadyRollupMaxSkips is how many GC calls in a row the rollup phase
// lets be skipped before it gives up.
const steadyRollupMaxSkips = 10

// steadyRollupCost runs the rollup-cost phase of a one-counter steady
// run at its rate: n increments, then their rollup. Failed increments and
// GC calls are reported in the result; an error is returned only when
// the phase could not start.
func (s *suite) steadyRollupCost(ctx context.Context, sh steadyShape, n int) (*SteadyRollupCost, error) {
	res := &SteadyRollupCost{
		Events: n, TargetRate: sh.rate, Writers: steadyWriters(sh.rate),
		WriteStoreCPUSeconds: -1, RollupStoreCPUSeconds: -1, WriteStoreCPUPer1k: -1, RollupStoreCPUPer1k: -1, RollupWritePercent: -1,
		WriteProcessCPUSeconds: -1, RollupProcessCPUSeconds: -1,
	}
	// A client of its own on the same driver: reads and writes start no
	// rollup, and no sweeper runs, so only GC rolls the counter up.
	c, err := abacus.NewClient(ctx, abacus.Config{
		Driver:        s.store,
		GCInterval:    -1,
		RollupEvery:   -1,
		Logger:        s.log,
		MaxShardBatch: s.cfg.ShardBatch,
		MaxEventBatch: s.cfg.EventBatch,
	})
	if err != nil {
		return nil, err
	}
	defer s.stopClient(c)
	nsName := fmt.Sprintf("bench-%s-events-rollupcost%d", s.runID, int64(sh.rate))
	ns, err := c.CreateNamespace(ctx, abacus.NamespaceConfig{Name: nsName, Model: abacus.Model(ModelEvents)})
	if errors.Is(err, abacus.ErrNamespaceExists) {
		ns, err = c.Namespace(ctx, nsName)
	}
	if err != nil {
		return nil, err
	}
	if ns.Events == nil {
		return nil, fmt.Errorf("bench: namespace %s has no events options", nsName)
	}
	name := s.names("rollupcost-"+sh.kind, 1)[0]
	settle := ns.Events.Seal + ns.Events.RollupDelay + time.Second

	// Store CPU: the store's process when given, this one when the store
	// is embedded in it.
	embedded := len(s.cfg.Cassandra) == 0
	switch {
	case s.cfg.StorePID > 0:
		res.StoreCPUFrom = "store process"
	case embedded:
		res.StoreCPUFrom = "this process"
	}
	storeCPU := func(a, b cpuSample) (proc, store float64) {
		proc, store = cpuSeconds(a, b)
		if s.cfg.StorePID <= 0 && embedded {
			store = proc
		}
		return proc, store
	}

	label := fmt.Sprintf("%-34s %-15s counters=%-4d", "steady, rollup cost at "+strconv.FormatFloat(sh.rate, 'f', 0, 64)+"/s", "events/library", 1)
	writeFor := time.Duration(float64(n) / sh.rate * float64(time.Second))
	pr := startProgress(s.cfg.Progress, s.cfg.ProgressBar, label, 0, writeFor+settle)
	statsStart := snapStats(c.EventsStats())

	// The write phase: a pacer hands the increments due at the run's rate
	// to the writers, waiting for one when all are busy.
	var (
		acked, errs atomic.Uint64
		errMu       sync.Mutex
		firstErr    error
	)
	jobs := make(chan struct{}, res.Writers)
	var writers sync.WaitGroup
	for range res.Writers {
		writers.Go(func() {
			for range jobs {
				err := c.Apply(ctx, abacus.Update{Namespace: nsName, Counter: name, Delta: 1, RequestID: abacus.NewRequestID()})
				if err == nil {
					acked.Add(1)
					continue
				}
				errs.Add(1)
				errMu.Lock()
				firstErr = cmpErr(firstErr, err)
				errMu.Unlock()
			}
		})
	}
	cpu0 := sampleCPU(s.cfg.StorePID)
	start := time.Now()
	func() {
		defer close(jobs)
		t := time.NewTicker(steadyTick)
		defer t.Stop()
		issued := 0
		for issued < n {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				due := min(int(sh.rate*now.Sub(start).Seconds()), n)
				for ; issued < due; issued++ {
					select {
					case jobs <- struct{}{}:
					case <-ctx.Done():
						return
					}
				}
			}
		}
	}()
	writers.Wait()
	lastAck := time.Now()
	cpu1 := sampleCPU(s.cfg.StorePID)
	res.WriteTime = lastAck.Sub(start)
	res.Acknowledged, res.Errors = acked.Load(), errs.Load()
	if firstErr != nil {
		res.FirstError = "write: " + firstErr.Error()
	}
	if res.WriteTime > 0 {
		res.AchievedRate = float64(res.Acknowledged) / res.WriteTime.Seconds()
	}
	res.WriteProcessCPUSeconds, res.WriteStoreCPUSeconds = storeCPU(cpu0, cpu1)
	res.WriteStoreCPUPer1k = per1k(res.WriteStoreCPUSeconds, res.Acknowledged)
	if ctx.Err() != nil {
		res.Interrupted, res.Check = true, "not checked: interrupted"
		pr.finish("interrupted")
		return res, nil
	}

	// Nothing may have rolled the counter up yet (read outside both
	// phases' CPU).
	pre, err := c.Get(ctx, nsName, name)
	if err != nil {
		res.FirstError = cmp.Or(res.FirstError, "read before the rollup: "+err.Error())
	} else {
		res.RolledUpBefore = !pre.RolledUpTo.IsZero()
	}

	// Wait until the last event can be sealed: a rollup seals up to now -
	// Seal - RollupDelay.
	if !sleepUntil(ctx, lastAck.Add(settle)) {
		res.Interrupted, res.Check = true, "not checked: interrupted"
		pr.finish("interrupted")
		return res, nil
	}
	statsBefore := snapStats(c.EventsStats())
	d := statsBefore.minus(statsStart)
	res.RollupsBefore = d.Rollups + d.RollupSkips

	// The rollup phase: GC until nothing is left to fold, or every event
	// written (those that failed included) has been folded.
	written := res.Acknowledged + res.Errors
	rollStart := time.Now()
	res.Wait = rollStart.Sub(lastAck)
	cpu2 := sampleCPU(s.cfg.StorePID)
	skips := 0
	for ctx.Err() == nil {
		gc, err := c.GC(ctx, nsName, name)
		res.GCCalls++
		if err != nil {
			res.FirstError = cmp.Or(res.FirstError, "GC: "+err.Error())
			break
		}
		if gc.Skipped {
			res.GCSkips++
			if skips++; skips >= steadyRollupMaxSkips {
				res.FirstError = cmp.Or(res.FirstError, fmt.Sprintf("GC skipped %d times in a row: %v", skips, gc.Err))
				break
			}
			continue
		}
		skips = 0
		res.EventsFolded += uint64(gc.Folded)
		if gc.Folded == 0 || res.EventsFolded >= written {
			break
		}
	}
	cpu3 := sampleCPU(s.cfg.StorePID)
	res.RollupTime = time.Since(rollStart)
	res.Seals = snapStats(c.EventsStats()).minus(statsBefore).Seals
	res.RollupProcessCPUSeconds, res.RollupStoreCPUSeconds = storeCPU(cpu2, cpu3)
	res.RollupStoreCPUPer1k = per1k(res.RollupStoreCPUSeconds, res.EventsFolded)
	if res.WriteStoreCPUSeconds > 0 && res.RollupStoreCPUSeconds >= 0 {
		res.RollupWritePercent = res.RollupStoreCPUSeconds / res.WriteStoreCPUSeconds * 100
	}
	if ctx.Err() != nil {
		res.Interrupted, res.Check = true, "not checked: interrupted"
		pr.finish("interrupted")
		return res, nil
	}

	// The value, from the rollup alone.
	v, err := c.Get(ctx, nsName, name)
	switch {
	case err != nil:
		res.Check = "not checked: " + err.Error()
	default:
		res.Value = v.Value
		res.Check = steadyRollupCheck(res, v.Events, v.RolledUpTo, lastAck)
	}
	pr.finish(fmt.Sprintf("%d events: writes %s store cpu-s, rollup %s (%s); %s", res.Acknowledged,
		fmtCPUSeconds(res.WriteStoreCPUSeconds), fmtCPUSeconds(res.RollupStoreCPUSeconds), fmtPercent(res.RollupWritePercent), res.Check))
	return res, nil
}

// steadyRollupCheck says whether the rollup-cost phase measured what it
// meant to and counted right: no rollup before the rollup phase, every
// event folded (events: those the read still added after the rollup) and
// the value equal to the increments written.
func steadyRollupCheck(r *SteadyRollupCost, events int, rolledUpTo, lastEvent time.Time) string {
	ack, unknown := r.Acknowledged, r.Errors
	switch {
	case r.RollupsBefore > 0 || r.RolledUpBefore:
		return fmt.Sprintf("INVALID: the counter was rolled up before the rollup phase (%d rollups, rolled up %v)", r.RollupsBefore, r.RolledUpBefore)
	case r.Value < 0 || uint64(r.Value) < ack || uint64(r.Value) > ack+unknown:
		return fmt.Sprintf("MISMATCH: read %d, %d increments acknowledged, %d failed", r.Value, ack, unknown)
	case events != 0 || rolledUpTo.Before(lastEvent):
		return fmt.Sprintf("INCOMPLETE: %d events left after the rollup (rolled up to %s)", events, rolledUpTo.UTC().Format(time.RFC3339Nano))
	case unknown == 0 && r.EventsFolded != ack:
		return fmt.Sprintf("MISMATCH: read %d, but GC folded %d events", r.Value, r.EventsFolded)
	case unknown == 0:
		return fmt.Sprintf("ok: read %d = %d increments of 1, all folded", r.Value, ack)
	default:
		return fmt.Sprintf("ok: read %d, %d increments acknowledged, %d failed", r.Value, ack, unknown)
	}
}

// fmtCPUSeconds prints CPU seconds, "?" when unknown.
func fmtCPUSeconds(v float64) string {
	if v < 0 {
		return "?"
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// fmtPercent prints a percentage, "?" when unknown.
func fmtPercent(v float64) string {
	if v < 0 {
		return "?"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + "%"
}

// steadyNative makes the native baseline of a steady run: a counter of
// the native model written once. It returns its namespace and name, or a
// note saying why there is none when the store has no native counters.
func (s *suite) steadyNative(ctx context.Context, c *abacus.Client, sh steadyShape) (ns, name, note string, err error) {
	unsupported := func(err error) bool {
		return errors.Is(err, abacus.ErrInvalid) || errors.Is(err, abacus.ErrWrongModel) || errors.Is(err, errors.ErrUnsupported)
	}
	ns, err = s.modelNamespace(ctx, c, ModelNative)
	if err != nil {
		if unsupported(err) {
			return "", "", "no native baseline: " + err.Error(), nil
		}
		return "", "", "", err
	}
	name = s.names("steadynative-"+sh.kind, 1)[0]
	if err := c.Apply(ctx, abacus.Update{Namespace: ns, Counter: name, Delta: 1}); err != nil {
		if unsupported(err) {
			return "", "", "no native baseline: " + err.Error(), nil
		}
		return "", "", "", fmt.Errorf("bench: writing the native baseline counter: %w", err)
	}
	v, err := c.Get(ctx, ns, name)
	if err != nil {
		return "", "", "", fmt.Errorf("bench: reading the native baseline counter: %w", err)
	}
	if v.Value != 1 {
		return "", "", "", fmt.Errorf("bench: native counter %s reads %d, want 1", name, v.Value)
	}
	return ns, name, "", nil
}

// sleepUntil waits until t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// cpuSeconds is the CPU time used between two samples by this process
// and by the store's process, in seconds; -1 where unknown.
func cpuSeconds(a, b cpuSample) (proc, store float64) {
	proc, store = -1, -1
	if a.procOK && b.procOK {
		proc = (b.proc - a.proc).Seconds()
	}
	if a.storeOK && b.storeOK && b.store >= a.store {
		store = float64(b.store-a.store) / userHZ
	}
	return proc, store
}

// per1k is seconds per 1,000 of n; -1 when unknown.
func per1k(seconds float64, n uint64) float64 {
	if seconds < 0 || n == 0 {
		return -1
	}
	return seconds / (float64(n) / 1000)
}

// sumParallel reads every counter of names and adds them up, a few at a
// time: the many-counter shape has thousands.
func sumParallel(ctx context.Context, c *abacus.Client, ns string, names []string) (int64, error) {
	var (
		next, total atomic.Int64
		wg          sync.WaitGroup
		mu          sync.Mutex
		firstErr    error
	)
	for range min(len(names), 16) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(names) {
					return
				}
				v, err := c.Get(ctx, ns, names[i])
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
					return
				}
				total.Add(v.Value)
			}
		})
	}
	wg.Wait()
	return total.Load(), firstErr
}

func cmpErr(have, err error) error {
	if have != nil {
		return have
	}
	return err
}

// readSample is what one read reported beyond its latency.
type readSample struct {
	full      bool // a full read: events and lag apply
	events    int
	lag       time.Duration
	rolled    bool // the counter had a rollup: lag applies
	cached    bool
	staleness time.Duration
	tooOld    bool
	mismatch  string
}

// steadyReader is one reader: it reads every `every` and keeps its own
// tallies, which nothing else touches until loop has returned.
type steadyReader struct {
	every time.Duration
	seed  uint64
	read  func(ctx context.Context, rng *rand.Rand) (readSample, error)

	lat, lag, events, staleness Histogram
	eventsSum                   int64
	reads, errors               uint64
	firstErr                    error
	neverRolled, cached, tooOld uint64
	mismatches                  uint64
	firstMismatch               string

	// cur accumulates the window curIdx; done holds the finished ones.
	cur    readerWindow
	curIdx int
	done   []windowSummary
}

type readerWindow struct {
	lat, lag           Histogram
	reads, errors      uint64
	events, eventReads int
	eventsMax          int
	touched            bool
}

type windowSummary struct {
	reads                  WindowReads
	eventsMean             float64
	eventsMax              int
	lagP50, lagP99, lagMax time.Duration
}

func (r *steadyReader) loop(ctx context.Context, stop <-chan struct{}, from, end time.Time) {
	rng := rand.New(rand.NewPCG(r.seed, 0x9e3779b97f4a7c15))
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			r.flush()
			return
		case <-t.C:
		}
		t0 := time.Now()
		if !t0.Before(end) {
			r.flush()
			return
		}
		rs, err := r.read(ctx, rng)
		d := time.Since(t0)
		if t0.Before(from) {
			continue
		}
		r.record(int(t0.Sub(from)/steadyWindow), d, rs, err)
	}
}

func (r *steadyReader) record(win int, d time.Duration, rs readSample, err error) {
	if win != r.curIdx || !r.cur.touched {
		r.flush()
		r.curIdx = win
	}
	w := &r.cur
	w.touched = true
	if err != nil {
		r.errors++
		w.errors++
		if r.firstErr == nil {
			r.firstErr = err
		}
		return
	}
	r.reads++
	w.reads++
	r.lat.Record(d)
	w.lat.Record(d)
	if rs.full {
		r.events.Record(time.Duration(rs.events))
		r.eventsSum += int64(rs.events)
		w.events += rs.events
		w.eventReads++
		w.eventsMax = max(w.eventsMax, rs.events)
		if rs.rolled {
			r.lag.Record(rs.lag)
			w.lag.Record(rs.lag)
		} else {
			r.neverRolled++
		}
	}
	if rs.cached {
		r.cached++
		r.staleness.Record(rs.staleness)
	}
	if rs.tooOld {
		r.tooOld++
	}
	if rs.mismatch != "" {
		r.mismatches++
		if r.firstMismatch == "" {
			r.firstMismatch = rs.mismatch
		}
	}
}

// flush summarises the current window, if it holds anything.
func (r *steadyReader) flush() {
	w := &r.cur
	if !w.touched {
		return
	}
	for len(r.done) <= r.curIdx {
		r.done = append(r.done, windowSummary{})
	}
	sum := windowSummary{
		reads:     WindowReads{Reads: w.reads, Errors: w.errors, P50: w.lat.Quantile(0.5), P99: w.lat.Quantile(0.99)},
		eventsMax: w.eventsMax,
		lagP50:    w.lag.Quantile(0.5), lagP99: w.lag.Quantile(0.99), lagMax: w.lag.Max(),
	}
	if w.eventReads > 0 {
		sum.eventsMean = float64(w.events) / float64(w.eventReads)
	}
	r.done[r.curIdx] = sum
	r.cur = readerWindow{}
}

func (r *steadyReader) window(k int) windowSummary {
	if k < len(r.done) {
		return r.done[k]
	}
	return windowSummary{}
}

func (r *steadyReader) eventsMean() float64 {
	if r.events.Count() == 0 {
		return 0
	}
	return float64(r.eventsSum) / float64(r.events.Count())
}

func (r *steadyReader) result() SteadyReads {
	out := SteadyReads{
		Reads: r.reads, Errors: r.errors, Mean: r.lat.Mean(),
		P50: r.lat.Quantile(0.5), P99: r.lat.Quantile(0.99), P999: r.lat.Quantile(0.999), Max: r.lat.Max(),
	}
	if r.firstErr != nil {
		out.FirstError = r.firstErr.Error()
	}
	return out
}

// fmtRatioX prints a latency ratio, "-" when there is none.
func fmtRatioX(v float64) string {
	if v <= 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + "×"
}

// writeSteady writes the steady runs' tables and notes after the main
// table: the reads, the writes and rollups, and each run's windows.
func (rep *Report) writeSteady(w io.Writer, md bool) error {
	if len(rep.Steady) == 0 {
		return nil
	}
	var b strings.Builder
	para := func(s string) {
		switch {
		case !md:
			fmt.Fprintf(&b, "\n%s\n", s)
		case strings.HasSuffix(b.String(), "\n\n"):
			fmt.Fprintf(&b, "%s\n\n", s)
		default:
			fmt.Fprintf(&b, "\n%s\n\n", s)
		}
	}
	first := rep.Steady[0]
	para(fmt.Sprintf("Steady load (scenario steady): events counters driven open loop at a fixed rate; every %v a full read (Client.Get), "+
		"a bounded-staleness read (Client.GetWithin, %v) and a read of a native counter written once at the start (the baseline). "+
		"Rollup lag: the full read's time minus the counter's rollup epoch (Value.AsOf - Value.RolledUpTo).", first.ReadEvery, first.Staleness))
	cores := func(v float64) string {
		if v < 0 {
			return "?"
		}
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	secs := func(v float64) string {
		if v < 0 {
			return "?"
		}
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	events := func(mean float64, max int) string {
		return strconv.FormatFloat(mean, 'f', 0, 64) + " (max " + strconv.Itoa(max) + ")"
	}

	para("Reads:")
	head := []string{"shape", "full reads", "full p50", "full p99", "stale p50", "stale p99", "stale cached", "native p50", "native p99",
		"full/native p50", "full/native p99", "stale/native p50", "stale/native p99", "events/full read", "lag p50", "lag p99", "lag max"}
	var rows [][]string
	for _, r := range rep.Steady {
		cached := "-"
		if r.Stale.Reads > 0 {
			cached = strconv.FormatFloat(float64(r.Cached)/float64(r.Stale.Reads)*100, 'f', 0, 64) + "%"
		}
		rows = append(rows, []string{r.Shape, u(r.Full.Reads), fmtDuration(r.Full.P50), fmtDuration(r.Full.P99),
			fmtDuration(r.Stale.P50), fmtDuration(r.Stale.P99), cached, fmtDuration(r.Native.P50), fmtDuration(r.Native.P99),
			fmtRatioX(r.FullNativeP50), fmtRatioX(r.FullNativeP99), fmtRatioX(r.StaleNativeP50), fmtRatioX(r.StaleNativeP99),
			events(r.EventsMean, r.EventsMax), fmtDuration(r.Lag.P50), fmtDuration(r.Lag.P99), fmtDuration(r.Lag.Max)})
	}
	if err := writeTable(&b, md, head, rows); err != nil {
		return err
	}

	para("Writes and rollups (CPU over the measured window; cpu-s/1k: CPU seconds per 1,000 acknowledged increments):")
	head = []string{"shape", "target/s", "achieved/s", "sustained", "errors", "dropped", "write p50", "write p99", "writers",
		"cpu bench s", "cpu store s", "bench cpu-s/1k", "store cpu-s/1k", "rollups", "seals", "events rolled", "rollup skips",
		"store reads", "cached reads", "shared reads", "events scanned"}
	rows = rows[:0]
	for _, r := range rep.Steady {
		sus := "yes"
		if !r.Sustained {
			sus = "NO"
		}
		st := r.Stats
		rows = append(rows, []string{r.Shape, strconv.FormatFloat(r.TargetRate, 'f', 0, 64), strconv.FormatFloat(r.AchievedRate, 'f', 0, 64), sus,
			u(r.Errors), u(r.Dropped), fmtDuration(r.WriteP50), fmtDuration(r.WriteP99), strconv.Itoa(r.Writers),
			secs(r.ProcessCPUSeconds), secs(r.StoreCPUSeconds), secs(r.ProcessCPUPer1k), secs(r.StoreCPUPer1k),
			u(st.Rollups), u(st.Seals), u(st.EventsRolled), u(st.RollupSkips), u(st.Reads), u(st.CachedReads), u(st.SharedReads), u(st.EventsScanned)})
	}
	if err := writeTable(&b, md, head, rows); err != nil {
		return err
	}

	if err := rep.writeRollupCost(&b, md, para); err != nil {
		return err
	}

	for _, r := range rep.Steady {
		para(fmt.Sprintf("Steady, %s: per %v window (t: the window's end):", r.Shape, steadyWindow))
		head = []string{"t", "writes/s", "errors", "full p50", "full p99", "stale p50", "stale p99", "native p50", "native p99",
			"events/full read", "lag p50", "lag p99", "lag max", "rollups", "events rolled", "cpu bench", "cpu store"}
		rows = rows[:0]
		for _, win := range r.Windows {
			rows = append(rows, []string{fmtSeconds(win.Start + win.Length), strconv.FormatFloat(win.WriteRate, 'f', 0, 64), u(win.Errors),
				fmtDuration(win.Full.P50), fmtDuration(win.Full.P99), fmtDuration(win.Stale.P50), fmtDuration(win.Stale.P99),
				fmtDuration(win.Native.P50), fmtDuration(win.Native.P99), events(win.EventsMean, win.EventsMax),
				fmtDuration(win.LagP50), fmtDuration(win.LagP99), fmtDuration(win.LagMax), u(win.Rollups), u(win.EventsRolled),
				cores(win.ProcessCPU), cores(win.StoreCPU)})
		}
		if err := writeTable(&b, md, head, rows); err != nil {
			return err
		}
	}

	var notes []string
	for _, r := range rep.Steady {
		if !r.Sustained {
			notes = append(notes, fmt.Sprintf("steady, %s: target rate NOT sustained: %.0f of %.0f increments/s acknowledged, %d errors, %d dropped (every writer busy)",
				r.Shape, r.AchievedRate, r.TargetRate, r.Errors, r.Dropped))
		}
		for _, rd := range []struct {
			kind string
			r    SteadyReads
		}{{"full", r.Full}, {"stale", r.Stale}, {"native", r.Native}} {
			if rd.r.Errors > 0 {
				notes = append(notes, fmt.Sprintf("steady, %s: %s failed, first: %s", r.Shape, plural(int(rd.r.Errors), rd.kind+" read"), rd.r.FirstError))
			}
		}
		if r.ReadMismatches > 0 {
			notes = append(notes, fmt.Sprintf("steady, %s: MISMATCH in %s, first: %s", r.Shape, plural(int(r.ReadMismatches), "full read"), r.FirstMismatch))
		}
		if r.StaleTooOld > 0 {
			notes = append(notes, fmt.Sprintf("steady, %s: %s answered older than %v", r.Shape, plural(int(r.StaleTooOld), "bounded-staleness read"), r.Staleness))
		}
		if r.Lag.NeverRolledUp > 0 {
			notes = append(notes, fmt.Sprintf("steady, %s: %s found no rollup yet, so no lag was taken (a process first rolls up a counter 1 s after it first touches it)",
				r.Shape, plural(int(r.Lag.NeverRolledUp), "full read")))
		}
		if r.Stats.EventsRolled == 0 && r.Acknowledged > 0 {
			notes = append(notes, fmt.Sprintf("steady, %s: no event was rolled up in the measured window: a rollup seals events only once they are Seal + RollupDelay old (6 s by default)", r.Shape))
		}
		if r.NativeNote != "" {
			notes = append(notes, fmt.Sprintf("steady, %s: %s", r.Shape, r.NativeNote))
		}
	}
	notes = append(notes, "steady: writes and the background rollups they start run on the same store at once, so their CPU is not told apart; "+
		"the rollups, seals and events rolled columns say what the rollups did for it (the rollup cost table, when there is one, measures them apart). "+
		"Embedded, the store is this process (cpu bench).")
	b.WriteString("\n")
	for _, n := range notes {
		if md {
			b.WriteString("- ")
		}
		b.WriteString(n + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeRollupCost writes the table of the steady runs' rollup-cost
// phases, when any ran, and its notes.
func (rep *Report) writeRollupCost(b *strings.Builder, md bool, para func(string)) error {
	var rows [][]string
	var notes []string
	for _, r := range rep.Steady {
		rc := r.RollupCost
		if rc == nil {
			continue
		}
		rows = append(rows, []string{r.Shape, strconv.Itoa(rc.Events), strconv.FormatFloat(rc.AchievedRate, 'f', 0, 64),
			fmtDuration(rc.WriteTime), fmtCPUSeconds(rc.WriteStoreCPUSeconds), fmtCPUSeconds(rc.WriteStoreCPUPer1k),
			fmtDuration(rc.RollupTime), fmtCPUSeconds(rc.RollupStoreCPUSeconds), fmtCPUSeconds(rc.RollupStoreCPUPer1k),
			fmtPercent(rc.RollupWritePercent), strconv.FormatUint(rc.EventsFolded, 10), strconv.FormatUint(rc.Seals, 10), strconv.Itoa(rc.GCCalls),
			fmtCPUSeconds(rc.WriteProcessCPUSeconds), fmtCPUSeconds(rc.RollupProcessCPUSeconds), rc.Check})
		if rc.Errors > 0 || rc.GCSkips > 0 || rc.FirstError != "" {
			notes = append(notes, fmt.Sprintf("rollup cost, %s: %d increments failed, %d GC calls skipped; first error: %s", r.Shape, rc.Errors, rc.GCSkips, rc.FirstError))
		}
		if rc.Interrupted {
			notes = append(notes, fmt.Sprintf("rollup cost, %s: interrupted", r.Shape))
		}
		if rc.StoreCPUFrom == "" {
			notes = append(notes, fmt.Sprintf("rollup cost, %s: no store CPU without --store-pid; the cpu bench columns are this process's", r.Shape))
		}
	}
	if len(rows) == 0 {
		return nil
	}
	from := rep.Steady[0].RollupCost
	for _, r := range rep.Steady {
		if r.RollupCost != nil {
			from = r.RollupCost
			break
		}
	}
	whose := "the store's process (--store-pid)"
	if from.StoreCPUFrom == "this process" {
		whose = "this process, which holds the embedded store"
	}
	para(fmt.Sprintf("Rollup cost: after each one-counter run, a client that starts no background rollups writes N increments to a new events counter at the run's rate, "+
		"waits until the last is older than Seal + RollupDelay + 1 s, then rolls the counter up with Client.GC until nothing is left to fold. "+
		"Store CPU (%s) is measured over each phase apart; rollup/write is the rollup phase's store CPU as a share of the write phase's; "+
		"cpu-s/1k per 1,000 increments written (write) or events folded (rollup):", whose))
	head := []string{"shape", "events", "writes/s", "write time", "write store cpu s", "write store cpu-s/1k",
		"rollup time", "rollup store cpu s", "rollup store cpu-s/1k", "rollup/write", "events folded", "seals", "GC calls",
		"write cpu bench s", "rollup cpu bench s", "check"}
	if err := writeTable(b, md, head, rows); err != nil {
		return err
	}
	notes = append(notes, fmt.Sprintf("rollup cost: the rollup here seals a backlog at once, in seals of up to 20,000 events, each within one %v bucket "+
		"(the seals column also counts the seal of the empty stretch before a new counter's first event), "+
		"whereas in steady state a rollup seals about a second of events each time, so per-event overheads differ slightly; "+
		"deleting buckets past the de-duplication horizon (AcceptWindow) is in neither phase.", abacus.EventsOptions{}.WithDefaults().Bucket))
	b.WriteString("\n")
	for _, n := range notes {
		if md {
			b.WriteString("- ")
		}
		b.WriteString(n + "\n")
	}
	return nil
}

// writeTable writes an aligned plain-text table, or a Markdown one.
func writeTable(w io.Writer, md bool, head []string, rows [][]string) error {
	if md {
		var b strings.Builder
		fmt.Fprintf(&b, "| %s |\n", strings.Join(head, " | "))
		align := make([]string, len(head))
		for i := range align {
			align[i] = "---:"
		}
		align[0] = "---"
		fmt.Fprintf(&b, "|%s|\n", strings.Join(align, "|"))
		for _, r := range rows {
			fmt.Fprintf(&b, "| %s |\n", strings.Join(r, " | "))
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// fmtSeconds prints a time into a run: "10s", "2.5s".
func fmtSeconds(d time.Duration) string {
	if d < 10*time.Second {
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 0, 64) + "s"
}

// TimeLine is one series of a TimeChart: a duration at each point in time.
type TimeLine struct {
	Name string
	// At and Values are parallel: Values[i] was measured at At[i] into
	// the run. Values of 0 or less are left out.
	At     []time.Duration
	Values []time.Duration
}

// TimeChart plots durations (latencies, lags) over a run's time, on a
// logarithmic axis so that a read of 100 µs and a lag of 6 s both show.
type TimeChart struct {
	Title         string
	Lines         []TimeLine
	Width, Height int // default 900 × 480
}

// WritePNG renders the chart as a PNG.
func (c TimeChart) WritePNG(w io.Writer) error { return encodePNG(w, c.render) }

func (c TimeChart) render() (*image.RGBA, error) {
	lo, hi, last := math.Inf(1), math.Inf(-1), 0.0
	for _, l := range c.Lines {
		if len(l.At) != len(l.Values) {
			return nil, errors.New("bench: a time chart line needs a value per time")
		}
		for i, v := range l.Values {
			if v > 0 {
				lo, hi = math.Min(lo, float64(v)), math.Max(hi, float64(v))
			}
			last = math.Max(last, l.At[i].Seconds())
		}
	}
	if math.IsInf(lo, 1) {
		return nil, errors.New("bench: a time chart needs at least one positive value")
	}
	dLo, dHi, at := logDecades(lo, hi)
	img, plot := canvas(c.Width, c.Height, 900, 480)
	label(img, c.Title, marginLeft, 16, ink)
	ticks := niceTicks(last)
	xMax := ticks[len(ticks)-1]
	xOf := func(d time.Duration) int {
		return plot.Min.X + int(math.Round(d.Seconds()/xMax*float64(plot.Dx())))
	}
	yOf := func(v float64) int { return plot.Max.Y - int(math.Round(at(v)*float64(plot.Dy()))) }
	for dec := dLo; dec <= dHi; dec++ {
		y := yOf(math.Pow(10, dec))
		hline(img, plot.Min.X, plot.Max.X, y, gridColor)
		s := decadeLabel(time.Duration(math.Pow(10, dec)))
		label(img, s, plot.Min.X-6-textWidth(s), y+4, ink)
	}
	for _, t := range ticks {
		x := plot.Min.X + int(math.Round(t/xMax*float64(plot.Dx())))
		vline(img, x, plot.Min.Y, plot.Max.Y, gridColor)
		s := strconv.FormatFloat(t, 'f', -1, 64) + "s"
		label(img, s, x-textWidth(s)/2, plot.Max.Y+16, ink)
	}
	const xName = "time into the measured run (end of each window)"
	label(img, xName, plot.Min.X+(plot.Dx()-textWidth(xName))/2, plot.Max.Y+34, ink)
	label(img, "log scale", 4, marginTop-12, ink)
	names := make([]string, len(c.Lines))
	for i, l := range c.Lines {
		names[i] = l.Name
		polyline(img, seriesColor(i), len(l.Values), func(j int) (int, int, bool) {
			return xOf(l.At[j]), yOf(float64(l.Values[j])), l.Values[j] > 0
		})
	}
	axes(img, plot)
	legendRow(img, names, plot.Max.X, marginTop-26)
	return img, nil
}

// steadyChart is one steady run's chart and the file it goes to.
type steadyChart struct {
	file  string
	chart TimeChart
}

// steadyCharts are the steady runs' charts: the full and native read p99
// and the rollup lag p99 of every window.
func (rep *Report) steadyCharts() []steadyChart {
	var out []steadyChart
	used := map[string]bool{}
	for _, r := range rep.Steady {
		if len(r.Windows) == 0 {
			continue
		}
		file := fmt.Sprintf("steady-%.0f", r.TargetRate)
		if r.Counters > 1 {
			file = fmt.Sprintf("steady-%d-counters", r.Counters)
		}
		for base, i := file, 2; used[file]; i++ {
			file = fmt.Sprintf("%s-%d", base, i)
		}
		used[file] = true
		full := TimeLine{Name: "events full read p99"}
		native := TimeLine{Name: "native read p99"}
		lag := TimeLine{Name: "rollup lag p99"}
		for _, w := range r.Windows {
			t := w.Start + w.Length
			full.At, full.Values = append(full.At, t), append(full.Values, w.Full.P99)
			native.At, native.Values = append(native.At, t), append(native.Values, w.Native.P99)
			lag.At, lag.Values = append(lag.At, t), append(lag.Values, w.LagP99)
		}
		out = append(out, steadyChart{file: file + ".png", chart: TimeChart{
			Title: fmt.Sprintf("steady, %s (%s): read p99 and rollup lag per %v", r.Shape, rep.Env.Store, steadyWindow),
			Lines: []TimeLine{full, native, lag},
		}})
	}
	return out
}
