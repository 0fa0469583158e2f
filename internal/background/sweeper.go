package background

import (
	"context"
	"time"
)

// Sweeper runs one background loop. The zero value is ready to use; it is
// not safe for concurrent Start and Stop calls.
type Sweeper struct {
	// Timeout bounds each call; zero or less means one interval.
	Timeout time.Duration

	stop   chan struct{}
	done   chan struct{}
	cancel context.CancelFunc // ends a running call's context
}

// Start calls run every interval, each call under a context that ends
// after Timeout (one interval unless set) or at Stop, until Stop. An interval of zero or less,
// or a second Start, starts nothing.
func (s *Sweeper) Start(interval time.Duration, run func(ctx context.Context)) {
	if interval <= 0 || s.stop != nil {
		return
	}
	s.stop = make(chan struct{})
	s.done = make(chan struct{})
	base, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() {
		defer close(s.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
				timeout := interval
				if s.Timeout > 0 {
					timeout = s.Timeout
				}
				ctx, cancel := context.WithTimeout(base, timeout)
				run(ctx)
				cancel()
			}
		}
	}()
}

// Stop ends the loop, cancels the context of a running call and waits for
// it to return. The calls are collections and rollups, which are safe to
// cut short: a fold or rollup lands whole or not at all, and one that
// never ran is done by the next (docs/architecture.md, on why replayed
// folds converge), so a shutdown need not wait out a long one.
func (s *Sweeper) Stop() {
	if s.stop == nil {
		return
	}
	close(s.stop)
	s.cancel()
	<-s.done
	s.stop = nil
}
