package abacus_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
)

// lifecycleConfig is the configuration of the tests that delete: a manual
// clock, and the delays at their defaults, so the tests move time across
// them as production would.
func lifecycleClient(t *testing.T, d driver.Driver, clk *clock.Manual) *abacus.Client {
	t.Helper()
	return startClient(t, abacus.Config{Driver: d, Clock: clk, GCInterval: -1, Logger: slog.New(slog.DiscardHandler)})
}

// modelCounter adds to and reads one counter of one model through a
// client, whatever the model's write operation is.
type modelCounter struct {
	model abacus.Model
	ns    string
	// version is the actor model's last version; its values are running
	// totals per counter, set as a whole.
	version int64
	total   map[string]int64
}

func newModelCounter(t *testing.T, c *abacus.Client, m abacus.Model) *modelCounter {
	return &modelCounter{model: m, ns: freshNamespace(t, c, abacus.NamespaceConfig{Model: m})}
}

func (mc *modelCounter) add(c *abacus.Client, counter string, n int64) error {
	ctx := context.Background()
	switch mc.model {
	case abacus.ModelLedger:
		_, err := c.Credit(ctx, mc.ns, counter, n, "")
		return err
	case abacus.ModelActor:
		if mc.total == nil {
			mc.total = map[string]int64{}
		}
		mc.version++
		mc.total[counter] += n
		return c.Set(ctx, abacus.ActorSet{Namespace: mc.ns, Counter: counter, Actor: "a", Version: mc.version, Value: mc.total[counter]})
	}
	return c.Apply(ctx, abacus.Update{Namespace: mc.ns, Counter: counter, Delta: n})
}

// restart forgets the actor model's running total of counter "c", as a
// counter that starts again from zero must.
func (mc *modelCounter) restart() { delete(mc.total, "c") }

func (mc *modelCounter) delete(c *abacus.Client, counter string) (time.Time, error) {
	if mc.model == abacus.ModelLedger {
		return c.DeleteLedger(context.Background(), mc.ns, counter)
	}
	return c.DeleteCounter(context.Background(), mc.ns, counter)
}

func (mc *modelCounter) value(c *abacus.Client, counter string) (int64, error) {
	ctx := context.Background()
	if mc.model == abacus.ModelLedger {
		v, err := c.LedgerValue(ctx, mc.ns, counter)
		if err != nil {
			return 0, err
		}
		return v.Value, nil
	}
	v, err := c.Get(ctx, mc.ns, counter)
	if err != nil {
		return 0, err
	}
	return v.Value, nil
}

func (mc *modelCounter) want(t *testing.T, c *abacus.Client, counter string, want int64, when string) {
	t.Helper()
	got, err := mc.value(c, counter)
	if err != nil {
		t.Fatalf("%s: %s: read %s: %v", mc.model, when, counter, err)
	}
	if got != want {
		t.Fatalf("%s: %s: %s = %d, want %d", mc.model, when, counter, got, want)
	}
}

func (mc *modelCounter) listed(t *testing.T, c *abacus.Client, want ...string) {
	t.Helper()
	got, err := c.Counters(context.Background(), mc.ns)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("%s: counters listed %q, want %q", mc.model, got, want)
	}
}

var everyModel = []abacus.Model{abacus.ModelSharded, abacus.ModelEvents, abacus.ModelActor, abacus.ModelNative, abacus.ModelCAS, abacus.ModelLedger}

// A delete erases what was counted before it takes effect, including
// updates made after it was asked for, and nothing after: for every model,
// with a second process that learned of the counter before the delete.
func TestDeleteTakesEffectAtItsTime(t *testing.T) {
	t.Parallel()
	modelStores(t, func(t *testing.T, d driver.Driver) {
		for _, m := range everyModel {
			t.Run(string(m), func(t *testing.T) {
				clk := clock.NewManual(time.Now())
				a, b := lifecycleClient(t, d, clk), lifecycleClient(t, d, clk)
				mc := newModelCounter(t, a, m)
				if err := mc.add(b, "c", 5); err != nil {
					t.Fatal(err)
				}
				if err := mc.add(a, "other", 1); err != nil {
					t.Fatal(err)
				}
				at, err := mc.delete(a, "c")
				if err != nil {
					t.Fatal(err)
				}
				if want := clk.Now().Add(3 * time.Minute); !at.Equal(want.Truncate(time.Microsecond)) {
					t.Fatalf("delete takes effect at %v, want %v (the default DeleteDelay from now)", at, want)
				}
				clk.Advance(at.Sub(clk.Now()) - time.Microsecond) // just before
				if err := mc.add(b, "c", 2); err != nil {         // still the old generation: erased
					t.Fatal(err)
				}
				mc.want(t, a, "c", 7, "just before the delete")
				mc.listed(t, b, "c", "other")
				clk.Advance(time.Microsecond)
				mc.want(t, b, "c", 0, "when the delete takes effect")
				mc.want(t, a, "c", 0, "when the delete takes effect")
				mc.want(t, b, "other", 1, "another counter")
				mc.listed(t, a, "other")
				mc.restart()
				if err := mc.add(b, "c", 3); err != nil {
					t.Fatal(err)
				}
				mc.want(t, a, "c", 3, "after the delete")
				mc.listed(t, a, "c", "other")
			})
		}
	})
}

// Every clear that is a delete (sharded, actor, native) says when it takes
// effect, and the counter is zero from then on.
func TestClearOfAShardedCounterIsADelete(t *testing.T) {
	t.Parallel()
	modelStores(t, func(t *testing.T, d driver.Driver) {
		clk := clock.NewManual(time.Now())
		c := lifecycleClient(t, d, clk)
		for _, m := range []abacus.Model{abacus.ModelSharded, abacus.ModelActor, abacus.ModelNative} {
			mc := newModelCounter(t, c, m)
			if err := mc.add(c, "c", 4); err != nil {
				t.Fatal(err)
			}
			at, err := c.ClearAt(context.Background(), mc.ns, "c", "")
			if err != nil {
				t.Fatal(err)
			}
			if !at.After(clk.Now()) {
				t.Fatalf("%s: clear takes effect at %v, not after now (%v)", m, at, clk.Now())
			}
			mc.want(t, c, "c", 4, "before the clear takes effect")
			clk.Advance(at.Sub(clk.Now()))
			mc.want(t, c, "c", 0, "once the clear takes effect")
		}
	})
}

// A process that read a namespace's cuts before a delete reads them again
// in time, however busy it is: here it reads the counter every second of
// the delay, and its first read at the delete's time sees the counter
// empty. A cache that kept its view longer than LifecycleRefresh fails.
func TestEveryProcessLearnsOfADeleteBeforeItTakesEffect(t *testing.T) {
	t.Parallel()
	modelStores(t, func(t *testing.T, d driver.Driver) {
		clk := clock.NewManual(time.Now())
		a, b := lifecycleClient(t, d, clk), lifecycleClient(t, d, clk)
		mc := newModelCounter(t, a, abacus.ModelSharded)
		if err := mc.add(b, "c", 5); err != nil {
			t.Fatal(err)
		}
		mc.want(t, b, "c", 5, "before the delete")
		at, err := mc.delete(a, "c")
		if err != nil {
			t.Fatal(err)
		}
		for clk.Now().Before(at) {
			mc.want(t, b, "c", 5, "while the delete is pending")
			clk.Advance(min(time.Second, at.Sub(clk.Now())))
		}
		mc.want(t, b, "c", 0, "at the delete's time")
	})
}

// The data of a generation is purged twice DeleteDelay after it ended, not
// before; later generations and other counters stay; the cuts that decide
// nothing any longer are dropped, and deleting again still works.
func TestPurgeRemovesEndedGenerations(t *testing.T) {
	t.Parallel()
	modelStores(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		clk := clock.NewManual(time.Now())
		c := lifecycleClient(t, d, clk)
		// Each generation of "c" is written and read through a client of
		// its own, stopped before that generation is purged: a background
		// rollup its writes or reads started could otherwise write the
		// generation's rollup row just after the purge. The next sweep
		// removes such a row (docs/architecture.md), but a check of what
		// is stored right after the purge would see it.
		stop := func(g *abacus.Client) {
			if err := g.Stop(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range everyModel {
			mc := newModelCounter(t, c, m)
			gen1 := lifecycleClient(t, d, clk)
			if err := mc.add(gen1, "c", 5); err != nil {
				t.Fatal(err)
			}
			if err := mc.add(c, "other", 5); err != nil {
				t.Fatal(err)
			}
			first, err := mc.delete(c, "c")
			if err != nil {
				t.Fatal(err)
			}
			stop(gen1)
			clk.Advance(first.Sub(clk.Now()))
			mc.restart()
			gen2 := lifecycleClient(t, d, clk)
			if err := mc.add(gen2, "c", 2); err != nil {
				t.Fatal(err)
			}
			wantStored(t, d, mc, 3) // c, its new generation, other
			clk.Advance(6*time.Minute - time.Microsecond)
			if res, err := c.PurgeAll(ctx, mc.ns); err != nil || res.Generations != 0 {
				t.Fatalf("%s: purge just before the old generation settled: %+v, %v", m, res, err)
			}
			clk.Advance(time.Microsecond)
			purgeToStored(t, c, d, mc, 2)
			mc.want(t, gen2, "c", 2, "after the purge")
			mc.want(t, c, "other", 5, "after the purge")
			stop(gen2)

			second, err := mc.delete(c, "c")
			if err != nil {
				t.Fatal(err)
			}
			clk.Advance(second.Sub(clk.Now()) + 6*time.Minute)
			purgeToStored(t, c, d, mc, 1)
			cuts, err := d.ReadCuts(ctx, &driver.ReadCutsParams{Namespace: mc.ns})
			if err != nil {
				t.Fatal(err)
			}
			if len(cuts) != 1 || cuts[0].At != second.UnixMicro() {
				t.Fatalf("%s: cuts after the purges %+v, want only the second (%d)", m, cuts, second.UnixMicro())
			}
			mc.want(t, c, "c", 0, "after the second delete")
			mc.restart()
			if err := mc.add(c, "c", 1); err != nil {
				t.Fatal(err)
			}
			mc.want(t, c, "c", 1, "written after the second delete")
		}
	})
}

// wantStored checks how many stored names (generations) the namespace's
// model holds, through the driver.
func storedNames(d driver.Driver, mc *modelCounter) ([]driver.CounterKey, error) {
	lists := map[abacus.Model]func(context.Context, *driver.ListCountersParams) ([]driver.CounterKey, error){
		abacus.ModelSharded: d.ListCounters, abacus.ModelEvents: d.ListEventCounters, abacus.ModelActor: d.ListActorCounters,
		abacus.ModelNative: d.ListNativeCounters, abacus.ModelCAS: d.ListCASCounters, abacus.ModelLedger: d.ListLedgers,
	}
	return lists[mc.model](context.Background(), &driver.ListCountersParams{Namespace: mc.ns})
}

func wantStored(t *testing.T, d driver.Driver, mc *modelCounter, want int) {
	t.Helper()
	keys, err := storedNames(d, mc)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != want {
		t.Fatalf("%s: %d stored names %q, want %d", mc.model, len(keys), keys, want)
	}
}

// purgeToStored purges the namespace until want stored names are left,
// for a few seconds at most. One purge is not always enough on an events
// namespace: a read of an ended generation may have started a background
// rollup that writes the generation's rollup row after the purge removed
// it; the next purge sweep removes it again (docs/architecture.md).
func purgeToStored(t *testing.T, c *abacus.Client, d driver.Driver, mc *modelCounter, want int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := c.PurgeAll(context.Background(), mc.ns); err != nil {
			t.Fatal(err)
		}
		keys, err := storedNames(d, mc)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) == want || time.Now().After(deadline) {
			break
		}
	}
	wantStored(t, d, mc, want)
}

// A namespace with a TTL starts every counter again at each period, and
// the periods that ended are purged.
func TestTTLPeriods(t *testing.T) {
	t.Parallel()
	modelStores(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		start := time.Now().Truncate(time.Hour).Add(time.Hour + time.Second)
		clk := clock.NewManual(start)
		c := lifecycleClient(t, d, clk)
		for _, m := range everyModel {
			clk.Advance(start.Sub(clk.Now()))
			ns := freshNamespace(t, c, abacus.NamespaceConfig{Model: m, TTL: time.Hour})
			mc := &modelCounter{model: m, ns: ns}
			if got, err := c.Namespace(ctx, ns); err != nil || got.TTL != time.Hour {
				t.Fatalf("%s: namespace read back with TTL %v, %v", m, got.TTL, err)
			}
			// The first period is written and read through a client of its
			// own, stopped before the purge (see TestPurgeRemovesEndedGenerations).
			period := lifecycleClient(t, d, clk)
			if err := mc.add(period, "c", 5); err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Hour - 2*time.Second) // the period's last second
			mc.want(t, period, "c", 5, "in the period")
			if err := period.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Second)
			mc.want(t, c, "c", 0, "in the next period")
			mc.listed(t, c)
			mc.restart()
			if err := mc.add(c, "c", 3); err != nil {
				t.Fatal(err)
			}
			mc.want(t, c, "c", 3, "written in the next period")
			mc.listed(t, c, "c")
			clk.Advance(6 * time.Minute)
			purgeToStored(t, c, d, mc, 1)
			mc.want(t, c, "c", 3, "after the purge")
		}
	})
}

// deletedNamespace is a native namespace whose counter "c" holds 5,
// written by b, deleted by a (the delete taking effect at at), both on
// one manual clock.
func deletedNamespace(t *testing.T, d driver.Driver) (clk *clock.Manual, a, b *abacus.Client, mc *modelCounter, at time.Time) {
	t.Helper()
	clk = clock.NewManual(time.Now())
	a, b = lifecycleClient(t, d, clk), lifecycleClient(t, d, clk)
	mc = newModelCounter(t, a, abacus.ModelNative)
	if err := mc.add(b, "c", 5); err != nil {
		t.Fatal(err)
	}
	at, err := a.DeleteNamespace(context.Background(), mc.ns)
	if err != nil {
		t.Fatal(err)
	}
	return clk, a, b, mc, at
}

// A deleted namespace answers not found from the delete's time on, in
// every process; its data and record are purged later; the name can then
// be used again, for a namespace that starts empty, even by a process that
// had the old one cached.
func TestDeleteNamespace(t *testing.T) {
	t.Parallel()
	modelStores(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		clk, a, b, mc, at := deletedNamespace(t, d)
		clk.Advance(at.Sub(clk.Now()) - time.Microsecond)
		mc.want(t, b, "c", 5, "just before the delete")
		clk.Advance(time.Microsecond)
		for name, err := range map[string]error{
			"get":       func() error { _, err := b.Get(ctx, mc.ns, "c"); return err }(),
			"apply":     b.Apply(ctx, abacus.Update{Namespace: mc.ns, Counter: "c", Delta: 1}),
			"namespace": func() error { _, err := a.Namespace(ctx, mc.ns); return err }(),
			"list":      func() error { _, err := b.Counters(ctx, mc.ns); return err }(),
			"delete":    func() error { _, err := b.DeleteNamespace(ctx, mc.ns); return err }(),
		} {
			if !errors.Is(err, abacus.ErrNamespaceNotFound) {
				t.Errorf("%s on a deleted namespace: %v, want ErrNamespaceNotFound", name, err)
			}
		}
		if _, err := a.CreateNamespace(ctx, abacus.NamespaceConfig{Name: mc.ns}); !errors.Is(err, abacus.ErrNamespaceExists) {
			t.Fatalf("create while the deleted namespace is not yet purged: %v, want ErrNamespaceExists", err)
		}
		if !listsNamespace(t, a, mc.ns) {
			t.Fatal("a deleted namespace left the list before its purge (docs/api.md says it stays)")
		}
		clk.Advance(6 * time.Minute)
		res, err := a.PurgeAll(ctx, mc.ns)
		if err != nil || res.Namespaces != 1 || res.Generations != 1 {
			t.Fatalf("purge: %+v, %v; want one namespace and one generation", res, err)
		}
		if _, err := d.GetNamespace(ctx, &driver.GetNamespaceParams{Name: mc.ns}); !errors.Is(err, driver.ErrNotFound) {
			t.Fatalf("the record after the purge: %v", err)
		}
		wantStored(t, d, mc, 0)
		if listsNamespace(t, a, mc.ns) {
			t.Fatal("a purged namespace is still listed")
		}
		// Made again, with another model, by the other process.
		if _, err := a.CreateNamespace(ctx, abacus.NamespaceConfig{Name: mc.ns, Model: abacus.ModelCAS}); err != nil {
			t.Fatal(err)
		}
		clk.Advance(5 * time.Second) // b's view of the name expires
		v, err := b.Get(ctx, mc.ns, "c")
		if err != nil {
			t.Fatal(err)
		}
		if v.Model != abacus.ModelCAS || !v.Empty {
			t.Fatalf("the namespace made again reads %+v, want an empty cas counter", v)
		}
		again := &modelCounter{model: abacus.ModelCAS, ns: mc.ns}
		if err := again.add(b, "c", 2); err != nil {
			t.Fatal(err)
		}
		again.want(t, a, "c", 2, "in the namespace made again")
	})
}

func TestDeleteDelayMustCoverRefreshAndWrite(t *testing.T) {
	t.Parallel()
	d := newClient(t).Driver()
	for _, cfg := range []abacus.Config{
		{Driver: d, DeleteDelay: 25 * time.Second},                                    // = 5s refresh + 2 × 10s write
		{Driver: d, DeleteDelay: time.Minute, LifecycleRefresh: time.Minute},          // refresh alone fills it
		{Driver: d, DeleteDelay: -time.Second},                                        // negative
		{Driver: d, LifecycleRefresh: 2 * time.Minute, WriteTimeout: 2 * time.Minute}, // the default delay no longer covers them
	} {
		if _, err := abacus.NewClient(context.Background(), cfg); err == nil {
			t.Errorf("NewClient accepted DeleteDelay %v, LifecycleRefresh %v, WriteTimeout %v", cfg.DeleteDelay, cfg.LifecycleRefresh, cfg.WriteTimeout)
		}
	}
	if _, err := abacus.NewClient(context.Background(), abacus.Config{Driver: d, DeleteDelay: 25*time.Second + time.Microsecond}); err != nil {
		t.Errorf("a delay just over refresh plus two writes was refused: %v", err)
	}
}

// A retry of an update made before a delete, arriving after it, counts
// once in the new generation: not zero times (the old generation's
// de-duplication does not follow it) and not twice.
func TestRetriesAfterADeleteCountOnceInTheNewGeneration(t *testing.T) {
	t.Parallel()
	modelStores(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		clk := clock.NewManual(time.Now())
		c := lifecycleClient(t, d, clk)
		for _, m := range []abacus.Model{abacus.ModelSharded, abacus.ModelEvents} {
			mc := newModelCounter(t, c, m)
			id := abacus.NewRequestID()
			u := abacus.Update{Namespace: mc.ns, Counter: "c", Delta: 5, RequestID: id}
			if m == abacus.ModelEvents {
				u.Time = clk.Now() // the event time stays inside the accept window
			}
			for range 2 {
				if err := c.Apply(ctx, u); err != nil {
					t.Fatal(err)
				}
			}
			mc.want(t, c, "c", 5, "before the delete")
			at, err := mc.delete(c, "c")
			if err != nil {
				t.Fatal(err)
			}
			clk.Advance(at.Sub(clk.Now()))
			mc.want(t, c, "c", 0, "at the delete")
			if m == abacus.ModelEvents {
				// Past its seal the event can only be answered from the
				// new generation's seal, which never counted it: refused,
				// never counted, however often it comes.
				for range 2 {
					if err := c.Apply(ctx, u); !errors.Is(err, abacus.ErrTooLate) {
						t.Fatalf("events retry past the delete and the seal: %v, want ErrTooLate", err)
					}
				}
				mc.want(t, c, "c", 0, "after two late retries past the delete")
				// One still inside the seal window is a new increment there.
				u.RequestID, u.Time = abacus.NewRequestID(), clk.Now()
			}
			for range 2 {
				if err := c.Apply(ctx, u); err != nil {
					t.Fatal(err)
				}
			}
			mc.want(t, c, "c", 5, "after two retries past the delete")
		}
		led := newModelCounter(t, c, abacus.ModelLedger)
		for range 2 {
			if _, err := c.Credit(ctx, led.ns, "w", 7, "order-1"); err != nil {
				t.Fatal(err)
			}
		}
		at, err := c.DeleteLedger(ctx, led.ns, "w")
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(at.Sub(clk.Now()))
		for range 2 {
			if _, err := c.Credit(ctx, led.ns, "w", 7, "order-1"); err != nil {
				t.Fatal(err)
			}
		}
		led.want(t, c, "w", 7, "a ledger after two retries past its delete")
	})
}

// A purge decides on what it reads as it purges and only for the
// incarnation it listed: a process whose view of a deleted namespace is
// stale, purging after the name was made again, leaves the new one and its
// counters alone.
func TestAPurgeLeavesANamespaceMadeAgainAlone(t *testing.T) {
	t.Parallel()
	modelStores(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		clk, a, b, mc, at := deletedNamespace(t, d)
		clk.Advance(at.Sub(clk.Now()) + 6*time.Minute)
		// a looks at the deleted namespace: its view of it is cached now.
		if _, err := a.Get(ctx, mc.ns, "c"); !errors.Is(err, abacus.ErrNamespaceNotFound) {
			t.Fatalf("get in the deleted namespace: %v", err)
		}
		if res, err := b.PurgeAll(ctx, mc.ns); err != nil || res.Namespaces != 1 {
			t.Fatalf("b's purge: %+v, %v", res, err)
		}
		clk.Advance(time.Millisecond) // the new record's creation time differs
		if _, err := b.CreateNamespace(ctx, abacus.NamespaceConfig{Name: mc.ns, Model: abacus.ModelNative}); err != nil {
			t.Fatal(err)
		}
		if err := mc.add(b, "c", 7); err != nil {
			t.Fatal(err)
		}
		if res, err := a.PurgeAll(ctx, mc.ns); err != nil || res.Namespaces != 0 {
			t.Fatalf("a's purge after the name was made again: %+v, %v", res, err)
		}
		mc.want(t, b, "c", 7, "in the namespace made again, after a's purge")
		clk.Advance(5 * time.Second)
		mc.want(t, a, "c", 7, "read by a")
		// Deleted again, it is deleted: the old deleting cut does not hide
		// the new one.
		again, err := b.DeleteNamespace(ctx, mc.ns)
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(again.Sub(clk.Now()))
		if _, err := a.Get(ctx, mc.ns, "c"); !errors.Is(err, abacus.ErrNamespaceNotFound) {
			t.Fatalf("get after the second delete: %v", err)
		}
	})
}

// cutFaults is a real store whose cut writes land and then report a
// timeout (the write reached the store, the answer did not), and whose
// drops of cuts fail when failDrops is set.
type cutFaults struct {
	driver.Driver
	failDrops  bool
	refuseCuts bool // refused before anything is written
	drops      int  // DropCuts calls
}

func (f *cutFaults) AddCut(ctx context.Context, p *driver.AddCutParams) error {
	if f.refuseCuts {
		return fmt.Errorf("injected: %w", driver.ErrUnavailable)
	}
	if err := f.Driver.AddCut(ctx, p); err != nil {
		return err
	}
	return fmt.Errorf("injected timeout: %w", driver.ErrUnknownOutcome)
}

func (f *cutFaults) DropCuts(ctx context.Context, p *driver.DropCutsParams) error {
	f.drops++
	if f.failDrops {
		return fmt.Errorf("injected: %w", driver.ErrUnavailable)
	}
	return f.Driver.DropCuts(ctx, p)
}

// A delete whose write failed is taken back, so it never takes effect
// later than it said; when taking it back fails too, the caller is told
// the outcome is unknown.
func TestAFailedDeleteIsTakenBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Now())
	faults := &cutFaults{Driver: newClient(t).Driver()}
	c := lifecycleClient(t, faults, clk)
	mc := newModelCounter(t, c, abacus.ModelSharded)
	if err := mc.add(c, "c", 5); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteCounter(ctx, mc.ns, "c"); !errors.Is(err, abacus.ErrNotApplied) || errors.Is(err, abacus.ErrUnknownOutcome) {
		t.Fatalf("a delete whose write failed: %v, want ErrNotApplied and not ErrUnknownOutcome", err)
	}
	if cuts, err := faults.ReadCuts(ctx, &driver.ReadCutsParams{Namespace: mc.ns}); err != nil || len(cuts) != 0 {
		t.Fatalf("cuts after the delete was taken back: %+v, %v", cuts, err)
	}
	faults.failDrops = true
	if _, err := c.DeleteCounter(ctx, mc.ns, "c"); !errors.Is(err, abacus.ErrUnknownOutcome) {
		t.Fatalf("a delete that could not be taken back: %v, want ErrUnknownOutcome", err)
	}
	clk.Advance(3 * time.Minute)
	mc.want(t, c, "c", 0, "once the delete that could not be taken back took effect")
}

// A delete the store refuses before writing it (too few replicas alive at
// the cut's level: a data center cut off from another, under local levels)
// deleted nothing: it is answered unavailable, with nothing to take back,
// even when a take-back would fail too.
func TestADeleteRefusedBeforeItsWriteIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(time.Now())
	faults := &cutFaults{Driver: newClient(t).Driver(), refuseCuts: true, failDrops: true}
	c := lifecycleClient(t, faults, clk)
	mc := newModelCounter(t, c, abacus.ModelSharded)
	if err := mc.add(c, "c", 5); err != nil {
		t.Fatal(err)
	}
	_, err := c.DeleteCounter(ctx, mc.ns, "c")
	if !errors.Is(err, abacus.ErrUnavailable) || errors.Is(err, abacus.ErrUnknownOutcome) {
		t.Fatalf("a delete refused before its write: %v, want ErrUnavailable and not ErrUnknownOutcome", err)
	}
	if faults.drops != 0 {
		t.Errorf("%d take-backs of a delete that was never written", faults.drops)
	}
	clk.Advance(3 * time.Minute)
	mc.want(t, c, "c", 5, "after a refused delete's time")
}

func listsNamespace(t *testing.T, c *abacus.Client, name string) bool {
	t.Helper()
	all, err := c.Namespaces(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(all, func(ns *abacus.Namespace) bool { return ns.Name == name })
}
