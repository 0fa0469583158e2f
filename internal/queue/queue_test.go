package queue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/queue/shard"
)

func TestCreate(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		name := queueName(t)
		_, err := e.svc.Create(ctx, QueueConfig{Name: name, Shards: 3})
		if !errors.Is(err, ErrInvalid) || !errors.Is(err, shard.ErrTooFewShards) || !strings.Contains(err.Error(), "at least 4 shards, got 3") {
			t.Fatalf("3 shards: error %v, want ErrInvalid wrapping ErrTooFewShards with a clear message", err)
		}
		if _, err := e.svc.Queue(ctx, name); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a refused queue exists: %v", err)
		}
		for _, bad := range []QueueConfig{
			{Name: ""},
			{Name: strings.Repeat("x", 257)},
			{Name: "bad\xff"},
			{Name: name, ShardDuration: 1500 * time.Millisecond},
			{Name: name, MaxDeliveries: -1},
			{Name: name, VisibilityTimeout: time.Millisecond},
		} {
			if _, err := e.svc.Create(ctx, bad); !errors.Is(err, ErrInvalid) {
				t.Errorf("Create(%+v) = %v, want ErrInvalid", bad, err)
			}
		}
		q, err := e.svc.Create(ctx, QueueConfig{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		if q.Shards != DefaultShards || q.ShardDuration != time.Minute || q.MaxDeliveries != 5 || q.VisibilityTimeout != 30*time.Second {
			t.Errorf("defaults: %+v", q)
		}
		if _, err := e.svc.Create(ctx, QueueConfig{Name: name, Shards: 8}); !errors.Is(err, ErrExists) {
			t.Fatalf("second Create: %v, want ErrExists", err)
		}
		// A fresh service (another process) reads the stored config.
		got, err := e.service(t, e.clock).Queue(ctx, name)
		if err != nil || got.Shards != DefaultShards || !got.CreatedAt.Equal(start) {
			t.Fatalf("Queue from another service = %+v, %v", got, err)
		}
		list, err := e.svc.List(ctx)
		if err != nil || !slices.ContainsFunc(list, func(q *Queue) bool { return q.Name == name }) {
			t.Fatalf("List misses the queue: %v", err)
		}
	})
}

func TestPutRefusesBadInputAndWritesNothing(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		q := e.create(t, QueueConfig{Shards: 4})
		svc, err := New(Config{Store: e.store, Clock: e.clock, Logger: quiet, MaxBodyBytes: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			ms   []Message
			want error
		}{
			{[]Message{{Body: []byte("x"), Delay: -time.Second}}, ErrInvalid},
			{[]Message{{Body: []byte("x"), Delay: time.Second, Due: start.Add(time.Hour)}}, ErrInvalid},
			{[]Message{{Body: []byte("01234567890")}}, ErrTooLarge},
			{[]Message{{Body: []byte("ok")}, {Body: []byte("ok"), Delay: -1}}, ErrInvalid},
			{make([]Message, MaxBatch+1), ErrInvalid},
		} {
			if _, err := svc.PutBatch(ctx, q.Name, tc.ms); !errors.Is(err, tc.want) {
				t.Errorf("PutBatch(%d messages) = %v, want %v", len(tc.ms), err, tc.want)
			}
		}
		if _, err := svc.Put(ctx, queueName(t)+"-missing", Message{Body: []byte("x")}); !errors.Is(err, ErrNotFound) {
			t.Errorf("Put to a missing queue: %v, want ErrNotFound", err)
		}
		if o := e.observe(t, q.Name); o.Messages != 0 {
			t.Fatalf("refused puts wrote %d messages", o.Messages)
		}
		// A due time in the past means now.
		id, err := svc.Put(ctx, q.Name, Message{Body: []byte("late"), Due: start.Add(-time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if id.Time().Sub(start).Abs() > time.Millisecond {
			t.Errorf("id time %v, want the put time %v", id.Time(), start)
		}
		e.clock.Advance(time.Minute) // out of the producers' window
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name})
		ds := receive(t, c, 10)
		if len(ds) != 1 || ds[0].ID() != id || !ds[0].Due().Equal(start) || string(ds[0].Body()) != "late" {
			t.Fatalf("got %d deliveries, want the one message due at %v", len(ds), start)
		}
	})
}

func TestDeliverAckAndBatch(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		q := e.create(t, QueueConfig{Shards: 4})
		ids, err := e.svc.PutBatch(ctx, q.Name, []Message{
			{Body: []byte("a")}, {Body: []byte("b"), Delay: 30 * time.Second}, {Body: []byte("c"), Delay: time.Hour},
		})
		if err != nil || len(ids) != 3 {
			t.Fatalf("PutBatch = %v, %v", ids, err)
		}
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name})
		// Due now means now, even in the shard producers are writing.
		if ds := receive(t, c, 10); len(ds) != 1 || ds[0].ID() != ids[0] {
			t.Fatalf("got %v at once, want only the message due now", deliveryIDs(ds))
		} else if err := ds[0].Release(ctx); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(2 * time.Minute)
		ds := receive(t, c, 10)
		if len(ds) != 2 || ds[0].ID() != ids[0] || ds[1].ID() != ids[1] {
			t.Fatalf("got %v, want the two due messages in due order", deliveryIDs(ds))
		}
		d := ds[0]
		if d.Attempt() != 1 || d.Queue() != q.Name || !bytes.Equal(d.Body(), []byte("a")) ||
			!d.VisibleUntil().Equal(e.clock.Now().Add(q.VisibilityTimeout)) || !d.EnqueuedAt().Equal(start) {
			t.Errorf("delivery = attempt %d, body %q, visible until %v, enqueued %v", d.Attempt(), d.Body(), d.VisibleUntil(), d.EnqueuedAt())
		}
		for _, d := range ds {
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
		o := e.observe(t, q.Name)
		if o.Messages != 1 || o.Due != 0 {
			t.Fatalf("after acks: %d messages, %d due; want the delayed one only", o.Messages, o.Due)
		}
		e.clock.Advance(time.Hour)
		if got := drain(t, c); len(got) != 1 || got[0] != ids[2] {
			t.Fatalf("after an hour: %v, want %v", got, ids[2])
		}
		if o := e.observe(t, q.Name); o.Messages != 0 {
			t.Fatalf("%d messages left", o.Messages)
		}
	})
}

func deliveryIDs(ds []*Delivery) []ID {
	out := make([]ID, len(ds))
	for i, d := range ds {
		out[i] = d.ID()
	}
	return out
}

// Producers whose clocks run a minute ahead of or behind the consumer's
// lose nothing: every message is delivered.
func TestClockSkewLosesNothing(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		q := e.create(t, QueueConfig{Shards: 4})
		ahead := e.service(t, clock.Offset{Base: e.clock, By: 60 * time.Second})
		behind := e.service(t, clock.Offset{Base: e.clock, By: -60 * time.Second})
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name, CatchUpInterval: 5 * time.Second})
		want := map[ID]bool{}
		var got []ID
		// Five minutes of puts from all three, every 7s, with the consumer
		// polling every 2s in between: the consumer advances floors while
		// the skewed producers keep writing.
		for step := 0; step < 300; step += 2 {
			if step%7 < 2 {
				for _, p := range []*Service{ahead, behind, e.svc} {
					want[e.put(t, p, q.Name, Message{Body: []byte(fmt.Sprint(step))})] = true
				}
			}
			got = append(got, drain(t, c)...)
			e.clock.Advance(2 * time.Second)
		}
		for range 120 { // let the last ones come due
			got = append(got, drain(t, c)...)
			e.clock.Advance(2 * time.Second)
		}
		seen := map[ID]int{}
		for _, id := range got {
			seen[id]++
		}
		for id := range want {
			if seen[id] == 0 {
				t.Errorf("message %s (put at %v) was never delivered", id, id.Time())
			}
		}
		if len(seen) != len(want) {
			t.Errorf("delivered %d distinct messages, put %d", len(seen), len(want))
		}
	})
}

// The floor advances as shards are consumed, and a message from a producer
// whose clock is behind still lands at or above floor - MaxClockSkew.
func TestFloorAdvancesAndToleratesSkew(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		q := e.create(t, QueueConfig{Shards: 4})
		e.put(t, e.svc, q.Name, Message{Body: []byte("first")})
		e.clock.Advance(3 * time.Minute)
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name})
		if got := drain(t, c); len(got) != 1 {
			t.Fatalf("drained %d, want 1", len(got))
		}
		e.clock.Advance(10 * time.Second) // the next sweep reads the shard again
		drain(t, c)
		sh := q.Math().Of(start)
		st, err := e.store.ReadQueueShard(ctx, &driver.QueueShardParams{Queue: q.Name, Shard: sh})
		if err != nil {
			t.Fatal(err)
		}
		if want := e.clock.Now().Add(-DefaultMaxClockSkew); !st.Floor.Equal(want) {
			t.Fatalf("floor of the drained shard = %v, want now - MaxClockSkew = %v", st.Floor, want)
		}
		// A producer 60s behind writes into what is, for the consumer, the
		// shard one window back, with a due time a minute before "now".
		behind := e.service(t, clock.Offset{Base: e.clock, By: -60 * time.Second})
		id := e.put(t, behind, q.Name, Message{Body: []byte("from the past")})
		e.clock.Advance(time.Minute)
		var got []ID
		for range 30 {
			got = append(got, drain(t, c)...)
			e.clock.Advance(time.Second)
		}
		if !slices.Contains(got, id) {
			t.Fatalf("the skewed producer's message was not delivered")
		}
	})
}

// While one lease delivers a long run of messages from after its cursor,
// the floor still follows the first live message, so that the next reader
// of the shard does not start where the run began.
func TestFloorFollowsALongRun(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		q := e.create(t, QueueConfig{Shards: 4, ShardDuration: time.Hour})
		for range 30 {
			ms := make([]Message, 10)
			for i := range ms {
				ms[i] = Message{Body: []byte("m")}
			}
			if _, err := e.svc.PutBatch(ctx, q.Name, ms); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(time.Minute)
		}
		e.clock.Advance(2 * time.Hour)
		// A lease that outlasts the 25 receives and their acks on a loaded machine: a lapsed one leaves the shard out of the next round.
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name, BatchSize: 10, LeaseTTL: time.Minute})
		var last *Delivery
		for range 25 { // 250 of the 300 messages, 10 at a time
			ds := receive(t, c, 10)
			if len(ds) != 10 {
				t.Fatalf("got %d deliveries", len(ds))
			}
			for _, d := range ds {
				if err := d.Ack(ctx); err != nil {
					t.Fatal(err)
				}
			}
			last = ds[9]
		}
		st, err := e.store.ReadQueueShard(ctx, &driver.QueueShardParams{Queue: q.Name, Shard: last.Shard()})
		if err != nil {
			t.Fatal(err)
		}
		// Refreshed every 10 reads: at most 10 batches (10 minutes of due
		// times) behind the last delivery.
		if lag := last.Due().Sub(st.Floor); lag < 0 || lag > 10*time.Minute {
			t.Fatalf("floor %v is %v behind the last delivery's due time %v", st.Floor, lag, last.Due())
		}
	})
}

// A message stored below the floor (a late-applied write, or skew beyond
// MaxClockSkew) is found by the deep sweep.
func TestDeepSweepFindsMessagesBelowTheFloor(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		q := e.create(t, QueueConfig{Shards: 4})
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name})
		e.clock.Advance(5 * time.Minute)
		drain(t, c) // first round: deep reads, floors set
		sh := q.Math().Consumer(e.clock.Now())
		if err := e.store.SetFloor(ctx, &driver.SetFloorParams{Queue: q.Name, Shard: sh, Floor: e.clock.Now()}); err != nil {
			t.Fatal(err)
		}
		old := start.Add(-time.Hour)
		m := driver.Message{MessageKey: driver.MessageKey{Shard: sh, Due: old, ID: e.svc.ids.newID(old)}, Body: []byte("late write"), EnqueuedAt: old}
		if err := e.store.PutMessages(ctx, &driver.PutMessagesParams{Queue: q.Name, Messages: []driver.Message{m}}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Second)
		if got := drain(t, c); len(got) != 0 {
			t.Fatalf("a message below floor - skew was read without a deep sweep")
		}
		e.clock.Advance(time.Hour)
		if got := drain(t, c); len(got) != 1 || got[0] != m.ID {
			t.Fatalf("deep sweep found %v, want %s", got, m.ID)
		}
	})
}

// Three consumers share 1,000 messages put over several windows: each is
// delivered at least once and acknowledged exactly once.
func TestThreeConsumersThousandMessages(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		// The clock runs up to 100 s a real second below, so 10 min of visibility was 6 s of a slow ack: 12 h cannot end while the test runs.
		q := e.create(t, QueueConfig{Shards: 6, ShardDuration: 10 * time.Second, VisibilityTimeout: MaxVisibilityTimeout})
		var mu sync.Mutex
		delivered, acked := map[ID]int{}, map[ID]int{}
		by := map[string]int{}
		var consumers []*Consumer
		for i := range 3 {
			var c *Consumer
			c = e.consumer(t, e.svc, ConsumerConfig{
				Queue: q.Name, Name: fmt.Sprint("consumer-", i), Concurrency: 4,
				PollInterval: 5 * time.Millisecond, CatchUpInterval: 5 * time.Second, BatchSize: 50,
				Handler: func(ctx context.Context, d *Delivery) error {
					mu.Lock()
					defer mu.Unlock()
					delivered[d.ID()]++
					acked[d.ID()]++ // the handler returns nil, so Start acknowledges
					by[c.Name()]++
					return nil
				},
			})
			consumers = append(consumers, c)
		}
		for _, c := range consumers {
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
		}
		var put []ID
		for batch := range 20 { // 20 batches of 50, 3s of clock apart
			ms := make([]Message, 50)
			for i := range ms {
				ms[i] = Message{Body: []byte(fmt.Sprint(batch, "/", i)), Delay: time.Duration(i%3) * 10 * time.Second}
			}
			got, err := e.svc.PutBatch(ctx, q.Name, ms)
			if err != nil {
				t.Fatal(err)
			}
			put = append(put, got...)
			e.clock.Advance(3 * time.Second)
			time.Sleep(5 * time.Millisecond)
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			mu.Lock()
			n := len(acked)
			mu.Unlock()
			if n == len(put) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 60s only %d of %d messages were acknowledged", n, len(put))
			}
			e.clock.Advance(time.Second)
			time.Sleep(10 * time.Millisecond)
		}
		for _, c := range consumers {
			if err := c.Stop(ctx); err != nil {
				t.Fatal(err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, id := range put {
			if delivered[id] < 1 || acked[id] != 1 {
				t.Errorf("message %s: delivered %d times, acknowledged %d times", id, delivered[id], acked[id])
			}
		}
		if o := e.observe(t, q.Name); o.Messages != 0 {
			t.Errorf("%d messages left after every acknowledgement", o.Messages)
		}
		t.Logf("%s: deliveries per consumer: %v", e.driver, by)
	})
}

// A consumer that dies holding a delivery (and its shard's lease) leaves
// the message hidden; once the lease has lapsed and the visibility timeout
// passed, another consumer delivers it again, counted as the second try.
func TestKilledConsumerMessageRedeliveredAfterLease(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		q := e.create(t, QueueConfig{Shards: 4, VisibilityTimeout: 20 * time.Second})
		id := e.put(t, e.svc, q.Name, Message{Body: []byte("work")})
		next := e.put(t, e.svc, q.Name, Message{Body: []byte("more work")})
		e.clock.Advance(2 * time.Minute)
		// A 2 s lease (1 s on Cassandra) lapsed within the heir's first few store operations on a loaded machine: 10 s outlasts them.
		const ttl = 10 * time.Second
		victim, err := e.svc.NewConsumer(ctx, ConsumerConfig{Queue: q.Name, Name: "victim", LeaseTTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		held := time.Now().Add(ttl - time.Second) // the lease is written after now and lives ttl, less up to 1 s on Cassandra
		ds := receive(t, victim, 1)
		if len(ds) != 1 || ds[0].ID() != id {
			t.Fatalf("victim got %v", deliveryIDs(ds))
		}
		killedAt := time.Now()
		// The victim now "dies": no ack, no Stop, its lease left behind.
		st, err := e.store.ReadQueueShard(ctx, &driver.QueueShardParams{Queue: q.Name, Shard: ds[0].Shard()})
		if err != nil || st.Holder != "victim" {
			t.Fatalf("shard holder = %+v, %v; want the victim", st, err)
		}
		heir := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name, Name: "heir", LeaseTTL: ttl})
		if got := receive(t, heir, 1); len(got) != 0 {
			t.Fatalf("redelivered at once, while hidden and leased")
		}
		e.clock.Advance(q.VisibilityTimeout) // hidden no more, but still leased
		// The first receive comes while the lease is live; one that delivers before held took a leased shard.
		deadline := killedAt.Add(ttl + 10*time.Second)
		for {
			got := receive(t, heir, 2)
			if len(got) > 0 {
				if time.Now().Before(held) {
					t.Fatalf("redelivered %v after the kill, while the victim's lease was live", time.Since(killedAt))
				}
				if len(got) != 2 || got[0].ID() != id || got[0].Attempt() != 2 || got[1].ID() != next || got[1].Attempt() != 1 {
					t.Fatalf("heir got %v; want %s (attempt 2) and %s (attempt 1)", deliveryIDs(got), id, next)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("not redelivered 10s after the victim's lease lapsed")
			}
			e.clock.Advance(time.Second)
			time.Sleep(200 * time.Millisecond)
		}
	})
}

// A message whose handler always fails is delivered MaxDeliveries (5)
// times, then moves to the dead letters with the last error; requeueing
// brings it back with a fresh count.
func TestPoisonMessageGoesToDeadLetters(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		q := e.create(t, QueueConfig{Shards: 4, VisibilityTimeout: 10 * time.Second})
		id := e.put(t, e.svc, q.Name, Message{Body: []byte("poison")})
		good := e.put(t, e.svc, q.Name, Message{Body: []byte("fine")})
		e.clock.Advance(2 * time.Minute)
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name})
		attempts := 0
		for range 20 {
			for _, d := range receive(t, c, 10) {
				if d.ID() == good {
					if err := d.Ack(ctx); err != nil {
						t.Fatal(err)
					}
					continue
				}
				attempts++
				if d.Attempt() != attempts {
					t.Fatalf("attempt %d reported as %d", attempts, d.Attempt())
				}
				if err := d.Fail(ctx, fmt.Errorf("cannot parse %q", d.Body())); err != nil {
					t.Fatal(err)
				}
			}
			e.clock.Advance(q.VisibilityTimeout)
		}
		if attempts != DefaultMaxDeliveries {
			t.Fatalf("poison message delivered %d times, want %d", attempts, DefaultMaxDeliveries)
		}
		dead, err := e.svc.DeadLetters(ctx, q.Name, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(dead) != 1 || dead[0].ID != id || dead[0].Deliveries != 5 || string(dead[0].Body) != "poison" ||
			dead[0].LastError != `delivery 5: cannot parse "poison"` {
			t.Fatalf("dead letters = %+v", dead)
		}
		if o := e.observe(t, q.Name); o.Messages != 0 {
			t.Fatalf("%d messages still queued", o.Messages)
		}
		back, err := e.svc.Requeue(ctx, q.Name, nil)
		if err != nil || len(back) != 1 || back[0] != id {
			t.Fatalf("Requeue = %v, %v", back, err)
		}
		if dead, _ := e.svc.DeadLetters(ctx, q.Name, 0); len(dead) != 0 {
			t.Fatalf("requeued letter still dead")
		}
		e.clock.Advance(2 * time.Minute)
		ds := receive(t, c, 10)
		if len(ds) != 1 || ds[0].ID() != id || ds[0].Attempt() != 1 {
			t.Fatalf("after requeue got %v", deliveryIDs(ds))
		}
	})
}

// A message not settled within the visibility timeout, delivered for the
// last time, goes to the dead letters saying so.
func TestUnacknowledgedLastDeliveryIsDeadLettered(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		q := e.create(t, QueueConfig{Shards: 4, MaxDeliveries: 1, VisibilityTimeout: 5 * time.Second})
		id := e.put(t, e.svc, q.Name, Message{Body: []byte("x")})
		e.clock.Advance(2 * time.Minute)
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name})
		if ds := receive(t, c, 1); len(ds) != 1 {
			t.Fatal("not delivered")
		}
		e.clock.Advance(6 * time.Second)
		if ds := receive(t, c, 1); len(ds) != 0 {
			t.Fatalf("delivered beyond MaxDeliveries")
		}
		dead, err := e.svc.DeadLetters(ctxT(t), q.Name, 0)
		if err != nil || len(dead) != 1 || dead[0].ID != id || !strings.Contains(dead[0].LastError, "not acknowledged within the visibility timeout") {
			t.Fatalf("dead letters = %+v, %v", dead, err)
		}
	})
}

// No due message waits longer than one shard window plus the catch-up
// interval, whether due at once, delayed within the rotation or beyond it.
func TestNoDueMessageWaitsTooLong(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		const window, catchUp = 20 * time.Second, 15 * time.Second
		q := e.create(t, QueueConfig{Shards: 5, ShardDuration: window})
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name, CatchUpInterval: catchUp})
		due := map[ID]time.Time{}
		// The rotation is 100s: the 3m delay outlasts it.
		delays := []time.Duration{0, 7 * time.Second, 45 * time.Second, 3 * time.Minute}
		worst := time.Duration(0)
		for sec := range 8 * 60 { // 8 minutes, a poll per second
			if sec < 4*60 && sec%13 == 0 {
				d := delays[(sec/13)%len(delays)]
				id := e.put(t, e.svc, q.Name, Message{Body: []byte("t"), Delay: d})
				due[id] = e.clock.Now().Add(d)
			}
			for _, d := range receive(t, c, 100) {
				wait := e.clock.Now().Sub(due[d.ID()])
				worst = max(worst, wait)
				if wait > window+catchUp {
					t.Errorf("message due at %v delivered at %v: waited %v > window %v + catch-up %v",
						due[d.ID()], e.clock.Now(), wait, window, catchUp)
				}
				if err := d.Ack(ctxT(t)); err != nil {
					t.Fatal(err)
				}
				delete(due, d.ID())
			}
			e.clock.Advance(time.Second)
		}
		if len(due) != 0 {
			t.Fatalf("%d messages never delivered", len(due))
		}
		t.Logf("%s: worst wait %v (bound %v)", e.driver, worst, window+catchUp)
	})
}

// A consumer that starts long after messages came due drains every shard
// in its first round.
func TestLateConsumerCatchesUp(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		q := e.create(t, QueueConfig{Shards: 8})
		var put []ID
		for range 16 { // two rotations of puts
			put = append(put, e.put(t, e.svc, q.Name, Message{Body: []byte("m")}))
			e.clock.Advance(time.Minute)
		}
		e.clock.Advance(3 * time.Hour)
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name})
		got := drain(t, c)
		slices.SortFunc(got, compareIDs)
		slices.SortFunc(put, compareIDs)
		if !slices.Equal(got, put) {
			t.Fatalf("late consumer drained %d of %d messages in one round", len(got), len(put))
		}
	})
}

func compareIDs(a, b ID) int { return strings.Compare(a.String(), b.String()) }

func TestGracefulStopFinishesAndReleases(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		q := e.create(t, QueueConfig{Shards: 4})
		id := e.put(t, e.svc, q.Name, Message{Body: []byte("slow")})
		e.clock.Advance(2 * time.Minute)
		started, finish := make(chan struct{}), make(chan struct{})
		var handled atomic.Int32
		c := e.consumer(t, e.svc, ConsumerConfig{
			Queue: q.Name, PollInterval: 5 * time.Millisecond,
			Handler: func(ctx context.Context, d *Delivery) error {
				close(started)
				<-finish
				handled.Add(1)
				return nil
			},
		})
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		<-started
		stopped := make(chan error)
		go func() { stopped <- c.Stop(ctx) }()
		select {
		case err := <-stopped:
			t.Fatalf("Stop returned (%v) while a handler was running", err)
		case <-time.After(100 * time.Millisecond):
		}
		close(finish)
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		if handled.Load() != 1 {
			t.Fatal("handler did not finish")
		}
		if o := e.observe(t, q.Name); o.Messages != 0 {
			t.Fatalf("message %s not acknowledged before Stop returned", id)
		}
		for _, v := range e.observe(t, q.Name).Shards {
			if v.Holder != "" {
				t.Fatalf("shard %d still leased by %q after Stop", v.Shard, v.Holder)
			}
		}
		if _, err := c.Receive(ctx, 1); !errors.Is(err, ErrStopped) {
			t.Fatalf("Receive after Stop: %v", err)
		}
	})
}

func TestStopTimeoutCancelsHandlers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "embedded", embeddedStore(t))
	q := e.create(t, QueueConfig{Shards: 4})
	e.put(t, e.svc, q.Name, Message{Body: []byte("stuck")})
	e.clock.Advance(2 * time.Minute)
	started := make(chan struct{})
	c := e.consumer(t, e.svc, ConsumerConfig{
		Queue: q.Name, PollInterval: 5 * time.Millisecond,
		Handler: func(ctx context.Context, d *Delivery) error {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		},
	})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop = %v, want a deadline error", err)
	}
	// The cancelled handler's failure was recorded.
	o := e.observe(t, q.Name)
	if o.Messages != 1 || o.InFlight != 1 {
		t.Fatalf("after a cut-off handler: %+v", o)
	}
}

func TestHandlerPanicCountsAsFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "embedded", embeddedStore(t))
	q := e.create(t, QueueConfig{Shards: 4, MaxDeliveries: 1})
	e.put(t, e.svc, q.Name, Message{Body: []byte("boom")})
	e.clock.Advance(2 * time.Minute)
	done := make(chan struct{})
	c := e.consumer(t, e.svc, ConsumerConfig{
		Queue: q.Name, PollInterval: 5 * time.Millisecond,
		Handler: func(ctx context.Context, d *Delivery) error {
			defer close(done)
			panic("bad input")
		},
	})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-done
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	dead, err := e.svc.DeadLetters(ctxT(t), q.Name, 0)
	if err != nil || len(dead) != 1 || !strings.Contains(dead[0].LastError, "handler panicked: bad input") {
		t.Fatalf("dead letters = %+v, %v", dead, err)
	}
}

func TestObserve(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		q := e.create(t, QueueConfig{Shards: 4})
		e.put(t, e.svc, q.Name, Message{Body: []byte("due soon")})
		e.put(t, e.svc, q.Name, Message{Body: []byte("due soon too")})
		e.put(t, e.svc, q.Name, Message{Body: []byte("later"), Delay: time.Hour})
		e.clock.Advance(time.Minute)
		e.put(t, e.svc, q.Name, Message{Body: []byte("next window")})
		e.clock.Advance(time.Minute)
		// A lease that outlasts the receive and the observation on a loaded machine: the check below wants it still held.
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name, Name: "watcher", LeaseTTL: time.Minute})
		ds := receive(t, c, 1) // hold one in flight, and the lease
		if len(ds) != 1 {
			t.Fatalf("got %d deliveries", len(ds))
		}
		e.clock.Advance(5 * time.Second)
		o := e.observe(t, q.Name)
		if o.Messages != 4 || o.Due != 3 || o.InFlight != 1 {
			t.Fatalf("totals: %d messages, %d due, %d in flight; want 4, 3, 1", o.Messages, o.Due, o.InFlight)
		}
		first := o.Shards[q.Math().Of(start)]
		if first.Messages != 3 || first.Due != 2 || first.InFlight != 1 || first.Behind != 2 || !first.Consuming() {
			t.Errorf("first shard: %+v", first)
		}
		if first.Holder != "watcher" || first.LeaseAge != 5*time.Second {
			t.Errorf("first shard lease: holder %q, age %v; want watcher, 5s", first.Holder, first.LeaseAge)
		}
		if first.Window != "20260731000" {
			t.Errorf("window label %q", first.Window)
		}
		cur := o.Shards[q.Math().Producer(e.clock.Now())]
		if !cur.Producing() || cur.Messages != 0 {
			t.Errorf("producers' shard: %+v", cur)
		}
	})
}

func TestReceiptsSettleFromAnywhere(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		q := e.create(t, QueueConfig{Shards: 4, VisibilityTimeout: 10 * time.Second})
		a := e.put(t, e.svc, q.Name, Message{Body: []byte("a")})
		b := e.put(t, e.svc, q.Name, Message{Body: []byte("b")})
		e.clock.Advance(2 * time.Minute)
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name})
		ds := receive(t, c, 2)
		if len(ds) != 2 {
			t.Fatalf("got %d", len(ds))
		}
		other := e.service(t, e.clock) // another process settles
		if err := other.Release(ctx, q.Name, ds[1].Receipt()); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if err := other.Release(ctx, q.Name, ds[1].Receipt()); !errors.Is(err, ErrStaleReceipt) {
			t.Fatalf("second Release: %v, want ErrStaleReceipt", err)
		}
		if dead, err := other.Fail(ctx, q.Name, ds[0].Receipt(), "downstream timeout"); err != nil || dead {
			t.Fatalf("Fail = %v, %v", dead, err)
		}
		again := receive(t, c, 2) // b at once (released, uncounted); a is hidden
		if len(again) != 1 || again[0].ID() != b || again[0].Attempt() != 1 {
			t.Fatalf("after release got %v", deliveryIDs(again))
		}
		if err := other.Ack(ctx, q.Name, again[0].Receipt()); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(q.VisibilityTimeout)
		third := receive(t, c, 2)
		if len(third) != 1 || third[0].ID() != a || third[0].Attempt() != 2 {
			t.Fatalf("after the timeout got %v", deliveryIDs(third))
		}
		if _, err := other.Fail(ctx, q.Name, ds[0].Receipt(), "late"); !errors.Is(err, ErrStaleReceipt) {
			t.Fatalf("Fail with the first delivery's receipt: %v, want ErrStaleReceipt", err)
		}
		if err := other.Ack(ctx, q.Name, third[0].Receipt()); err != nil {
			t.Fatal(err)
		}
		if err := other.Ack(ctx, q.Name, third[0].Receipt()); err != nil {
			t.Fatalf("second Ack: %v", err)
		}
		if o := e.observe(t, q.Name); o.Messages != 0 {
			t.Fatalf("%d left", o.Messages)
		}
		for _, bad := range []string{"", "garbage", "1.99.0." + a.String() + ".1", "2.0.0." + a.String() + ".1"} {
			if err := other.Ack(ctx, q.Name, bad); !errors.Is(err, ErrInvalid) {
				t.Errorf("Ack(%q) = %v, want ErrInvalid", bad, err)
			}
		}
	})
}

func TestIDs(t *testing.T) {
	t.Parallel()
	g := newIDGen()
	at := time.Date(2026, 3, 14, 15, 9, 26, 535897900, time.UTC)
	seen := map[ID]bool{}
	var prev ID
	for i := range 1000 {
		id := g.newID(at)
		if !id.Valid() {
			t.Fatalf("%s is not a version 1 UUID", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
		if i == 0 && !id.Time().Equal(at) {
			t.Fatalf("Time() = %v, want %v", id.Time(), at)
		}
		if i > 0 && !id.Time().After(prev.Time()) {
			t.Fatalf("ids not increasing: %v then %v", prev.Time(), id.Time())
		}
		prev = id
		parsed, err := ParseID(id.String())
		if err != nil || parsed != id {
			t.Fatalf("ParseID(%s) = %s, %v", id, parsed, err)
		}
	}
	for _, bad := range []string{"", "6ba7b810-9dad-41d1-80b4-00c04fd430c8", "6ba7b810-9dad-11d1-80b4-00c04fd430cz", "6ba7b8109dad11d180b400c04fd430c8"} {
		if _, err := ParseID(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseID(%q) = %v", bad, err)
		}
	}
}

func TestConsumerConfig(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "embedded", embeddedStore(t))
	q := e.create(t, QueueConfig{})
	ctx := ctxT(t)
	for _, bad := range []ConsumerConfig{
		{Queue: q.Name, LeaseTTL: time.Second},
		{Queue: q.Name, Concurrency: -1},
		{Queue: ""},
		{Queue: q.Name, Name: "bad\xff"},
	} {
		if _, err := e.svc.NewConsumer(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewConsumer(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := e.svc.NewConsumer(ctx, ConsumerConfig{Queue: q.Name + "-missing"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("NewConsumer of a missing queue: %v", err)
	}
	c, err := e.svc.NewConsumer(ctx, ConsumerConfig{Queue: q.Name})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.Name(), "/") {
		t.Errorf("default name %q", c.Name())
	}
	if err := c.Start(ctx); !errors.Is(err, ErrInvalid) {
		t.Errorf("Start without a handler: %v", err)
	}
}

// A dead letter named twice in one call is deleted (or requeued) and
// reported once, on every driver: Cassandra looks each id up on its own.
func TestDeadLetterIDsNamedTwiceCountOnce(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		q := e.create(t, QueueConfig{Shards: 4, MaxDeliveries: 1})
		a := e.put(t, e.svc, q.Name, Message{Body: []byte("a")})
		b := e.put(t, e.svc, q.Name, Message{Body: []byte("b")})
		e.clock.Advance(2 * time.Minute)
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name})
		for _, d := range receive(t, c, 10) {
			if err := d.Fail(ctx, errors.New("boom")); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.svc.DeleteDead(ctx, q.Name, nil); !errors.Is(err, ErrInvalid) {
			t.Fatalf("DeleteDead of no ids: %v, want ErrInvalid", err)
		}
		gone, err := e.svc.DeleteDead(ctx, q.Name, []ID{a, a})
		if err != nil || len(gone) != 1 || gone[0] != a {
			t.Fatalf("DeleteDead(a, a) = %v, %v; want [a]", gone, err)
		}
		if gone, err := e.svc.DeleteDead(ctx, q.Name, []ID{a}); err != nil || len(gone) != 0 {
			t.Fatalf("DeleteDead(a) again = %v, %v; want none", gone, err)
		}
		back, err := e.svc.Requeue(ctx, q.Name, []ID{b, b, a})
		if err != nil || len(back) != 1 || back[0] != b {
			t.Fatalf("Requeue(b, b, a) = %v, %v; want [b]", back, err)
		}
		if o := e.observe(t, q.Name); o.Messages != 1 {
			t.Fatalf("%d messages after requeueing one dead letter named twice, want 1", o.Messages)
		}
	})
}

// Attributes go with a message through delivery, failure, the dead letters
// and a requeue, on every driver; bad ones are refused with nothing stored.
func TestAttributesTravelWithTheMessage(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		q := e.create(t, QueueConfig{Shards: 4, MaxDeliveries: 1})
		attrs := map[string]string{"tenant": "acme", "trace.id": "4bf92f35", "empty": ""}
		id := e.put(t, e.svc, q.Name, Message{Body: []byte("with"), Attributes: attrs})
		plain := e.put(t, e.svc, q.Name, Message{Body: []byte("without")})
		for _, bad := range []map[string]string{
			{"": "x"},
			{"has space": "x"},
			{strings.Repeat("n", driver.MaxAttributeName+1): "x"},
			{"v": strings.Repeat("v", driver.MaxAttributeValue+1)},
			{"v": "\xff"},
			{"tenant": "a", "Tenant": "b"},
			func() map[string]string {
				m := map[string]string{}
				for i := range driver.MaxAttributes + 1 {
					m[fmt.Sprintf("a%d", i)] = ""
				}
				return m
			}(),
		} {
			if _, err := e.svc.Put(ctx, q.Name, Message{Body: []byte("bad"), Attributes: bad}); !errors.Is(err, ErrInvalid) {
				t.Errorf("put with attributes %.40v: %v, want ErrInvalid", bad, err)
			}
		}
		if o := e.observe(t, q.Name); o.Messages != 2 {
			t.Fatalf("%d messages stored, want 2: refused puts stored something", o.Messages)
		}
		// The limits themselves are allowed.
		most := map[string]string{strings.Repeat("n", driver.MaxAttributeName): strings.Repeat("v", driver.MaxAttributeValue)}
		for i := range driver.MaxAttributes - 1 {
			most[fmt.Sprintf("a%d", i)] = ""
		}
		if _, err := e.svc.Put(ctx, q.Name, Message{Body: []byte("most"), Delay: time.Hour, Attributes: most}); err != nil {
			t.Fatalf("put at every attribute limit: %v", err)
		}

		e.clock.Advance(2 * time.Minute)
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name})
		got := map[ID]map[string]string{}
		for _, d := range receive(t, c, 10) {
			got[d.ID()] = d.Attributes()
			if err := d.Fail(ctx, errors.New("boom")); err != nil {
				t.Fatal(err)
			}
		}
		if !maps.Equal(got[id], attrs) || got[plain] != nil || len(got) != 2 {
			t.Fatalf("delivered attributes %v; want %v for %s and nil for %s", got, attrs, id, plain)
		}
		dead, err := e.svc.DeadLetters(ctx, q.Name, 0)
		if err != nil || len(dead) != 2 {
			t.Fatalf("DeadLetters = %v, %v", dead, err)
		}
		for _, l := range dead {
			if want := got[l.ID]; !maps.Equal(l.Attributes, want) {
				t.Errorf("dead letter %s has attributes %v, want %v", l.ID, l.Attributes, want)
			}
		}
		if _, err := e.svc.Requeue(ctx, q.Name, []ID{id}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(2 * time.Minute)
		again := receive(t, c, 10)
		if len(again) != 1 || again[0].ID() != id || !maps.Equal(again[0].Attributes(), attrs) {
			t.Fatalf("after the requeue: %v", deliveryIDs(again))
		}

		// Under one dedup id, other attributes are another message.
		if _, err := e.svc.Put(ctx, q.Name, Message{Body: []byte("b"), DedupID: "d1", Attributes: map[string]string{"v": "1"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Put(ctx, q.Name, Message{Body: []byte("b"), DedupID: "d1", Attributes: map[string]string{"v": "1"}}); err != nil {
			t.Fatalf("the same put again: %v", err)
		}
		if _, err := e.svc.Put(ctx, q.Name, Message{Body: []byte("b"), DedupID: "d1", Attributes: map[string]string{"v": "2"}}); !errors.Is(err, ErrDedupConflict) {
			t.Fatalf("the same body with other attributes: %v, want ErrDedupConflict", err)
		}
	})
}
