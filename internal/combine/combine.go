package combine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// Combiner sends writes of type P in shared requests (see the package
// documentation). Fill in every field before the first Write.
type Combiner[P any] struct {
	// Start starts a send loop that Close waits for, or reports false
	// when the owner is closing.
	Start func(func()) bool
	// Timeout bounds each write from the moment Write is called.
	Timeout time.Duration
	// MaxWrites and MaxBytes bound one request; MaxInflight bounds the
	// requests in flight.
	MaxWrites, MaxBytes, MaxInflight int
	// Size estimates what a write adds to a request, as Cassandra counts
	// a batch's size; Level is a write's consistency level (a request
	// has one).
	Size  func(*P) int
	Level func(*P) driver.Consistency
	// One sends a write alone; Many sends several in one request, with
	// the store's batch contract (driver.Shards.WriteShards).
	One  func(context.Context, *P) error
	Many func(context.Context, []P) error

	mu       sync.Mutex
	queue    []*queued[P]
	inflight int // send loops running
}

// MaxBatchBytes is the data one combined request should carry at most.
// Cassandra logs a warning for every batch above batch_size_warn_threshold
// (5 KiB by default) and refuses one above batch_size_fail_threshold
// (50 KiB); a write larger than this is sent alone.
const MaxBatchBytes = 4 << 10

// queued is one write waiting for its request.
type queued[P any] struct {
	p        P
	deadline time.Time // Timeout after it was handed over
	err      error     // set before done is closed
	done     chan struct{}
}

// ErrQueuedTooLong fails a write that waited its whole timeout for a
// request and was never sent, and ErrTimedOut one whose timeout passed
// while its request was under way. Either leaves the write's outcome
// unknown to its caller (the second may still land).
var (
	ErrQueuedTooLong = errors.New("write waited out its write timeout for a request")
	ErrTimedOut      = errors.New("write timed out in a combined request")
)

// Write sends p in the next request that has room and returns its
// outcome. A caller that gives up (ctx) gets ctx's error at once, and the
// write may still be sent: its outcome is unknown.
func (c *Combiner[P]) Write(ctx context.Context, p P) error {
	if err := ctx.Err(); err != nil {
		return err // never queued, never sent
	}
	w := &queued[P]{p: p, deadline: time.Now().Add(c.Timeout), done: make(chan struct{})}
	if c.Size(&p) > c.MaxBytes {
		return c.sendAlone(ctx, w)
	}
	c.mu.Lock()
	if c.inflight < c.MaxInflight && !c.Start(c.sendLoop) {
		// The owner is closing, and Close is waiting for this write's
		// caller: send the write from here rather than refuse it. Any
		// writes queued already have a send loop running.
		c.mu.Unlock()
		return c.sendAlone(ctx, w)
	}
	c.queue = append(c.queue, w)
	if c.inflight < c.MaxInflight {
		c.inflight++
	}
	c.mu.Unlock()
	// The request may outlive this write's deadline (its deadline is the
	// latest of its writes'); the caller is answered by its own.
	timer := time.NewTimer(time.Until(w.deadline))
	defer timer.Stop()
	select {
	case <-w.done:
		return w.err
	case <-timer.C:
		return ErrTimedOut
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Queued returns how many writes wait for a request: not those under way,
// but those whose callers already gave up or timed out (a send loop drops
// them when it reaches them).
//
// Tests use it to know that writes have met at the queue before they let
// requests go: a sleep cannot promise that on a loaded machine.
func (c *Combiner[P]) Queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

// sendLoop sends requests until the queue is empty.
func (c *Combiner[P]) sendLoop() {
	for {
		c.mu.Lock()
		batch := c.take()
		if len(batch) == 0 {
			c.inflight--
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		c.send(batch)
	}
}

// take removes the next request's writes from the queue: the oldest write
// and the writes after it at its consistency level, in order, while they
// fit. Called with c.mu held.
func (c *Combiner[P]) take() []*queued[P] {
	if len(c.queue) == 0 {
		return nil
	}
	level := c.Level(&c.queue[0].p)
	var batch []*queued[P]
	rest := c.queue[:0]
	bytes := 0
	for i, w := range c.queue {
		size := c.Size(&w.p)
		if len(batch) == c.MaxWrites {
			rest = append(rest, c.queue[i:]...)
			break
		}
		if c.Level(&w.p) != level || (len(batch) > 0 && bytes+size > c.MaxBytes) {
			rest = append(rest, w)
			continue
		}
		batch = append(batch, w)
		bytes += size
	}
	clear(c.queue[len(rest):])
	c.queue = rest
	return batch
}

// send makes one request of the batch's writes and completes each of them.
// Writes that waited out their timeout in the queue are not sent. When a
// request of several writes fails before its deadline (the store refused
// it: a partition short of replicas, say), each write is sent again alone,
// so that a write the store could take is not failed for another's sake;
// replaying a write is harmless. A request that timed out is not sent
// again: its writes are of unknown outcome, and more requests would only
// add to whatever slowed the store. Each write completes as soon as its
// own outcome is known; its caller waits no longer than its deadline.
func (c *Combiner[P]) send(batch []*queued[P]) {
	now := time.Now()
	live := batch[:0]
	var deadline time.Time // the latest of the writes': one near its own must not cut the others short
	for _, w := range batch {
		if !now.Before(w.deadline) {
			w.complete(ErrQueuedTooLong)
			continue
		}
		live = append(live, w)
		if w.deadline.After(deadline) {
			deadline = w.deadline
		}
	}
	switch len(live) {
	case 0:
		return
	case 1:
		live[0].complete(c.sendAlone(context.Background(), live[0]))
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	ws := make([]P, len(live))
	for i, w := range live {
		ws[i] = w.p
	}
	err := c.Many(ctx, ws)
	cancel()
	if err == nil || !time.Now().Before(deadline) {
		if err != nil && errors.Is(err, driver.ErrUnavailable) {
			// The batch contract says a failed batch of several writes is
			// never unavailable; should a store say so anyway, no write
			// of it may be answered as surely not written.
			err = fmt.Errorf("%w: %v", driver.ErrUnknownOutcome, err)
		}
		for _, w := range live {
			w.complete(err)
		}
		return
	}
	// The send loop keeps its request slot until the writes sent again
	// are answered, so a failing store sees no more requests at once
	// than MaxWrites per slot.
	var wg sync.WaitGroup
	for _, w := range live {
		wg.Go(func() { w.complete(afterFailedRequest(c.sendAlone(context.Background(), w), err)) })
	}
	wg.Wait()
}

// afterFailedRequest is the outcome of a write sent again alone after
// the request holding it failed with first. A success stands. A failure
// is of unknown outcome whatever the store said: the failed request may
// have written it (a batch is not atomic across keys), so even a refusal
// that promises nothing was written (driver.ErrUnavailable) cannot be
// passed on as such.
func afterFailedRequest(err, first error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %v (sent again alone after a combined request failed: %v)", driver.ErrUnknownOutcome, err, first)
}

// complete gives w its outcome and wakes its caller.
func (w *queued[P]) complete(err error) {
	w.err = err
	close(w.done)
}

// sendAlone writes w on its own, within its deadline and ctx.
func (c *Combiner[P]) sendAlone(ctx context.Context, w *queued[P]) error {
	ctx, cancel := context.WithDeadline(ctx, w.deadline)
	defer cancel()
	return c.One(ctx, &w.p)
}
