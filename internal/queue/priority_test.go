package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// levelsOf lists the deliveries' priority levels, in order.
func levelsOf(ds []*Delivery) []int {
	out := make([]int, len(ds))
	for i, d := range ds {
		out[i] = d.Priority()
	}
	return out
}

// putLevels puts n messages at each level of levels, interleaved, all due
// now, one Put each (so from several shards of each lane's window).
func putLevels(t *testing.T, e *env, q string, n int, levels ...int) map[ID]int {
	t.Helper()
	put := map[ID]int{}
	for i := range n {
		for _, l := range levels {
			put[e.put(t, e.svc, q, Message{Body: []byte(fmt.Sprintf("%d-%d", l, i)), Priority: l})] = l
		}
	}
	return put
}

// putBacklog puts n level-0 messages in one batch (one shard) and lets
// them fall due.
func putBacklog(t *testing.T, e *env, q string, n int) {
	t.Helper()
	batch := make([]Message, n)
	for i := range batch {
		batch[i] = Message{Body: []byte(fmt.Sprint(i))}
	}
	if _, err := e.svc.PutBatch(ctxT(t), q, batch); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
}

// The promise: among due messages, a receive hands out those of higher
// levels first, across calls and within one call, and each delivery says
// its level.
func TestPrioritiesHigherLevelsFirst(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, e *env) {
		q := e.create(t, QueueConfig{Shards: 4, Spread: 1, Priorities: 3})
		put := putLevels(t, e, q.Name, 5, 0, 2, 1)
		e.clock.Advance(time.Second)
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name})

		var levels []int
		got := map[ID]bool{}
		for range 20 {
			ds := receive(t, c, 4)
			if len(ds) == 0 {
				break
			}
			for _, d := range ds {
				if put[d.ID()] != d.Priority() {
					t.Fatalf("message %s put at level %d is delivered as level %d", d.ID(), put[d.ID()], d.Priority())
				}
				if got[d.ID()] {
					t.Fatalf("message %s delivered twice", d.ID())
				}
				got[d.ID()] = true
				if err := d.Ack(ctxT(t)); err != nil {
					t.Fatal(err)
				}
			}
			levels = append(levels, levelsOf(ds)...)
		}
		if len(got) != len(put) {
			t.Fatalf("delivered %d of %d messages", len(got), len(put))
		}
		if !slices.IsSortedFunc(levels, func(a, b int) int { return b - a }) {
			t.Fatalf("levels in delivery order %v: a lower level came before a higher one", levels)
		}

		// Within one call too.
		putLevels(t, e, q.Name, 3, 0, 1, 2)
		e.clock.Advance(time.Second)
		ds := receive(t, c, 9)
		if want := []int{2, 2, 2, 1, 1, 1, 0, 0, 0}; !slices.Equal(levelsOf(ds), want) {
			t.Fatalf("one receive of 9 gives levels %v, want %v", levelsOf(ds), want)
		}
	})
}

// A consumer working a low level's shard still takes a higher-level
// message first at its next receive: each receive asks the levels from the
// top, whatever lease it holds below.
func TestPrioritiesAHigherMessageOvertakesALowerBacklog(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, e *env) {
		q := e.create(t, QueueConfig{Shards: 4, Priorities: 2})
		putBacklog(t, e, q.Name, 20)
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name})
		if ds := receive(t, c, 5); len(ds) != 5 || slices.Max(levelsOf(ds)) != 0 {
			t.Fatalf("first receive = levels %v, want five of level 0", levelsOf(ds))
		}
		urgent := e.put(t, e.svc, q.Name, Message{Body: []byte("urgent"), Priority: 1})
		ds := receive(t, c, 5)
		if len(ds) == 0 || ds[0].ID() != urgent || ds[0].Priority() != 1 {
			t.Fatalf("after a level-1 put the next receive = %v (levels %v), want %s first", deliveryIDs(ds), levelsOf(ds), urgent)
		}
		if len(ds) != 5 {
			t.Fatalf("the receive filled %d of 5 places; the rest should come from level 0's backlog", len(ds))
		}
	})
}

// A message's level is checked at the put: outside the queue's levels the
// whole batch is refused and nothing is stored. A batch mixing levels
// lands whole.
func TestPrioritiesOutOfRangeIsRefused(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, e *env) {
		q := e.create(t, QueueConfig{Shards: 4, Priorities: 2})
		for _, p := range []int{-1, 2, 100} {
			_, err := e.svc.PutBatch(ctxT(t), q.Name, []Message{{Body: []byte("ok")}, {Body: []byte("bad"), Priority: p}})
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("a put at level %d = %v, want ErrInvalid", p, err)
			}
		}
		one := e.create(t, QueueConfig{Shards: 4})
		if _, err := e.svc.Put(ctxT(t), one.Name, Message{Body: []byte("x"), Priority: 1}); !errors.Is(err, ErrInvalid) {
			t.Errorf("a level-1 put to a queue of one level = %v, want ErrInvalid", err)
		}
		if o := e.observe(t, q.Name); o.Messages != 0 {
			t.Fatalf("refused puts stored %d messages", o.Messages)
		}
		ids, err := e.svc.PutBatch(ctxT(t), q.Name, []Message{{Body: []byte("a")}, {Body: []byte("b"), Priority: 1}, {Body: []byte("c")}})
		if err != nil || len(ids) != 3 {
			t.Fatalf("a mixed batch = %v, %v", ids, err)
		}
		o := e.observe(t, q.Name)
		byLevel := map[int]int{}
		for _, v := range o.Shards {
			byLevel[v.Priority] += v.Messages
			if v.Priority != v.Shard/q.Shards {
				t.Errorf("shard %d is shown at level %d", v.Shard, v.Priority)
			}
		}
		if len(o.Shards) != 2*q.Shards || byLevel[0] != 2 || byLevel[1] != 1 {
			t.Fatalf("observed %d shards holding %v by level, want %d shards, 2 at level 0 and 1 at level 1", len(o.Shards), byLevel, 2*q.Shards)
		}
	})
}

// Creating: 1 to 4 levels, whose shards together stay within the limit.
func TestPrioritiesCreateLimits(t *testing.T) {
	e := newEnv(t, "embedded", embeddedStore(t))
	for _, c := range []QueueConfig{
		{Shards: 4, Priorities: 5},
		{Shards: 4, Priorities: -1},
		{Shards: 2048, Priorities: 3},
	} {
		c.Name = queueName(t)
		if _, err := e.svc.Create(ctxT(t), c); !errors.Is(err, ErrInvalid) {
			t.Errorf("Create(%d shards, %d levels) = %v, want ErrInvalid", c.Shards, c.Priorities, err)
		}
	}
	q := e.create(t, QueueConfig{Shards: 1024, Priorities: 4})
	if q.Levels() != 4 || q.storedShards() != 4096 {
		t.Fatalf("a queue of 1024 shards at 4 levels has %d levels, %d shards", q.Levels(), q.storedShards())
	}
	if one := e.create(t, QueueConfig{}); one.Levels() != 1 || one.Priorities != 1 {
		t.Fatalf("a queue made without levels has %d (stored %d), want 1", one.Levels(), one.Priorities)
	}
}

// A level outlives every path a message takes: a failure, the dead
// letters, a requeue, an acknowledgement by receipt from another process.
func TestPrioritiesLevelKeptThroughDeadLettersAndReceipts(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, e *env) {
		q := e.create(t, QueueConfig{Shards: 4, Priorities: 3, MaxDeliveries: 1})
		id := e.put(t, e.svc, q.Name, Message{Body: []byte("poison"), Priority: 2})
		e.clock.Advance(time.Second)
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name})
		ds := receive(t, c, 1)
		if len(ds) != 1 || ds[0].Priority() != 2 {
			t.Fatalf("received levels %v, want the level-2 message", levelsOf(ds))
		}
		if err := ds[0].Fail(ctxT(t), errors.New("bad")); err != nil {
			t.Fatal(err)
		}
		dead, err := e.svc.DeadLetters(ctxT(t), q.Name, 0)
		if err != nil || len(dead) != 1 || dead[0].ID != id || dead[0].Priority != 2 {
			t.Fatalf("dead letters = %+v, %v; want %s at level 2", dead, err, id)
		}
		if _, err := e.svc.Requeue(ctxT(t), q.Name, nil); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Second)
		ds = receive(t, c, 1)
		if len(ds) != 1 || ds[0].ID() != id || ds[0].Priority() != 2 {
			t.Fatalf("after the requeue received %v (levels %v), want %s at level 2", deliveryIDs(ds), levelsOf(ds), id)
		}
		if ds[0].Shard() < 2*q.Shards {
			t.Fatalf("the requeued message is in shard %d, outside level 2's lane", ds[0].Shard())
		}
		other := e.service(t, e.clock)
		if err := other.Ack(ctxT(t), q.Name, ds[0].Receipt()); err != nil {
			t.Fatalf("Ack by receipt from another process: %v", err)
		}
		if o := e.observe(t, q.Name); o.Messages != 0 {
			t.Fatalf("%d messages left after the ack", o.Messages)
		}
		// A receipt naming a shard beyond the queue's lanes is refused.
		bad := receipt{Key: driver.MessageKey{Shard: 3 * q.Shards, Due: start, ID: id}, Deliveries: 1}
		if err := other.Ack(ctxT(t), q.Name, bad.String()); !errors.Is(err, ErrInvalid) {
			t.Fatalf("Ack of a receipt for shard %d = %v, want ErrInvalid", 3*q.Shards, err)
		}
	})
}

// A dedup id names one message of the queue, whatever its level: a
// repeat at another level is answered with the first put's id, and the
// message keeps the first put's level.
func TestPrioritiesDedupAcrossLevels(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, e *env) {
		q := e.create(t, QueueConfig{Shards: 4, Priorities: 2})
		first := e.put(t, e.svc, q.Name, Message{Body: []byte("once"), DedupID: "order-7", Priority: 1})
		ids, dup, err := e.svc.PutBatchDedup(ctxT(t), q.Name, []Message{{Body: []byte("once"), DedupID: "order-7"}})
		if err != nil || ids[0] != first || !dup[0] {
			t.Fatalf("the repeat at level 0 = %v %v %v, want %s as a duplicate", ids, dup, err, first)
		}
		e.clock.Advance(time.Second)
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name})
		ds := receive(t, c, 5)
		if len(ds) != 1 || ds[0].ID() != first || ds[0].Priority() != 1 {
			t.Fatalf("received %v (levels %v), want %s once, at level 1", deliveryIDs(ds), levelsOf(ds), first)
		}
	})
}

// Purge and delete reach every level's lane.
func TestPrioritiesPurgeAndDeleteEveryLane(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, e *env) {
		q := e.create(t, QueueConfig{Shards: 4, Priorities: 3})
		putLevels(t, e, q.Name, 2, 0, 1, 2)
		res, err := e.svc.Purge(ctxT(t), q.Name, false)
		if err != nil || res.Messages != 6 {
			t.Fatalf("Purge = %+v, %v; want 6 messages", res, err)
		}
		if o := e.observe(t, q.Name); o.Messages != 0 {
			t.Fatalf("%d messages left after the purge", o.Messages)
		}
		putLevels(t, e, q.Name, 1, 1, 2)
		del, err := e.svc.Delete(ctxT(t), q.Name)
		if err != nil || del.Messages != 2 {
			t.Fatalf("Delete = %+v, %v; want 2 messages", del, err)
		}
	})
}

// Start's loop hands messages to its handler highest level first, and
// sleeps no longer for a queue with levels.
func TestPrioritiesStartRunsHigherLevelsFirst(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, e *env) {
		q := e.create(t, QueueConfig{Shards: 4, Priorities: 4})
		put := putLevels(t, e, q.Name, 3, 0, 3, 1, 2)
		e.clock.Advance(time.Second)
		got := make(chan int, len(put))
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name, Concurrency: 1, Handler: func(_ context.Context, d *Delivery) error {
			got <- d.Priority()
			return nil
		}})
		if err := c.Start(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		var levels []int
		for range put {
			select {
			case l := <-got:
				levels = append(levels, l)
			case <-time.After(30 * time.Second):
				t.Fatalf("handled levels %v, then nothing for 30 s", levels)
			}
		}
		if !slices.IsSortedFunc(levels, func(a, b int) int { return b - a }) {
			t.Fatalf("handled levels %v: a lower level before a higher one", levels)
		}
	})
}

// A consumer kept busy by a higher level gives back the lease it held in a
// lower one, so that another consumer can work that level's backlog
// instead of finding the shard held and skipping it.
func TestPrioritiesABusyConsumerLetsGoOfLowerLanes(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, e *env) {
		q := e.create(t, QueueConfig{Shards: 4, Priorities: 2})
		putBacklog(t, e, q.Name, 20)
		a := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name, Name: "a"})
		if ds := receive(t, a, 1); len(ds) != 1 || ds[0].Priority() != 0 {
			t.Fatalf("a's first receive = levels %v, want one of level 0", levelsOf(ds))
		}
		e.put(t, e.svc, q.Name, Message{Body: []byte("urgent"), Priority: 1})
		if ds := receive(t, a, 1); len(ds) != 1 || ds[0].Priority() != 1 {
			t.Fatalf("a's second receive = levels %v, want the level-1 message", levelsOf(ds))
		}
		for _, v := range e.observe(t, q.Name).Shards {
			if v.Priority == 0 && v.Holder != "" {
				t.Fatalf("level 0's shard %d is still held by %s while a works level 1", v.Shard, v.Holder)
			}
		}
		b := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name, Name: "b"})
		if ds := receive(t, b, 5); len(ds) != 5 || slices.Max(levelsOf(ds)) != 0 {
			t.Fatalf("b received levels %v, want five of level 0's backlog", levelsOf(ds))
		}
	})
}

// Delayed messages of every level are found through their shards' wake
// times as they fall due, not only at a sweep: a consumer that polls every
// window, with sweeps an hour apart, gets messages another process put
// five minutes ahead at levels 1 and 2, highest first.
func TestPrioritiesDelayedMessagesWakeInEveryLane(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, e *env) {
		q := e.create(t, QueueConfig{Shards: 8, Priorities: 3})
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name, CatchUpInterval: time.Hour})
		if ds := receive(t, c, 10); len(ds) != 0 { // the first receive sweeps
			t.Fatalf("an empty queue delivered %v", deliveryIDs(ds))
		}
		other := e.service(t, e.clock) // another process: no hints reach c
		mid := e.put(t, other, q.Name, Message{Body: []byte("mid"), Priority: 1, Delay: 5 * time.Minute})
		high := e.put(t, other, q.Name, Message{Body: []byte("high"), Priority: 2, Delay: 5 * time.Minute})
		for range 4 {
			e.clock.Advance(time.Minute)
			if ds := receive(t, c, 10); len(ds) != 0 {
				t.Fatalf("delivered %v before they were due", deliveryIDs(ds))
			}
		}
		e.clock.Advance(time.Minute + time.Second)
		ds := receive(t, c, 10)
		if got := deliveryIDs(ds); !slices.Equal(got, []ID{high, mid}) {
			t.Fatalf("at the due time received %v, want %v (level 2, then 1)", got, []ID{high, mid})
		}
	})
}
