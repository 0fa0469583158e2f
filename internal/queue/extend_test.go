package queue

import (
	"errors"
	"testing"
	"time"
)

// A delivery extended before its visibility ends stays hidden past the
// old end, from any process holding its receipt; one whose visibility has
// ended, or that was delivered again, cannot be extended.
func TestExtendKeepsADeliveryHidden(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		q := e.create(t, QueueConfig{Shards: 4, VisibilityTimeout: 10 * time.Second})
		id := e.put(t, e.svc, q.Name, Message{Body: []byte("long job")})
		e.clock.Advance(2 * time.Minute)
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name})
		ds := receive(t, c, 1)
		if len(ds) != 1 || ds[0].ID() != id {
			t.Fatalf("got %v", deliveryIDs(ds))
		}
		d := ds[0]

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
		if len(again) != 1 || again[0].ID() != id || again[0].Attempt() != 2 {
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
