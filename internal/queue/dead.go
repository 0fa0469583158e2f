package queue

import (
	"context"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// DeadLetter is a message that used up its deliveries.
type DeadLetter struct {
	ID         ID
	Body       []byte
	Due        time.Time
	EnqueuedAt time.Time
	// Deliveries is how often it was delivered.
	Deliveries int
	// LastError is the failure of its last delivery.
	LastError string
	// DiedAt is when it was moved to the dead letters.
	DiedAt time.Time
	// Attributes are the message's, as put (nil when none).
	Attributes map[string]string
	// Priority is the message's level, which a requeue keeps.
	Priority int
}

func deadFrom(q *Queue, l driver.DeadLetter) DeadLetter {
	return DeadLetter{
		ID: l.ID, Body: l.Body, Due: l.Due, EnqueuedAt: l.EnqueuedAt,
		Deliveries: l.Deliveries, LastError: l.LastError, DiedAt: l.DiedAt,
		Attributes: l.Attributes, Priority: q.levelOf(l.Shard),
	}
}

// DeadLetters lists a queue's dead letters, oldest first; limit caps the
// list (zero: all).
func (s *Service) DeadLetters(ctx context.Context, queue string, limit int) ([]DeadLetter, error) {
	q, err := s.Queue(ctx, queue)
	if err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, invalidf("limit %d is negative", limit)
	}
	list, err := s.store.ListDead(ctx, &driver.ListDeadParams{Queue: q.stored(), Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]DeadLetter, len(list))
	for i, l := range list {
		out[i] = deadFrom(q, l)
	}
	return out, nil
}

// Requeue puts dead letters back on the queue, due now, with their
// delivery count reset and their ids kept; with no ids it requeues every
// dead letter. It returns the ids requeued (ids that are not dead letters
// are skipped). Each message is put before its dead letter is deleted, so
// a failure in between leaves it in both places: it may be delivered, and
// requeued, twice.
func (s *Service) Requeue(ctx context.Context, queue string, only []ID) ([]ID, error) {
	q, err := s.Queue(ctx, queue)
	if err != nil {
		return nil, err
	}
	only = distinct(only)
	done := []ID{}
	for {
		p := &driver.ListDeadParams{Queue: q.stored(), IDs: only, Limit: MaxBatch}
		list, err := s.store.ListDead(ctx, p)
		if err != nil || len(list) == 0 {
			return done, err
		}
		now := s.now()
		// Each keeps its level, which its shard tells (a dead letter of a
		// shard beyond the queue's lanes, which no put writes, goes back at
		// the lowest level, where it overtakes nothing).
		shardOf := make([]int, q.Levels())
		for level := range shardOf {
			shardOf[level] = q.producerShard(now, level)
		}
		msgs := make([]driver.Message, len(list))
		batch := make([]ID, len(list))
		for i, l := range list {
			batch[i] = l.ID
			msgs[i] = driver.Message{
				MessageKey: driver.MessageKey{Shard: shardOf[q.laneIndex(l.Shard)], Due: now, ID: l.ID},
				Body:       l.Body,
				EnqueuedAt: now,
				Attributes: l.Attributes,
			}
		}
		if err := s.store.PutMessages(ctx, &driver.PutMessagesParams{Queue: q.stored(), Messages: msgs}); err != nil {
			return done, err
		}
		if err := s.store.DeleteDead(ctx, &driver.DeleteDeadParams{Queue: q.stored(), IDs: batch}); err != nil {
			return done, err
		}
		done = append(done, batch...)
		s.stats.Requeued.Add(int64(len(batch)))
		if len(only) > 0 || len(list) < MaxBatch {
			return done, nil
		}
	}
}

// DeleteDead deletes the dead letters with the given ids (1 to MaxBatch of
// them) and returns those it found; ids that are not dead letters are
// skipped. A deleted dead letter is gone: nothing can requeue it.
func (s *Service) DeleteDead(ctx context.Context, queue string, ids []ID) ([]ID, error) {
	q, err := s.Queue(ctx, queue)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, invalidf("no dead letter ids given (purge deletes them all)")
	}
	if len(ids) > MaxBatch {
		return nil, invalidf("%d ids, the limit is %d", len(ids), MaxBatch)
	}
	ids = distinct(ids)
	list, err := s.store.ListDead(ctx, &driver.ListDeadParams{Queue: q.stored(), IDs: ids, Limit: len(ids)})
	if err != nil || len(list) == 0 {
		return []ID{}, err
	}
	found := make([]ID, len(list))
	for i, l := range list {
		found[i] = l.ID
	}
	if err := s.store.DeleteDead(ctx, &driver.DeleteDeadParams{Queue: q.stored(), IDs: found}); err != nil {
		return nil, err
	}
	return found, nil
}

// distinct returns ids without repeats, in their first order: a driver
// may look each id up on its own, and a repeated id must not be counted
// (or requeued) twice.
func distinct(ids []ID) []ID {
	seen := make(map[ID]bool, len(ids))
	out := ids[:0:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
