package background

import (
	"context"
	"time"
)

// Sweeper runs one background loop. The zero value is ready to use; it is
// not safe for concurrent Start and Stop calls.
type Sweeper struct {
	stop chan struct{}
	done chan struct{}
}

// Start calls run every interval, each call under a context that ends
// after one interval, until Stop. An interval of zero or less, or a
// second Start, starts nothing.
func (s *Sweeper) Start(interval time.Duration, run func(ctx context.Context)) {
	if interval <= 0 || s.stop != nil {
		return
	}
	s.stop = make(chan struct{})
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
				ctx, cancel := context.WithTimeout(context.Background(), interval)
				run(ctx)
				cancel()
			}
		}
	}()
}

// Stop ends the loop and waits for a running call to return.
func (s *Sweeper) Stop() {
	if s.stop == nil {
		return
	}
	close(s.stop)
	<-s.done
	s.stop = nil
}
