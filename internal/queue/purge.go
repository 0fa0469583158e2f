package queue

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// PurgeResult is what Purge deleted.
type PurgeResult struct {
	Messages    int // messages, due or not, in flight or not
	DeadLetters int // dead letters (only when asked to)
}

// purgeSpan bounds the due times a purge reads: all of them.
var (
	purgeFrom = time.UnixMilli(0).UTC()
	purgeTo   = time.UnixMilli(math.MaxInt64 - 1).UTC() // the embedded store reads up to To + 1 ms
)

// Purge deletes every message of the queue: each shard is read from its
// very start to the end of time and every message found is deleted, due
// or not, delivered or not. A message put while the purge runs may escape
// it (its shard may have been read already). A delivery of a purged
// message can no longer be failed, released or extended (ErrStaleReceipt);
// acknowledging it succeeds and deletes nothing. With dead, the dead
// letters go too. Dedup records stay: within
// the dedup window a put repeating a purged message's dedup id still
// stores nothing. ErrNotFound for an unknown queue. On error the purge may
// have deleted part of the queue; running it again finishes it.
func (s *Service) Purge(ctx context.Context, name string, dead bool) (PurgeResult, error) {
	q, err := s.Queue(ctx, name)
	if err != nil {
		return PurgeResult{}, err
	}
	counts := make([]int, q.Shards)
	errs := make([]error, q.Shards)
	sem := make(chan struct{}, 8) // shards purged at once
	var wg sync.WaitGroup
	for i := range q.Shards {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			counts[i], errs[i] = s.purgeShard(ctx, q.Name, i)
		})
	}
	wg.Wait()
	var res PurgeResult
	for i := range counts {
		res.Messages += counts[i]
	}
	for _, err := range errs {
		if err != nil {
			return res, err
		}
	}
	if dead {
		res.DeadLetters, err = s.purgeDead(ctx, q.Name)
	}
	return res, err
}

// purgeShard deletes a shard's messages a page at a time, until a read
// finds none. Each page is read from the last due time of the one before:
// its rows are deleted, so a read from there sees only what follows them.
func (s *Service) purgeShard(ctx context.Context, queue string, shard int) (int, error) {
	const page = 500
	from := purgeFrom
	var last *driver.MessageKey
	n := 0
	for {
		p, err := s.store.ReadMessages(ctx, &driver.ReadMessagesParams{
			Queue: queue, Shard: shard, From: from, To: purgeTo, Limit: page,
		})
		if err != nil {
			return n, err
		}
		keys := make([]driver.MessageKey, 0, len(p.Messages)+len(p.Fragments))
		for _, m := range p.Messages {
			keys = append(keys, m.MessageKey)
		}
		keys = append(keys, p.Fragments...)
		if len(keys) == 0 {
			return n, nil
		}
		if last != nil && slices.Contains(keys, *last) {
			// A delete that did not take would have this loop read the
			// same page forever.
			return n, fmt.Errorf("queue %q shard %d: message %s is still there after its delete", queue, shard, last.ID)
		}
		if err := s.store.DeleteMessages(ctx, &driver.DeleteMessagesParams{Queue: queue, Keys: keys}); err != nil {
			return n, err
		}
		n += len(p.Messages)
		// Read on even after a short page: a driver may leave rows of its
		// own (Cassandra's anchor row) out of a page's count.
		end := lastKey(p)
		last, from = &end, end.Due
	}
}

// purgeDead deletes every dead letter of the queue.
func (s *Service) purgeDead(ctx context.Context, queue string) (int, error) {
	n := 0
	for {
		list, err := s.store.ListDead(ctx, &driver.ListDeadParams{Queue: queue, Limit: MaxBatch})
		if err != nil || len(list) == 0 {
			return n, err
		}
		ids := make([]driver.MessageID, len(list))
		for i, l := range list {
			ids[i] = l.ID
		}
		if err := s.store.DeleteDead(ctx, &driver.DeleteDeadParams{Queue: queue, IDs: ids}); err != nil {
			return n, err
		}
		n += len(list)
		if len(list) < MaxBatch {
			return n, nil
		}
	}
}
