package queue

import (
	"context"
	"sync"
	"time"
	"weak"

	"github.com/abacusdb/abacus/driver"
)

// Prompt delivery. Producers only ever write the current window's shard
// (and, with a clock up to a window behind, the previous one), so those two
// shards are looked at on every round. Every other shard changes only when
// time passes: a delayed message falls due, a hidden one becomes visible
// again. So when a look at such a shard finds nothing to deliver, the
// consumer also reads when the shard's next message falls due and when its
// first hidden message comes back, and looks again at that moment: the
// shard's wake time. The catch-up sweep stays, as the backstop for what a
// wake time cannot know (another process releasing or failing a message
// early, a consumer that crashed while holding a shard's lease).
//
// Within one process the service also tells its consumers directly: a put
// or a settled delivery hints the shard and the time it matters, and pokes
// the receive loop awake.

// hints is a consumer's inbox of wake times from its own process. It has
// its own lock because the hints come from puts and from handlers settling
// deliveries, while Receive holds the consumer's lock throughout a round.
type hints struct {
	mu      sync.Mutex
	pending map[int]time.Time
	poke    chan struct{} // buffered 1: the receive loop's doorbell
}

func newHints() *hints {
	return &hints{pending: map[int]time.Time{}, poke: make(chan struct{}, 1)}
}

// add records that shard s may have something deliverable at t, and
// rings the bell if that is already so at now. A hint for later only
// shortens the loop's next sleep (nextWake): ringing for it would cost a
// whole round per delayed put.
func (h *hints) add(s int, t, now time.Time) {
	h.mu.Lock()
	if old, ok := h.pending[s]; !ok || t.Before(old) {
		h.pending[s] = t
	}
	h.mu.Unlock()
	if t.After(now) {
		return
	}
	select {
	case h.poke <- struct{}{}:
	default:
	}
}

// drainInto moves the pending hints into wake, keeping the earlier time
// for each shard.
func (h *hints) drainInto(wake map[int]time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s, t := range h.pending {
		if old, ok := wake[s]; !ok || t.Before(old) {
			wake[s] = t
		}
	}
	clear(h.pending)
}

// earliest is the earliest pending hint, zero when there is none.
func (h *hints) earliest() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	var first time.Time
	for _, t := range h.pending {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	return first
}

// consumerSet is the service's registry of its consumers' inboxes, by
// queue. It holds them weakly: a consumer dropped without Stop (one used
// only through Receive, say) is collected as before, and its entry goes at
// the next hint.
type consumerSet struct {
	mu      sync.Mutex
	byQueue map[string]map[weak.Pointer[hints]]struct{}
}

func (cs *consumerSet) add(queue string, h *hints) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.byQueue == nil {
		cs.byQueue = map[string]map[weak.Pointer[hints]]struct{}{}
	}
	set := cs.byQueue[queue]
	if set == nil {
		set = map[weak.Pointer[hints]]struct{}{}
		cs.byQueue[queue] = set
	}
	set[weak.Make(h)] = struct{}{}
}

func (cs *consumerSet) remove(queue string, h *hints) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	delete(cs.byQueue[queue], weak.Make(h))
	if len(cs.byQueue[queue]) == 0 {
		delete(cs.byQueue, queue)
	}
}

// hint tells every consumer of queue in this process that shard s may
// have something deliverable at t (now is the service clock's time).
func (cs *consumerSet) hint(queue string, s int, t, now time.Time) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	set := cs.byQueue[queue]
	for w := range set {
		if h := w.Value(); h != nil {
			h.add(s, t, now)
		} else {
			delete(set, w)
		}
	}
	if len(set) == 0 {
		delete(cs.byQueue, queue)
	}
}

// count is how many consumers of queue are registered (for tests).
func (cs *consumerSet) count(queue string) int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.byQueue[queue])
}

// wakeHorizon bounds the read for a shard's next due message; a message
// due further ahead is left to the sweeps.
const wakeHorizon = 10 * 365 * 24 * time.Hour

// minPoll keeps the receive loop from spinning on a wake time that has
// just passed.
const minPoll = 5 * time.Millisecond

// everyRound reports whether shard s is looked at on every round: the
// producers' current shards and the previous window's, which producers
// with clocks behind may still write.
func (c *Consumer) everyRound(now time.Time, s int) bool {
	m := c.laneOf(s).math
	b := m.Bucket(now)
	return m.First(s) == m.ShardOf(b) || m.First(s) == m.ShardOf(b-1)
}

// schedule records when shard s, just looked at and found with nothing
// deliverable, next needs a look: the earlier of when its first hidden
// message (of those page read) comes back and when its next message falls
// due. Shards looked at every round need no wake time, and a page cut
// short (full) says nothing certain about what is hidden beyond it, so
// those are left to the rounds and the sweep.
func (c *Consumer) schedule(ctx context.Context, now time.Time, s int, page *driver.MessagePage, full bool) {
	delete(c.wake, s)
	if full || c.everyRound(now, s) {
		return
	}
	var next time.Time
	for _, m := range page.Messages {
		if m.VisibleAt.After(now) && (next.IsZero() || m.VisibleAt.Before(next)) {
			next = m.VisibleAt
		}
	}
	ahead, err := c.svc.store.ReadMessages(ctx, &driver.ReadMessagesParams{
		Queue: c.q.stored(), Shard: s, From: now.Add(time.Millisecond), To: now.Add(wakeHorizon), Limit: 1,
	})
	if err != nil {
		c.log.Debug("queue: reading a shard's next due time failed; the sweep will look", "shard", s, "err", err)
	} else if len(ahead.Messages) > 0 && (next.IsZero() || ahead.Messages[0].Due.Before(next)) {
		next = ahead.Messages[0].Due
	}
	if !next.IsZero() {
		c.wake[s] = next
	}
}

// nextWake is how long the receive loop may sleep before a known wake time
// or hint: at most PollInterval, at least minPoll. Wake times that were
// already due when the last round began had their look in it; one still
// there (the look failed, or a shard keeps failing to deliver) waits for
// PollInterval like everything else, or the loop would spin on it.
func (c *Consumer) nextWake() time.Duration {
	d := c.cfg.PollInterval
	if c.svc.pauses.last(c.q.stored()).Paused {
		// Hints and wake times wait for the resume; until then only the
		// pause state is worth a look.
		return d
	}
	c.mu.Lock()
	first := c.hints.earliest()
	for s, t := range c.wake {
		if t.After(c.laneOf(s).roundAt) && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	c.mu.Unlock()
	if !first.IsZero() {
		d = min(d, first.Sub(c.svc.now()))
	}
	return max(d, minPoll)
}

// Ring receives when a put, failure or release in this process may have
// made something deliverable for this consumer: for callers that wait
// between Receive calls (Start's loop does). Several waiters share one
// bell; those it does not wake find out at their next poll.
func (c *Consumer) Ring() <-chan struct{} { return c.hints.poke }
