package queue

import (
	"errors"
	"testing"
	"time"
)

// A put repeated with its dedup id, from this service or another, stores
// one message and answers its id; another body under the id is refused;
// the message is delivered once.
func TestDedupIDStoresOneMessage(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		q := e.create(t, QueueConfig{Shards: 4})
		other := e.service(t, e.clock)
		first, dup, err := e.svc.PutBatchDedup(ctx, q.Name, []Message{{Body: []byte("ship 4"), DedupID: "order-4"}, {Body: []byte("plain")}})
		if err != nil || dup[0] || dup[1] {
			t.Fatalf("first put = %v, %v, %v", first, dup, err)
		}
		e.clock.Advance(time.Second)
		again, dup, err := other.PutBatchDedup(ctx, q.Name, []Message{{Body: []byte("ship 4"), DedupID: "order-4"}})
		if err != nil || !dup[0] || again[0] != first[0] {
			t.Fatalf("repeat from another service = %v, %v, %v; want a duplicate of %s", again, dup, err, first[0])
		}
		if _, err := e.svc.Put(ctx, q.Name, Message{Body: []byte("ship 5"), DedupID: "order-4"}); !errors.Is(err, ErrDedupConflict) {
			t.Fatalf("another body under the id: %v, want ErrDedupConflict", err)
		}
		if _, err := e.svc.Put(ctx, q.Name, Message{Body: []byte("x"), DedupID: string(make([]byte, 129))}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("a 129-byte dedup id: %v, want ErrInvalid", err)
		}
		if o := e.observe(t, q.Name); o.Messages != 2 {
			t.Fatalf("%d messages stored, want 2", o.Messages)
		}
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name})
		got := drain(t, c)
		if len(got) != 2 {
			t.Fatalf("delivered %v, want the two stored messages once each", got)
		}
		if e.svc.Stats().Deduplicated.Load() != 0 || other.Stats().Deduplicated.Load() != 1 {
			t.Fatalf("dedup counts %d and %d, want 0 and 1", e.svc.Stats().Deduplicated.Load(), other.Stats().Deduplicated.Load())
		}
	})
}
