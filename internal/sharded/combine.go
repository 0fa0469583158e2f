package sharded

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// combiner sends the shard writes of all of a process's mutators to the
// store, several counters' writes to a request (driver.Shards.WriteShards).
//
// A mutator's group commit gains nothing when its counter is one of many
// quiet ones: every write carries one update, and the store pays a request
// per update, as for a native counter. The combiner is group commit across
// counters. At most MaxInflightBatches requests are in flight; a write that
// arrives while all of them are busy waits for the next, which carries
// every write queued meanwhile (up to MaxShardBatch of them). A write that
// arrives when a request slot is free is sent at once, alone: the combiner
// never waits for company, so a quiet process pays no latency for it. A
// write too large to share a request goes straight to the store and takes
// no slot.
//
// Combining changes no promise (docs/architecture.md, "Group commit across
// counters"). Each write is the write its mutator would have made alone
// (its own row, state and timestamp). A request that fails is not atomic
// across counters, so each of its writes is sent again on its own and
// reports its own outcome; a write that fails alone is an unknown outcome
// to its mutator, as it always was. WriteTimeout still bounds each write
// from the moment its mutator hands it over, queueing included.
// Requests in flight are at most MaxInflightBatches, besides large writes
// and, after a request the store refused, its writes sent again alone.
type combiner struct {
	store       driver.Shards
	start       func(func()) bool // starts a send loop that Close waits for
	timeout     time.Duration
	maxWrites   int
	maxBytes    int
	maxInflight int

	mu       sync.Mutex
	queue    []*queuedWrite
	inflight int // send loops running
}

// queuedWrite is one mutator's write waiting for its request.
type queuedWrite struct {
	p        driver.WriteShardParams
	deadline time.Time // WriteTimeout after it was handed over
	err      error     // set before done is closed
	done     chan struct{}
}

// errQueuedTooLong fails a write that waited its whole WriteTimeout for a
// request and was never sent, and errWriteTimedOut one whose WriteTimeout
// passed while its request was under way. Its mutator reports the update
// as of unknown outcome either way: the update stays in the mutator's
// state and a later write of the mutator may persist it.
var (
	errQueuedTooLong = errors.New("shard write waited out its write timeout for a request")
	errWriteTimedOut = errors.New("shard write timed out in a combined request")
)

// maxBatchBytes bounds the data one combined request carries. Cassandra
// logs a warning for every batch above batch_size_warn_threshold (5 KiB by
// default) and refuses one above batch_size_fail_threshold (50 KiB); a
// write larger than this is sent alone.
const maxBatchBytes = 4 << 10

// writeBytes estimates what a write adds to a batch as Cassandra 3.0 and
// later count it: its key, its state and the cells' overhead. (2.1 and 2.2
// count the clustering key once per cell: about 1.5 times this.)
func writeBytes(p *driver.WriteShardParams) int {
	return len(p.Namespace) + len(p.Counter) + len(p.Shard.ID) + len(p.Shard.State) + 24
}

// write sends p in the next request that has room and returns its outcome.
func (c *combiner) write(p driver.WriteShardParams) error {
	w := &queuedWrite{p: p, deadline: time.Now().Add(c.timeout), done: make(chan struct{})}
	if writeBytes(&p) > c.maxBytes {
		return c.sendAlone(w)
	}
	c.mu.Lock()
	if c.inflight < c.maxInflight && !c.start(c.sendLoop) {
		// The engine is closing, and Close is waiting for this write's
		// mutator: send the write from here rather than refuse it (an
		// earlier snapshot of the same mutator, whose outcome is
		// unknown, may have carried some of its updates). Any writes
		// queued already have a send loop running.
		c.mu.Unlock()
		return c.sendAlone(w)
	}
	c.queue = append(c.queue, w)
	if c.inflight < c.maxInflight {
		c.inflight++
	}
	c.mu.Unlock()
	// The request may outlive this write's deadline (its deadline is the
	// latest of its writes'); the mutator is answered by its own.
	timer := time.NewTimer(time.Until(w.deadline))
	defer timer.Stop()
	select {
	case <-w.done:
		return w.err
	case <-timer.C:
		return errWriteTimedOut
	}
}

// sendLoop sends requests until the queue is empty.
func (c *combiner) sendLoop() {
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
func (c *combiner) take() []*queuedWrite {
	if len(c.queue) == 0 {
		return nil
	}
	level := c.queue[0].p.Consistency
	var batch []*queuedWrite
	rest := c.queue[:0]
	bytes := 0
	for i, w := range c.queue {
		size := writeBytes(&w.p)
		if len(batch) == c.maxWrites {
			rest = append(rest, c.queue[i:]...)
			break
		}
		if w.p.Consistency != level || (len(batch) > 0 && bytes+size > c.maxBytes) {
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
// own outcome is known; its mutator waits no longer than its deadline.
func (c *combiner) send(batch []*queuedWrite) {
	now := time.Now()
	live := batch[:0]
	var deadline time.Time // the latest of the writes': one near its own must not cut the others short
	for _, w := range batch {
		if !now.Before(w.deadline) {
			w.complete(errQueuedTooLong)
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
		live[0].complete(c.sendAlone(live[0]))
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	ws := make([]driver.WriteShardParams, len(live))
	for i, w := range live {
		ws[i] = w.p
	}
	err := c.store.WriteShards(ctx, ws)
	cancel()
	if err == nil || !time.Now().Before(deadline) {
		for _, w := range live {
			w.complete(err)
		}
		return
	}
	// The send loop keeps its request slot until the writes sent again
	// are answered, so a failing store sees no more requests at once
	// than MaxShardBatch per slot.
	var wg sync.WaitGroup
	for _, w := range live {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.complete(c.sendAlone(w))
		}()
	}
	wg.Wait()
}

// complete gives w its outcome and wakes its mutator.
func (w *queuedWrite) complete(err error) {
	w.err = err
	close(w.done)
}

// sendAlone writes w on its own, within its deadline.
func (c *combiner) sendAlone(w *queuedWrite) error {
	ctx, cancel := context.WithDeadline(context.Background(), w.deadline)
	defer cancel()
	return c.store.WriteShard(ctx, &w.p)
}
