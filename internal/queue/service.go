package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/names"
	"github.com/abacusdb/abacus/internal/queue/shard"
	"github.com/abacusdb/abacus/internal/refreshcache"
)

// Service is the queue engine on one store: it creates queues, puts
// messages, builds consumers, settles deliveries by receipt, lists and
// requeues dead letters and observes shards. It is safe for concurrent use
// and has no background work of its own beyond writing the acknowledgements
// its callers wait for.
type Service struct {
	cfg   Config
	store driver.Queues
	clock clock.Clock
	log   *slog.Logger
	stats Stats
	ids   *idGen

	// records caches the queues' records, each trusted for
	// Config.PauseRefresh (delete.go).
	records *refreshcache.Cache[Queue]
	// consumers are this process's live consumers, told of puts and
	// settled deliveries so that they need not wait for a poll (wake.go).
	consumers consumerSet
	// pauses caches the queues' pause states (pause.go).
	pauses pauses
	// acks gathers concurrent acknowledgements into shared writes (ack.go).
	acks ackGroups
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
	Deduplicated atomic.Int64 // puts answered as duplicates of earlier ones
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
	s.records = &refreshcache.Cache[Queue]{
		// A negative PauseRefresh trusts nothing: a read before every use.
		Refresh: cfg.PauseRefresh, Clock: clock.Real{}, LoadTimeout: recordReadTimeout,
		Load: func(ctx context.Context, name string, _ time.Time) (*Queue, error) { return s.live(ctx, name) },
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

	math  shard.Math   // level 0's, which is the whole queue with one level
	lanes []shard.Math // one per priority level, lanes[0] == math
}

// Math returns the queue's shard math (of its lowest priority level).
func (q *Queue) Math() shard.Math { return q.math }

// Levels returns how many priority levels the queue has.
func (q *Queue) Levels() int { return len(q.lanes) }

// storedShards is how many shards hold the queue's messages: Shards for
// each level.
func (q *Queue) storedShards() int { return q.Shards * len(q.lanes) }

// levelOf returns the priority level whose lane holds shard s.
func (q *Queue) levelOf(s int) int { return s / q.Shards }

// laneIndex is levelOf for a shard that may lie outside the queue's lanes
// (a stored row no put of this queue wrote): such a shard counts as level
// 0, the lowest, where it overtakes nothing.
func (q *Queue) laneIndex(s int) int {
	if l := q.levelOf(s); l >= 0 && l < len(q.lanes) {
		return l
	}
	return 0
}

// producerShard picks the shard a put of the given level at now writes:
// one of the current window's in that level's lane, at random, so that
// concurrent puts (and so a burst) spread over the window's shards and as
// many consumers can drain them at once. A whole batch of one level goes
// to one shard, staying one write.
func (q *Queue) producerShard(now time.Time, level int) int {
	m := q.lanes[level]
	return m.Stripe(m.Bucket(now), rand.Uint64())
}

func queueFrom(d *driver.Queue) (*Queue, error) {
	m, err := shard.NewSpread(d.Shards, max(d.Spread, 1), d.ShardDuration)
	if err != nil {
		return nil, fmt.Errorf("queue %q has a corrupt configuration: %w", d.Name, err)
	}
	levels := max(d.Priorities, 1)
	lanes := make([]shard.Math, levels)
	for l := range lanes {
		if lanes[l], err = m.Lane(l, levels); err != nil {
			return nil, fmt.Errorf("queue %q has a corrupt configuration: %w", d.Name, err)
		}
	}
	return &Queue{Queue: *d, math: m, lanes: lanes}, nil
}

// Create creates a queue. A queue with fewer than four shards is refused
// (ErrInvalid wrapping shard.ErrTooFewShards); an existing name gives
// ErrExists and leaves the existing queue as it is.
func (s *Service) Create(ctx context.Context, c QueueConfig) (*Queue, error) {
	c = c.withDefaults()
	if err := names.CheckNew("queue", c.Name); err != nil {
		// A name stored before the rule for new names still answers
		// "exists", as creating it did then.
		if _, qerr := s.Queue(ctx, c.Name); qerr == nil {
			return nil, fmt.Errorf("%w: %q", ErrExists, c.Name)
		}
		return nil, err
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	d := driver.Queue{
		Name: c.Name, Shards: c.Shards, Spread: c.Spread, Priorities: c.Priorities, ShardDuration: c.ShardDuration,
		MaxDeliveries: c.MaxDeliveries, VisibilityTimeout: c.VisibilityTimeout,
		CreatedAt: s.now(),
	}
	q, err := s.createRecord(ctx, d, nil)
	if errors.Is(err, ErrExists) {
		// The record may be a deleted queue's, whose name comes back.
		return s.replaceDeleted(ctx, d)
	}
	return q, err
}

// createRecord stores d, in place of replaces when that is set:
// ErrExists when the store has another record of the name.
func (s *Service) createRecord(ctx context.Context, d driver.Queue, replaces *driver.Queue) (*Queue, error) {
	err := s.store.CreateQueue(ctx, &driver.CreateQueueParams{Queue: d, Replaces: replaces})
	if errors.Is(err, driver.ErrExists) {
		return nil, fmt.Errorf("%w: %q", ErrExists, d.Name)
	}
	if err != nil {
		return nil, err
	}
	return queueFrom(&d)
}

// Queue returns a queue's configuration, or ErrNotFound for an unknown or
// deleted queue. A process trusts a record it read for
// Config.PauseRefresh, and reads it again after that (in the background
// once it is half that old), so that a delete reaches every process.
func (s *Service) Queue(ctx context.Context, name string) (*Queue, error) {
	q, _, err := s.records.Get(ctx, name)
	return q, err
}

// recordReadTimeout bounds a read of a queue record, which every caller
// waiting for it shares.
const recordReadTimeout = time.Minute

// live reads name's record from the store: ErrNotFound when there is
// none, or when it is deleted (wrapping errDeleted too). Neither is
// cached: the name may be made at any time.
func (s *Service) live(ctx context.Context, name string) (*Queue, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	d, err := s.readRecord(ctx, name)
	if err != nil {
		return nil, err
	}
	q, err := queueFrom(d)
	if err == nil && !q.DeletedAt.IsZero() {
		return nil, deletedError(q)
	}
	return q, err
}

// readRecord reads name's record, deleted or not: ErrNotFound when there
// is none.
func (s *Service) readRecord(ctx context.Context, name string) (*driver.Queue, error) {
	d, err := s.store.GetQueue(ctx, &driver.GetQueueParams{Name: name})
	if errors.Is(err, driver.ErrNotFound) {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	return d, err
}

// List returns every live queue sorted by name.
func (s *Service) List(ctx context.Context) ([]*Queue, error) {
	list, err := s.store.ListQueues(ctx, &driver.ListQueuesParams{})
	if err != nil {
		return nil, err
	}
	out := make([]*Queue, 0, len(list))
	for _, d := range list {
		if !d.DeletedAt.IsZero() {
			continue
		}
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
	// DedupID, when set, names the message for de-duplication: a put
	// with an id already put within Config.DedupWindow stores nothing and
	// answers the first message's id, from any process and however the
	// puts race or are retried; with another body it fails with
	// ErrDedupConflict. At most driver.MaxDedupIDLen bytes of UTF-8.
	// Attributes count as part of the body for that comparison.
	DedupID string
	// Priority is the message's level, from 0 (the lowest, the default) to
	// the queue's Priorities-1. Among due messages a consumer takes those
	// of higher levels first; the level never changes, through failures,
	// dead letters and requeues.
	Priority int
	// Attributes are name/value pairs stored with the message and handed
	// to its consumers unchanged (a tenant, a trace id, a content type):
	// at most driver.MaxAttributes of them, names of 1 to
	// driver.MaxAttributeName bytes of letters, digits and "_-.:",
	// values of at most driver.MaxAttributeValue bytes of UTF-8.
	Attributes map[string]string
}

// checkAttributes reports why attrs cannot be stored, or nil.
func checkAttributes(attrs map[string]string) error {
	if len(attrs) > driver.MaxAttributes {
		return invalidf("%d attributes, the limit is %d", len(attrs), driver.MaxAttributes)
	}
	names := slices.SortedFunc(maps.Keys(attrs), func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	for i, name := range names {
		// Names are ASCII (below), and the HTTP API, like encoding/json,
		// matches member names ignoring case; so are they unique here.
		if i > 0 && strings.EqualFold(name, names[i-1]) {
			return invalidf("attribute names %q and %q differ only in case", names[i-1], name)
		}
		if len(name) == 0 || len(name) > driver.MaxAttributeName {
			return invalidf("attribute name %q: 1 to %d bytes", name, driver.MaxAttributeName)
		}
		for _, r := range name {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.:", r)) {
				return invalidf("attribute name %q: only letters, digits and _-.: are allowed", name)
			}
		}
		if v := attrs[name]; len(v) > driver.MaxAttributeValue || !utf8.ValidString(v) {
			return invalidf("attribute %q: a value is at most %d bytes of UTF-8", name, driver.MaxAttributeValue)
		}
	}
	return nil
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
// shard) of their level's lane, all in one write per shard. An error
// wrapping ErrUnknownOutcome means they may have been queued; putting them
// again may queue them twice (delivery is at least once anyway) — unless
// they carry dedup ids, which make a repeat safe (see Message.DedupID). A
// batch that mixes levels is one write per level, so after any error the
// messages of another level may have been queued.
func (s *Service) PutBatch(ctx context.Context, queue string, ms []Message) ([]ID, error) {
	ids, _, err := s.PutBatchDedup(ctx, queue, ms)
	return ids, err
}

// PutBatchDedup is PutBatch that also reports which messages were
// duplicates of earlier puts (their ids are the earlier messages'). The
// messages with dedup ids are stored one by one, after the others; if one
// fails, those before it stay stored, and a repeat of the whole batch
// (with the same dedup ids) stores each message once.
func (s *Service) PutBatchDedup(ctx context.Context, queue string, ms []Message) ([]ID, []bool, error) {
	q, err := s.Queue(ctx, queue)
	if err != nil {
		return nil, nil, err
	}
	if len(ms) == 0 {
		return []ID{}, []bool{}, nil
	}
	if len(ms) > MaxBatch {
		return nil, nil, invalidf("%d messages in one batch, the limit is %d", len(ms), MaxBatch)
	}
	now := s.now()
	// One shard per level, picked once: a batch of one level is one write.
	shardOf := make([]int, q.Levels())
	for l := range shardOf {
		shardOf[l] = -1
	}
	rows := make([]driver.Message, len(ms))
	out := make([]ID, len(ms))
	dup := make([]bool, len(ms))
	var plain []driver.Message
	for i, m := range ms {
		due, err := s.dueOf(m, now)
		switch {
		case err != nil:
		case len(m.Body) > s.cfg.MaxBodyBytes:
			err = fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(m.Body), s.cfg.MaxBodyBytes)
		case len(m.DedupID) > driver.MaxDedupIDLen || !utf8.ValidString(m.DedupID):
			err = invalidf("a dedup id is at most %d bytes of UTF-8", driver.MaxDedupIDLen)
		case m.Priority < 0 || m.Priority >= q.Levels():
			err = invalidf("priority %d is not one of queue %q's levels 0 to %d", m.Priority, q.Name, q.Levels()-1)
		default:
			err = checkAttributes(m.Attributes)
		}
		if err != nil {
			if len(ms) > 1 {
				err = fmt.Errorf("messages[%d]: %w", i, err)
			}
			return nil, nil, err
		}
		body := m.Body
		if body == nil {
			body = []byte{}
		}
		out[i] = s.ids.newID(now)
		if shardOf[m.Priority] < 0 {
			shardOf[m.Priority] = q.producerShard(now, m.Priority)
		}
		sh := shardOf[m.Priority]
		rows[i] = driver.Message{
			MessageKey: driver.MessageKey{Shard: sh, Due: due, ID: out[i]},
			Body:       body,
			EnqueuedAt: now,
		}
		if len(m.Attributes) > 0 {
			rows[i].Attributes = maps.Clone(m.Attributes)
		}
		if m.DedupID == "" {
			plain = append(plain, rows[i])
		}
	}
	if len(plain) > 0 {
		if err := s.store.PutMessages(ctx, &driver.PutMessagesParams{Queue: q.stored(), Messages: plain}); err != nil {
			return nil, nil, err
		}
		s.stats.Put.Add(int64(len(plain)))
	}
	stored := plain
	for i, m := range ms {
		if m.DedupID == "" {
			continue
		}
		r, err := s.store.PutDedupMessage(ctx, &driver.PutDedupParams{Queue: q.stored(), DedupID: m.DedupID, Window: s.cfg.DedupWindow, Message: rows[i]})
		if err != nil {
			return nil, nil, fmt.Errorf("messages[%d] (dedup id %q): %w", i, m.DedupID, err)
		}
		if r.Duplicate && !r.SameBody {
			return nil, nil, fmt.Errorf("messages[%d]: %w: %q names message %s", i, ErrDedupConflict, m.DedupID, r.Key.ID)
		}
		out[i], dup[i] = r.Key.ID, r.Duplicate
		if r.Duplicate {
			s.stats.Deduplicated.Add(1)
		} else {
			s.stats.Put.Add(1)
		}
		// A duplicate may have just completed a put that died before its
		// message was written: worth a look either way.
		stored = append(stored, driver.Message{MessageKey: r.Key})
	}
	s.hintStored(q.Name, stored)
	return out, dup, nil
}

// hintStored tells this process's consumers which shards just got
// messages, and from when they are due.
func (s *Service) hintStored(queue string, ms []driver.Message) {
	now := s.now()
	first := map[int]time.Time{}
	for _, m := range ms {
		if t, ok := first[m.Shard]; !ok || m.Due.Before(t) {
			first[m.Shard] = m.Due
		}
	}
	for sh, t := range first {
		s.consumers.hint(queue, sh, t, now)
	}
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
