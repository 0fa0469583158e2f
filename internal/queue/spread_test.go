package queue

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// A spread queue's puts go to every shard of the current window, a whole
// batch to one of them.
func TestSpreadPutsLandInEveryShardOfTheWindow(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		q := e.create(t, QueueConfig{Shards: 16, Spread: 4})
		if got := q.Math().Spread(); got != 4 {
			t.Fatalf("created with spread 4, the queue has %d", got)
		}
		// Another service reads the record back from the store.
		if q2, err := e.service(t, e.clock).Queue(ctxT(t), q.Name); err != nil || q2.Math().Spread() != 4 {
			t.Fatalf("read back: %v, %v", q2, err)
		}
		for i := range 200 {
			e.put(t, e.svc, q.Name, Message{Body: fmt.Appendf(nil, "m%d", i)})
		}
		window := q.Math().WindowShards(q.Math().Bucket(e.clock.Now()))
		o := e.observe(t, q.Name)
		for _, v := range o.Shards {
			switch in := slices.Contains(window, v.Shard); {
			case in && v.Messages == 0:
				// One in 10^24 for a random pick; a put that ignores
				// the spread leaves three of the four empty.
				t.Errorf("shard %d of the window %v got none of 200 puts", v.Shard, window)
			case !in && v.Messages != 0:
				t.Errorf("shard %d, outside the window %v, got %d puts", v.Shard, window, v.Messages)
			}
		}
		before := e.observe(t, q.Name)
		if _, err := e.svc.PutBatch(ctxT(t), q.Name, make([]Message, 50)); err != nil {
			t.Fatal(err)
		}
		var grew []int
		for i, v := range e.observe(t, q.Name).Shards {
			if d := v.Messages - before.Shards[i].Messages; d != 0 {
				grew = append(grew, v.Shard)
				if d != 50 {
					t.Errorf("a batch of 50 added %d messages to shard %d", d, v.Shard)
				}
			}
		}
		if len(grew) != 1 {
			t.Errorf("a batch of 50 went to shards %v, want one", grew)
		}
	})
}

// A burst in a spread queue is worked by as many consumers at once as the
// window has shards, each under its own shard's lease, and every message
// is handed out once.
func TestConsumersShareASpreadBurst(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		const spread, n = 4, 400
		q := e.create(t, QueueConfig{Shards: 16, Spread: spread})
		for range n / 10 {
			if _, err := e.svc.PutBatch(ctxT(t), q.Name, make([]Message, 10)); err != nil {
				t.Fatal(err)
			}
		}
		// Four shards hold the burst unless the 40 batches all missed one
		// (one in 10^4 or so): then only three consumers can work at once.
		// Fewer than two (one in 10^23) means the puts ignored the spread.
		var shards int
		for _, v := range e.observe(t, q.Name).Shards {
			if v.Messages > 0 {
				shards++
			}
		}
		if shards < 2 {
			t.Fatalf("40 batches landed in %d shard(s) of a window of %d", shards, spread)
		}
		var consumers []*Consumer
		seen := map[ID]bool{}
		var pending []*Delivery
		for i := range spread {
			// A lease long enough to outlast the four consumers' start
			// on a loaded machine: the check below wants every lease
			// still held, and only Receive renews one.
			c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name, Name: fmt.Sprint("c", i), BatchSize: 10, LeaseTTL: time.Minute})
			consumers = append(consumers, c)
			ds := receive(t, c, 5)
			if i < shards && len(ds) == 0 {
				t.Fatalf("consumer %d got nothing while %d of the burst's %d shards were not leased", i, shards-i, shards)
			}
			pending = append(pending, ds...)
		}
		holders := map[string]int{}
		for _, v := range e.observe(t, q.Name).Shards {
			if v.Holder != "" {
				holders[v.Holder]++
			}
		}
		if len(holders) != shards {
			t.Fatalf("leases held at once: %v; want one for each of %d consumers", holders, shards)
		}
		for {
			for _, d := range pending {
				if seen[d.ID()] {
					t.Fatalf("message %s handed out twice", d.ID())
				}
				seen[d.ID()] = true
				if err := d.Ack(ctxT(t)); err != nil {
					t.Fatal(err)
				}
			}
			pending = pending[:0]
			for _, c := range consumers {
				pending = append(pending, receive(t, c, 50)...)
			}
			if len(pending) == 0 {
				break
			}
		}
		if len(seen) != n {
			t.Fatalf("%d of %d messages delivered", len(seen), n)
		}
	})
}

// A message due now in any shard of the producers' window is delivered
// at once from another process: the consumer's every-round look covers
// every shard of the window, not just the first. The clock stands still
// and the sweep is an hour away, so only that look can deliver them.
func TestDueNowIsDeliveredFromEveryShardOfASpreadWindow(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		q := e.create(t, QueueConfig{Shards: 16, Spread: 4})
		type handled struct {
			id    ID
			shard int
		}
		got := make(chan handled, 64)
		c := e.consumer(t, e.svc, ConsumerConfig{
			Queue: q.Name, PollInterval: 10 * time.Millisecond, CatchUpInterval: time.Hour,
			Handler: func(_ context.Context, d *Delivery) error { got <- handled{d.ID(), d.Shard()}; return nil },
		})
		if err := c.Start(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		producer := e.service(t, e.clock)
		const n = 40
		want := map[ID]bool{}
		for range n {
			want[e.put(t, producer, q.Name, Message{Body: []byte("now")})] = true
		}
		shards := map[int]bool{}
		for range n {
			select {
			case h := <-got:
				if !want[h.id] {
					t.Fatalf("handled %s, not one of the puts (or twice)", h.id)
				}
				delete(want, h.id)
				shards[h.shard] = true
			case <-time.After(30 * time.Second):
				t.Fatalf("%d of %d messages due now not delivered (delivered from shards %v of the window %v)",
					len(want), n, shards, q.Math().WindowShards(q.Math().Bucket(e.clock.Now())))
			}
		}
		if len(shards) < 2 {
			t.Fatalf("the puts all went to shards %v: nothing shows the other shards are looked at", shards)
		}
	})
}
