package queue

import (
	"context"
	"sync"
	"time"
)

// movableDeadline is a context whose deadline can be moved later: a
// handler's context, which ends when its delivery's visibility ends, and
// which Delivery.Extend keeps alive. context.WithDeadline cannot be moved,
// and cancelling with a cause would make Err report Canceled where a
// handler expects DeadlineExceeded.
type movableDeadline struct {
	context.Context // the parent: values, and its own cancellation

	mu       sync.Mutex
	deadline time.Time
	timer    *time.Timer
	done     chan struct{}
	err      error
	stop     func() bool // unhooks the parent's cancellation
}

// withMovableDeadline returns a context that ends after d (a duration on
// the real clock, since timers run on it) or when parent ends.
func withMovableDeadline(parent context.Context, d time.Duration) (*movableDeadline, func()) {
	c := &movableDeadline{Context: parent, deadline: time.Now().Add(d), done: make(chan struct{})}
	c.timer = time.AfterFunc(d, func() { c.end(context.DeadlineExceeded) })
	c.stop = context.AfterFunc(parent, func() { c.end(parent.Err()) })
	return c, func() { c.end(context.Canceled) }
}

func (c *movableDeadline) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	c.timer.Stop()
	c.stop()
	close(c.done)
}

// moveTo makes the context end d from now instead, unless it has ended.
func (c *movableDeadline) moveTo(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.deadline = time.Now().Add(d)
	c.timer.Reset(d)
}

func (c *movableDeadline) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if pd, ok := c.Context.Deadline(); ok && pd.Before(c.deadline) {
		return pd, true
	}
	return c.deadline, true
}

func (c *movableDeadline) Done() <-chan struct{} { return c.done }

func (c *movableDeadline) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}
