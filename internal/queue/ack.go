package queue

import (
	"cmp"
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
	return s.awaitAck(ctx, s.enqueueAcks(q, []driver.MessageKey{k})[0])
}

// AckAll acknowledges the deliveries of several receipts of one queue, as
// Ack does each, but submits every delete before waiting for any, so that
// the receipts of one shard share one write instead of taking one write
// (and one round trip) each in turn. Every receipt is checked first: one
// that does not parse, or names a shard the queue does not have, refuses
// the call and nothing is acknowledged. Otherwise it returns how many were
// acknowledged and, if not all, an error naming the others by index
// (theirs is the error of the first; acknowledging them again is
// harmless).
func (s *Service) AckAll(ctx context.Context, queue string, receipts []string) (int, error) {
	if len(receipts) == 0 {
		return 0, nil
	}
	var q *Queue
	keys := make([]driver.MessageKey, len(receipts))
	for i, text := range receipts {
		qq, r, err := s.receipt(ctx, queue, text)
		if err != nil {
			if len(receipts) > 1 {
				err = fmt.Errorf("receipts[%d]: %w (nothing was acknowledged)", i, err)
			}
			return 0, err
		}
		q, keys[i] = qq, r.Key
	}
	var (
		failed []int
		first  error
	)
	for i, r := range s.enqueueAcks(q, keys) {
		if err := s.awaitAck(ctx, r); err != nil {
			failed = append(failed, i)
			first = cmp.Or(first, err)
		}
	}
	acked := len(receipts) - len(failed)
	switch {
	case first == nil:
		return acked, nil
	case len(receipts) == 1:
		return 0, first
	}
	return acked, fmt.Errorf("%w (%d of %d receipts acknowledged; not receipts%v)", first, acked, len(receipts), failed)
}

// enqueueAcks adds a delete of each key to its shard's pending group,
// starting the group's writer where none runs, and returns the requests
// to wait for.
func (s *Service) enqueueAcks(q *Queue, keys []driver.MessageKey) []*ackRequest {
	reqs := make([]*ackRequest, len(keys))
	g := &s.acks
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shards == nil {
		g.shards = map[ackShard]*ackGroup{}
	}
	for i, k := range keys {
		r := &ackRequest{key: k, done: make(chan error, 1)}
		reqs[i] = r
		at := ackShard{q.stored(), k.Shard}
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
	}
	return reqs
}

// awaitAck waits for the write that carries r.
func (s *Service) awaitAck(ctx context.Context, r *ackRequest) error {
	select {
	case err := <-r.done:
		if err != nil {
			return err
		}
		s.stats.Acked.Add(1)
		return nil
	case <-ctx.Done():
		select {
		case err := <-r.done: // answered as the caller gave up: the answer stands
			if err == nil {
				s.stats.Acked.Add(1)
			}
			return err
		default:
		}
		return unknownOutcome(fmt.Errorf("%w: acknowledging message %s: %w", driver.ErrUnknownOutcome, r.key.ID, ctx.Err()))
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
