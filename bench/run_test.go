package bench

import (
	"context"
	"errors"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
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
