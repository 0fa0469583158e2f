package queue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
)

// A delivery extended before its visibility ends stays hidden past the
// old end, from any process holding its receipt; one whose visibility has
// ended, or that was delivered again, cannot be extended.
func TestExtendKeepsADeliveryHidden(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		q, c, d := e.delivered(t, 10*time.Second)

		// Twice, each before the visibility ends: 8 s + 8 s > 10 s.
		for range 2 {
			e.clock.Advance(8 * time.Second)
			if err := d.Extend(ctx, 10*time.Second); err != nil {
				t.Fatalf("Extend: %v", err)
			}
			if want := e.clock.Now().Add(10 * time.Second); !d.VisibleUntil().Equal(want) {
				t.Fatalf("VisibleUntil %v, want %v", d.VisibleUntil(), want)
			}
			if got := receive(t, c, 1); len(got) != 0 {
				t.Fatalf("an extended delivery was handed out again: %v", deliveryIDs(got))
			}
		}
		// By receipt, from another process.
		other := e.service(t, e.clock)
		until, err := other.Extend(ctx, q.Name, d.Receipt(), 20*time.Second)
		if err != nil || !until.Equal(e.clock.Now().Add(20*time.Second)) {
			t.Fatalf("Extend by receipt: %v, %v", until, err)
		}
		for _, bad := range []time.Duration{0, -time.Second, MaxVisibilityTimeout + time.Second} {
			if _, err := other.Extend(ctx, q.Name, d.Receipt(), bad); !errors.Is(err, ErrInvalid) {
				t.Errorf("Extend by %v: %v, want ErrInvalid", bad, err)
			}
		}

		// Past its end, it cannot be extended, and is delivered again.
		e.clock.Advance(20 * time.Second)
		if err := d.Extend(ctx, time.Minute); !errors.Is(err, ErrStaleReceipt) {
			t.Fatalf("Extend after the visibility ended: %v, want ErrStaleReceipt", err)
		}
		again := receive(t, c, 1)
		if len(again) != 1 || again[0].ID() != d.ID() || again[0].Attempt() != 2 {
			t.Fatalf("after the extension ended got %v", deliveryIDs(again))
		}
		if _, err := other.Extend(ctx, q.Name, d.Receipt(), time.Minute); !errors.Is(err, ErrStaleReceipt) {
			t.Fatalf("Extend with the first delivery's receipt: %v, want ErrStaleReceipt", err)
		}
		if err := again[0].Ack(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := other.Extend(ctx, q.Name, again[0].Receipt(), time.Minute); !errors.Is(err, ErrStaleReceipt) {
			t.Fatalf("Extend after the ack: %v, want ErrStaleReceipt", err)
		}
	})
}

// hookStore runs after once, after the first GetMessage returns: what
// another process does between an extension's read and its write.
type hookStore struct {
	driver.Queues
	after func()
}

func (h *hookStore) GetMessage(ctx context.Context, p *driver.GetMessageParams) (*driver.Message, error) {
	m, err := h.Queues.GetMessage(ctx, p)
	if f := h.after; f != nil {
		h.after = nil
		f()
	}
	return m, err
}

// An extension whose read comes just before the visibility's end and
// whose write comes after a redelivery must not roll the delivery count
// back: the new delivery's receipt stays good, and it counts. The
// extension writes visible_at alone (and, on the embedded store, only for
// the delivery it read).
func TestExtendRacingARedeliveryKeepsItsCount(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		q, c, first := e.delivered(t, 10*time.Second)
		e.clock.Advance(10*time.Second - time.Millisecond)
		var second []*Delivery
		hs := &hookStore{Queues: e.store, after: func() {
			e.clock.Advance(time.Millisecond)
			second = receive(t, c, 1)
		}}
		// A process whose clock runs a second behind: it still sees the
		// first delivery's visibility as open.
		late, err := New(Config{Store: hs, Clock: clock.Offset{Base: e.clock, By: -time.Second}, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = late.Extend(ctx, q.Name, first.Receipt(), time.Minute) // refused or not, it must not rewind
		if len(second) != 1 || second[0].Attempt() != 2 {
			t.Fatalf("no second delivery in the hook: %v", deliveryIDs(second))
		}
		if _, err := e.svc.Fail(ctx, q.Name, second[0].Receipt(), "boom"); err != nil {
			t.Fatalf("the second delivery's receipt after a racing extension: %v", err)
		}
	})
}

// A delivery settled as failed cannot be extended: that would cut its
// backoff short, or hide it again.
func TestExtendAfterNackIsStale(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		q, c, d := e.delivered(t, 10*time.Second)
		if _, err := e.svc.FailAfter(ctx, q.Name, d.Receipt(), "boom", time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Extend(ctx, q.Name, d.Receipt(), time.Second); !errors.Is(err, ErrStaleReceipt) {
			t.Fatalf("Extend after a nack: %v, want ErrStaleReceipt", err)
		}
		e.clock.Advance(time.Minute)
		if got := receive(t, c, 1); len(got) != 0 {
			t.Fatalf("back before its 1 h backoff: %v", deliveryIDs(got))
		}
	})
}

// A handler run by a Consumer may outlive the visibility timeout while it
// extends: its context's deadline moves with each extension. (Real time:
// the handler's deadline is a timer.)
func TestHandlerThatExtendsOutlivesTheTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "embedded", embeddedStore(t))
	q := e.create(t, QueueConfig{Shards: 4, VisibilityTimeout: time.Second})
	e.put(t, e.svc, q.Name, Message{Body: []byte("slow")})
	e.clock.Advance(2 * time.Minute)
	result := make(chan error, 1)
	c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name, PollInterval: 10 * time.Millisecond, Handler: func(ctx context.Context, d *Delivery) error {
		for range 8 { // 1.6 s, past the 1 s timeout
			// Extend first and by 5 s: waiting 0.2 s, then extending by 1 s, left 0.8 s of slack a loaded machine can eat.
			if err := d.Extend(ctx, 5*time.Second); err != nil {
				result <- err
				return err
			}
			select {
			case <-ctx.Done():
				result <- ctx.Err()
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
		result <- nil
		return nil
	}})
	if err := c.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctxT(t))
	select {
	case err := <-result:
		if err != nil {
			t.Fatalf("the extending handler ended with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the handler never ran")
	}
}

// Without extensions the handler's context still ends with the
// visibility, as DeadlineExceeded.
func TestHandlerDeadlineIsTheVisibility(t *testing.T) {
	t.Parallel()
	// The first deadline is an hour off, so the move always comes before
	// it; start is taken before the move, so a timer (which never fires
	// early) set by the move cannot end the context less than 400ms after
	// it.
	hctx, cancel := withMovableDeadline(context.Background(), time.Hour)
	defer cancel()
	start := time.Now()
	hctx.moveTo(400 * time.Millisecond)
	select {
	case <-hctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the moved deadline never ended the context")
	}
	if waited := time.Since(start); waited < 400*time.Millisecond || !errors.Is(hctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("ended after %v with %v; want at least 400ms and DeadlineExceeded", waited, hctx.Err())
	}
	parent, pcancel := context.WithCancel(context.Background())
	child, ccancel := withMovableDeadline(parent, time.Hour)
	defer ccancel()
	pcancel()
	<-child.Done()
	if !errors.Is(child.Err(), context.Canceled) {
		t.Fatalf("after the parent was cancelled: %v", child.Err())
	}
}

// A delivery whose visibility ended and whose message was delivered again
// cannot be failed from its Delivery (as Start's loop does when a handler
// returns an error after its deadline): that would set the redelivery's
// count back and show the message while the second consumer holds it. Nor
// can one whose message was acknowledged since: that would bring it back
// as a dead letter.
func TestFailOfAnOutdatedDeliveryIsStale(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		q := e.create(t, QueueConfig{Shards: 4, VisibilityTimeout: 10 * time.Second, MaxDeliveries: 2})
		e.put(t, e.svc, q.Name, Message{Body: []byte("job")})
		e.clock.Advance(2 * time.Minute)
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name})
		first := receive(t, c, 1)
		e.clock.Advance(11 * time.Second)
		second := receive(t, c, 1)
		if len(first) != 1 || len(second) != 1 || second[0].Attempt() != 2 {
			t.Fatalf("deliveries %v then %v; want the message twice", deliveryIDs(first), deliveryIDs(second))
		}
		if err := first[0].Fail(ctx, errors.New("too late")); !errors.Is(err, ErrStaleReceipt) {
			t.Fatalf("failing the first delivery after the second: %v, want ErrStaleReceipt", err)
		}
		if o := e.observe(t, q.Name); o.InFlight != 1 {
			t.Fatalf("after the stale failure %d in flight, want the second delivery still hidden", o.InFlight)
		}
		if err := second[0].Ack(ctx); err != nil {
			t.Fatal(err)
		}
		if err := second[0].Fail(ctx, errors.New("after the ack")); !errors.Is(err, ErrStaleReceipt) {
			t.Fatalf("failing an acknowledged delivery: %v, want ErrStaleReceipt", err)
		}
		if dl, err := e.svc.DeadLetters(ctx, q.Name, 10); err != nil || len(dl) != 0 {
			t.Fatalf("dead letters %d, %v; an acknowledged message came back", len(dl), err)
		}
	})
}

// A failed delivery is settled: failing it again (by receipt or from the
// Delivery) or giving it back would rewrite its last error and restart its
// backoff, or undo its count; all are refused as stale.
func TestAFailedDeliveryIsSettledOnce(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		q, _, d := e.delivered(t, 10*time.Second)
		if _, err := e.svc.FailAfter(ctx, q.Name, d.Receipt(), "boom", time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Fail(ctx, q.Name, d.Receipt(), "again"); !errors.Is(err, ErrStaleReceipt) {
			t.Errorf("a second nack by receipt: %v, want ErrStaleReceipt", err)
		}
		if err := d.Fail(ctx, errors.New("again")); !errors.Is(err, ErrStaleReceipt) {
			t.Errorf("a second failure from the Delivery: %v, want ErrStaleReceipt", err)
		}
		if err := e.svc.Release(ctx, q.Name, d.Receipt()); !errors.Is(err, ErrStaleReceipt) {
			t.Errorf("a release of a failed delivery by receipt: %v, want ErrStaleReceipt", err)
		}
		if err := d.Release(ctx); !errors.Is(err, ErrStaleReceipt) {
			t.Errorf("a release of a failed delivery: %v, want ErrStaleReceipt", err)
		}
		m, err := e.store.GetMessage(ctx, &driver.GetMessageParams{Queue: q.Name, Key: d.message().MessageKey})
		if err != nil || m.Deliveries != 1 || m.LastError != "delivery 1: boom" || !m.VisibleAt.After(e.clock.Now().Add(59*time.Minute)) {
			t.Fatalf("stored after the refused settlements: %+v, %v; want the first failure as it was", m, err)
		}
	})
}
