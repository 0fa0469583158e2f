package drivertest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

func exerciseLifecycle(t *testing.T, d driver.Driver) {
	t.Run("Cuts", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		ns, other := unique("cuts"), unique("cuts-other")
		cuts := []driver.Cut{
			{Counter: "a", At: 100},
			{Counter: "a", At: 200},
			{Counter: "b\uffff", At: 150},
			{At: 300, DeletesNamespace: true},
			{At: 250},
		}
		for _, cut := range append(cuts, cuts[1]) { // the repeat is harmless
			if err := d.AddCut(c, &driver.AddCutParams{Namespace: ns, Cut: cut}); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.AddCut(c, &driver.AddCutParams{Namespace: other, Cut: driver.Cut{Counter: "a", At: 1}}); err != nil {
			t.Fatal(err)
		}
		wantCuts(t, d, ns, cuts...)
		if err := d.DropCuts(c, &driver.DropCutsParams{Namespace: ns, Cuts: []driver.Cut{cuts[0], cuts[3], {Counter: "zz", At: 5}}}); err != nil {
			t.Fatal(err)
		}
		wantCuts(t, d, ns, cuts[1], cuts[2], cuts[4])
		wantCuts(t, d, other, driver.Cut{Counter: "a", At: 1})
		wantCuts(t, d, unique("cuts-none"))
	})
	t.Run("BadCutsAreRefused", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		ns := unique("cuts-bad")
		for _, cut := range []driver.Cut{{Counter: "a"}, {Counter: "a", At: -5}, {Counter: "a", At: 9, DeletesNamespace: true}} {
			if err := d.AddCut(c, &driver.AddCutParams{Namespace: ns, Cut: cut}); err == nil {
				t.Errorf("AddCut(%+v) accepted", cut)
			}
		}
		wantCuts(t, d, ns)
	})
	t.Run("PurgeCounter", func(t *testing.T) { exercisePurge(t, d) })
	t.Run("DeleteNamespace", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		name := unique("ns-deleted")
		ns := driver.Namespace{Name: name, Model: "sharded", Type: "sum", CreatedAt: time.UnixMilli(1_700_000_000_000).UTC()}
		if err := d.CreateNamespace(c, &driver.CreateNamespaceParams{Namespace: ns}); err != nil {
			t.Fatal(err)
		}
		other := ns.CreatedAt.Add(time.Millisecond) // another incarnation's
		if err := d.DeleteNamespace(c, &driver.DeleteNamespaceParams{Name: name, CreatedAt: other}); !errors.Is(err, driver.ErrNotFound) {
			t.Fatalf("DeleteNamespace of another creation time = %v, want ErrNotFound", err)
		}
		if _, err := d.GetNamespace(c, &driver.GetNamespaceParams{Name: name}); err != nil {
			t.Fatalf("the record after a refused delete: %v", err)
		}
		if err := d.DeleteNamespace(c, &driver.DeleteNamespaceParams{Name: name, CreatedAt: ns.CreatedAt}); err != nil {
			t.Fatal(err)
		}
		if err := d.DeleteNamespace(c, &driver.DeleteNamespaceParams{Name: name, CreatedAt: ns.CreatedAt}); !errors.Is(err, driver.ErrNotFound) {
			t.Fatalf("a second DeleteNamespace = %v, want ErrNotFound", err)
		}
		if _, err := d.GetNamespace(c, &driver.GetNamespaceParams{Name: name}); !errors.Is(err, driver.ErrNotFound) {
			t.Fatalf("GetNamespace after DeleteNamespace = %v, want ErrNotFound", err)
		}
		ns.Model = "events" // made again, with another model
		if err := d.CreateNamespace(c, &driver.CreateNamespaceParams{Namespace: ns}); err != nil {
			t.Fatalf("CreateNamespace after DeleteNamespace: %v", err)
		}
		got, err := d.GetNamespace(c, &driver.GetNamespaceParams{Name: name})
		if err != nil || got.Model != "events" {
			t.Fatalf("GetNamespace of the new one = %+v, %v", got, err)
		}
	})
}

func wantCuts(t *testing.T, d driver.Driver, ns string, want ...driver.Cut) {
	t.Helper()
	got, err := d.ReadCuts(ctx(t), &driver.ReadCutsParams{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	order := func(a, b driver.Cut) int {
		if c := strings.Compare(a.Counter, b.Counter); c != 0 {
			return c
		}
		return int(a.At - b.At)
	}
	slices.SortFunc(got, order)
	want = slices.Clone(want)
	slices.SortFunc(want, order)
	if len(got) != len(want) || len(got) > 0 && !reflect.DeepEqual(got, want) {
		t.Errorf("cuts of %s = %+v, want %+v", ns, got, want)
	}
}

// exercisePurge stores three counters of every model whose names share a
// prefix — the purged one, one of its later generations and a longer name —
// purges the first, and checks that only it is gone, from reads and lists.
func exercisePurge(t *testing.T, d driver.Driver) {
	t.Parallel()
	c := ctx(t)
	ns := unique("purge")
	purged, gen, longer := "c", "c\uffff0000000000000001", "cx"
	names := []string{purged, gen, longer}
	type model struct {
		name  string
		write func(counter string) error
		held  func(counter string) (bool, error)
		list  func(context.Context, *driver.ListCountersParams) ([]driver.CounterKey, error)
	}
	models := []model{
		{"sharded", func(k string) error {
			if err := d.WriteShard(c, &driver.WriteShardParams{Namespace: ns, Counter: k, Timestamp: 10,
				Shard: driver.Shard{ID: "s1", State: []byte{1}, ExpiresAt: 5}}); err != nil {
				return err
			}
			return d.Fold(c, &driver.FoldParams{Namespace: ns, Counter: k, Tally: driver.Tally{State: []byte{2}, Timestamp: 6}})
		}, func(k string) (bool, error) {
			s, err := d.ReadShards(c, &driver.ReadShardsParams{Namespace: ns, Counter: k})
			return err == nil && (len(s.Shards) > 0 || s.Tally != nil), err
		}, d.ListCounters},
		{"events", func(k string) error {
			if err := d.MarkEventBucket(c, &driver.MarkEventBucketParams{Namespace: ns, Counter: k, Bucket: 1000}); err != nil {
				return err
			}
			if err := d.WriteEvent(c, &driver.WriteEventParams{Namespace: ns, Counter: k, Bucket: 1000, Event: driver.Event{ID: "e", Time: 1001, Delta: 3}}); err != nil {
				return err
			}
			return d.WriteRollup(c, &driver.WriteRollupParams{Namespace: ns, Counter: k, Rollup: driver.Rollup{Value: 4, Epoch: 999}})
		}, func(k string) (bool, error) {
			ec, err := d.ReadEventCounter(c, &driver.ReadEventCounterParams{Namespace: ns, Counter: k})
			if err != nil {
				return false, err
			}
			evs, err := d.ReadEvents(c, &driver.ReadEventsParams{Namespace: ns, Counter: k, Bucket: 1000, After: 0, UpTo: 5000})
			return ec.Rollup != nil || len(ec.Buckets) > 0 || len(evs) > 0, err
		}, d.ListEventCounters},
		{"actor", func(k string) error {
			// A version far above any clock: the purge must still win.
			return d.SetActorValue(c, &driver.SetActorValueParams{Namespace: ns, Counter: k, Actor: "p", Value: 1, Version: math.MaxInt64 - 2})
		}, func(k string) (bool, error) {
			vs, err := d.ReadActorValues(c, &driver.ReadActorValuesParams{Namespace: ns, Counter: k})
			return len(vs) > 0, err
		}, d.ListActorCounters},
		{"native", func(k string) error {
			return d.AddNative(c, &driver.AddNativeParams{Namespace: ns, Counter: k, Delta: 1})
		}, func(k string) (bool, error) {
			v, err := d.ReadNative(c, &driver.ReadNativeParams{Namespace: ns, Counter: k})
			return v != 0, err
		}, d.ListNativeCounters},
		{"cas", func(k string) error {
			_, err := d.CompareAndSetCAS(c, &driver.CompareAndSetCASParams{Namespace: ns, Counter: k, Value: 1})
			return err
		}, func(k string) (bool, error) {
			v, err := d.ReadCAS(c, &driver.ReadCASParams{Namespace: ns, Counter: k})
			return v.Exists, err
		}, d.ListCASCounters},
		{"ledger", func(k string) error {
			now := driver.Micros(time.Now())
			err := d.WriteLedgerRow(c, &driver.WriteLedgerRowParams{
				Namespace: ns, Ledger: k, Row: driver.LedgerRow{Actor: "x", State: []byte{1}}, Timestamp: now,
				Entries: []driver.LedgerEntry{{At: now, Actor: "x", Seq: 1, RequestID: "r", Amount: 1}}, EntryTTL: time.Hour,
			})
			if err != nil {
				return err
			}
			for _, dc := range []string{"", dataCenterOf(d)} {
				applied, _, err := d.SwapLedgerRights(c, &driver.SwapLedgerRightsParams{Namespace: ns, Ledger: k, DataCenter: dc, Next: driver.LedgerRights{Version: 1, State: []byte{1}}})
				if err == nil && !applied {
					err = fmt.Errorf("the first rights swap (data center %q) was refused", dc)
				}
				if err != nil {
					return err
				}
			}
			return nil
		}, func(k string) (bool, error) {
			// The history and the rights record go with the rows, and
			// stay with them.
			rows, err := d.ReadLedger(c, &driver.ReadLedgerParams{Namespace: ns, Ledger: k})
			if err != nil {
				return false, err
			}
			entries, err := d.ReadLedgerEntries(c, &driver.ReadLedgerEntriesParams{Namespace: ns, Ledger: k, Limit: 10, Now: driver.Micros(time.Now())})
			if err != nil {
				return false, err
			}
			rights, err := d.ReadLedgerRights(c, &driver.ReadLedgerRightsParams{Namespace: ns, Ledger: k})
			if err != nil {
				return false, err
			}
			share, err := d.ReadLedgerRights(c, &driver.ReadLedgerRightsParams{Namespace: ns, Ledger: k, DataCenter: dataCenterOf(d)})
			if err != nil {
				return false, err
			}
			held := len(rows) > 0
			if (len(entries) > 0) != held || (rights.Version != 0) != held || (share.Version != 0) != held {
				return false, fmt.Errorf("%d rows, %d entries, rights version %d and a data center's share at version %d: a purge took part of the ledger",
					len(rows), len(entries), rights.Version, share.Version)
			}
			return held, nil
		}, d.ListLedgers},
	}
	for _, m := range models {
		for _, k := range names {
			if err := m.write(k); err != nil {
				t.Fatalf("%s: write %q: %v", m.name, k, err)
			}
		}
		for range 2 { // a second purge finds nothing, harmlessly
			if err := d.PurgeCounter(c, &driver.PurgeCounterParams{Namespace: ns, Counter: purged, Model: m.name}); err != nil {
				t.Fatalf("%s: purge: %v", m.name, err)
			}
		}
		for _, k := range names {
			held, err := m.held(k)
			if err != nil {
				t.Fatalf("%s: read %q: %v", m.name, k, err)
			}
			if held != (k != purged) {
				t.Errorf("%s: after purging %q, %q holds data: %v", m.name, purged, k, held)
			}
		}
		keys, err := m.list(c, &driver.ListCountersParams{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		want := []driver.CounterKey{{Namespace: ns, Counter: longer}, {Namespace: ns, Counter: gen}} // "x" < U+FFFF
		slices.SortFunc(keys, func(a, b driver.CounterKey) int { return strings.Compare(a.Counter, b.Counter) })
		if !reflect.DeepEqual(keys, want) {
			t.Errorf("%s: listed after the purge: %v, want %v", m.name, keys, want)
		}
	}
	if err := d.PurgeCounter(c, &driver.PurgeCounterParams{Namespace: ns, Counter: purged, Model: "nosuch"}); err == nil {
		t.Error("PurgeCounter of an unknown model accepted")
	}
}
