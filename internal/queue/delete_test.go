package queue

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// A delete takes the queue away from every process within the refresh,
// removes its messages, keeps its name for RecreateWait, and a queue made
// again under the name starts empty: nothing of the old generation — not
// a put that a process with a stale record made after the delete, not a
// pause, not a dedup id, not a receipt — reaches it.
func TestDeleteAndMakeAgain(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		q := e.create(t, QueueConfig{Shards: 4, MaxDeliveries: 1})
		for range 3 {
			e.put(t, e.svc, q.Name, Message{Body: []byte("old")})
		}
		if _, _, err := e.svc.PutBatchDedup(ctx, q.Name, []Message{{Body: []byte("once"), DedupID: "order-1"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Pause(ctx, q.Name); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Resume(ctx, q.Name); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(2 * time.Minute)
		oldConsumer := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name})
		inHand := receive(t, oldConsumer, 1)
		if len(inHand) != 1 {
			t.Fatalf("received %d before the delete, want 1", len(inHand))
		}
		if _, err := e.svc.Pause(ctx, q.Name); err != nil {
			t.Fatal(err)
		}
		stale := e.serviceWith(t, time.Hour) // trusts what it read for an hour
		if _, err := stale.Queue(ctx, q.Name); err != nil {
			t.Fatal(err)
		}
		fresh := e.serviceWith(t, -1) // reads the record before every use
		if _, err := fresh.Queue(ctx, q.Name); err != nil {
			t.Fatal(err)
		}

		res, err := e.svc.Delete(ctx, q.Name)
		if err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if res.Messages != 4 || res.Leftover != nil || !res.DeletedAt.Equal(e.svc.now()) {
			t.Fatalf("Delete removed %+v; want 4 messages, nothing left over, deleted now (%v)", res, e.svc.now())
		}
		// Gone here and in every process that read the record since.
		for name, svc := range map[string]*Service{"the deleting process": e.svc, "a fresh process": fresh} {
			if _, err := svc.Put(ctx, q.Name, Message{Body: []byte("x")}); !errors.Is(err, ErrNotFound) {
				t.Errorf("%s: Put after the delete: %v, want ErrNotFound", name, err)
			}
			if _, err := svc.Observe(ctx, q.Name); !errors.Is(err, ErrNotFound) {
				t.Errorf("%s: Observe after the delete: %v, want ErrNotFound", name, err)
			}
			if err := svc.Ack(ctx, q.Name, inHand[0].Receipt()); !errors.Is(err, ErrNotFound) {
				t.Errorf("%s: Ack by receipt after the delete: %v, want ErrNotFound", name, err)
			}
		}
		if _, err := oldConsumer.Receive(ctx, 1); !errors.Is(err, ErrNotFound) {
			t.Errorf("a consumer of the deleted queue: Receive gave %v, want ErrNotFound", err)
		}
		for what, settle := range map[string]func() error{
			"Ack":     func() error { return inHand[0].Ack(ctx) },
			"Fail":    func() error { return inHand[0].Fail(ctx, errors.New("x")) },
			"Release": func() error { return inHand[0].Release(ctx) },
			"Extend":  func() error { return inHand[0].Extend(ctx, time.Minute) },
		} {
			if err := settle(); !errors.Is(err, ErrNotFound) {
				t.Errorf("Delivery.%s after the delete: %v, want ErrNotFound", what, err)
			}
		}
		if again, err := fresh.Delete(ctx, q.Name); err != nil || !again.DeletedAt.Equal(res.DeletedAt) || again.Messages != 0 {
			t.Errorf("a repeated Delete: %+v, %v; want the first one's time and nothing more removed", again, err)
		}
		list, err := fresh.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range list {
			if l.Name == q.Name {
				t.Errorf("List still has the deleted queue")
			}
		}
		// A process that has not read the record since the delete may
		// still put (the refresh window); its message is never delivered,
		// and a repeat of the delete removes it.
		if _, err := stale.Put(ctx, q.Name, Message{Body: []byte("late")}); err != nil {
			t.Fatalf("a put from a process that has not seen the delete: %v", err)
		}
		if again, err := e.svc.Delete(ctx, q.Name); err != nil || again.Messages != 1 {
			t.Errorf("a repeated Delete after a late put: %+v, %v; want the late message removed", again, err)
		}
		if _, err := stale.Put(ctx, q.Name, Message{Body: []byte("later")}); err != nil {
			t.Fatalf("a put from a process that has not seen the delete: %v", err)
		}

		// The name is taken until RecreateWait has passed.
		if _, err := e.svc.Create(ctx, QueueConfig{Name: q.Name, Shards: 4}); !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "created again from") {
			t.Fatalf("Create right after the delete: %v, want ErrExists saying when", err)
		}
		e.clock.Advance(e.svc.RecreateWait())
		again, err := fresh.Create(ctx, QueueConfig{Name: q.Name, Shards: 8})
		if err != nil {
			t.Fatalf("Create after RecreateWait: %v", err)
		}
		if again.Generation != 1 || again.Shards != 8 {
			t.Fatalf("made again: generation %d, %d shards; want 1, 8", again.Generation, again.Shards)
		}
		if _, err := e.svc.Create(ctx, QueueConfig{Name: q.Name, Shards: 4}); !errors.Is(err, ErrExists) {
			t.Fatalf("Create of the live queue made again: %v, want ErrExists", err)
		}
		st, err := e.svc.PauseState(ctx, q.Name)
		if err != nil || st.Paused {
			t.Fatalf("the queue made again starts paused (%+v, %v); want not paused", st, err)
		}
		// Empty: nothing old is delivered, a dedup id is new again, an
		// old receipt settles nothing.
		e.clock.Advance(2 * time.Minute)
		newConsumer := e.consumer(t, fresh, ConsumerConfig{Queue: q.Name})
		if got := drain(t, newConsumer); len(got) != 0 {
			t.Fatalf("the queue made again delivered %d old messages", len(got))
		}
		_, dup, err := fresh.PutBatchDedup(ctx, q.Name, []Message{{Body: []byte("once"), DedupID: "order-1"}})
		if err != nil || dup[0] {
			t.Fatalf("a dedup id of the deleted queue in the new one: duplicate %v, %v; want a new message", dup, err)
		}
		if err := fresh.Ack(ctx, q.Name, inHand[0].Receipt()); err != nil && !errors.Is(err, ErrStaleReceipt) && !errors.Is(err, ErrInvalid) {
			t.Fatalf("an old receipt on the queue made again: %v", err)
		}
		e.clock.Advance(2 * time.Minute)
		if got := drain(t, newConsumer); len(got) != 1 {
			t.Fatalf("the queue made again delivered %d messages, want its own 1", len(got))
		}
		if _, err := oldConsumer.Receive(ctx, 1); !errors.Is(err, ErrNotFound) {
			t.Errorf("a consumer of the old generation after the name was made again: %v, want ErrNotFound", err)
		}
	})
}

// Deleting a name that never was a queue, or a malformed one, changes
// nothing.
func TestDeleteRefusals(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, e *env) {
		if _, err := e.svc.Delete(ctxT(t), queueName(t)); !errors.Is(err, ErrNotFound) {
			t.Errorf("Delete of an unknown queue: %v, want ErrNotFound", err)
		}
		if _, err := e.svc.Delete(ctxT(t), ""); !errors.Is(err, ErrInvalid) {
			t.Errorf("Delete of an empty name: %v, want ErrInvalid", err)
		}
	})
}

// A started consumer stops receiving once its process reads the delete;
// the handler it was running finishes and is settled, and Stop still
// returns cleanly.
func TestARunningConsumerStopsAtTheDelete(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		q := e.create(t, QueueConfig{Shards: 4})
		e.put(t, e.svc, q.Name, Message{Body: []byte("slow")})
		e.clock.Advance(2 * time.Minute)
		started, release := make(chan struct{}), make(chan struct{})
		var releaseOnce sync.Once
		var handled atomic.Int64
		// Two handlers, so that the loop goes on receiving while one runs.
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name, Concurrency: 2, PollInterval: 10 * time.Millisecond, Handler: func(ctx context.Context, d *Delivery) error {
			handled.Add(1)
			close(started)
			<-release
			return nil
		}})
		// Cleanups run last first: this one before the consumer's Stop.
		t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		<-started
		if _, err := e.svc.Delete(ctx, q.Name); err != nil {
			t.Fatal(err)
		}
		select {
		case <-c.loopDone:
		case <-time.After(30 * time.Second):
			t.Fatal("the receive loop still runs 30 s after the delete")
		}
		releaseOnce.Do(func() { close(release) })
		if err := c.Stop(ctx); err != nil {
			t.Fatalf("Stop after the loop stopped itself: %v", err)
		}
		if n := handled.Load(); n != 1 {
			t.Fatalf("the handler ran %d times, want 1", n)
		}
	})
}

// interruptedDelete is a store on which the caller of a delete gives up
// the moment the record is marked, and whose message deletes fail while
// failDeletes is set.
type interruptedDelete struct {
	driver.Queues
	cancel      context.CancelFunc
	failDeletes atomic.Bool
}

func (s *interruptedDelete) DeleteQueue(ctx context.Context, p *driver.DeleteQueueParams) error {
	err := s.Queues.DeleteQueue(ctx, p)
	s.cancel()
	return err
}

func (s *interruptedDelete) DeleteMessages(ctx context.Context, p *driver.DeleteMessagesParams) error {
	if s.failDeletes.Load() {
		return errors.New("store down")
	}
	return s.Queues.DeleteMessages(ctx, p)
}

// The removal of a deleted queue's rows outlives a caller that gives up;
// rows it cannot remove are reported as left over, and a repeat of the
// delete removes them.
func TestADeleteFinishesItsRemovalAndARepeatRemovesTheRest(t *testing.T) {
	e := newEnv(t, "embedded", embeddedStore(t))
	q := e.create(t, QueueConfig{Shards: 4})
	for range 5 {
		e.put(t, e.svc, q.Name, Message{Body: []byte("m")})
	}
	ctx, cancel := context.WithCancel(ctxT(t))
	store := &interruptedDelete{Queues: e.store, cancel: cancel}
	svc, err := New(Config{Store: store, Clock: e.clock, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	res, err := svc.Delete(ctx, q.Name)
	if err != nil || res.Messages != 5 || res.Leftover != nil || ctx.Err() == nil {
		t.Fatalf("a delete whose caller gave up after the mark: %+v, %v (caller's context: %v); want all 5 messages removed", res, err, ctx.Err())
	}
	e.put(t, e.svc, q.Name, Message{Body: []byte("late")}) // e.svc has not read the delete yet (it trusts its record for a second)
	store.failDeletes.Store(true)
	res, err = svc.Delete(ctxT(t), q.Name)
	if err != nil || res.Leftover == nil || res.Messages != 0 {
		t.Fatalf("a repeat that cannot remove the late message: %+v, %v; want it reported as left over", res, err)
	}
	store.failDeletes.Store(false)
	if res, err = svc.Delete(ctxT(t), q.Name); err != nil || res.Leftover != nil || res.Messages != 1 {
		t.Fatalf("a repeat that can: %+v, %v; want the late message removed", res, err)
	}
}

// The wait before a deleted name comes back is what the docs give: the
// refresh, the clock skew and 10 s; 71 s at the defaults.
func TestRecreateWaitAtTheDefaults(t *testing.T) {
	svc, err := New(Config{Store: embeddedStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	if got := svc.RecreateWait(); got != 71*time.Second {
		t.Fatalf("RecreateWait at the defaults = %v, want 71s", got)
	}
}

// lostRecord is a store whose record reads answer "not found" while lost
// is set, as a replica that missed the create may.
type lostRecord struct {
	driver.Queues
	lost atomic.Bool
}

func (s *lostRecord) GetQueue(ctx context.Context, p *driver.GetQueueParams) (*driver.Queue, error) {
	if s.lost.Load() {
		return nil, driver.ErrNotFound
	}
	return s.Queues.GetQueue(ctx, p)
}

// A started consumer whose queue's record is merely not found keeps its
// loop running, and delivers once the record is found again.
func TestARunningConsumerOutlivesARecordNotFound(t *testing.T) {
	e := newEnv(t, "embedded", embeddedStore(t))
	q := e.create(t, QueueConfig{Shards: 4})
	store := &lostRecord{Queues: e.store}
	svc, err := New(Config{Store: store, Clock: e.clock, Logger: quiet, PauseRefresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	handled := make(chan struct{}, 1)
	c := e.consumer(t, svc, ConsumerConfig{Queue: q.Name, PollInterval: 5 * time.Millisecond, Handler: func(context.Context, *Delivery) error {
		handled <- struct{}{}
		return nil
	}})
	store.lost.Store(true)
	if err := c.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // receives that find no record
	select {
	case <-c.loopDone:
		t.Fatal("the receive loop stopped on a record not found")
	default:
	}
	store.lost.Store(false)
	e.put(t, e.svc, q.Name, Message{Body: []byte("m")})
	e.clock.Advance(2 * time.Minute)
	select {
	case <-handled:
	case <-time.After(30 * time.Second):
		t.Fatal("the consumer delivered nothing once the record was found again")
	}
}
