package queue

import (
	"context"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/queue/shard"
)

// Observation is a queue's state, shard by shard: what the original design's
// observer prints, plus leases.
type Observation struct {
	Queue *Queue
	// At is when the shards were counted (service clock).
	At time.Time
	// Shards holds one entry per shard, in shard order: level 0's shards,
	// then each higher level's (ShardView.Priority).
	Shards []ShardView
	// Messages, Due and InFlight add up the shards.
	Messages, Due, InFlight int
	// OldestWaiting is the earliest of the shards' (zero if none).
	OldestWaiting time.Time
}

// DeliveryLag is how long, at At, the longest-waiting due message has
// waited for delivery (since it was due, or since its last delivery's
// visibility ended), zero when none waits: how far consumers are behind.
func (o *Observation) DeliveryLag() time.Duration {
	if o.OldestWaiting.IsZero() {
		return 0
	}
	return max(o.At.Sub(o.OldestWaiting), 0)
}

// ShardView is one shard's state.
type ShardView struct {
	Shard int
	// Priority is the level whose lane the shard belongs to.
	Priority int
	// Behind is how many windows the shard is behind the producers' one:
	// 0 is being written, shard.Lag (2) is the one consumers work.
	Behind int
	// Window is the start of the shard's latest window, in the design's
	// YYYYdddHHMM form (UTC).
	Window string
	// Messages counts live messages; Due those whose due time has passed;
	// InFlight the due ones hidden by a delivery in progress.
	Messages, Due, InFlight int
	// Holder is the consumer holding the lease ("" if none) and LeaseAge
	// how long it has held it.
	Holder   string
	LeaseAge time.Duration
	// Floor is the shard's read floor (zero if never set).
	Floor time.Time
	// OldestWaiting is when the shard's longest-waiting due message not
	// in flight became available (driver.QueueShardStats; zero if none).
	OldestWaiting time.Time
}

// Producing and Consuming tell the producers' and the consumers' shards.
func (v ShardView) Producing() bool { return v.Behind == 0 }

// Consuming reports whether consumers work this shard now.
func (v ShardView) Consuming() bool { return v.Behind == shard.Lag }

// Observe counts every shard of the queue. It reads each shard from its
// floor to its end, so it costs as much as the queue
// holds; it is for operators and metrics, not for hot paths. A message
// below a floor (see DeepSweepInterval) is not counted until a consumer
// finds it.
func (s *Service) Observe(ctx context.Context, queue string) (*Observation, error) {
	q, err := s.Queue(ctx, queue)
	if err != nil {
		return nil, err
	}
	now := s.now()
	obs := &Observation{Queue: q, At: now, Shards: make([]ShardView, q.storedShards())}
	err = forEach(q.storedShards(), func(i int) error {
		// Count from the floor, like the consumers read: below it lie
		// only the tombstones of consumed messages.
		sh, err := s.store.ReadQueueShard(ctx, &driver.QueueShardParams{Queue: q.stored(), Shard: i})
		if err != nil {
			return err
		}
		st, err := s.store.QueueShardStats(ctx, &driver.QueueShardStatsParams{Queue: q.stored(), Shard: i, From: sh.Floor, Now: now})
		if err != nil {
			return err
		}
		m := q.lanes[q.levelOf(i)]
		v := ShardView{
			Shard:    i,
			Priority: q.levelOf(i),
			Behind:   m.Behind(now, i),
			Window:   m.Label(m.Latest(now, i)),
			Messages: st.Messages, Due: st.Due, InFlight: st.InFlight,
			Holder: st.Holder, Floor: st.Floor, OldestWaiting: st.OldestWaiting,
		}
		if st.Holder != "" && !st.Since.IsZero() {
			v.LeaseAge = max(now.Sub(st.Since), 0)
		}
		obs.Shards[i] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, v := range obs.Shards {
		obs.Messages += v.Messages
		obs.Due += v.Due
		obs.InFlight += v.InFlight
		if !v.OldestWaiting.IsZero() && (obs.OldestWaiting.IsZero() || v.OldestWaiting.Before(obs.OldestWaiting)) {
			obs.OldestWaiting = v.OldestWaiting
		}
	}
	return obs, nil
}
