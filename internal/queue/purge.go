package queue

import (
	"context"
	"fmt"
	"math"
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
// message whose id time (its producer's clock at the put) is at most the
// start of the purge plus Config.MaxClockSkew and a second (the producer's
// clock may run ahead of this one's by the skew, and a burst of ids runs a
// little ahead of the clock), due or not, delivered or not; messages put
// since may be kept. A dead letter requeued keeps its id, so one requeued
// while the purge runs may be deleted.
// Each shard is read from its floor (where consumers read it) until a read
// comes back short. A message below a shard's floor — a put whose unknown
// outcome was applied late — escapes it, as it escapes consumers until
// their hourly deep read. With dead, the dead letters go too.
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
	start := s.now()
	return s.purgeRows(ctx, q, start, start.Add(s.cfg.MaxClockSkew+time.Second), dead)
}

// purgeRows purges every shard of q, every level's (purgeShard, with start and cutoff)
// and then, with dead, its dead letters.
func (s *Service) purgeRows(ctx context.Context, q *Queue, start, cutoff time.Time, dead bool) (PurgeResult, error) {
	counts := make([]int, q.storedShards())
	err := forEach(q.storedShards(), func(i int) (err error) {
		counts[i], err = s.purgeShard(ctx, q.stored(), i, start, cutoff)
		return err
	})
	var res PurgeResult
	for _, n := range counts {
		res.Messages += n
	}
	if err != nil {
		return res, err
	}
	if dead {
		res.DeadLetters, err = s.purgeDead(ctx, q.stored())
	}
	return res, err
}

// purgeShard deletes the shard's messages whose id time is at most cutoff,
// a page at a time, then moves the shard's floor past the tombstones it
// left.
//
// Paging needs no cursor. At one due time rows are ordered by id, and ids
// order by their time first (both stores): every message to delete (id
// time at most cutoff) comes before every message kept (id time past it). So after a page that
// ends on a deleted row the next read starts at that row's due time (the
// deleted rows are gone), and after one that ends on a kept row it starts
// a millisecond later (the rest of that due time is kept too).
//
// With a zero cutoff it deletes every message of the shard, reading from
// the epoch rather than the floor (a late message lies below it), and
// leaves the floor alone: a deleted queue's rows go, and none is read again.
func (s *Service) purgeShard(ctx context.Context, queue string, shard int, start, cutoff time.Time) (int, error) {
	all := cutoff.IsZero()
	epoch := time.UnixMilli(0).UTC()
	from := epoch
	if !all {
		st, err := s.store.ReadQueueShard(ctx, &driver.QueueShardParams{Queue: queue, Shard: shard})
		if err != nil {
			return 0, err
		}
		if !st.Floor.IsZero() {
			from = st.Floor
		}
	}
	var firstKept time.Time
	var lastDeleted *driver.MessageKey
	n := 0
	for {
		p, err := s.store.ReadMessages(ctx, &driver.ReadMessagesParams{
			Queue: queue, Shard: shard, From: from, To: purgeTo, Limit: purgePage,
		})
		if err != nil {
			return n, err
		}
		keys := append([]driver.MessageKey(nil), p.Fragments...)
		var lastKept *driver.MessageKey
		for _, m := range p.Messages {
			if lastDeleted != nil && m.MessageKey == *lastDeleted {
				// A delete that did not take would have this loop read
				// the same rows forever.
				return n, fmt.Errorf("queue %q shard %d: message %s is still there after its delete", queue, shard, m.ID)
			}
			if !all && m.ID.Time().After(cutoff) {
				if firstKept.IsZero() {
					firstKept = m.Due
				}
				lastKept = &m.MessageKey
				continue
			}
			keys = append(keys, m.MessageKey)
		}
		deleted := len(keys) - len(p.Fragments)
		if len(keys) > 0 {
			if err := s.store.DeleteMessages(ctx, &driver.DeleteMessagesParams{Queue: queue, Keys: keys}); err != nil {
				return n, err
			}
			n += deleted
		}
		// A short page saw every row due from `from` on; whatever comes
		// later was put after the read. (A read from the epoch may lose a
		// slot to a driver's own row: read once more.)
		if len(p.Messages)+len(p.Fragments) < purgePage && !from.Equal(epoch) {
			break
		}
		if len(p.Messages)+len(p.Fragments) == 0 {
			break
		}
		last := lastKey(p)
		switch {
		case lastKept != nil && *lastKept == last:
			from = last.Due.Add(time.Millisecond)
		default:
			from = last.Due
		}
		lastDeleted = nil
		if deleted > 0 && (lastKept == nil || *lastKept != last) {
			lastDeleted = &last
		}
	}
	if all {
		return n, nil
	}
	// Every live message of the shard is now due at firstKept or later,
	// or was put after start (and is due no earlier than start less the
	// skew): the floor argument of advanceFloor.
	floor := start.Add(-s.cfg.MaxClockSkew)
	if !firstKept.IsZero() && firstKept.Before(floor) {
		floor = firstKept
	}
	// Against the floor stored now: a consumer's deep read may have moved
	// it down meanwhile, for a late message the purge did not see.
	st, err := s.store.ReadQueueShard(ctx, &driver.QueueShardParams{Queue: queue, Shard: shard})
	if err != nil {
		return n, nil // the purge is done; the floor move was only a saving
	}
	if floor.Sub(st.Floor) >= floorStep {
		if err := s.store.SetFloor(ctx, &driver.SetFloorParams{Queue: queue, Shard: shard, Floor: floor}); err != nil {
			s.log.Warn("queue: moving a shard's floor after a purge failed; consumers will read past its tombstones", "queue", queue, "shard", shard, "err", err)
		}
	}
	return n, nil
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
