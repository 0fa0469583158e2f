package drivertest

import (
	"context"
	"reflect"
	"testing"

	"github.com/abacusdb/abacus/driver"
)

// exerciseModelLists writes one counter of each of the actor, native, cas
// and ledger models in two namespaces, and checks that each model's
// listing names exactly its own, sorted, filtered by namespace.
func exerciseModelLists(t *testing.T, d driver.Driver) {
	t.Parallel()
	c := ctx(t)
	ns1, ns2 := unique("list-a"), unique("list-b")
	for _, ns := range []string{ns1, ns2} {
		for _, name := range []string{"b", "a"} {
			if err := d.SetActorValue(c, &driver.SetActorValueParams{Namespace: ns, Counter: "actor-" + name, Actor: "p", Value: 1, Version: 1}); err != nil {
				t.Fatal(err)
			}
			if err := d.AddNative(c, &driver.AddNativeParams{Namespace: ns, Counter: "native-" + name, Delta: 1}); err != nil {
				t.Fatal(err)
			}
			if _, err := d.CompareAndSetCAS(c, &driver.CompareAndSetCASParams{Namespace: ns, Counter: "cas-" + name, Value: 1}); err != nil {
				t.Fatal(err)
			}
			for _, actor := range []string{"x", "y"} { // two rows, listed once
				if err := d.WriteLedgerRow(c, &driver.WriteLedgerRowParams{Namespace: ns, Ledger: "ledger-" + name, Row: driver.LedgerRow{Actor: actor, State: []byte{1}}, Timestamp: 1}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, l := range []struct {
		prefix string
		list   func(context.Context, *driver.ListCountersParams) ([]driver.CounterKey, error)
	}{
		{"actor-", d.ListActorCounters},
		{"native-", d.ListNativeCounters},
		{"cas-", d.ListCASCounters},
		{"ledger-", d.ListLedgers},
	} {
		got, err := l.list(c, &driver.ListCountersParams{Namespace: ns1})
		if err != nil {
			t.Fatal(err)
		}
		want := []driver.CounterKey{{Namespace: ns1, Counter: l.prefix + "a"}, {Namespace: ns1, Counter: l.prefix + "b"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("list %s in %s = %v, want %v", l.prefix, ns1, got, want)
		}
		all, err := l.list(c, &driver.ListCountersParams{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, k := range all {
			if k.Namespace == ns1 || k.Namespace == ns2 {
				n++
			}
		}
		if n != 4 {
			t.Errorf("list %s in every namespace has %d of the 4 written in %s and %s: %v", l.prefix, n, ns1, ns2, all)
		}
	}
}
