package queue

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// Purge deletes every message, due or not, in hand or not, over several
// pages; dead letters only when asked.
func TestPurgeDeletesEveryMessage(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, e *env) {
		q := e.create(t, QueueConfig{Shards: 4, MaxDeliveries: 1})
		// One message to the dead letters: delivered once, failed.
		e.put(t, e.svc, q.Name, Message{Body: []byte("poison")})
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name})
		ds := receive(t, c, 1)
		if len(ds) != 1 {
			t.Fatalf("received %d, want the poison message", len(ds))
		}
		if err := ds[0].Fail(ctxT(t), errors.New("bad")); err != nil {
			t.Fatalf("Fail: %v", err)
		}
		// A page and more in one shard, one in hand, some not due for long.
		var batch []Message
		for i := range 1100 {
			batch = append(batch, Message{Body: []byte(fmt.Sprint(i))})
		}
		if _, err := e.svc.PutBatch(ctxT(t), q.Name, batch[:MaxBatch]); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.PutBatch(ctxT(t), q.Name, batch[MaxBatch:]); err != nil {
			t.Fatal(err)
		}
		inHand := receive(t, c, 1)
		if len(inHand) != 1 {
			t.Fatalf("received %d, want 1", len(inHand))
		}
		e.put(t, e.svc, q.Name, Message{Body: []byte("in an hour"), Delay: time.Hour})
		e.put(t, e.svc, q.Name, Message{Body: []byte("in a century"), Delay: 100 * 365 * 24 * time.Hour})

		res, err := e.svc.Purge(ctxT(t), q.Name, false)
		if err != nil || res.Messages != 1102 || res.DeadLetters != 0 {
			t.Fatalf("Purge = %+v, %v; want 1102 messages, dead letters kept", res, err)
		}
		if o := e.observe(t, q.Name); o.Messages != 0 {
			t.Fatalf("%d messages after the purge", o.Messages)
		}
		if err := inHand[0].Extend(ctxT(t), time.Minute); !errors.Is(err, ErrStaleReceipt) {
			t.Fatalf("extending a purged message: %v, want ErrStaleReceipt", err)
		}
		if err := inHand[0].Ack(ctxT(t)); err != nil {
			t.Fatalf("ack of a purged message: %v, want nil (nothing left to delete)", err)
		}
		e.clock.Advance(2 * time.Hour)
		if got := drain(t, c); len(got) != 0 {
			t.Fatalf("%d messages delivered after the purge", len(got))
		}
		if dl, err := e.svc.DeadLetters(ctxT(t), q.Name, 10); err != nil || len(dl) != 1 {
			t.Fatalf("dead letters after a purge without them: %d, %v; want 1", len(dl), err)
		}
		res, err = e.svc.Purge(ctxT(t), q.Name, true)
		if err != nil || res.Messages != 0 || res.DeadLetters != 1 {
			t.Fatalf("Purge with dead letters = %+v, %v; want just the dead letter", res, err)
		}
		if dl, err := e.svc.DeadLetters(ctxT(t), q.Name, 10); err != nil || len(dl) != 0 {
			t.Fatalf("dead letters after the purge: %d, %v", len(dl), err)
		}
		// The queue still works.
		id := e.put(t, e.svc, q.Name, Message{Body: []byte("after")})
		e.clock.Advance(2 * time.Minute)
		if got := drain(t, c); len(got) != 1 || got[0] != id {
			t.Fatalf("after the purge a new message was delivered as %v, want [%s]", got, id)
		}
		if _, err := e.svc.Purge(ctxT(t), "no-such-queue", true); !errors.Is(err, ErrNotFound) {
			t.Fatalf("purge of an unknown queue: %v", err)
		}
	})
}
