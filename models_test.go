package abacus_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/sharedkeyspace"
)

// modelStores runs fn on the embedded store and on this package's shared
// Cassandra keyspace (see sharedkeyspace.Keyspace.Each).
func modelStores(t *testing.T, fn func(t *testing.T, d driver.Driver)) {
	t.Helper()
	shared.Each(t, func(t *testing.T, d driver.Driver) { fn(t, d) })
}

var shared = sharedkeyspace.Keyspace{Name: "abacus models"}

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Drop()
	os.Exit(code)
}

var nsSeq struct {
	sync.Mutex
	n int
}

// freshNamespace creates a namespace whose name no other test uses.
func freshNamespace(t *testing.T, c *abacus.Client, nc abacus.NamespaceConfig) string {
	t.Helper()
	nsSeq.Lock()
	nsSeq.n++
	nc.Name = fmt.Sprintf("%s-%d-%d", nc.Model, nsSeq.n, time.Now().UnixNano())
	nsSeq.Unlock()
	if _, err := c.CreateNamespace(context.Background(), nc); err != nil {
		t.Fatalf("CreateNamespace(%+v): %v", nc, err)
	}
	return nc.Name
}

func clientOn(t *testing.T, d driver.Driver, clk clock.Clock) *abacus.Client {
	t.Helper()
	return startClient(t, abacus.Config{Driver: d, Clock: clk, GCInterval: -1, Logger: slog.New(slog.DiscardHandler)})
}

// minuteEvents is the events layout of the tests that drive time by hand:
// one-minute buckets, increments accepted up to two minutes after their
// time, and rollups 30 s behind that window.
func minuteEvents() *abacus.EventsOptions {
	return &abacus.EventsOptions{Bucket: time.Minute, AcceptWindow: 2 * time.Minute, RollupDelay: 30 * time.Second}
}

func wantCounter(t *testing.T, c *abacus.Client, ns, counter string, want int64) *abacus.Value {
	t.Helper()
	v, err := c.Get(context.Background(), ns, counter)
	if err != nil {
		t.Fatalf("Get(%s/%s): %v", ns, counter, err)
	}
	if v.Value != want {
		t.Fatalf("%s/%s = %d, want %d (%+v)", ns, counter, v.Value, want, v)
	}
	return v
}

// The order-quantity example of “Highly Available Counters Using Cassandra”: two orders' open quantities set at
// versions, in every arrival order, sum to the latest values.
func TestActorOrderQuantityExample(t *testing.T) {
	t.Parallel()
	modelStores(t, func(t *testing.T, d driver.Driver) {
		c := clientOn(t, d, nil)
		ns := freshNamespace(t, c, abacus.NamespaceConfig{Model: abacus.ModelActor})
		sets := []abacus.ActorSet{
			{Actor: "P1", Version: 1, Value: 1000},
			{Actor: "P2", Version: 1, Value: 500},
			{Actor: "P1", Version: 2, Value: 1500},
		}
		orders := [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
		for i, order := range orders {
			counter := fmt.Sprintf("open-qty-%d", i)
			for _, j := range order {
				s := sets[j]
				s.Namespace, s.Counter = ns, counter
				if err := c.Set(context.Background(), s); err != nil {
					t.Fatal(err)
				}
			}
			v := wantCounter(t, c, ns, counter, 2000)
			if v.Actors != 2 {
				t.Fatalf("order %v: %d actors", order, v.Actors)
			}
			// Replaying every set, in reverse, changes nothing.
			for k := len(sets) - 1; k >= 0; k-- {
				s := sets[k]
				s.Namespace, s.Counter = ns, counter
				if err := c.Set(context.Background(), s); err != nil {
					t.Fatal(err)
				}
			}
			wantCounter(t, c, ns, counter, 2000)
		}
	})
}

func TestEventsThroughTheClient(t *testing.T) {
	t.Parallel()
	modelStores(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		clk := clock.NewManual(time.Now())
		a, b := clientOn(t, d, clk), clientOn(t, d, clk)
		ns := freshNamespace(t, a, abacus.NamespaceConfig{Model: abacus.ModelEvents, Events: minuteEvents()})
		got, err := b.Namespace(ctx, ns)
		if err != nil || got.Events == nil || got.Events.Bucket != time.Minute || got.Events.FutureLimit != time.Minute || got.Type != abacus.TypeSum {
			t.Fatalf("namespace as read by another process: %+v %v", got, err)
		}

		id := abacus.NewRequestID()
		for _, c := range []*abacus.Client{a, b, a} {
			if err := c.Apply(ctx, abacus.Update{Namespace: ns, Counter: "likes", Delta: 3, RequestID: id}); err != nil {
				t.Fatal(err)
			}
		}
		v, err := b.ApplyAndGet(ctx, abacus.Update{Namespace: ns, Counter: "likes", Delta: 4})
		if err != nil || v.Value != 7 || v.Model != abacus.ModelEvents || v.Events != 2 {
			t.Fatalf("ApplyAndGet = %+v, %v", v, err)
		}
		// Rollup through GC; the value stays and the read adds no events.
		clk.Advance(5 * time.Minute)
		res, err := a.GC(ctx, ns, "likes")
		if err != nil || res.Skipped || res.Folded != 2 {
			t.Fatalf("GC = %+v, %v", res, err)
		}
		if v := wantCounter(t, b, ns, "likes", 7); v.Events != 0 {
			t.Fatalf("after rollup: %+v", v)
		}
		// The rolled-up request is too late now, on any process.
		err = b.Apply(ctx, abacus.Update{Namespace: ns, Counter: "likes", Delta: 3, RequestID: id})
		if !errors.Is(err, abacus.ErrTooLate) {
			t.Fatalf("retry after rollup: %v, want ErrTooLate", err)
		}
		// Clear, then reuse.
		if err := a.Clear(ctx, ns, "likes", ""); err != nil {
			t.Fatal(err)
		}
		wantCounter(t, b, ns, "likes", 0)
		clk.Advance(time.Millisecond)
		if err := b.Apply(ctx, abacus.Update{Namespace: ns, Counter: "likes", Delta: 9}); err != nil {
			t.Fatal(err)
		}
		wantCounter(t, a, ns, "likes", 9)
		// GCAll covers events namespaces too.
		clk.Advance(10 * time.Minute)
		all, err := a.GCAll(ctx, ns)
		if err != nil || len(all) != 1 || all[0].Skipped {
			t.Fatalf("GCAll = %+v, %v", all, err)
		}
		wantCounter(t, b, ns, "likes", 9)
	})
}

func TestBaselinesThroughTheClient(t *testing.T) {
	t.Parallel()
	modelStores(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		c := clientOn(t, d, nil)
		for _, model := range []abacus.Model{abacus.ModelNative, abacus.ModelCAS} {
			ns := freshNamespace(t, c, abacus.NamespaceConfig{Model: model})
			// Every add is accounted for: acknowledged, or (only for
			// lightweight transactions that time out under contention on
			// Cassandra) unknown, or refused after losing every round.
			var mu sync.Mutex
			var acked, unknown int64
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					for i := range 10 {
						delta := int64(g*10 + i)
						err := c.Apply(ctx, abacus.Update{Namespace: ns, Counter: "hot", Delta: delta})
						mu.Lock()
						switch {
						case err == nil:
							acked += delta
						case errors.Is(err, abacus.ErrUnknownOutcome) && model == abacus.ModelCAS && d.Name() == "cassandra":
							unknown += delta
						case errors.Is(err, abacus.ErrNotApplied) && model == abacus.ModelCAS:
						default:
							t.Errorf("%s: %v", model, err)
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			v, err := c.Get(ctx, ns, "hot")
			if err != nil {
				t.Fatal(err)
			}
			if v.Value < acked || v.Value > acked+unknown {
				t.Fatalf("%s: value %d, acknowledged %d, unknown %d", model, v.Value, acked, unknown)
			}
			if model == abacus.ModelNative && v.Value != 780 {
				t.Fatalf("native: value %d, want 780", v.Value)
			}
			t.Logf("%s: acknowledged %d, unknown %d, value %d", model, acked, unknown, v.Value)
			v2, err := c.ApplyAndGet(ctx, abacus.Update{Namespace: ns, Counter: "hot", Delta: -v.Value})
			if err != nil || v2.Value != 0 {
				t.Fatalf("%s ApplyAndGet = %+v, %v", model, v2, err)
			}
		}
		if d.Name() == "embedded" {
			// Cassandra's counters wrap silently; the embedded store refuses.
			nat := freshNamespace(t, c, abacus.NamespaceConfig{Model: abacus.ModelNative})
			if err := c.Apply(ctx, abacus.Update{Namespace: nat, Counter: "big", Delta: math.MaxInt64}); err != nil {
				t.Fatal(err)
			}
			if err := c.Apply(ctx, abacus.Update{Namespace: nat, Counter: "big", Delta: 1}); !errors.Is(err, abacus.ErrOverflow) {
				t.Fatalf("overflowing native add: %v, want ErrOverflow", err)
			}
			wantCounter(t, c, nat, "big", math.MaxInt64)
		}
		cas := freshNamespace(t, c, abacus.NamespaceConfig{Model: abacus.ModelCAS})
		if err := c.Apply(ctx, abacus.Update{Namespace: cas, Counter: "x", Delta: 5}); err != nil {
			t.Fatal(err)
		}
		if err := c.Clear(ctx, cas, "x", ""); err != nil {
			t.Fatal(err)
		}
		if v := wantCounter(t, c, cas, "x", 0); v.Empty {
			t.Fatalf("a cleared cas counter exists with 0: %+v", v)
		}
	})
}

// Every model-specific mistake is refused with its own error, and the
// stored values stay as they were.
func TestModelMistakesChangeNothing(t *testing.T) {
	t.Parallel()
	modelStores(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		c := clientOn(t, d, nil)
		ev := freshNamespace(t, c, abacus.NamespaceConfig{Model: abacus.ModelEvents})
		ac := freshNamespace(t, c, abacus.NamespaceConfig{Model: abacus.ModelActor})
		na := freshNamespace(t, c, abacus.NamespaceConfig{Model: abacus.ModelNative})
		le := freshNamespace(t, c, abacus.NamespaceConfig{Model: abacus.ModelLedger})
		if err := c.Apply(ctx, abacus.Update{Namespace: ev, Counter: "c", Delta: 1}); err != nil {
			t.Fatal(err)
		}
		if err := c.Set(ctx, abacus.ActorSet{Namespace: ac, Counter: "c", Actor: "a", Version: 5, Value: 10}); err != nil {
			t.Fatal(err)
		}
		if err := c.Apply(ctx, abacus.Update{Namespace: na, Counter: "c", Delta: 2}); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-2 * time.Hour)
		for name, c2 := range map[string]struct {
			err  error
			want error
		}{
			"set on events":                {c.Set(ctx, abacus.ActorSet{Namespace: ev, Counter: "c", Actor: "a", Version: 1, Value: 1}), abacus.ErrWrongModel},
			"set on native":                {c.Set(ctx, abacus.ActorSet{Namespace: na, Counter: "c", Actor: "a", Version: 1, Value: 1}), abacus.ErrWrongModel},
			"increment of an actor":        {c.Apply(ctx, abacus.Update{Namespace: ac, Counter: "c", Delta: 1}), abacus.ErrWrongModel},
			"missing version":              {c.Set(ctx, abacus.ActorSet{Namespace: ac, Counter: "c", Actor: "a", Value: 99}), abacus.ErrInvalid},
			"negative version":             {c.Set(ctx, abacus.ActorSet{Namespace: ac, Counter: "c", Actor: "a", Version: -1, Value: 99}), abacus.ErrInvalid},
			"empty actor":                  {c.Set(ctx, abacus.ActorSet{Namespace: ac, Counter: "c", Version: 9, Value: 99}), abacus.ErrInvalid},
			"clear of a ledger":            {c.Clear(ctx, le, "c", ""), abacus.ErrWrongModel},
			"ttl too short":                {createErr(c, abacus.NamespaceConfig{Name: "s-ttl", TTL: 59 * time.Second}), abacus.ErrInvalid},
			"ttl not in seconds":           {createErr(c, abacus.NamespaceConfig{Name: "s-ttl", TTL: time.Minute + time.Millisecond}), abacus.ErrInvalid},
			"delete default":               {deleteErr(c, abacus.DefaultNamespace), abacus.ErrInvalid},
			"delete a ledger as a counter": {func() error { _, err := c.DeleteCounter(ctx, le, "c"); return err }(), abacus.ErrWrongModel},
			"delete a counter as a ledger": {func() error { _, err := c.DeleteLedger(ctx, na, "c"); return err }(), abacus.ErrInvalid},
			"delete a reserved name":       {func() error { _, err := c.DeleteCounter(ctx, na, "c\uffff0000000000000001"); return err }(), abacus.ErrInvalid},
			"delete missing":               {deleteErr(c, "no-such-namespace"), abacus.ErrNamespaceNotFound},
			"event time on native":         {c.Apply(ctx, abacus.Update{Namespace: na, Counter: "c", Delta: 1, Time: time.Now()}), abacus.ErrWrongModel},
			"item on events":               {c.Apply(ctx, abacus.Update{Namespace: ev, Counter: "c", Item: "x"}), abacus.ErrWrongType},
			"plain id, no time":            {c.Apply(ctx, abacus.Update{Namespace: ev, Counter: "c", Delta: 1, RequestID: "abc"}), abacus.ErrInvalid},
			"too late":                     {c.Apply(ctx, abacus.Update{Namespace: ev, Counter: "c", Delta: 1, RequestID: "abc", Time: old}), abacus.ErrTooLate},
			"future event":                 {c.Apply(ctx, abacus.Update{Namespace: ev, Counter: "c", Delta: 1, RequestID: "abc", Time: time.Now().Add(time.Hour)}), abacus.ErrInvalid},
			"type max on events":           {createErr(c, abacus.NamespaceConfig{Name: "e-max", Model: abacus.ModelEvents, Type: abacus.TypeMax}), abacus.ErrInvalid},
			"bad events options":           {createErr(c, abacus.NamespaceConfig{Name: "e-bad", Model: abacus.ModelEvents, Events: &abacus.EventsOptions{Bucket: 1500 * time.Millisecond}}), abacus.ErrInvalid},
			"events options on cas":        {createErr(c, abacus.NamespaceConfig{Name: "c-bad", Model: abacus.ModelCAS, Events: &abacus.EventsOptions{}}), abacus.ErrInvalid},
		} {
			if !errors.Is(c2.err, c2.want) {
				t.Errorf("%s: got %v, want %v", name, c2.err, c2.want)
			}
		}
		wantCounter(t, c, ev, "c", 1)
		wantCounter(t, c, ac, "c", 10)
		wantCounter(t, c, na, "c", 2)
		for _, name := range []string{"e-max", "e-bad", "c-bad", "s-ttl"} {
			if _, err := c.Namespace(ctx, name); !errors.Is(err, abacus.ErrNamespaceNotFound) {
				t.Errorf("refused namespace %s exists: %v", name, err)
			}
		}
	})
}

func createErr(c *abacus.Client, nc abacus.NamespaceConfig) error {
	_, err := c.CreateNamespace(context.Background(), nc)
	return err
}

func TestClockSkew(t *testing.T) {
	t.Parallel()
	modelStores(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		for _, offset := range []time.Duration{0, 90 * time.Second, -3 * time.Minute} {
			c := clientOn(t, d, clock.Offset{Base: clock.Real{}, By: offset})
			r, ok, err := c.ClockSkew(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if d.Name() == "embedded" {
				if ok {
					t.Fatalf("the embedded store has no clock, yet ClockSkew read %+v", r)
				}
				continue
			}
			if !ok {
				t.Fatal("Cassandra has a clock")
			}
			// The dev cluster runs on this machine: the skew is the offset.
			if diff := (r.Skew - offset).Abs(); diff > r.Uncertainty+50*time.Millisecond {
				t.Errorf("offset %v: measured %v ± %v", offset, r.Skew, r.Uncertainty)
			}
			if beyond := r.Beyond(time.Minute); beyond != (offset.Abs() > time.Minute) {
				t.Errorf("offset %v: Beyond(1m) = %v", offset, beyond)
			}
		}
	})
}

func deleteErr(c *abacus.Client, name string) error {
	_, err := c.DeleteNamespace(context.Background(), name)
	return err
}
