package queue

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// PurgeResult is what Purge deleted.
type PurgeResult struct {
	Messages    int // messages, due or not, in flight or not
	DeadLetters int // dead letters (only when asked to)
}

// purgeTo is the end of the due times a purge reads: the end of time (less
// the millisecond the embedded store adds to a range's end).
var purgeTo = time.UnixMilli(math.MaxInt64 - 1).UTC()

// purgePage is how many rows a purge reads at a time.
const purgePage = 500

// Purge deletes the queue's messages that were put before it began: every
// message whose enqueue time is at most the start of the purge plus
// Config.MaxClockSkew (the producer's clock may lag this one's by that
// much), due or not, delivered or not. Messages put since may be deleted
// or kept; so that a steady producer cannot keep a purge from ending, each
// shard is read once, from its floor (as consumers read it) to the end of
// time, stepping over the rows it keeps. A message below a shard's floor —
// a put whose unknown outcome was applied late — escapes it, as it escapes
// consumers until their hourly deep read. With dead, the dead letters go
// too.
//
// A delivery of a purged message can no longer be failed, released or
// extended (ErrStaleReceipt), and acknowledging it deletes nothing; one
// settled while the purge runs may leave the message behind, or bring it
// back as a dead letter. Dedup records stay: within the window a put
// repeating a purged message's dedup id is still answered as a duplicate.
// ErrNotFound for an unknown queue. A purge that fails has deleted part of
// the queue; another finishes the job.
func (s *Service) Purge(ctx context.Context, name string, dead bool) (PurgeResult, error) {
	q, err := s.Queue(ctx, name)
	if err != nil {
		return PurgeResult{}, err
	}
	cutoff := s.now().Add(s.cfg.MaxClockSkew)
	counts := make([]int, q.Shards)
	errs := make([]error, q.Shards)
	sem := make(chan struct{}, 8) // shards purged at once
	var wg sync.WaitGroup
	for i := range q.Shards {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			counts[i], errs[i] = s.purgeShard(ctx, q.Name, i, cutoff)
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

// purgeShard deletes the shard's messages enqueued at or before cutoff, a
// page at a time. Each page is read from the last due time of the one
// before, and rows up to that page's last row are skipped: deleted rows
// do not come back and kept ones are stepped over, so every read makes
// progress, and the shard is done when a read finds nothing new.
func (s *Service) purgeShard(ctx context.Context, queue string, shard int, cutoff time.Time) (int, error) {
	st, err := s.store.ReadQueueShard(ctx, &driver.QueueShardParams{Queue: queue, Shard: shard})
	if err != nil {
		return 0, err
	}
	from := st.Floor
	if from.IsZero() {
		from = time.UnixMilli(0).UTC()
	}
	var after *driver.MessageKey
	n := 0
	for {
		p, err := s.store.ReadMessages(ctx, &driver.ReadMessagesParams{
			Queue: queue, Shard: shard, From: from, To: purgeTo, Limit: purgePage,
		})
		if err != nil {
			return n, err
		}
		var keys []driver.MessageKey
		fresh, messages := 0, 0
		for _, m := range p.Messages {
			if after != nil && !keyAfter(m.MessageKey, *after) {
				continue
			}
			fresh++
			if !m.EnqueuedAt.After(cutoff) {
				keys = append(keys, m.MessageKey)
				messages++
			}
		}
		for _, k := range p.Fragments {
			if after == nil || keyAfter(k, *after) {
				fresh++
				keys = append(keys, k)
			}
		}
		if fresh == 0 {
			if len(p.Messages)+len(p.Fragments) >= purgePage {
				// A full page of rows already stepped over, all at one
				// due time: reading from it again would find the same.
				return n, fmt.Errorf("queue %q shard %d: more than %d messages kept at due time %s; purge again later",
					queue, shard, purgePage, from.Format(time.RFC3339Nano))
			}
			return n, nil
		}
		if len(keys) > 0 {
			if err := s.store.DeleteMessages(ctx, &driver.DeleteMessagesParams{Queue: queue, Keys: keys}); err != nil {
				return n, err
			}
			n += messages
		}
		last := lastKey(p)
		after, from = &last, last.Due
	}
}

// purgeDead deletes every dead letter of the queue.
func (s *Service) purgeDead(ctx context.Context, queue string) (int, error) {
	n := 0
	var first driver.MessageID
	for {
		list, err := s.store.ListDead(ctx, &driver.ListDeadParams{Queue: queue, Limit: MaxBatch})
		if err != nil || len(list) == 0 {
			return n, err
		}
		if n > 0 && list[0].ID == first {
			// A delete that did not take would have this loop list the
			// same letters forever.
			return n, fmt.Errorf("queue %q: dead letter %s is still there after its delete", queue, first)
		}
		first = list[0].ID
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
