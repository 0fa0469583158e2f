package queue

import (
	"errors"
	"testing"
	"time"
)

// ExponentialBackoff doubles per attempt up to its limit, and its jitter
// keeps each delay within [d/2, d].
func TestExponentialBackoffBounds(t *testing.T) {
	t.Parallel()
	b := ExponentialBackoff(time.Second, time.Minute)
	for attempt, full := range map[int]time.Duration{
		0: time.Second, 1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 6: 32 * time.Second,
		7: time.Minute, 100: time.Minute, 1 << 20: time.Minute,
	} {
		seen := map[time.Duration]bool{}
		for range 200 {
			d := b(attempt)
			if d < full/2 || d > full {
				t.Fatalf("attempt %d: %v outside [%v, %v]", attempt, d, full/2, full)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Errorf("attempt %d: only %d distinct delays in 200: no jitter", attempt, len(seen))
		}
	}
}

// A consumer with a Backoff brings a failed message back after the
// policy's delay for that attempt, longer or shorter than its visibility
// timeout; FailAfter does the same by receipt.
func TestBackoffDecidesWhenAFailedMessageReturns(t *testing.T) {
	t.Parallel()
	onBothDrivers(t, func(t *testing.T, e *env) {
		ctx := ctxT(t)
		q := e.create(t, QueueConfig{Shards: 4, VisibilityTimeout: 10 * time.Second})
		id := e.put(t, e.svc, q.Name, Message{Body: []byte("flaky")})
		e.clock.Advance(2 * time.Minute)
		// 3 s after the first failure, 30 s after the second: shorter,
		// then longer than the 10 s visibility timeout.
		c := e.consumer(t, e.svc, ConsumerConfig{Queue: q.Name, Backoff: func(attempt int) time.Duration {
			return map[int]time.Duration{1: 3 * time.Second, 2: 30 * time.Second}[attempt]
		}})
		first := receive(t, c, 1)
		if len(first) != 1 || first[0].ID() != id {
			t.Fatalf("got %v", deliveryIDs(first))
		}
		if err := first[0].Fail(ctx, errors.New("boom")); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(2 * time.Second)
		if got := receive(t, c, 1); len(got) != 0 {
			t.Fatalf("back before its 3 s backoff: %v", deliveryIDs(got))
		}
		e.clock.Advance(1 * time.Second)
		second := receive(t, c, 1)
		if len(second) != 1 || second[0].Attempt() != 2 {
			t.Fatalf("after the 3 s backoff got %v", deliveryIDs(second))
		}
		if err := second[0].Fail(ctx, errors.New("boom")); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(20 * time.Second) // past the visibility timeout, not the backoff
		if got := receive(t, c, 1); len(got) != 0 {
			t.Fatalf("back before its 30 s backoff: %v", deliveryIDs(got))
		}
		e.clock.Advance(10 * time.Second)
		third := receive(t, c, 1)
		if len(third) != 1 || third[0].Attempt() != 3 {
			t.Fatalf("after the 30 s backoff got %v", deliveryIDs(third))
		}

		// By receipt: 1 s, and refusals of what cannot be a delay.
		other := e.service(t, e.clock)
		for _, bad := range []time.Duration{-time.Second, MaxVisibilityTimeout + time.Second} {
			if _, err := other.FailAfter(ctx, q.Name, third[0].Receipt(), "x", bad); !errors.Is(err, ErrInvalid) {
				t.Errorf("FailAfter %v: %v, want ErrInvalid", bad, err)
			}
		}
		if dead, err := other.FailAfter(ctx, q.Name, third[0].Receipt(), "boom", time.Second); err != nil || dead {
			t.Fatalf("FailAfter: %v, %v", dead, err)
		}
		e.clock.Advance(time.Second)
		if fourth := receive(t, c, 1); len(fourth) != 1 || fourth[0].Attempt() != 4 {
			t.Fatalf("after FailAfter's 1 s got %v", deliveryIDs(fourth))
		}
	})
}
