package abacus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
)

// The promise, end to end through the library: an increment
// acknowledged by one client (a server, in production) and retried 50
// minutes later through another counts nothing more and is answered as a
// replay, while the counter kept taking and rolling up increments; a
// retry of a request that was never counted is refused, not counted.
func TestEventsRetryFiftyMinutesLateThroughAnotherClient(t *testing.T) {
	t.Parallel()
	modelStores(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		clk := clock.NewManual(time.Now())
		a, b := clientOn(t, d, clk), clientOn(t, d, clk)
		ns := freshNamespace(t, a, abacus.NamespaceConfig{Model: abacus.ModelEvents})
		id := abacus.NewRequestID()
		u := abacus.Update{Namespace: ns, Counter: "views", Delta: 3, RequestID: id, Time: clk.Now()}
		if res, err := a.Update(ctx, u); err != nil || res.Replayed {
			t.Fatalf("first copy: %+v, %v", res, err)
		}
		want := int64(3)
		for range 50 {
			clk.Advance(time.Minute)
			if err := a.Add(ctx, ns, "views", 1); err != nil {
				t.Fatal(err)
			}
			want++
			if _, err := a.GC(ctx, ns, "views"); err != nil {
				t.Fatal(err)
			}
		}
		res, err := b.Update(ctx, u)
		if err != nil || !res.Replayed {
			t.Fatalf("retry 50 min later through another client: %+v, %v; want replayed", res, err)
		}
		never := abacus.Update{Namespace: ns, Counter: "views", Delta: 100, RequestID: abacus.NewRequestID(), Time: clk.Now().Add(-30 * time.Minute)}
		if _, err := b.Update(ctx, never); !errors.Is(err, abacus.ErrTooLate) {
			t.Fatalf("a late request never counted: %v, want ErrTooLate", err)
		}
		for _, c := range []*abacus.Client{a, b} {
			v, err := c.Get(ctx, ns, "views")
			if err != nil || v.Value != want {
				t.Fatalf("value %+v, %v; want %d", v, err, want)
			}
			if lag := clk.Now().Sub(v.RolledUpTo); lag > time.Minute {
				t.Fatalf("the counter is rolled up to %v, %v behind", v.RolledUpTo, lag)
			}
		}
	})
}

// GetWithin answers from memory while what the client holds is fresh
// enough, and says so.
func TestEventsGetWithin(t *testing.T) {
	t.Parallel()
	modelStores(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		clk := clock.NewManual(time.Now())
		c := clientOn(t, d, clk)
		ns := freshNamespace(t, c, abacus.NamespaceConfig{Model: abacus.ModelEvents})
		if err := c.Add(ctx, ns, "c", 2); err != nil {
			t.Fatal(err)
		}
		v, err := c.GetWithin(ctx, ns, "c", time.Second)
		if err != nil || v.Cached || v.Value != 2 || !v.AsOf.Equal(clk.Now()) {
			t.Fatalf("first read: %+v, %v", v, err)
		}
		if err := c.Add(ctx, ns, "c", 2); err != nil {
			t.Fatal(err)
		}
		if v, err := c.GetWithin(ctx, ns, "c", time.Second); err != nil || !v.Cached || v.Value != 2 {
			t.Fatalf("cached read: %+v, %v", v, err)
		}
		if v, err := c.Get(ctx, ns, "c"); err != nil || v.Cached || v.Value != 4 {
			t.Fatalf("a plain read must see every acknowledged increment: %+v, %v", v, err)
		}
		if _, err := c.GetWithin(ctx, ns, "c", -time.Second); !errors.Is(err, abacus.ErrInvalid) {
			t.Fatalf("negative staleness: %v", err)
		}
	})
}
