package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/cockroachdb/pebble/v2"
)

var _ driver.Queues = (*Driver)(nil)

// Queue rows are plain values, not LWW cells: every read-modify-write of
// one shard (lease changes, delivery updates, deletes that must not race
// an update) runs under that shard's lock, which is all the coordination a
// single process needs. Cassandra gets the same guarantees from
// lightweight transactions (leases) and from the engine's use of leases.
//
// The locks are striped over a fixed array shared by every Driver in the
// process: two shards that hash alike only wait for each other briefly.
var queueLocks [64]sync.Mutex

var queueLockSeed = maphash.MakeSeed()

func lockShard(queue string, shard int) func() {
	var h maphash.Hash
	h.SetSeed(queueLockSeed)
	h.WriteString(queue)
	h.WriteString("\x00" + strconv.Itoa(shard))
	mu := &queueLocks[h.Sum64()%uint64(len(queueLocks))]
	mu.Lock()
	return mu.Unlock
}

// Writes made under a shard lock are applied without waiting for the
// disk (pebble.NoSync), and made durable with syncWAL after the lock is
// released: the lock orders them, the sync acknowledges them. Holding the
// lock across an fsync would let only one write per shard reach the disk
// at a time, while concurrent syncs outside it share one fsync.

// syncWAL waits until everything committed so far is on disk (unless the
// store runs with NoSync).
func (d *Driver) syncWAL() error {
	if d.writeOpts == pebble.NoSync {
		return nil
	}
	return d.db.LogData(nil, pebble.Sync)
}

// leaseNow is the store's clock for lease expiry: real time, like the
// server-side TTLs of Cassandra, whatever clock the caller uses for due
// times.
var leaseNow = time.Now

// CreateQueue implements driver.Queues.
func (d *Driver) CreateQueue(ctx context.Context, p *driver.CreateQueueParams) error {
	q := p.Queue
	if p.Replaces != nil {
		if p.Replaces.DeletedAt.IsZero() {
			return fmt.Errorf("embedded: create queue %q: %w (only a deleted record is replaced)", q.Name, driver.ErrExists)
		}
		return d.swapQueue(ctx, "create queue", q.Name, p.Replaces, func(*driver.Queue) *driver.Queue { return &q }, driver.ErrExists)
	}
	return d.createRecord(ctx, "queue", q.Name, queueKey(q.Name),
		func() ([]byte, error) { return encodeQueue(&q), nil },
		lockQueueRecords)
}

func lockQueueRecords() func() { return lockShard("\x00queue records", 0) }

// DeleteQueue implements driver.Queues.
func (d *Driver) DeleteQueue(ctx context.Context, p *driver.DeleteQueueParams) error {
	want := &driver.Queue{CreatedAt: p.CreatedAt}
	return d.swapQueue(ctx, "delete queue", p.Name, want, func(cur *driver.Queue) *driver.Queue {
		next := *cur
		next.DeletedAt = ms(p.At)
		return &next
	}, driver.ErrNotFound)
}

// swapQueue replaces the named queue record with next(record) if the
// stored one was made at want.CreatedAt and deleted at want.DeletedAt
// (zero: live); otherwise it answers refused and changes nothing.
func (d *Driver) swapQueue(ctx context.Context, op, name string, want *driver.Queue, next func(*driver.Queue) *driver.Queue, refused error) error {
	if err := d.acquire(ctx, op); err != nil {
		return err
	}
	defer d.mu.RUnlock()
	defer lockQueueRecords()()
	key := queueKey(name)
	raw, closer, err := d.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return fmt.Errorf("embedded: %s %q: %w", op, name, refused)
	}
	if err != nil {
		return fmt.Errorf("embedded: %s %q: %w", op, name, err)
	}
	cur, err := decodeQueue(raw)
	_ = closer.Close()
	if err != nil {
		return fmt.Errorf("embedded: %s %q: %w", op, name, err)
	}
	if !cur.CreatedAt.Equal(want.CreatedAt) || !cur.DeletedAt.Equal(ms(want.DeletedAt)) {
		return fmt.Errorf("embedded: %s %q: %w", op, name, refused)
	}
	if err := d.db.Set(key, encodeQueue(next(cur)), d.writeOpts); err != nil {
		return fmt.Errorf("embedded: %s %q: %w", op, name, err)
	}
	return nil
}

// GetQueue implements driver.Queues.
func (d *Driver) GetQueue(ctx context.Context, p *driver.GetQueueParams) (*driver.Queue, error) {
	return getRecord(ctx, d, "queue", p.Name, queueKey(p.Name), decodeQueue, queueName)
}

// ListQueues implements driver.Queues.
func (d *Driver) ListQueues(ctx context.Context, p *driver.ListQueuesParams) ([]*driver.Queue, error) {
	return listRecords(ctx, d, "list queues", tableQueues, func(key []byte) (string, error) {
		k, err := decodeQueueKey(key)
		return k.Queue, err
	}, decodeQueue, queueName)
}

func queueName(q *driver.Queue) string { return q.Name }

func normalize(m driver.Message) driver.Message {
	m.Due = ms(m.Due)
	m.EnqueuedAt = ms(m.EnqueuedAt)
	m.VisibleAt = ms(m.VisibleAt)
	return m
}

// PutMessages implements driver.Queues. The messages are new rows (fresh
// ids), so they need no lock; one batch makes them durable together.
func (d *Driver) PutMessages(ctx context.Context, p *driver.PutMessagesParams) error {
	return d.writeBatch(ctx, "put messages", func(b *pebble.Batch) error {
		for _, m := range p.Messages {
			if m.EnqueuedAt.IsZero() {
				return fmt.Errorf("message %s has no EnqueuedAt", m.ID)
			}
			m = normalize(m)
			if err := b.Set(messageKey(p.Queue, m.MessageKey), encodeMessage(&m), nil); err != nil {
				return err
			}
		}
		return nil
	}, " in %q", p.Queue)
}

// ReadMessages implements driver.Queues.
func (d *Driver) ReadMessages(ctx context.Context, p *driver.ReadMessagesParams) (_ *driver.MessagePage, err error) {
	const op = "read messages"
	if err := d.acquire(ctx, op); err != nil {
		return nil, err
	}
	defer d.mu.RUnlock()
	if p.Limit <= 0 {
		return nil, fmt.Errorf("embedded: %s: limit %d must be positive", op, p.Limit)
	}
	page := &driver.MessagePage{}
	from, to := ms(p.From), ms(p.To)
	if to.Before(from) {
		return page, nil
	}
	it, err := d.db.NewIter(&pebble.IterOptions{
		LowerBound: messageDuePrefix(p.Queue, p.Shard, from),
		UpperBound: messageDuePrefix(p.Queue, p.Shard, to.Add(time.Millisecond)),
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: %s: %w", op, err)
	}
	defer closeIter(it, &err, op)
	for valid := it.First(); valid && len(page.Messages) < p.Limit; valid = it.Next() {
		m, err := messageAt(it, p.Queue, p.WithBody)
		if err != nil {
			return nil, fmt.Errorf("embedded: %s in %q shard %d: %w", op, p.Queue, p.Shard, err)
		}
		if page.Messages == nil {
			// A consumer's page is usually full: growing the slice row by
			// row was a third of the bytes a consumer allocates. (Sized at
			// the first row, so an empty poll allocates nothing.)
			page.Messages = make([]driver.Message, 0, min(p.Limit, 256))
		}
		page.Messages = append(page.Messages, m)
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("embedded: %s: %w", op, err)
	}
	return page, nil
}

// messageAt decodes the message under the iterator, copying what it keeps.
func messageAt(it *pebble.Iterator, queue string, withBody bool) (driver.Message, error) {
	var m driver.Message
	k, err := decodeQueueKey(it.Key())
	if err == nil && (k.Table != tableQueueMessages || k.Queue != queue) {
		err = fmt.Errorf("%w: unexpected key in message range", errBadKey)
	}
	if err != nil {
		return m, fmt.Errorf("key %x: %w", it.Key(), err)
	}
	raw, err := it.ValueAndErr()
	if err != nil {
		return m, err
	}
	m.MessageKey = driver.MessageKey{Shard: k.Shard, Due: k.Due, ID: k.ID}
	if err := decodeMessage(raw, &m, withBody); err != nil {
		return m, fmt.Errorf("message %s: %w", k.ID, err)
	}
	if withBody {
		m.Body = append([]byte{}, m.Body...) // the iterator reuses its buffer
	}
	return m, nil
}

// GetMessage implements driver.Queues.
func (d *Driver) GetMessage(ctx context.Context, p *driver.GetMessageParams) (*driver.Message, error) {
	return readLocked(ctx, d, "get message", func() (*driver.Message, error) {
		return d.getMessage(p.Queue, p.Key)
	}, " %s of %q", p.Key.ID, p.Queue)
}

func (d *Driver) getMessage(queue string, k driver.MessageKey) (*driver.Message, error) {
	k.Due = ms(k.Due)
	raw, closer, err := d.db.Get(messageKey(queue, k))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, driver.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	m := &driver.Message{MessageKey: k}
	if err := decodeMessage(raw, m, true); err != nil {
		return nil, err
	}
	m.Body = append([]byte{}, m.Body...)
	return m, nil
}

// byShard groups items by their shard, keeping their order within a shard.
func byShard[T any](items []T, shard func(T) int) map[int][]T {
	if len(items) > 0 {
		s := shard(items[0])
		if slices.IndexFunc(items, func(it T) bool { return shard(it) != s }) < 0 {
			// A consumer's marks and acks are nearly always of one
			// shard: no copy of them.
			return map[int][]T{s: items}
		}
	}
	out := map[int][]T{}
	for _, it := range items {
		s := shard(it)
		out[s] = append(out[s], it)
	}
	return out
}

// UpdateMessages implements driver.Queues. Under the shard's lock an update
// of a message that is gone is simply dropped, so no fragments arise here.
func (d *Driver) UpdateMessages(ctx context.Context, p *driver.UpdateMessagesParams) error {
	const op = "update messages"
	return batchByShard(ctx, d, op, p.Queue, p.Updates, func(m driver.Message) int { return m.Shard },
		func(b *pebble.Batch, u driver.Message) error {
			_, err := d.redeliver(b, p.Queue, u.MessageKey, func(deliveryState) (deliveryState, bool) {
				return deliveryState{u.Deliveries, u.VisibleAt, u.LastError}, true
			})
			return err
		})
}

// redeliver adds to b the stored message k with the delivery state that
// change makes of its own (see the function redeliver), unless the
// message is gone or change declines. It reports whether it wrote.
func (d *Driver) redeliver(b *pebble.Batch, queue string, k driver.MessageKey, change func(deliveryState) (deliveryState, bool)) (bool, error) {
	k.Due = ms(k.Due)
	key := messageKey(queue, k)
	raw, closer, err := d.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer closer.Close()
	v, err := redeliver(raw, change)
	if err != nil {
		return false, fmt.Errorf("message %s: %w", k.ID, err)
	}
	if v == nil {
		return false, nil
	}
	return true, b.Set(key, v, nil)
}

// ExtendVisibility implements driver.Queues.
func (d *Driver) ExtendVisibility(ctx context.Context, p *driver.ExtendVisibilityParams) (bool, error) {
	wrote := false
	err := batchByShard(ctx, d, "extend visibility", p.Queue, []driver.MessageKey{p.Key}, func(k driver.MessageKey) int { return k.Shard },
		func(b *pebble.Batch, k driver.MessageKey) (err error) {
			wrote, err = d.redeliver(b, p.Queue, k, func(st deliveryState) (deliveryState, bool) {
				st.VisibleAt = p.VisibleAt
				return st, st.Deliveries == p.Deliveries
			})
			return err
		})
	return wrote && err == nil, err
}

// batchByShard runs the write op of items: it groups them by shard and
// writes each shard's group in one batch, which write fills item by item
// under the shard's lock, then syncs the WAL once.
func batchByShard[T any](ctx context.Context, d *Driver, op, queue string, items []T, shard func(T) int, write func(*pebble.Batch, T) error) error {
	if err := d.acquire(ctx, op); err != nil {
		return err
	}
	defer d.mu.RUnlock()
	for s, group := range byShard(items, shard) {
		err := func() error {
			defer lockShard(queue, s)()
			b := d.db.NewBatch()
			defer b.Close()
			for _, item := range group {
				if err := write(b, item); err != nil {
					return err
				}
			}
			return b.Commit(pebble.NoSync)
		}()
		if err != nil {
			return fmt.Errorf("embedded: %s in %q shard %d: %w", op, queue, s, err)
		}
	}
	if err := d.syncWAL(); err != nil {
		return fmt.Errorf("embedded: %s in %q: %w", op, queue, err)
	}
	return nil
}

// DeleteMessages implements driver.Queues.
func (d *Driver) DeleteMessages(ctx context.Context, p *driver.DeleteMessagesParams) error {
	const op = "delete messages"
	return batchByShard(ctx, d, op, p.Queue, p.Keys, func(k driver.MessageKey) int { return k.Shard },
		func(b *pebble.Batch, k driver.MessageKey) error {
			k.Due = ms(k.Due)
			return b.Delete(messageKey(p.Queue, k), nil)
		})
}

// readShardState returns the stored state, with an expired lease already
// cleared; a shard never written has the zero state.
func (d *Driver) readShardState(queue string, shard int) (*shardState, error) {
	raw, closer, err := d.db.Get(shardStateKey(queue, shard))
	if errors.Is(err, pebble.ErrNotFound) {
		return &shardState{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	s, err := decodeShardState(raw)
	if err != nil {
		return nil, err
	}
	if s.Holder != "" && s.Expires <= leaseNow().UnixNano() {
		s.Holder, s.Since, s.Expires = "", time.Time{}, 0
	}
	return s, nil
}

// ReadQueueShard implements driver.Queues.
func (d *Driver) ReadQueueShard(ctx context.Context, p *driver.QueueShardParams) (*driver.QueueShardState, error) {
	return readLocked(ctx, d, "read shard", func() (*driver.QueueShardState, error) {
		s, err := d.readShardState(p.Queue, p.Shard)
		return &s.QueueShardState, err
	}, " %d of %q", p.Shard, p.Queue)
}

// changeShard runs change on the shard's state under its lock and writes
// the state back if change says so.
func (d *Driver) changeShard(ctx context.Context, op, queue string, shard int, change func(s *shardState) (write bool)) error {
	if err := d.acquire(ctx, op); err != nil {
		return err
	}
	defer d.mu.RUnlock()
	wrote, err := func() (bool, error) {
		defer lockShard(queue, shard)()
		s, err := d.readShardState(queue, shard)
		if err != nil || !change(s) {
			return false, err
		}
		return true, d.db.Set(shardStateKey(queue, shard), encodeShardState(s), pebble.NoSync)
	}()
	if err == nil && wrote {
		err = d.syncWAL()
	}
	if err != nil {
		return fmt.Errorf("embedded: %s on shard %d of %q: %w", op, shard, queue, err)
	}
	return nil
}

func checkLease(p *driver.LeaseParams) error {
	if p.Holder == "" {
		return errors.New("embedded: lease holder is empty")
	}
	if p.TTL <= 0 {
		return fmt.Errorf("embedded: lease TTL %v must be positive", p.TTL)
	}
	return nil
}

// leaseTTL rounds a TTL up to whole seconds, as Cassandra's TTLs are.
func leaseTTL(d time.Duration) time.Duration {
	return (d + time.Second - 1).Truncate(time.Second)
}

// AcquireLease implements driver.Queues.
func (d *Driver) AcquireLease(ctx context.Context, p *driver.LeaseParams) (driver.LeaseResult, error) {
	var res driver.LeaseResult
	if err := checkLease(p); err != nil {
		return res, err
	}
	err := d.changeShard(ctx, "acquire lease", p.Queue, p.Shard, func(s *shardState) bool {
		if s.Holder != "" {
			res.Holder = s.Holder
			return false
		}
		s.Holder, s.Since = p.Holder, ms(p.Since)
		s.Expires = leaseNow().Add(leaseTTL(p.TTL)).UnixNano()
		res.Held = true
		return true
	})
	return res, err
}

// RenewLease implements driver.Queues.
func (d *Driver) RenewLease(ctx context.Context, p *driver.LeaseParams) (driver.LeaseResult, error) {
	var res driver.LeaseResult
	if err := checkLease(p); err != nil {
		return res, err
	}
	err := d.changeShard(ctx, "renew lease", p.Queue, p.Shard, func(s *shardState) bool {
		if s.Holder != p.Holder {
			res.Holder = s.Holder
			return false
		}
		s.Since = ms(p.Since)
		s.Expires = leaseNow().Add(leaseTTL(p.TTL)).UnixNano()
		res.Held = true
		return true
	})
	return res, err
}

// ReleaseLease implements driver.Queues.
func (d *Driver) ReleaseLease(ctx context.Context, p *driver.LeaseParams) (driver.LeaseResult, error) {
	var res driver.LeaseResult
	if p.Holder == "" {
		return res, errors.New("embedded: lease holder is empty")
	}
	err := d.changeShard(ctx, "release lease", p.Queue, p.Shard, func(s *shardState) bool {
		if s.Holder != p.Holder {
			res.Holder = s.Holder
			return false
		}
		s.Holder, s.Since, s.Expires = "", time.Time{}, 0
		res.Held = true
		return true
	})
	return res, err
}

// SetFloor implements driver.Queues.
func (d *Driver) SetFloor(ctx context.Context, p *driver.SetFloorParams) error {
	return d.changeShard(ctx, "set floor", p.Queue, p.Shard, func(s *shardState) bool {
		s.Floor = ms(p.Floor)
		return true
	})
}

// QueueShardStats implements driver.Queues.
func (d *Driver) QueueShardStats(ctx context.Context, p *driver.QueueShardStatsParams) (_ *driver.QueueShardStats, err error) {
	const op = "shard stats"
	if err := d.acquire(ctx, op); err != nil {
		return nil, err
	}
	defer d.mu.RUnlock()
	st, err := d.readShardState(p.Queue, p.Shard)
	if err != nil {
		return nil, fmt.Errorf("embedded: %s of %q shard %d: %w", op, p.Queue, p.Shard, err)
	}
	out := &driver.QueueShardStats{QueueShardState: st.QueueShardState}
	prefix := shardMessagesPrefix(p.Queue, p.Shard)
	lo := prefix
	if !p.From.IsZero() {
		lo = messageDuePrefix(p.Queue, p.Shard, ms(p.From))
	}
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, fmt.Errorf("embedded: %s: %w", op, err)
	}
	defer closeIter(it, &err, op)
	now := ms(p.Now)
	for valid := it.First(); valid; valid = it.Next() {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("embedded: %s: %w", op, err)
		}
		m, err := messageAt(it, p.Queue, false)
		if err != nil {
			return nil, fmt.Errorf("embedded: %s of %q shard %d: %w", op, p.Queue, p.Shard, err)
		}
		out.Messages++
		if !m.Due.After(now) {
			out.Due++
			if m.VisibleAt.After(now) {
				out.InFlight++
			} else if since := laterOf(m.Due, m.VisibleAt); out.OldestWaiting.IsZero() || since.Before(out.OldestWaiting) {
				out.OldestWaiting = since
			}
		}
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("embedded: %s: %w", op, err)
	}
	return out, nil
}

// DeadLetter implements driver.Queues: per shard, one batch stores the
// letters and deletes their messages, atomically.
func (d *Driver) DeadLetter(ctx context.Context, p *driver.DeadLetterParams) error {
	const op = "dead letter"
	return batchByShard(ctx, d, op, p.Queue, p.Letters, func(l driver.DeadLetter) int { return l.Shard },
		func(b *pebble.Batch, l driver.DeadLetter) error {
			l.Message = normalize(l.Message)
			l.DiedAt = ms(l.DiedAt)
			if err := b.Set(deadKey(p.Queue, l.ID), encodeDead(&l), nil); err != nil {
				return err
			}
			return b.Delete(messageKey(p.Queue, l.MessageKey), nil)
		})
}

// ListDead implements driver.Queues.
func (d *Driver) ListDead(ctx context.Context, p *driver.ListDeadParams) (_ []driver.DeadLetter, err error) {
	const op = "list dead letters"
	if err := d.acquire(ctx, op); err != nil {
		return nil, err
	}
	defer d.mu.RUnlock()
	want := map[driver.MessageID]bool{}
	for _, id := range p.IDs {
		want[id] = true
	}
	prefix := deadPrefix(p.Queue)
	it, err := d.iterPrefix(prefix)
	if err != nil {
		return nil, fmt.Errorf("embedded: %s: %w", op, err)
	}
	defer closeIter(it, &err, op)
	out := []driver.DeadLetter{}
	for valid := it.First(); valid && (p.Limit <= 0 || len(out) < p.Limit); valid = it.Next() {
		k, err := decodeQueueKey(it.Key())
		if err == nil && (k.Table != tableQueueDead || k.Queue != p.Queue || !bytes.HasPrefix(it.Key(), prefix)) {
			err = fmt.Errorf("%w: unexpected key in dead letter range", errBadKey)
		}
		if err != nil {
			return nil, fmt.Errorf("embedded: %s of %q: key %x: %w", op, p.Queue, it.Key(), err)
		}
		if len(want) > 0 && !want[k.ID] {
			continue
		}
		raw, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("embedded: %s: %w", op, err)
		}
		l, err := decodeDead(raw, k.ID)
		if err != nil {
			return nil, fmt.Errorf("embedded: %s of %q: %s: %w", op, p.Queue, k.ID, err)
		}
		out = append(out, *l)
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("embedded: %s: %w", op, err)
	}
	return out, nil
}

// DeleteDead implements driver.Queues.
func (d *Driver) DeleteDead(ctx context.Context, p *driver.DeleteDeadParams) error {
	return d.writeBatch(ctx, "delete dead letters", func(b *pebble.Batch) error {
		for _, id := range p.IDs {
			if err := b.Delete(deadKey(p.Queue, id), nil); err != nil {
				return err
			}
		}
		return nil
	}, " of %q", p.Queue)
}

// laterOf returns the later of a and b.
func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
