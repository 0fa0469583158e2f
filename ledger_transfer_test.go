package abacus_test

import (
	"context"
	"errors"
	"testing"

	"github.com/abacusdb/abacus"
)

// Client.Transfer moves an amount once per request id, reports a retry as
// replayed, and refuses what it cannot do with nothing written.
func TestClientTransfer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := startClient(t, abacus.Config{Driver: newMemStore(t)})
	floor := int64(0)
	if _, err := c.CreateNamespace(ctx, abacus.NamespaceConfig{Name: "wallets", Model: abacus.ModelLedger, Ledger: &abacus.LedgerOptions{Floored: true, Floor: floor}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Credit(ctx, "wallets", "alice", 100, "topup"); err != nil {
		t.Fatal(err)
	}
	tr := abacus.LedgerTransfer{Namespace: "wallets", From: "alice", To: "bob", Amount: 40, RequestID: "pay-1"}
	res, err := c.Transfer(ctx, tr)
	if err != nil || !res.Applied || res.Replayed || res.RequestID != "pay-1" || res.Namespace != "wallets" {
		t.Fatalf("Transfer: %+v, %v", res, err)
	}
	if res, err := c.Transfer(ctx, tr); err != nil || !res.Applied || !res.Replayed {
		t.Fatalf("the retry: %+v, %v; want applied and replayed", res, err)
	}
	want := map[string]int64{"alice": 60, "bob": 40}
	check := func() {
		t.Helper()
		for name, v := range want {
			got, err := c.LedgerValue(ctx, "wallets", name)
			if err != nil || got.Value != v {
				t.Fatalf("%s = %+v, %v; want %d", name, got, err, v)
			}
		}
	}
	check()

	for name, c2 := range map[string]struct {
		tr   abacus.LedgerTransfer
		want error
	}{
		"below the floor":   {abacus.LedgerTransfer{Namespace: "wallets", From: "alice", To: "bob", Amount: 61, RequestID: "pay-2"}, abacus.ErrBelowFloor},
		"the same ledger":   {abacus.LedgerTransfer{Namespace: "wallets", From: "alice", To: "alice", Amount: 1}, abacus.ErrInvalid},
		"a zero amount":     {abacus.LedgerTransfer{Namespace: "wallets", From: "alice", To: "bob"}, abacus.ErrInvalid},
		"another amount":    {abacus.LedgerTransfer{Namespace: "wallets", From: "alice", To: "bob", Amount: 41, RequestID: "pay-1"}, abacus.ErrRequestConflict},
		"a bad name":        {abacus.LedgerTransfer{Namespace: "wallets", From: "alice", To: "", Amount: 1}, abacus.ErrInvalid},
		"no such namespace": {abacus.LedgerTransfer{Namespace: "nowhere", From: "alice", To: "bob", Amount: 1}, abacus.ErrNamespaceNotFound},
	} {
		res, err := c.Transfer(ctx, c2.tr)
		if !errors.Is(err, c2.want) {
			t.Errorf("%s: %v, want %v", name, err, c2.want)
		}
		if res == nil || res.RequestID == "" {
			t.Errorf("%s: the result %+v carries no request id", name, res)
		}
	}
	check()
}
