package bench

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus/internal/servertest"
)

// These tests check what Run counts and how it stops, never how fast
// anything went: the machine running them may be arbitrarily slow.

func TestOptionsDefaults(t *testing.T) {
	t.Parallel()
	o := Options{}.withDefaults()
	if o.Concurrency != 64 || o.Duration != 10*time.Second || o.Warmup != 2*time.Second || o.Drain != DefaultDrain {
		t.Fatalf("defaults: %+v", o)
	}
	if o := (Options{Warmup: -1}).withDefaults(); o.Warmup != 0 {
		t.Fatalf("negative warm-up should mean none, got %v", o.Warmup)
	}
}

func TestRunCountsEveryCallOnce(t *testing.T) {
	t.Parallel()
	const workers = 8
	var calls, failures atomic.Uint64
	var inFlight [workers]atomic.Bool
	var badWorker, overlap atomic.Bool
	op := func(ctx context.Context, w int) error {
		if w < 0 || w >= workers {
			badWorker.Store(true)
			return nil
		}
		// A worker must never run two calls at once: scenarios keep
		// per-worker state without locks on that promise.
		if !inFlight[w].CompareAndSwap(false, true) {
			overlap.Store(true)
		}
		defer inFlight[w].Store(false)
		n := calls.Add(1)
		if n%5 == 0 {
			failures.Add(1)
			return errors.New("every fifth call fails")
		}
		time.Sleep(100 * time.Microsecond)
		return nil
	}
	res := Run(context.Background(), Options{Concurrency: workers, Duration: 100 * time.Millisecond, Warmup: 30 * time.Millisecond}, op)
	if badWorker.Load() {
		t.Fatal("op got a worker index outside [0, Concurrency)")
	}
	if overlap.Load() {
		t.Fatal("a worker ran two calls at once")
	}
	if got := res.Ops + res.Errors + res.WarmupOps; got != calls.Load() {
		t.Fatalf("ops %d + errors %d + warm-up %d = %d, but op was called %d times", res.Ops, res.Errors, res.WarmupOps, got, calls.Load())
	}
	if got := res.Errors + res.WarmupErrors; got != failures.Load() {
		t.Fatalf("errors %d + warm-up errors %d = %d, but %d calls failed", res.Errors, res.WarmupErrors, got, failures.Load())
	}
	if res.Errors > 0 && res.FirstError != "every fifth call fails" {
		t.Fatalf("FirstError = %q", res.FirstError)
	}
	if res.Errors == 0 && res.FirstError != "" {
		t.Fatalf("FirstError = %q without errors", res.FirstError)
	}
	if res.Interrupted {
		t.Fatal("Interrupted without a cancelled context")
	}
	if res.Ops > 0 {
		if !(res.P50 <= res.P99 && res.P99 <= res.P999 && res.P999 <= res.Max) {
			t.Fatalf("percentiles out of order: p50 %v p99 %v p99.9 %v max %v", res.P50, res.P99, res.P999, res.Max)
		}
		if res.OpsPerSec <= 0 || res.Elapsed <= 0 {
			t.Fatalf("ops %d but ops/s %v over %v", res.Ops, res.OpsPerSec, res.Elapsed)
		}
	}
}

func TestRunWithoutSuccessesReportsNoLatency(t *testing.T) {
	t.Parallel()
	res := Run(context.Background(), Options{Concurrency: 2, Duration: 20 * time.Millisecond, Warmup: -1},
		func(context.Context, int) error { return errors.New("store down") })
	if res.Ops != 0 || res.OpsPerSec != 0 || res.P50 != 0 || res.Max != 0 {
		t.Fatalf("a run where every call failed reported successes: %+v", res)
	}
	if res.WarmupOps != 0 {
		t.Fatalf("no warm-up was asked for, got %d warm-up calls", res.WarmupOps)
	}
	if res.Errors > 0 && res.FirstError != "store down" {
		t.Fatalf("FirstError = %q", res.FirstError)
	}
}

func TestRunStopsWhenContextIsCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls atomic.Uint64
	// An hour-long run: only the cancellation can end this test.
	res := Run(ctx, Options{Concurrency: 4, Duration: time.Hour, Warmup: -1}, func(context.Context, int) error {
		if calls.Add(1) == 10 {
			cancel()
		}
		return nil
	})
	if !res.Interrupted {
		t.Fatal("Interrupted not set after cancellation")
	}
	if res.Ops != calls.Load() {
		t.Fatalf("ops %d, calls %d", res.Ops, calls.Load())
	}
}

func TestRunCancelsCallsStuckPastTheDrain(t *testing.T) {
	t.Parallel()
	// A stuck store: calls return only when their context ends. Run must
	// still return, and report those calls as errors.
	res := Run(context.Background(), Options{Concurrency: 3, Duration: 10 * time.Millisecond, Warmup: -1, Drain: 10 * time.Millisecond},
		func(ctx context.Context, _ int) error {
			<-ctx.Done()
			return ctx.Err()
		})
	if res.Ops != 0 {
		t.Fatalf("stuck calls counted as successes: %d", res.Ops)
	}
	if res.Errors > 0 && res.FirstError != context.DeadlineExceeded.Error() {
		t.Fatalf("FirstError = %q, want the drain deadline", res.FirstError)
	}
}

func TestPIDCPU(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux only")
	}
	if _, ok := pidCPU(os.Getpid()); !ok {
		t.Fatal("cannot read this process's CPU time from /proc")
	}
	if _, ok := pidCPU(1 << 30); ok {
		t.Fatal("read the CPU time of a process that cannot exist")
	}
	if _, _, ok := hostCPU(); !ok {
		t.Fatal("cannot read /proc/stat")
	}
}

func TestRunWorkloadMixesReads(t *testing.T) {
	t.Parallel()
	var writes, reads atomic.Uint64
	wl := Workload{
		Write: func(context.Context, int) error { writes.Add(1); return nil },
		Read: func(context.Context, int) error {
			if reads.Add(1)%10 == 0 {
				return errors.New("every tenth read fails")
			}
			return nil
		},
		ReadRatio: 0.3,
	}
	res := RunWorkload(context.Background(), Options{Concurrency: 4, Duration: 60 * time.Millisecond, Warmup: 20 * time.Millisecond}, wl)
	// Writes and reads are counted apart: Ops + Errors + WarmupOps are the
	// writes alone, which is what the read-back check relies on.
	if got := res.Ops + res.Errors + res.WarmupOps; got != writes.Load() {
		t.Fatalf("write tallies add up to %d, but %d writes ran", got, writes.Load())
	}
	if res.Errors != 0 || res.WarmupErrors != 0 {
		t.Fatalf("write errors %d/%d, but only reads fail", res.Errors, res.WarmupErrors)
	}
	if got := res.ReadOps + res.ReadErrors + res.WarmupReads; got != reads.Load() {
		t.Fatalf("read tallies add up to %d, but %d reads ran", got, reads.Load())
	}
	total := float64(writes.Load() + reads.Load())
	if total < 1000 {
		t.Skipf("only %v calls ran; too few to check the mix", total)
	}
	// Binomial: the standard deviation of the read share is below
	// sqrt(0.21/1000) < 0.015; 0.08 is more than 5 of them.
	if share := float64(reads.Load()) / total; math.Abs(share-0.3) > 0.08 {
		t.Fatalf("%.3f of the calls were reads, want about 0.3", share)
	}
	if res.ReadOps > 0 && (res.ReadP50 > res.ReadP99 || res.ReadP99 > res.ReadMax || res.ReadOpsPerSec <= 0) {
		t.Fatalf("read results out of order: %+v", res)
	}
	if res.Latency == nil || res.ReadLatency == nil || res.Latency.Count() != res.Ops || res.ReadLatency.Count() != res.ReadOps {
		t.Fatal("the histograms do not match the counts")
	}
}

func TestRunWorkloadWithoutReads(t *testing.T) {
	t.Parallel()
	// A read ratio with no read op, or a ratio of 0, runs writes only.
	for _, wl := range []Workload{
		{Write: func(context.Context, int) error { return nil }, ReadRatio: 0.5},
		{Write: func(context.Context, int) error { return nil }, Read: func(context.Context, int) error {
			panic("a read with a read ratio of 0")
		}},
	} {
		res := RunWorkload(context.Background(), Options{Concurrency: 2, Duration: 10 * time.Millisecond, Warmup: -1}, wl)
		if res.ReadOps+res.ReadErrors+res.WarmupReads != 0 {
			t.Fatalf("reads without a read op or ratio: %+v", res)
		}
	}
}

func TestRSS(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux only")
	}
	before, ok := rssBytes()
	if !ok || before <= 0 {
		t.Fatalf("cannot read VmRSS: %d %v", before, ok)
	}
	s := startRSS(5 * time.Millisecond)
	// Touch 64 MiB so it becomes resident; other tests running in
	// parallel may free memory, but not this block while it is held.
	const size = 64 << 20
	block := make([]byte, size)
	for i := range block {
		if i%4096 == 0 {
			block[i] = 1
		}
	}
	time.Sleep(30 * time.Millisecond)
	peak, end := s.Stop()
	runtime.KeepAlive(block)
	if peak < size || end < size {
		t.Fatalf("peak %d, end %d while holding %d resident bytes", peak, end, size)
	}
	if end > peak {
		t.Fatalf("end %d above peak %d", end, peak)
	}
}

func TestStatusKB(t *testing.T) {
	t.Parallel()
	status := []byte("Name:\tabacus\nVmPeak:\t  200 kB\nVmRSS:\t    1234 kB\nThreads:\t7\n")
	if v, ok := statusKB(status, "VmRSS:"); !ok || v != 1234*1024 {
		t.Fatalf("VmRSS = %d, %v", v, ok)
	}
	for _, bad := range []string{"VmRSS:\t12 MB\n", "VmRSS:\n", "VmRSS:\t-5 kB\n", "VmSize:\t5 kB\n"} {
		if v, ok := statusKB([]byte(bad), "VmRSS:"); ok {
			t.Errorf("%q parsed as %d", bad, v)
		}
	}
}

func TestProgressLines(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	p := startProgress(&b, false, "row", time.Second, 2*time.Second)
	p.finish("done")
	if got := b.String(); got != "row warmup 1s + 2s ... done\n" {
		t.Fatalf("plain progress %q", got)
	}
}

func TestProgressBar(t *testing.T) {
	t.Parallel()
	var b servertest.Buffer
	p := startProgress(&b, true, "row", 100*time.Millisecond, 200*time.Millisecond)
	time.Sleep(3 * progressTick / 2)
	p.finish("done")
	out := b.String()
	if !strings.HasPrefix(out, "\r\x1b[Krow [") || !strings.HasSuffix(out, ": done\n") {
		t.Fatalf("bar output %q", out)
	}
	// The first drawing and at least one redraw, then the result.
	if n := strings.Count(out, "\r\x1b[K"); n < 3 {
		t.Fatalf("%d redraws in %q", n, out)
	}
	// The bar's arithmetic, at fixed times.
	start := p.start
	for _, tc := range []struct {
		at   time.Duration
		want string
	}{
		{0, "row [........................]   0%   0.0s/0.3s warm-up"},
		{160 * time.Millisecond, "row [############............]  53%   0.2s/0.3s measuring"},
		{time.Second, "row [########################] 100%   1.0s/0.3s finishing"},
	} {
		if got := p.line(start.Add(tc.at)); got != tc.want {
			t.Errorf("at %v: %q, want %q", tc.at, got, tc.want)
		}
	}
}
