package abacus_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
)

// UpdateLedgers answers every update on its own, in order, over several
// namespaces and ledgers; a second client retrying the whole batch applies
// nothing twice.
func TestUpdateLedgersAnswersEachUpdate(t *testing.T) {
	t.Parallel()
	modelStores(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		clk := clock.Real{}
		a, b := clientOn(t, d, clk), clientOn(t, d, clk)
		n1 := freshNamespace(t, a, abacus.NamespaceConfig{Model: abacus.ModelLedger})
		n2 := freshNamespace(t, a, abacus.NamespaceConfig{Model: abacus.ModelLedger,
			Ledger: &abacus.LedgerOptions{Mode: abacus.LedgerModeConcurrentRetriesMayDouble}})
		counters := freshNamespace(t, a, abacus.NamespaceConfig{Model: abacus.ModelSharded})
		var updates []abacus.LedgerUpdate
		for i := range 30 {
			updates = append(updates, abacus.LedgerUpdate{Namespace: n1, Ledger: fmt.Sprint("l", i%3), Amount: int64(i + 1), RequestID: fmt.Sprint("r", i)})
		}
		updates = append(updates,
			abacus.LedgerUpdate{Namespace: n2, Ledger: "x", Amount: -5},                  // a generated id
			abacus.LedgerUpdate{Namespace: n1, Ledger: "l0", Amount: 1, RequestID: "r0"}, // repeats r0
			abacus.LedgerUpdate{Namespace: n1, Ledger: "l0", Amount: 2, RequestID: "r3"}, // reuses r3
			abacus.LedgerUpdate{Namespace: n1, Ledger: "l1", Amount: 0, RequestID: "z"},  // invalid
			abacus.LedgerUpdate{Namespace: counters, Ledger: "c", Amount: 1},             // not a ledger namespace
			abacus.LedgerUpdate{Namespace: "no-such-namespace", Ledger: "c", Amount: 1},  // missing
		)
		check := func(c *abacus.Client, firstTime bool) []abacus.LedgerBatchResult {
			t.Helper()
			res := c.UpdateLedgers(ctx, updates)
			if len(res) != len(updates) {
				t.Fatalf("%d results for %d updates", len(res), len(updates))
			}
			for i := range 30 {
				r := res[i]
				if r.Err != nil || !r.Applied || r.Replayed == firstTime || r.RequestID != fmt.Sprint("r", i) || r.Namespace != n1 {
					t.Fatalf("update %d: %+v", i, r)
				}
			}
			if r := res[30]; r.Err != nil || !r.Applied || r.Replayed == firstTime || r.RequestID == "" || r.Namespace != n2 {
				t.Fatalf("update without a request id: %+v", r)
			}
			if r := res[31]; r.Err != nil || !r.Applied || !r.Replayed {
				t.Fatalf("repeat of r0: %+v, want recognised", r)
			}
			for i, want := range map[int]error{32: abacus.ErrRequestConflict, 33: abacus.ErrInvalid, 34: abacus.ErrInvalid, 35: abacus.ErrNamespaceNotFound} {
				if !errors.Is(res[i].Err, want) || res[i].Applied || res[i].Replayed {
					t.Fatalf("update %d: %+v, want %v", i, res[i], want)
				}
			}
			return res
		}
		first := check(a, true)
		updates[30].RequestID = first[30].RequestID // a retry carries the id the first call generated
		wantLedgers := func(c *abacus.Client) {
			t.Helper()
			sums := map[string]int64{}
			for i := range 30 {
				sums[fmt.Sprint("l", i%3)] += int64(i + 1)
			}
			for l, want := range sums {
				v, err := c.LedgerValue(ctx, n1, l)
				if err != nil || v.Value != want {
					t.Fatalf("%s = %+v, %v; want %d", l, v, err, want)
				}
			}
		}
		wantLedgers(b)
		check(b, false)
		wantLedgers(a)
		if v, err := a.LedgerValue(ctx, n2, "x"); err != nil || v.Value != -5 {
			t.Fatalf("x = %+v, %v; want -5", v, err)
		}
	})
}
