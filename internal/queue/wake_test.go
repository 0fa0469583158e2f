package queue

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"
)

// startCollecting starts a consumer whose handler acknowledges and sends
// each message's id, and waits until its first round (a sweep) has begun;
// the round finds nothing, so what follows is found by what the test is
// about, not by that round.
func startCollecting(t *testing.T, e *env, cfg ConsumerConfig) (*Consumer, <-chan ID) {
	t.Helper()
	got := make(chan ID, 16)
	cfg.Handler = func(_ context.Context, d *Delivery) error { got <- d.ID(); return nil }
	c := e.consumer(t, e.svc, cfg)
	if err := c.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for {
		c.mu.Lock()
		swept := !c.ln.lastSweep.IsZero()
		c.mu.Unlock()
		if swept {
			return c, got
		}
		time.Sleep(time.Millisecond)
	}
}

func waitFor(t *testing.T, got <-chan ID, want ID, why string) {
	t.Helper()
	select {
	case id := <-got:
		if id != want {
			t.Fatalf("handled %s, want %s", id, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("message %s not handled: %s", want, why)
	}
}

// A message due now is delivered from the shard producers are writing,
// without waiting for its window to pass; the clock stands still here, so
// only that can deliver it. The put comes from another process.
func TestDueNowIsDeliveredFromTheProducersShard(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		q := e.create(t, QueueConfig{Shards: 4})
		_, got := startCollecting(t, e, ConsumerConfig{Queue: q.Name, PollInterval: 10 * time.Millisecond, CatchUpInterval: time.Hour})
		id := e.put(t, e.service(t, e.clock), q.Name, Message{Body: []byte("now")})
		waitFor(t, got, id, "the producers' shard is not read for due messages")
	})
}

// A put in the consumer's own process wakes it at once: this consumer
// would otherwise not look for an hour.
func TestPutWakesAConsumerInTheSameProcess(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		q := e.create(t, QueueConfig{Shards: 4})
		_, got := startCollecting(t, e, ConsumerConfig{Queue: q.Name, PollInterval: time.Hour, CatchUpInterval: time.Hour})
		id := e.put(t, e.svc, q.Name, Message{Body: []byte("ring")})
		waitFor(t, got, id, "the put did not wake the consumer")
	})
}

// A stopped consumer is no longer told of puts: the service does not keep
// it (or its hints) alive.
func TestStoppedConsumerLeavesTheService(t *testing.T) {
	e := newEnv(t, "embedded", embeddedStore(t))
	q := e.create(t, QueueConfig{Shards: 4})
	c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name})
	if err := c.Stop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	e.put(t, e.svc, q.Name, Message{Body: []byte("x")})
	if n := e.svc.consumers.count(q.Name); n != 0 {
		t.Fatalf("%d consumers still registered after Stop", n)
	}
	if c.hints.earliest() != (time.Time{}) {
		t.Fatal("a stopped consumer was hinted")
	}
}

// A consumer dropped without Stop (used only through Receive) is not kept
// alive by the service's registry.
func TestDroppedConsumerIsCollected(t *testing.T) {
	e := newEnv(t, "embedded", embeddedStore(t))
	q := e.create(t, QueueConfig{Shards: 4})
	func() {
		c, err := e.svc.NewConsumer(ctxT(t), ConsumerConfig{Queue: q.Name})
		if err != nil {
			t.Fatal(err)
		}
		receive(t, c, 1)
	}()
	for range 10 {
		runtime.GC()
		e.put(t, e.svc, q.Name, Message{Body: []byte("x")}) // prunes collected entries
		if e.svc.consumers.count(q.Name) == 0 {
			return
		}
	}
	t.Fatal("a consumer dropped without Stop is still registered after 10 collections")
}

// A hint for now rings the receive loop's bell; a hint for later does not
// (it only shortens the next sleep): ringing for every delayed put would
// cost a round each.
func TestOnlyDueHintsRing(t *testing.T) {
	h := newHints()
	now := start
	h.add(3, now.Add(time.Hour), now)
	select {
	case <-h.poke:
		t.Fatal("a hint an hour ahead rang")
	default:
	}
	if got := h.earliest(); !got.Equal(now.Add(time.Hour)) {
		t.Fatalf("earliest = %v, want the hint's time", got)
	}
	h.add(1, now, now)
	select {
	case <-h.poke:
	default:
		t.Fatal("a hint due now did not ring")
	}
}

// A wake time that was due when the last round began had its look; if it
// is still there (the look failed), the loop sleeps PollInterval rather
// than spin on it. A wake time after the round's start still shortens the
// sleep.
func TestNextWakeDoesNotSpinOnAWakeTimeAlreadyLookedAt(t *testing.T) {
	e := newEnv(t, "embedded", embeddedStore(t))
	q := e.create(t, QueueConfig{Shards: 4})
	c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name, PollInterval: time.Minute})
	now := e.clock.Now()
	c.mu.Lock()
	c.ln.roundAt = now
	c.wake[2] = now.Add(-time.Second)
	c.mu.Unlock()
	if d := c.nextWake(); d != time.Minute {
		t.Fatalf("nextWake = %v with only a wake time already looked at, want PollInterval", d)
	}
	c.mu.Lock()
	c.wake[3] = now.Add(10 * time.Second)
	c.mu.Unlock()
	if d := c.nextWake(); d != 10*time.Second {
		t.Fatalf("nextWake = %v, want the 10s to the next wake time", d)
	}
}

// A round cut short (a Receive filled its max) keeps the shards it had not
// reached when the window moves on, instead of leaving them to the next
// sweep.
func TestUnfinishedRoundIsCarriedIntoTheNext(t *testing.T) {
	e := newEnv(t, "embedded", embeddedStore(t))
	q := e.create(t, QueueConfig{Shards: 8})
	c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name, CatchUpInterval: time.Hour})
	receive(t, c, 1) // the first round, a sweep
	c.mu.Lock()
	c.ln.round, c.ln.next = []int{5, 6, 7, 1}, 1 // stopped after shard 5
	c.mu.Unlock()
	e.clock.Advance(time.Minute) // the window moves on: a new round
	receive(t, c, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range []int{6, 7} {
		if !slices.Contains(c.ln.round, s) {
			t.Errorf("round %v dropped shard %d of the unfinished one", c.ln.round, s)
		}
	}
}
