package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/queue/shard"
)

// Consumer takes messages from one queue. It works one shard at a time
// under that shard's lease, so several consumers (in one process or many)
// share a queue without handing out a message twice while it is hidden.
//
// Use Receive to pull deliveries and settle each with Ack, Fail or Release;
// or give ConsumerConfig.Handler and call Start, which runs the handlers and
// settles for you, and Stop. A Consumer is safe for concurrent use.
type Consumer struct {
	svc *Service
	q   *Queue
	cfg ConsumerConfig
	log *slog.Logger

	mu sync.Mutex // guards everything below; Receive holds it throughout
	// lanes are the queue's priority levels, lowest first; ln is the one
	// being worked (Receive moves it from the highest down).
	lanes []*lane
	ln    *lane
	// deepRead is the last read of each shard from its start; wake holds,
	// for shards outside the every-round pair, when each next needs a look
	// (wake.go). Shard numbers differ between lanes, so the lanes share
	// both.
	deepRead map[int]time.Time
	wake     map[int]time.Time
	hints    *hints
	stopped  bool

	// Start/Stop.
	runMu    sync.Mutex
	running  bool
	stopLoop context.CancelFunc // ends the receive loop
	abort    context.CancelFunc // cancels the handlers' contexts
	loopDone chan struct{}
	handlers sync.WaitGroup
}

// lane is what a consumer keeps of one priority level: the level's shard
// math, its round, and the lease it holds in it. A consumer holds at most
// one lease per level.
type lane struct {
	math      shard.Math
	lease     *lease
	round     []int // shards to look at in this round, in order
	next      int   // index into round
	lastSweep time.Time
	// lastBucket is the window of the last round: when it moves on, the
	// shard that stops being looked at every round gets a wake time.
	lastBucket int64
	roundAt    time.Time // when the current round began
}

// laneOf returns the lane holding shard s.
func (c *Consumer) laneOf(s int) *lane {
	return c.lanes[c.q.laneIndex(s)]
}

// lease is the shard lease a consumer holds.
type lease struct {
	shard     int
	since     time.Time // when it was taken (service clock), kept on renewals
	renewedAt time.Time // when it was last written (real time, monotonic)
	floor     time.Time // the floor as this consumer knows it
	stored    time.Time // the floor last written
	// cursor is the last message this lease handed out. While messages
	// keep coming, reads start after it instead of at the floor, so they do
	// not page through everything still in flight; when nothing follows it,
	// a read from the floor picks up messages that became visible again.
	cursor      *driver.MessageKey
	cursorReads int
}

// NewConsumer returns a consumer of cfg.Queue, which must exist.
func (s *Service) NewConsumer(ctx context.Context, cfg ConsumerConfig) (*Consumer, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	q, err := s.Queue(ctx, cfg.Queue)
	if err != nil {
		return nil, err
	}
	c := &Consumer{
		svc:      s,
		q:        q,
		cfg:      cfg,
		log:      s.log.With("queue", q.Name, "consumer", cfg.Name),
		deepRead: map[int]time.Time{},
		wake:     map[int]time.Time{},
		hints:    newHints(),
	}
	for _, m := range q.lanes {
		c.lanes = append(c.lanes, &lane{math: m})
	}
	c.ln = c.lanes[0]
	s.consumers.add(q.Name, c.hints)
	return c, nil
}

// Name returns the consumer's lease holder name.
func (c *Consumer) Name() string { return c.cfg.Name }

// Serves reports whether the consumer works q's generation: false once q
// is the name made again after a delete.
func (c *Consumer) Serves(q *Queue) bool { return sameGeneration(c.q, q) }

// Receive returns up to max deliveries, each already counted and hidden
// for the queue's visibility timeout. It returns an empty slice, not an
// error, when no shard has a due message right now; call it again later
// (Start waits PollInterval).
//
// Each call first keeps working the shard it holds a lease on; when that
// shard has nothing more it releases it and goes on to the next shard of
// the round: the shards whose wake time has come (a delayed message falls
// due, a hidden one comes back), then the previous window's shards and the
// producers' current ones — and every CatchUpInterval, and on the first
// call, every shard, the longest-waiting first (the catch-up sweep).
// Messages that used up MaxDeliveries move to the dead letters on the way.
// A paused queue (Service.Pause) hands out nothing.
func (c *Consumer) Receive(ctx context.Context, max int) ([]*Delivery, error) {
	if max < 1 {
		return nil, invalidf("Receive of %d messages", max)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, ErrStopped
	}
	// The queue's record, as this process last read it (read again once
	// a refresh old): a consumer of a deleted generation hands out
	// nothing more.
	if err := c.svc.current(ctx, c.q); err != nil {
		return nil, err
	}
	if paused, err := c.svc.paused(ctx, c.q); err != nil {
		return nil, err
	} else if paused {
		// Hand nothing out, and hold no shard, until the queue resumes;
		// Start's loop polls at PollInterval meanwhile (nextWake).
		c.releaseLeases(ctx)
		return []*Delivery{}, nil
	}
	now := c.svc.now()
	out := []*Delivery{}
	// The highest level first: a lower one is asked only for what the
	// levels above it could not fill from the shards this call looked at.
	l := len(c.lanes) - 1
	for ; l >= 0 && len(out) < max; l-- {
		if l < len(c.lanes)-1 && c.svc.pauses.last(c.q.stored()).Paused {
			return out, nil // paused since this call began: no lower lane takes a lease
		}
		c.ln = c.lanes[l]
		ds, err := c.receiveLane(ctx, now, max-len(out))
		out = append(out, ds...)
		if err != nil {
			return out, err
		}
	}
	// The lanes below were not asked: a lease held there would go unused
	// and unrenewed while higher levels keep this consumer busy, and other
	// consumers would skip its shard. Give it back, and look again at the
	// next round.
	for ; l >= 0; l-- {
		if c.ln = c.lanes[l]; c.ln.lease != nil {
			c.wake[c.ln.lease.shard] = now
			c.releaseLease(ctx)
		}
	}
	return out, nil
}

// receiveLane is Receive within the lane c.ln.
func (c *Consumer) receiveLane(ctx context.Context, now time.Time, max int) ([]*Delivery, error) {
	fresh := false // whether this call started the current round
	// A round left unfinished by an earlier call (it filled its max) is
	// carried on, so that a sweep's shards are not skipped, unless the
	// window has moved on or a sweep is due anyway.
	stale := c.ln.lastBucket != c.ln.math.Bucket(now) || now.Sub(c.ln.lastSweep) >= c.cfg.CatchUpInterval
	if c.ln.lease == nil && (c.ln.next >= len(c.ln.round) || stale) {
		// Shards an unfinished round had not reached yet are kept.
		left := append([]int(nil), c.ln.round[min(c.ln.next, len(c.ln.round)):]...)
		c.newRound(now)
		for _, s := range left {
			if !slices.Contains(c.ln.round, s) {
				c.ln.round = append(c.ln.round, s)
			}
		}
		fresh = true
	}
	out := []*Delivery{}
	for len(out) < max {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if c.ln.lease == nil {
			ok, err := c.takeNext(ctx, now)
			if err != nil {
				return out, err
			}
			if !ok && !fresh && len(out) == 0 {
				// The round begun by an earlier call is over; start
				// another rather than come back empty-handed.
				c.newRound(now)
				fresh = true
				continue
			}
			if !ok {
				break
			}
		}
		if !c.keepLease(ctx) {
			continue
		}
		if c.svc.pauses.last(c.q.stored()).Paused {
			break // paused since this call began (learnt by this process)
		}
		ds, more, err := c.deliver(ctx, now, max-len(out))
		out = append(out, ds...)
		if err != nil {
			return out, err
		}
		if !more || len(ds) == 0 {
			// Drained for now; the next round looks once more to learn
			// when it next has work.
			c.wake[c.ln.lease.shard] = now
			c.releaseLease(ctx)
		}
	}
	return out, nil
}

// newRound lists the shards to look at: on a sweep every shard, else the
// shards whose wake time has come, earliest first; and always the previous
// window's shards and the producers' current ones, last.
func (c *Consumer) newRound(now time.Time) {
	m := c.ln.math
	b := m.Bucket(now)
	c.ln.roundAt = now
	c.hints.drainInto(c.wake)
	lo, hi := m.Base(), m.Base()+m.Shards() // this lane's shards
	c.ln.round = c.ln.round[:0]
	seen := make(map[int]bool, m.Shards())
	add := func(s int) {
		if !seen[s] {
			seen[s] = true
			c.ln.round = append(c.ln.round, s)
		}
	}
	// A round that skipped windows (nobody called Receive for a while)
	// left shards without wake times: sweep.
	skipped := c.ln.lastBucket != 0 && b-c.ln.lastBucket > 1
	if c.ln.lastSweep.IsZero() || skipped || now.Sub(c.ln.lastSweep) >= c.cfg.CatchUpInterval {
		c.ln.lastSweep = now
		for _, s := range m.Oldest(now) {
			add(s)
		}
	} else {
		due := make([]int, 0, len(c.wake))
		for s, t := range c.wake {
			if !t.After(now) && s >= lo && s < hi {
				due = append(due, s)
			}
		}
		slices.SortFunc(due, func(x, y int) int { return c.wake[x].Compare(c.wake[y]) })
		for _, s := range due {
			add(s)
		}
		if b != c.ln.lastBucket {
			// They leave the every-round pair now: one look gives each
			// its wake time.
			c.addRotated(add, m.WindowShards(b-2))
		}
	}
	c.ln.lastBucket = b
	c.addRotated(add, m.WindowShards(b-1))
	c.addRotated(add, m.WindowShards(b))
	c.ln.next = 0
}

// addRotated adds a window's shards starting at a random one, so that
// consumers looking at a spread window at the same moment try different
// shards first instead of all reaching for the same lease.
func (c *Consumer) addRotated(add func(int), shards []int) {
	off := rand.IntN(len(shards))
	for i := range shards {
		add(shards[(off+i)%len(shards)])
	}
}

// readFrom is the lowest due time to read in shard s: its floor, or the
// very beginning when the shard is due a deep read (or its floor is
// unknown).
func (c *Consumer) readFrom(now time.Time, s int, floor time.Time) (from time.Time, deep bool) {
	last, ok := c.deepRead[s]
	if floor.IsZero() || !ok || now.Sub(last) >= c.svc.cfg.DeepSweepInterval {
		return time.UnixMilli(0).UTC(), true
	}
	return floor, false
}

// takeNext walks the round until it finds a shard with a deliverable
// message whose lease it can take. Looking is cheap (two reads, no
// lightweight transaction), so shards without work cost little.
func (c *Consumer) takeNext(ctx context.Context, now time.Time) (bool, error) {
	for c.ln.next < len(c.ln.round) {
		s := c.ln.round[c.ln.next]
		c.ln.next++
		st, err := c.svc.store.ReadQueueShard(ctx, &driver.QueueShardParams{Queue: c.q.stored(), Shard: s})
		if err != nil {
			return false, err
		}
		if st.Holder != "" && st.Holder != c.cfg.Name {
			// Someone else is working it and will give it a wake time
			// when it lets go; if it dies, the sweep finds the shard.
			delete(c.wake, s)
			continue
		}
		page, first, full, err := c.scan(ctx, now, s, st.Floor, false, nil)
		if err != nil {
			return false, err
		}
		floor := c.advanceFloor(ctx, s, st.Floor, first, now, nil)
		if !hasDeliverable(page.Messages, now) {
			c.schedule(ctx, now, s, page, full)
			continue
		}
		if c.acquire(ctx, s, now) {
			c.ln.lease.floor, c.ln.lease.stored = floor, floor
			return true, nil
		}
		delete(c.wake, s) // taken by another consumer just now
	}
	return false, nil
}

func hasDeliverable(ms []driver.Message, now time.Time) bool {
	for _, m := range ms {
		if !m.VisibleAt.After(now) {
			return true
		}
	}
	return false
}

// scan reads shard s from its floor (less the skew allowance) up to
// readTo, paging past rows that cannot be delivered (hidden ones) until it
// finds one that can or the range ends, for at most maxPages reads.
//
// first is the floor the shard may advance to: the due time of the
// earliest live message seen, or, when none was seen, the end of the range
// (or where reading stopped, if it stopped early). full reports that
// reading stopped at a full page, so more rows may follow.
//
// With a start key the read begins just after it instead, and first means
// nothing (rows below start were not read).
func (c *Consumer) scan(ctx context.Context, now time.Time, s int, floor time.Time, withBody bool, start *driver.MessageKey) (_ *driver.MessagePage, first time.Time, full bool, _ error) {
	const maxPages = 10
	from, deep := c.readFrom(now, s, floor)
	to := now
	out := &driver.MessagePage{}
	var after *driver.MessageKey // the last row of the previous page
	if start != nil {
		from, deep, after = start.Due, false, start
	}
	for page := 0; ; page++ {
		p, err := c.svc.store.ReadMessages(ctx, &driver.ReadMessagesParams{
			Queue: c.q.stored(), Shard: s, From: from, To: to, Limit: c.cfg.BatchSize, WithBody: withBody,
		})
		if err != nil {
			return nil, time.Time{}, false, err
		}
		fresh := 0
		if after == nil && len(out.Messages) == 0 {
			// The first page, nothing to skip: take it as it is rather
			// than copy it row by row.
			out.Messages, fresh = p.Messages, len(p.Messages)
			if fresh > 0 && first.IsZero() {
				first = p.Messages[0].Due
			}
		} else {
			for _, m := range p.Messages {
				if after != nil && !keyAfter(m.MessageKey, *after) {
					continue // seen on the previous page
				}
				fresh++
				if first.IsZero() {
					first = m.Due
				}
				out.Messages = append(out.Messages, m)
			}
		}
		out.Fragments = append(out.Fragments, p.Fragments...)
		full = len(p.Messages)+len(p.Fragments) >= c.cfg.BatchSize
		if !full {
			if first.IsZero() {
				first = to // the whole range held nothing live
			}
			break
		}
		last := lastKey(p)
		stuck := after != nil && fresh == 0 && last == *after // a page full of one due time
		if hasDeliverable(out.Messages, now) || stuck || page == maxPages-1 {
			if first.IsZero() {
				first = last.Due // nothing live up to here; maybe beyond
			}
			break
		}
		// A full page of hidden messages: read on from its last row. Rows
		// with that due time are read again and skipped by key.
		after, from = &last, last.Due
	}
	if deep {
		// Everything below first was read: the shard holds nothing live
		// under its floor, until the next deep read checks again.
		c.deepRead[s] = now
	}
	return out, first, full, nil
}

func keyAfter(a, b driver.MessageKey) bool {
	if !a.Due.Equal(b.Due) {
		return a.Due.After(b.Due)
	}
	ta, tb := a.ID.Time(), b.ID.Time()
	if !ta.Equal(tb) {
		return ta.After(tb)
	}
	return a.ID.String() > b.ID.String()
}

func lastKey(p *driver.MessagePage) driver.MessageKey {
	var k driver.MessageKey
	if n := len(p.Messages); n > 0 {
		k = p.Messages[n-1].MessageKey
	}
	if n := len(p.Fragments); n > 0 && (k.Due.IsZero() || keyAfter(p.Fragments[n-1], k)) {
		k = p.Fragments[n-1]
	}
	return k
}

// floorStep is the least advance worth a write of the floor.
const floorStep = time.Second

// advanceFloor records a new floor for shard s after a read found no live
// message due before first (at the service clock's now): the floor is
// min(first, now - MaxClockSkew). Every live message is at or above it:
// those the read saw are due at first or later, and any message put since
// is due no earlier than its producer's clock, which is at most
// MaxClockSkew behind now. So a reader may start at the floor itself; the
// skew allowance only costs anything while the shard is nearly drained.
// Anyone who has read the shard may write the floor, holder or not.
//
// The floor is written when it moves forward by at least floorStep, or
// back (a live message turned up below it: a late write, or a clock skewed
// more than allowed). It returns the floor in effect afterwards.
func (c *Consumer) advanceFloor(ctx context.Context, s int, stored, first, now time.Time, l *lease) time.Time {
	floor := first
	if limit := now.Add(-c.svc.cfg.MaxClockSkew); limit.Before(floor) {
		floor = limit
	}
	if d := floor.Sub(stored); d >= 0 && d < floorStep {
		return stored
	}
	err := c.svc.store.SetFloor(ctx, &driver.SetFloorParams{Queue: c.q.stored(), Shard: s, Floor: floor})
	if err != nil {
		c.log.Warn("queue: recording a shard's floor failed; it will be retried", "shard", s, "err", err)
		if floor.Before(stored) {
			return floor // read from the lower one regardless
		}
		return stored
	}
	if l != nil {
		l.stored = floor
	}
	return floor
}

// floorRefreshEvery is how many reads after the cursor pass between two
// floor updates while a lease keeps delivering.
const floorRefreshEvery = 10

// refreshFloor moves the leased shard's floor up to its first live message
// without delivering: while the cursor serves a long run of deliveries the
// floor would otherwise stay where the run began, and whoever reads the
// shard next (after a lease hand-over, say) would go through every
// tombstone since.
func (c *Consumer) refreshFloor(ctx context.Context, now time.Time, l *lease) {
	to := now
	page, err := c.svc.store.ReadMessages(ctx, &driver.ReadMessagesParams{
		Queue: c.q.stored(), Shard: l.shard, From: l.floor, To: to, Limit: 10,
	})
	if err != nil {
		c.log.Debug("queue: reading a shard's floor failed", "shard", l.shard, "err", err)
		return
	}
	switch {
	case len(page.Messages) > 0:
		l.floor = c.advanceFloor(ctx, l.shard, l.stored, page.Messages[0].Due, now, l)
	case len(page.Fragments) == 0:
		l.floor = c.advanceFloor(ctx, l.shard, l.stored, to, now, l)
	}
}

// acquire takes shard s's lease. A lease whose outcome is unknown is
// probed with a renewal, which applies only if the lease is ours.
func (c *Consumer) acquire(ctx context.Context, s int, now time.Time) bool {
	p := &driver.LeaseParams{Queue: c.q.stored(), Shard: s, Holder: c.cfg.Name, Since: now, TTL: c.cfg.LeaseTTL}
	started := time.Now()
	res, err := c.svc.store.AcquireLease(ctx, p)
	if errors.Is(err, driver.ErrUnknownOutcome) {
		started = time.Now()
		res, err = c.svc.store.RenewLease(ctx, p)
	}
	if err == nil && !res.Held && res.Holder == c.cfg.Name {
		// Ours already (an earlier attempt whose answer was lost).
		started = time.Now()
		res, err = c.svc.store.RenewLease(ctx, p)
	}
	if err != nil {
		c.log.Debug("queue: taking a shard lease failed", "shard", s, "err", err)
		return false
	}
	if !res.Held {
		return false
	}
	c.svc.stats.Leases.Add(1)
	c.ln.lease = &lease{shard: s, since: now, renewedAt: started}
	return true
}

// keepLease renews the lease once a third of its TTL has passed and
// reports whether it is still held.
func (c *Consumer) keepLease(ctx context.Context) bool {
	l := c.ln.lease
	if time.Since(l.renewedAt) < c.cfg.LeaseTTL/3 {
		return true
	}
	started := time.Now()
	res, err := c.svc.store.RenewLease(ctx, &driver.LeaseParams{
		Queue: c.q.stored(), Shard: l.shard, Holder: c.cfg.Name, Since: l.since, TTL: c.cfg.LeaseTTL,
	})
	if err == nil && res.Held {
		l.renewedAt = started
		return true
	}
	if err == nil {
		c.svc.stats.LeasesLost.Add(1)
		c.log.Info("queue: shard lease was taken over", "shard", l.shard, "by", res.Holder)
	} else {
		c.log.Warn("queue: renewing a shard lease failed; moving on", "shard", l.shard, "err", err)
	}
	c.ln.lease = nil
	return false
}

// releaseLeases gives back the lease of every lane.
func (c *Consumer) releaseLeases(ctx context.Context) {
	cur := c.ln
	for _, l := range c.lanes {
		c.ln = l
		c.releaseLease(ctx)
	}
	c.ln = cur
}

// releaseLease gives the shard of c.ln back. A failure only delays the next holder
// until the lease's TTL ends.
func (c *Consumer) releaseLease(ctx context.Context) {
	l := c.ln.lease
	if l == nil {
		return
	}
	c.ln.lease = nil
	_, err := c.svc.store.ReleaseLease(ctx, &driver.LeaseParams{Queue: c.q.stored(), Shard: l.shard, Holder: c.cfg.Name})
	if err != nil {
		c.log.Debug("queue: releasing a shard lease failed; it will expire", "shard", l.shard, "err", err)
	}
}

// deliver reads the leased shard and hands out up to max deliveries. more
// reports that the shard may hold further deliverable messages.
func (c *Consumer) deliver(ctx context.Context, now time.Time, max int) (_ []*Delivery, more bool, _ error) {
	l := c.ln.lease
	var (
		page *driver.MessagePage
		full bool
		err  error
	)
	if l.cursor != nil {
		if l.cursorReads++; l.cursorReads%floorRefreshEvery == 0 {
			c.refreshFloor(ctx, now, l)
		}
		page, _, full, err = c.scan(ctx, now, l.shard, l.floor, true, l.cursor)
		if err != nil {
			return nil, false, err
		}
		if !hasDeliverable(page.Messages, now) {
			l.cursor = nil
		}
	}
	if l.cursor == nil {
		var first time.Time
		page, first, full, err = c.scan(ctx, now, l.shard, l.floor, true, nil)
		if err != nil {
			return nil, false, err
		}
		if len(page.Fragments) > 0 {
			// Leftovers of updates that lost a race with their message's
			// delete; they hold no message.
			if err := c.svc.store.DeleteMessages(ctx, &driver.DeleteMessagesParams{Queue: c.q.stored(), Keys: page.Fragments}); err != nil {
				c.log.Debug("queue: deleting fragments failed", "shard", l.shard, "err", err)
			}
		}
		l.floor = c.advanceFloor(ctx, l.shard, l.stored, first, now, l)
	}

	var dead []driver.DeadLetter
	var marks []driver.Message
	for _, m := range page.Messages {
		if m.VisibleAt.After(now) {
			continue
		}
		if m.Deliveries >= c.q.MaxDeliveries {
			if m.LastError == "" {
				m.LastError = "not acknowledged"
			}
			dead = append(dead, driver.DeadLetter{Message: m, DiedAt: now})
			continue
		}
		if len(marks) == max {
			more = true
			continue
		}
		m.Deliveries++
		m.VisibleAt = now.Add(c.q.VisibilityTimeout)
		// If this delivery is never settled (the consumer dies, the
		// handler hangs) this is what the dead letter will say.
		m.LastError = fmt.Sprintf("delivery %d (consumer %s) was not acknowledged within the visibility timeout of %v",
			m.Deliveries, c.cfg.Name, c.q.VisibilityTimeout)
		marks = append(marks, m)
	}
	if len(dead) > 0 {
		if err := c.svc.store.DeadLetter(ctx, &driver.DeadLetterParams{Queue: c.q.stored(), Letters: dead}); err != nil {
			c.log.Warn("queue: moving messages to the dead letters failed; will retry", "count", len(dead), "err", err)
		} else {
			c.svc.stats.DeadLettered.Add(int64(len(dead)))
		}
	}
	if len(marks) == 0 {
		return nil, false, nil
	}
	// Counting and hiding comes first: a consumer that dies after this
	// write still used up a delivery, and nobody else gets the messages
	// until the visibility timeout ends.
	if err := c.svc.store.UpdateMessages(ctx, &driver.UpdateMessagesParams{Queue: c.q.stored(), Updates: marks}); err != nil {
		return nil, false, fmt.Errorf("queue: marking deliveries in %q shard %d: %w", c.q.Name, l.shard, err)
	}
	out := make([]*Delivery, len(marks))
	for i, m := range marks {
		out[i] = &Delivery{svc: c.svc, q: c.q, msg: m, retryDelay: c.cfg.RetryDelay, backoff: c.cfg.Backoff}
	}
	last := marks[len(marks)-1].MessageKey
	l.cursor = &last
	c.svc.stats.Delivered.Add(int64(len(out)))
	return out, more || full, nil
}

// Start runs the receive loop in the background: it asks for as many
// deliveries as there are idle handlers, runs ConsumerConfig.Handler on
// each (with a context that ends at the visibility timeout) and
// acknowledges or fails it by the handler's result. ctx bounds nothing
// but the start itself; use Stop. Once its process has read that the
// queue was deleted, the loop stops receiving by itself (a record merely
// not found, as a lagging replica may answer, does not stop it); call
// Stop all the same.
func (c *Consumer) Start(ctx context.Context) error {
	if c.cfg.Handler == nil {
		return invalidf("consumer of %q: Start needs ConsumerConfig.Handler", c.q.Name)
	}
	c.runMu.Lock()
	defer c.runMu.Unlock()
	if c.running {
		return fmt.Errorf("queue: consumer %s of %q is already running", c.cfg.Name, c.q.Name)
	}
	c.mu.Lock()
	stopped := c.stopped
	c.mu.Unlock()
	if stopped {
		return ErrStopped
	}
	loopCtx, stopLoop := context.WithCancel(context.WithoutCancel(ctx))
	handlerCtx, abort := context.WithCancel(context.WithoutCancel(ctx))
	c.running, c.stopLoop, c.abort = true, stopLoop, abort
	c.loopDone = make(chan struct{})
	go c.loop(loopCtx, handlerCtx)
	return nil
}

// gatherWait is how long the receive loop waits for more idle handlers
// once it has fewer than half of them.
const gatherWait = 2 * time.Millisecond

func (c *Consumer) loop(ctx, handlerCtx context.Context) {
	defer close(c.loopDone)
	slots := make(chan struct{}, c.cfg.Concurrency)
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		case <-c.Ring(): // a put or a settled delivery in this process
			return true
		}
	}
	for ctx.Err() == nil {
		// Wait for at least one idle handler, then take all idle ones.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		// Each receive costs a read and a write whatever its size, so
		// when handlers are finishing one by one, wait a moment to take
		// several at once.
		free := 1
		gather := time.NewTimer(gatherWait)
	fill:
		for free < c.cfg.Concurrency {
			if free >= c.cfg.Concurrency/2 {
				select {
				case slots <- struct{}{}:
					free++
					continue
				default:
					break fill
				}
			}
			select {
			case slots <- struct{}{}:
				free++
			case <-gather.C:
				break fill
			}
		}
		gather.Stop()
		ds, err := c.Receive(ctx, free)
		if errors.Is(err, errDeleted) {
			// Nothing of this queue will be delivered again; handlers in
			// flight finish, and Stop still ends the consumer.
			c.log.Warn("queue: the queue was deleted; this consumer stops receiving", "err", err)
			return
		}
		failed := err != nil && ctx.Err() == nil
		if failed {
			c.log.Warn("queue: receiving failed", "err", err)
		}
		for range free - len(ds) {
			<-slots
		}
		for _, d := range ds {
			c.handlers.Add(1)
			go func() {
				defer c.handlers.Done()
				defer func() { <-slots }()
				c.handle(handlerCtx, d)
			}()
		}
		sleep := c.nextWake()
		if failed {
			sleep = c.cfg.PollInterval // a failing store is not asked faster than that
		}
		if len(ds) == 0 && !wait(sleep) {
			return
		}
	}
}

// handle runs the handler on one delivery and settles it.
func (c *Consumer) handle(ctx context.Context, d *Delivery) {
	// The handler may run until the delivery's visibility ends, which
	// Delivery.Extend moves.
	hctx, cancel := withMovableDeadline(ctx, d.VisibleUntil().Sub(c.svc.now()))
	defer cancel()
	d.mu.Lock()
	d.handlerCtx = hctx
	d.mu.Unlock()
	err := c.call(hctx, d)
	// Settle even when the handlers' context was cancelled by Stop: the
	// outcome is known and worth recording.
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer scancel()
	if err == nil {
		if aerr := d.Ack(sctx); aerr != nil {
			c.log.Warn("queue: acknowledging failed; the message will be delivered again", "id", d.ID(), "err", aerr)
		}
		return
	}
	if ferr := d.Fail(sctx, err); errors.Is(ferr, ErrStaleReceipt) {
		// Expected of a handler that ran past its visibility, or of a
		// message purged meanwhile.
		c.log.Debug("queue: a failure was not recorded: the delivery is no longer current", "id", d.ID(), "err", ferr)
	} else if ferr != nil {
		c.log.Warn("queue: recording a failure failed", "id", d.ID(), "err", ferr)
	}
}

func (c *Consumer) call(ctx context.Context, d *Delivery) (err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("queue: handler panicked", "id", d.ID(), "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("handler panicked: %v", p)
		}
	}()
	return c.cfg.Handler(ctx, d)
}

// Stop ends the consumer gracefully: it stops receiving, waits for running
// handlers to finish and settle (until ctx ends, when their contexts are
// cancelled and Stop waits for them to return), and then releases its shard
// leases so other consumers can take the shards at once. Receive fails with
// ErrStopped afterwards. Stop is also the way to end a consumer used only
// through Receive.
func (c *Consumer) Stop(ctx context.Context) error {
	c.runMu.Lock()
	running := c.running
	c.running = false
	c.runMu.Unlock()
	var err error
	if running {
		c.stopLoop()
		<-c.loopDone
		done := make(chan struct{})
		go func() { c.handlers.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			err = fmt.Errorf("queue: stopping consumer %s: handlers still running: %w", c.cfg.Name, ctx.Err())
			c.abort()
			<-done
		}
		c.abort()
	}
	c.svc.consumers.remove(c.q.Name, c.hints)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	c.releaseLeases(rctx)
	return err
}
