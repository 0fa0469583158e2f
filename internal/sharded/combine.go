package sharded

import (
	"context"
	"fmt"
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
// never waits for company, so a quiet process pays no latency for it.
//
// Combining changes no promise. Each write is the write its mutator would
// have made alone (its own row, state and timestamp); a request that fails
// reports every write in it as failed, and the mutator already treats a
// failed write as an unknown outcome (the store may have applied it), so a
// write that landed in a failed batch is no different from one that landed
// before a timeout. Writes of one mutator may share a request: the later
// snapshot has the higher timestamp and wins in the store whatever the
// order, as it does when pipelined writes land out of order.
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
	p    driver.WriteShardParams
	err  error // set before done is closed
	done chan struct{}
}

// maxBatchBytes bounds the data one combined request carries. Cassandra
// logs a warning for every batch above batch_size_warn_threshold (5 KiB by
// default) and refuses one above batch_size_fail_threshold (50 KiB); a
// write larger than this alone is sent alone.
const maxBatchBytes = 4 << 10

// writeBytes estimates what a write adds to a batch: its key and its state.
func writeBytes(p *driver.WriteShardParams) int {
	return len(p.Namespace) + len(p.Counter) + len(p.Shard.ID) + len(p.Shard.State) + 24
}

// write sends p in the next request that has room and returns its outcome.
func (c *combiner) write(p driver.WriteShardParams) error {
	w := &queuedWrite{p: p, done: make(chan struct{})}
	c.mu.Lock()
	c.queue = append(c.queue, w)
	if c.inflight < c.maxInflight {
		if c.start(c.sendLoop) {
			c.inflight++
		} else if c.inflight == 0 {
			// The engine is closing and no send loop will take it.
			c.queue = c.queue[:len(c.queue)-1]
			c.mu.Unlock()
			return fmt.Errorf("%w: the engine is shutting down", ErrNotApplied)
		}
	}
	c.mu.Unlock()
	<-w.done
	return w.err
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
		err := c.send(batch)
		for _, w := range batch {
			w.err = err
			close(w.done)
		}
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

// send makes one request of the batch's writes.
func (c *combiner) send(batch []*queuedWrite) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	if len(batch) == 1 {
		return c.store.WriteShard(ctx, &batch[0].p)
	}
	ws := make([]driver.WriteShardParams, len(batch))
	for i, w := range batch {
		ws[i] = w.p
	}
	return c.store.WriteShards(ctx, ws)
}
