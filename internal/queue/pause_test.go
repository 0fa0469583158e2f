package queue

import (
	"errors"
	"testing"
	"time"
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
