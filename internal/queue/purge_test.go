package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
)

// Purge deletes every message put before it, due or not, in hand or not,
// over several pages, and steps over messages put after it; dead letters
// go only when asked.
func TestPurgeDeletesEveryMessagePutBeforeIt(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, e *env) {
		// Hour-long windows: the producer whose clock runs ahead below
		// writes the same shard.
		q := e.create(t, QueueConfig{Shards: 4, MaxDeliveries: 1, ShardDuration: time.Hour})
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
		// More than two pages in one shard, with messages that a producer
		// whose clock runs past the purge's cutoff puts among them (as if
		// put after the purge began): they are stepped over and kept.
		later := e.service(t, clock.Offset{Base: e.clock, By: e.svc.cfg.MaxClockSkew + 5*time.Second})
		var batch []Message
		for i := range 1100 {
			batch = append(batch, Message{Body: []byte(fmt.Sprint(i)), Due: e.clock.Now().Add(time.Duration(i%7) * time.Millisecond)})
		}
		if _, err := e.svc.PutBatch(ctxT(t), q.Name, batch[:MaxBatch]); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.PutBatch(ctxT(t), q.Name, batch[MaxBatch:]); err != nil {
			t.Fatal(err)
		}
		var kept []ID
		for i := range 3 {
			kept = append(kept, e.put(t, later, q.Name, Message{Body: []byte("kept"), Due: e.clock.Now().Add(time.Duration(i) * time.Millisecond)}))
		}
		inHand := receive(t, c, 1)
		if len(inHand) != 1 {
			t.Fatalf("received %d, want 1", len(inHand))
		}
		e.put(t, e.svc, q.Name, Message{Body: []byte("in an hour"), Delay: time.Hour})
		e.put(t, e.svc, q.Name, Message{Body: []byte("in a century"), Delay: 100 * 365 * 24 * time.Hour})

		if inHand[0].EnqueuedAt().After(e.clock.Now()) {
			t.Fatal("the message in hand is one of those put past the cutoff")
		}
		o := e.observe(t, q.Name)
		if o.Messages != 1105 || o.Shards[inHand[0].Shard()].Messages != 1105 {
			t.Fatalf("before the purge: %d messages, %d in the shard of the one in hand; want all 1,105 in one shard", o.Messages, o.Shards[inHand[0].Shard()].Messages)
		}
		res, err := e.svc.Purge(ctxT(t), q.Name, false)
		if err != nil || res.Messages != 1102 || res.DeadLetters != 0 {
			t.Fatalf("Purge = %+v, %v; want 1,102 messages (1,100 and the two delayed), dead letters kept", res, err)
		}
		if o := e.observe(t, q.Name); o.Messages != len(kept) {
			t.Fatalf("%d messages after the purge, want the %d put past its cutoff", o.Messages, len(kept))
		}
		if err := inHand[0].Fail(ctxT(t), errors.New("late")); !errors.Is(err, ErrStaleReceipt) {
			t.Fatalf("failing a purged delivery: %v, want ErrStaleReceipt", err)
		}
		if err := inHand[0].Extend(ctxT(t), time.Minute); !errors.Is(err, ErrStaleReceipt) {
			t.Fatalf("extending a purged delivery: %v, want ErrStaleReceipt", err)
		}
		if err := inHand[0].Release(ctxT(t)); !errors.Is(err, ErrStaleReceipt) {
			t.Fatalf("releasing a purged delivery: %v, want ErrStaleReceipt", err)
		}
		if err := inHand[0].Ack(ctxT(t)); err != nil {
			t.Fatalf("ack of a purged delivery: %v, want nil (nothing left to delete)", err)
		}
		if dl, err := e.svc.DeadLetters(ctxT(t), q.Name, 10); err != nil || len(dl) != 1 {
			t.Fatalf("dead letters after a purge without them: %d, %v; want 1", len(dl), err)
		}
		e.clock.Advance(2 * time.Hour)
		got := drain(t, c)
		if len(got) != len(kept) {
			t.Fatalf("after the purge %v were delivered, want the kept %v", got, kept)
		}
		res, err = e.svc.Purge(ctxT(t), q.Name, true)
		if err != nil || res.Messages != 0 || res.DeadLetters != 1 {
			t.Fatalf("Purge with dead letters = %+v, %v; want just the dead letter", res, err)
		}
		if dl, err := e.svc.DeadLetters(ctxT(t), q.Name, 10); err != nil || len(dl) != 0 {
			t.Fatalf("dead letters after the purge: %d, %v", len(dl), err)
		}
		if _, err := e.svc.Purge(ctxT(t), "no-such-queue", true); !errors.Is(err, ErrNotFound) {
			t.Fatalf("purge of an unknown queue: %v", err)
		}
	})
}

// More than a page of kept messages at one due time (a batch put after the
// purge began) is stepped over; deletes that do not take stop the purge
// with an error rather than a loop; a purged shard's floor moves past the
// tombstones.
func TestPurgeStepsOverKeptBatchesAndMovesTheFloor(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, e *env) {
		q := e.create(t, QueueConfig{Shards: 4, ShardDuration: time.Hour})
		var old, kept []Message
		for i := range 700 {
			old = append(old, Message{Body: []byte(fmt.Sprint("old ", i))})
			kept = append(kept, Message{Body: []byte(fmt.Sprint("kept ", i)), Due: e.clock.Now()})
		}
		if _, err := e.svc.PutBatch(ctxT(t), q.Name, old); err != nil {
			t.Fatal(err)
		}
		later := e.service(t, clock.Offset{Base: e.clock, By: e.svc.cfg.MaxClockSkew + 5*time.Second})
		if _, err := later.PutBatch(ctxT(t), q.Name, kept); err != nil {
			t.Fatal(err)
		}
		// Put before the purge by a producer whose clock runs ahead, within
		// the allowed skew: deleted.
		ahead := e.service(t, clock.Offset{Base: e.clock, By: e.svc.cfg.MaxClockSkew / 2})
		for range 5 {
			e.put(t, ahead, q.Name, Message{Body: []byte("ahead"), Due: e.clock.Now()})
		}
		shard := -1
		for _, v := range e.observe(t, q.Name).Shards {
			if v.Messages == 1405 {
				shard = v.Shard
			}
		}
		if shard < 0 {
			t.Fatal("the 1,405 messages are not all in one shard")
		}
		before, err := e.store.ReadQueueShard(ctxT(t), &driver.QueueShardParams{Queue: q.Name, Shard: shard})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.svc.Purge(ctxT(t), q.Name, false)
		if err != nil || res.Messages != 705 {
			t.Fatalf("Purge = %+v, %v; want the 705 put before it", res, err)
		}
		if o := e.observe(t, q.Name); o.Messages != 700 {
			t.Fatalf("%d messages after the purge, want the 700 kept", o.Messages)
		}
		after, err := e.store.ReadQueueShard(ctxT(t), &driver.QueueShardParams{Queue: q.Name, Shard: shard})
		if err != nil {
			t.Fatal(err)
		}
		if !after.Floor.After(before.Floor) || after.Floor.After(e.clock.Now()) {
			t.Fatalf("floor %v after the purge (before %v); want it moved up, no later than the kept messages' due %v", after.Floor, before.Floor, e.clock.Now())
		}

		// A store whose deletes do nothing.
		stuck := &deletesNothing{Queues: e.store}
		svc, err := New(Config{Store: stuck, Clock: e.clock, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(2 * e.svc.cfg.MaxClockSkew) // the kept ones are old now
		if _, err := svc.Purge(ctxT(t), q.Name, false); err == nil || !strings.Contains(err.Error(), "still there after its delete") {
			t.Fatalf("purge on a store whose deletes do not take: %v; want an error, not a loop", err)
		}
	})
}

type deletesNothing struct{ driver.Queues }

func (deletesNothing) DeleteMessages(context.Context, *driver.DeleteMessagesParams) error { return nil }
func (deletesNothing) DeleteDead(context.Context, *driver.DeleteDeadParams) error         { return nil }
