package background

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunsUntilStopped(t *testing.T) {
	t.Parallel()
	var s Sweeper
	var n atomic.Int32
	s.Start(time.Millisecond, func(ctx context.Context) {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("a sweep without a deadline")
		}
		n.Add(1)
	})
	deadline := time.Now().Add(10 * time.Second)
	for n.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	s.Stop()
	after := n.Load()
	if after < 3 {
		t.Fatalf("%d sweeps", after)
	}
	time.Sleep(20 * time.Millisecond)
	if n.Load() != after {
		t.Fatal("sweeps after Stop")
	}
	s.Stop() // a second Stop is harmless
}

func TestNonPositiveIntervalStartsNothing(t *testing.T) {
	t.Parallel()
	var s Sweeper
	s.Start(0, func(context.Context) { t.Error("ran") })
	s.Start(-time.Second, func(context.Context) { t.Error("ran") })
	time.Sleep(10 * time.Millisecond)
	s.Stop()
}

// Stop does not wait out a long call: it cancels the call's context.
func TestStopCancelsARunningCall(t *testing.T) {
	t.Parallel()
	// A call's own deadline an hour away: only Stop can end it.
	s := Sweeper{Timeout: time.Hour}
	running := make(chan struct{})
	var once atomic.Bool
	var err atomic.Value
	s.Start(time.Millisecond, func(ctx context.Context) {
		if once.Swap(true) {
			return
		}
		close(running)
		<-ctx.Done()
		err.Store(ctx.Err())
	})
	<-running
	stopped := make(chan struct{})
	go func() { s.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop waited for a call its cancellation should have ended")
	}
	if got := err.Load(); got != context.Canceled {
		t.Fatalf("the running call ended with %v, want context.Canceled", got)
	}
}
