package queue

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/names"
	"github.com/abacusdb/abacus/internal/queue/shard"
	"github.com/abacusdb/abacus/internal/registry"
)

// Service is the queue engine on one store: it creates queues, puts
// messages, builds consumers, settles deliveries by receipt, lists and
// requeues dead letters and observes shards. It is safe for concurrent use
// and has no background work of its own.
type Service struct {
	cfg   Config
	store driver.Queues
	clock clock.Clock
	log   *slog.Logger
	stats Stats
	ids   *idGen

	queues *registry.Registry[driver.Queue, Queue]
	// consumers are this process's live consumers, told of puts and
	// settled deliveries so that they need not wait for a poll (wake.go).
	consumers consumerSet
}

// Stats are running totals of one Service (for metrics).
type Stats struct {
	Put          atomic.Int64 // messages put
	Delivered    atomic.Int64 // deliveries handed out
	Acked        atomic.Int64 // deliveries acknowledged
	Failed       atomic.Int64 // deliveries that failed (nack, handler error)
	Released     atomic.Int64 // deliveries given back unhandled
	Extended     atomic.Int64 // visibility extensions of deliveries in hand
	DeadLettered atomic.Int64 // messages moved to the dead letters
	Requeued     atomic.Int64 // dead letters put back
	Leases       atomic.Int64 // shard leases taken
	LeasesLost   atomic.Int64 // leases found taken over at renewal
}

// New returns a service on cfg.Store.
func New(cfg Config) (*Service, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, store: outcomeStore{cfg.Store}, clock: cfg.Clock, log: cfg.Logger, ids: newIDGen()}
	s.queues = &registry.Registry[driver.Queue, Queue]{
		NotFound: ErrNotFound, Exists: ErrExists, Validate: ValidateName,
		Read: func(ctx context.Context, name string) (*driver.Queue, error) {
			return s.store.GetQueue(ctx, &driver.GetQueueParams{Name: name})
		},
		Decode: queueFrom,
	}
	return s, nil
}

// Stats returns the service's running totals.
func (s *Service) Stats() *Stats { return &s.stats }

// now is the service clock's time at the stores' millisecond precision.
func (s *Service) now() time.Time {
	return s.clock.Now().UTC().Truncate(time.Millisecond)
}

// Queue is a queue's configuration: what is stored of it, and the shard
// math that follows from it.
type Queue struct {
	driver.Queue

	math shard.Math
}

// Math returns the queue's shard math.
func (q *Queue) Math() shard.Math { return q.math }

func queueFrom(d *driver.Queue) (*Queue, error) {
	m, err := shard.New(d.Shards, d.ShardDuration)
	if err != nil {
		return nil, fmt.Errorf("queue %q has a corrupt configuration: %w", d.Name, err)
	}
	return &Queue{Queue: *d, math: m}, nil
}

// Create creates a queue. A queue with fewer than four shards is refused
// (ErrInvalid wrapping shard.ErrTooFewShards); an existing name gives
// ErrExists and leaves the existing queue as it is.
func (s *Service) Create(ctx context.Context, c QueueConfig) (*Queue, error) {
	c = c.withDefaults()
	if err := names.CheckNew("queue", c.Name); err != nil {
		return nil, s.queues.Existing(ctx, c.Name, err)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	d := driver.Queue{
		Name: c.Name, Shards: c.Shards, ShardDuration: c.ShardDuration,
		MaxDeliveries: c.MaxDeliveries, VisibilityTimeout: c.VisibilityTimeout,
		CreatedAt: s.now(),
	}
	return s.queues.Create(c.Name, &d,
		func() error { return s.store.CreateQueue(ctx, &driver.CreateQueueParams{Queue: d}) },
		func(err error) error { return err })
}

// Queue returns a queue's configuration (cached after the first lookup:
// queues never change), or ErrNotFound.
func (s *Service) Queue(ctx context.Context, name string) (*Queue, error) {
	return s.queues.Lookup(ctx, name)
}

// List returns every queue sorted by name.
func (s *Service) List(ctx context.Context) ([]*Queue, error) {
	list, err := s.store.ListQueues(ctx, &driver.ListQueuesParams{})
	if err != nil {
		return nil, err
	}
	out := make([]*Queue, 0, len(list))
	for _, d := range list {
		q, err := queueFrom(d)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

// Message is a message to put.
type Message struct {
	// Body is the payload, at most Config.MaxBodyBytes.
	Body []byte
	// Delay postpones delivery by this long from now; it must not be
	// negative. Leave it zero when Due is set.
	Delay time.Duration
	// Due, when set, is when the message may first be delivered. A due time
	// in the past means now.
	Due time.Time
}

// Put queues one message and returns its id. See PutBatch.
func (s *Service) Put(ctx context.Context, queue string, m Message) (ID, error) {
	ids, err := s.PutBatch(ctx, queue, []Message{m})
	if err != nil {
		return ID{}, err
	}
	return ids[0], nil
}

// PutBatch queues up to MaxBatch messages and returns their ids in order.
// Every message is checked first; if one is invalid nothing is written.
// The messages go into the shard of the current window (the producers'
// shard), all in one write per shard. An error wrapping ErrUnknownOutcome
// means they may have been queued; putting them again may queue them
// twice (delivery is at least once anyway).
func (s *Service) PutBatch(ctx context.Context, queue string, ms []Message) ([]ID, error) {
	q, err := s.Queue(ctx, queue)
	if err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return []ID{}, nil
	}
	if len(ms) > MaxBatch {
		return nil, invalidf("%d messages in one batch, the limit is %d", len(ms), MaxBatch)
	}
	now := s.now()
	sh := q.math.Producer(now)
	rows := make([]driver.Message, len(ms))
	out := make([]ID, len(ms))
	for i, m := range ms {
		due, err := s.dueOf(m, now)
		if err == nil && len(m.Body) > s.cfg.MaxBodyBytes {
			err = fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(m.Body), s.cfg.MaxBodyBytes)
		}
		if err != nil {
			if len(ms) > 1 {
				err = fmt.Errorf("messages[%d]: %w", i, err)
			}
			return nil, err
		}
		body := m.Body
		if body == nil {
			body = []byte{}
		}
		out[i] = s.ids.newID(now)
		rows[i] = driver.Message{
			MessageKey: driver.MessageKey{Shard: sh, Due: due, ID: out[i]},
			Body:       body,
			EnqueuedAt: now,
		}
	}
	if err := s.store.PutMessages(ctx, &driver.PutMessagesParams{Queue: q.Name, Messages: rows}); err != nil {
		return nil, err
	}
	s.stats.Put.Add(int64(len(rows)))
	first := rows[0].Due
	for _, r := range rows[1:] {
		if r.Due.Before(first) {
			first = r.Due
		}
	}
	s.consumers.hint(q.Name, sh, first, now)
	return out, nil
}

// dueOf resolves a message's due time: never before now, so that a
// message cannot land below a consumer's read floor.
func (s *Service) dueOf(m Message, now time.Time) (time.Time, error) {
	switch {
	case m.Delay < 0:
		return time.Time{}, invalidf("delay %v is negative", m.Delay)
	case m.Delay > 0 && !m.Due.IsZero():
		return time.Time{}, invalidf("give a delay or a due time, not both")
	case m.Delay > 0:
		return now.Add(m.Delay).Truncate(time.Millisecond), nil
	case m.Due.After(now):
		return m.Due.UTC().Truncate(time.Millisecond), nil
	}
	return now, nil
}
