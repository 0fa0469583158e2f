package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/client"
	"github.com/abacusdb/abacus/internal/servertest"
)

func TestTransferEndToEnd(t *testing.T) {
	t.Parallel()
	b := servertest.NewBackend(t, nil)
	c := start(t, b.Handler)
	ctx := context.Background()
	if _, err := c.Credit(ctx, "", "alice", 100, "topup"); err != nil {
		t.Fatal(err)
	}
	req := api.LedgerTransferRequest{To: "bob", Amount: 30, RequestID: "pay-1"}
	r, err := c.Transfer(ctx, "", "alice", req)
	if err != nil || !r.Applied || r.Replayed || r.From != "alice" || r.To != "bob" || r.Namespace != api.DefaultLedgerNamespace {
		t.Fatalf("Transfer = %+v, %v", r, err)
	}
	if r, err := c.Transfer(ctx, "", "alice", req); err != nil || !r.Applied || !r.Replayed {
		t.Fatalf("the retry = %+v, %v; want applied, replayed", r, err)
	}
	for name, want := range map[string]int64{"alice": 70, "bob": 30} {
		if v, err := c.LedgerValue(ctx, "", name); err != nil || v.Value != want {
			t.Fatalf("%s = %+v, %v; want %d", name, v, err, want)
		}
	}
	// Refused before a round trip, with the request id kept.
	for _, bad := range []api.LedgerTransferRequest{{To: "alice", Amount: 1}, {To: "bob"}, {Amount: 1}} {
		r, err := c.Transfer(ctx, "", "alice", bad)
		var apiErr *client.Error
		if !errors.As(err, &apiErr) || apiErr.Code != api.CodeInvalidArgument || r.RequestID == "" {
			t.Errorf("Transfer(%+v) = %+v, %v; want invalid_argument with a request id", bad, r, err)
		}
	}
}
