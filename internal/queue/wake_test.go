package queue

import (
	"context"
	"testing"
	"time"
)

// startCollecting starts a consumer whose handler acknowledges and sends
// each message's id, and waits until its first round (a sweep) is over,
// so that what follows is found by what the test is about, not by that.
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
		swept := !c.lastSweep.IsZero()
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
	e.svc.consumers.mu.Lock()
	n := len(e.svc.consumers.byQueue[q.Name])
	e.svc.consumers.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d consumers still registered after Stop", n)
	}
	if c.hints.earliest() != (time.Time{}) {
		t.Fatal("a stopped consumer was hinted")
	}
}
