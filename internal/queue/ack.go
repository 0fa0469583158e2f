package queue

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// Acknowledgements are committed in groups: an ack joins its shard's
// pending group, and one writer deletes everything pending in one store
// call, then answers each ack with that call's result. While the writer is
// busy, the acks that arrive meanwhile gather into the next group. A lone
// ack costs what it did before (one delete); many concurrent ones share
// writes, which is where a burst's time went (a delete and a sync per
// message). Groups are per shard, so that each write is one partition's
// batch, applied whole or not at all (one Cassandra single-partition batch,
// one Pebble batch): a definite error then means none of the group was
// deleted. The shards of a spread queue are written side by side.
//
// An ack is answered only after the write that holds it returned, with
// that write's error, so a nil answer still means the message is deleted.
// A caller that gives up first gets an error wrapping ErrUnknownOutcome:
// its delete may still be written, as with any ack whose answer was lost.

// ackGroupMax bounds the keys one write carries: one partition's batch on
// either store (Cassandra's driver splits a shard's statements only past
// 65,534).
const ackGroupMax = 1000

// ackWriteTimeout bounds one group's write, which no single caller's
// context may cut short (the others would fail with it).
const ackWriteTimeout = 30 * time.Second

type ackRequest struct {
	key  driver.MessageKey
	done chan error // buffered: the writer never waits for a caller
}

// ackGroups holds each shard's pending group.
type ackGroups struct {
	mu     sync.Mutex
	shards map[ackShard]*ackGroup
}

type ackShard struct {
	queue string
	shard int
}

type ackGroup struct {
	pending []*ackRequest
	writing bool // a writer goroutine is draining pending
}

func (s *Service) ack(ctx context.Context, q *Queue, k driver.MessageKey) error {
	r := &ackRequest{key: k, done: make(chan error, 1)}
	g := &s.acks
	at := ackShard{q.Name, k.Shard}
	g.mu.Lock()
	if g.shards == nil {
		g.shards = map[ackShard]*ackGroup{}
	}
	grp := g.shards[at]
	if grp == nil {
		grp = &ackGroup{}
		g.shards[at] = grp
	}
	grp.pending = append(grp.pending, r)
	if !grp.writing {
		grp.writing = true
		go s.writeAcks(at, grp)
	}
	g.mu.Unlock()
	select {
	case err := <-r.done:
		if err != nil {
			return err
		}
		s.stats.Acked.Add(1)
		return nil
	case <-ctx.Done():
		return unknownOutcome(fmt.Errorf("%w: acknowledging message %s: %w", driver.ErrUnknownOutcome, k.ID, ctx.Err()))
	}
}

// writeAcks writes grp's pending acks, a group at a time, until none is
// left; the last one out forgets the group.
func (s *Service) writeAcks(at ackShard, grp *ackGroup) {
	g := &s.acks
	for {
		g.mu.Lock()
		n := min(len(grp.pending), ackGroupMax)
		if n == 0 {
			grp.writing = false
			if g.shards[at] == grp {
				delete(g.shards, at)
			}
			g.mu.Unlock()
			return
		}
		batch := grp.pending[:n:n]
		grp.pending = grp.pending[n:]
		g.mu.Unlock()

		keys := make([]driver.MessageKey, len(batch))
		for i, r := range batch {
			keys[i] = r.key
		}
		ctx, cancel := context.WithTimeout(context.Background(), ackWriteTimeout)
		err := s.store.DeleteMessages(ctx, &driver.DeleteMessagesParams{Queue: at.queue, Keys: keys})
		cancel()
		for _, r := range batch {
			r.done <- err
		}
	}
}
