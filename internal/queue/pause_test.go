package queue

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

func (e *env) serviceWith(t *testing.T, refresh time.Duration) *Service {
	t.Helper()
	s, err := New(Config{Store: e.store, Clock: e.clock, Logger: quiet, PauseRefresh: refresh})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A pause made in one process stops deliveries in another; everything but
// delivery goes on; a resume lets the other process deliver every message.
func TestPauseStopsDeliveriesInEveryProcess(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, e *env) {
		q := e.create(t, QueueConfig{Shards: 4})
		for range 3 {
			e.put(t, e.svc, q.Name, Message{Body: []byte("before")})
		}
		other := e.serviceWith(t, -1) // reads the state before every receive
		c := e.consumer(t, other, ConsumerConfig{Queue: q.Name})
		inHand := receive(t, c, 1)
		if len(inHand) != 1 {
			t.Fatalf("received %d before the pause, want 1", len(inHand))
		}
		st, err := e.svc.Pause(ctxT(t), q.Name)
		if err != nil || !st.Paused || st.Since.IsZero() {
			t.Fatalf("Pause: %+v, %v", st, err)
		}
		if ds := receive(t, c, 10); len(ds) != 0 {
			t.Fatalf("a paused queue handed out %d messages", len(ds))
		}
		// Puts and settling go on.
		e.put(t, other, q.Name, Message{Body: []byte("while paused")})
		if err := inHand[0].Ack(ctxT(t)); err != nil {
			t.Fatalf("ack while paused: %v", err)
		}
		if ds := receive(t, c, 10); len(ds) != 0 {
			t.Fatalf("a paused queue handed out %d messages after a put", len(ds))
		}
		if st, err := e.svc.Resume(ctxT(t), q.Name); err != nil || st.Paused {
			t.Fatalf("Resume: %+v, %v", st, err)
		}
		if got := drain(t, c); len(got) != 3 {
			t.Fatalf("after the resume %d messages were delivered, want 3 (2 put before, 1 while paused)", len(got))
		}
	})
}

// Pause and resume are idempotent, report the state, and refuse unknown
// queues.
func TestPauseStateAndRepeats(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, e *env) {
		q := e.create(t, QueueConfig{Shards: 4})
		if st, err := e.svc.PauseState(ctxT(t), q.Name); err != nil || st.Paused || !st.Since.IsZero() {
			t.Fatalf("a new queue: %+v, %v; want not paused, no time", st, err)
		}
		first, err := e.svc.Pause(ctxT(t), q.Name)
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		again, err := e.svc.Pause(ctxT(t), q.Name)
		if err != nil || again != first {
			t.Fatalf("pausing a paused queue: %+v, %v; want it unchanged, %+v", again, err, first)
		}
		// A clock behind the stored pause still resumes.
		e.clock.Advance(-2 * time.Minute)
		resumed, err := e.svc.Resume(ctxT(t), q.Name)
		if err != nil || resumed.Paused || !resumed.Since.After(first.Since) {
			t.Fatalf("Resume with a clock behind the pause: %+v, %v; want resumed after %v", resumed, err, first.Since)
		}
		if st, err := e.serviceWith(t, 0).PauseState(ctxT(t), q.Name); err != nil || st != resumed {
			t.Fatalf("another process reads %+v, %v; want %+v", st, err, resumed)
		}
		for _, op := range []func() (PauseState, error){
			func() (PauseState, error) { return e.svc.Pause(ctxT(t), "no-such-queue") },
			func() (PauseState, error) { return e.svc.Resume(ctxT(t), "no-such-queue") },
			func() (PauseState, error) { return e.svc.PauseState(ctxT(t), "no-such-queue") },
		} {
			if _, err := op(); !errors.Is(err, ErrNotFound) {
				t.Fatalf("on an unknown queue: %v, want ErrNotFound", err)
			}
		}
	})
}

// A process that read the state less than PauseRefresh ago may still
// deliver; once PauseRefresh has passed since the pause returned, it
// delivers nothing.
func TestPauseIsSeenWithinTheRefresh(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, e *env) {
		const refresh = 300 * time.Millisecond
		q := e.create(t, QueueConfig{Shards: 4})
		other := e.serviceWith(t, refresh)
		c := e.consumer(t, other, ConsumerConfig{Queue: q.Name})
		receive(t, c, 1) // other has now read "not paused"
		for range 3 {
			e.put(t, e.svc, q.Name, Message{Body: []byte("m")})
		}
		if _, err := e.svc.Pause(ctxT(t), q.Name); err != nil {
			t.Fatal(err)
		}
		time.Sleep(refresh)
		if ds := receive(t, c, 10); len(ds) != 0 {
			t.Fatalf("%v after the pause, another process still handed out %d messages", refresh, len(ds))
		}
	})
}

// The cache keeps the state learnt by the read that began last, and trusts
// it for the refresh from that beginning.
func TestPauseCacheKeepsTheLatestRead(t *testing.T) {
	var p pauses
	t0 := time.Now().Add(-time.Second) // every read below began in the past
	p.remember("q", PauseState{Paused: true}, t0)
	p.remember("q", PauseState{Paused: false}, t0.Add(-time.Millisecond)) // began earlier, ended later
	if st, ok := p.fresh("q", time.Hour); !ok || !st.Paused {
		t.Fatalf("fresh = %+v, %v; want the pause, read last", st, ok)
	}
	p.remember("q", PauseState{Paused: false}, t0.Add(time.Millisecond))
	if st := p.last("q"); st.Paused {
		t.Fatalf("last = %+v; want the resume, read after", st)
	}
	if _, ok := p.fresh("q", time.Millisecond); ok {
		t.Fatal("an entry older than the refresh is still fresh")
	}
	if _, ok := p.fresh("q", -1); ok {
		t.Fatal("a negative refresh trusts the cache")
	}
}

// pauseReadFails fails every pause read once fail is set.
type pauseReadFails struct {
	driver.Queues
	fail atomic.Bool
}

func (f *pauseReadFails) GetQueuePause(ctx context.Context, p *driver.GetQueuePauseParams) (driver.QueuePause, error) {
	if f.fail.Load() {
		return driver.QueuePause{}, errors.New("pause record unreadable")
	}
	return f.Queues.GetQueuePause(ctx, p)
}

// A paused consumer polls at PollInterval, not at every hint, and stays
// paused while the state cannot be read; it reports the failure only when
// it last knew the queue running.
func TestPausedConsumerPollsAndStaysPausedOnReadErrors(t *testing.T) {
	e := newEnv(t, "embedded", embeddedStore(t))
	store := &pauseReadFails{Queues: e.store}
	svc, err := New(Config{Store: store, Clock: e.clock, Logger: quiet, PauseRefresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	q := e.create(t, QueueConfig{Shards: 4})
	c := e.consumer(t, svc, ConsumerConfig{Queue: q.Name, PollInterval: 400 * time.Millisecond})
	if _, err := svc.Pause(ctxT(t), q.Name); err != nil {
		t.Fatal(err)
	}
	e.put(t, svc, q.Name, Message{Body: []byte("hinted")}) // leaves a hint for c
	if ds := receive(t, c, 1); len(ds) != 0 {
		t.Fatalf("paused: %d delivered", len(ds))
	}
	if d := c.nextWake(); d != 400*time.Millisecond {
		t.Fatalf("a paused consumer sleeps %v, want its PollInterval", d)
	}
	store.fail.Store(true)
	if ds, err := c.Receive(ctxT(t), 1); err != nil || len(ds) != 0 {
		t.Fatalf("paused, state unreadable: %d delivered, %v; want none and no error", len(ds), err)
	}
	store.fail.Store(false)
	if _, err := svc.Resume(ctxT(t), q.Name); err != nil {
		t.Fatal(err)
	}
	store.fail.Store(true)
	if _, err := c.Receive(ctxT(t), 1); err == nil {
		t.Fatal("running, state unreadable: no error; a stale 'running' must not deliver")
	}
}

// pauseAfterFirstMark runs pause once, after the first delivery marks are
// written: a pause that lands while a receive is delivering.
type pauseAfterFirstMark struct {
	driver.Queues
	pause func()
}

func (p *pauseAfterFirstMark) UpdateMessages(ctx context.Context, u *driver.UpdateMessagesParams) error {
	err := p.Queues.UpdateMessages(ctx, u)
	if f := p.pause; f != nil {
		p.pause = nil
		f()
	}
	return err
}

// A receive that learns of a pause while it delivers stops before its
// next batch, and gives its shard lease back at the next receive.
func TestAReceiveStopsAtTheBatchAfterAPause(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, e *env) {
		q := e.create(t, QueueConfig{Shards: 4})
		// Three messages in each of two shards (two windows): one receive
		// delivers them a shard, a batch, at a time.
		for range 2 {
			for range 3 {
				e.put(t, e.svc, q.Name, Message{Body: []byte("m")})
			}
			e.clock.Advance(q.ShardDuration)
		}
		e.clock.Advance(2 * q.ShardDuration)
		hook := &pauseAfterFirstMark{Queues: e.store}
		svc, err := New(Config{Store: hook, Clock: e.clock, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		hook.pause = func() {
			if _, err := svc.Pause(ctxT(t), q.Name); err != nil {
				t.Error(err)
			}
		}
		c := e.consumer(t, svc, ConsumerConfig{Queue: q.Name})
		if ds := receive(t, c, 10); len(ds) != 3 {
			t.Fatalf("a receive paused during its first batch handed out %d messages, want that batch's 3", len(ds))
		}
		if ds := receive(t, c, 10); len(ds) != 0 {
			t.Fatalf("paused: %d handed out", len(ds))
		}
		for _, v := range e.observe(t, q.Name).Shards {
			if v.Holder != "" {
				t.Fatalf("shard %d is held by %q while the queue is paused", v.Shard, v.Holder)
			}
		}
	})
}
