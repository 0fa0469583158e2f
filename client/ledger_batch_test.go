package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/client"
	"github.com/abacusdb/abacus/internal/servertest"
)

func ledgerValue(t *testing.T, b *servertest.Backend, ns, ledger string) int64 {
	t.Helper()
	v, err := b.Lib.LedgerValue(context.Background(), ns, ledger)
	if err != nil {
		t.Fatal(err)
	}
	return v.Value
}

func TestUpdateLedgers(t *testing.T) {
	t.Parallel()
	b := servertest.NewBackend(t, nil)
	c := start(t, b.Handler)
	ctx := context.Background()

	updates := []api.LedgerBatchUpdate{
		{Ledger: "alice", Amount: 100},
		{Ledger: "alice", Amount: -30, RequestID: "d1"},
		{Namespace: api.DefaultLedgerNamespace, Ledger: "bob", Amount: 5},
	}
	res, err := c.UpdateLedgers(ctx, updates)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 {
		t.Fatalf("%d results for 3 updates: %+v", len(res), res)
	}
	for i, r := range res {
		if !r.Applied || r.Replayed || r.Error != nil || r.Namespace != api.DefaultLedgerNamespace || r.Ledger != updates[i].Ledger || r.RequestID == "" {
			t.Errorf("result %d = %+v (error %+v)", i, r, r.Error)
		}
	}
	if res[1].RequestID != "d1" || res[0].RequestID == res[2].RequestID {
		t.Errorf("request ids %q, %q, %q: want d1 kept and fresh ones for the rest", res[0].RequestID, res[1].RequestID, res[2].RequestID)
	}
	if updates[0].RequestID != "" {
		t.Error("UpdateLedgers changed its argument")
	}
	if a, bob := ledgerValue(t, b, "", "alice"), ledgerValue(t, b, "", "bob"); a != 70 || bob != 5 {
		t.Fatalf("alice %d, bob %d; want 70 and 5", a, bob)
	}

	// The returned ids make the same batch a retry, applied no more.
	for i := range updates {
		updates[i].RequestID = res[i].RequestID
	}
	res, err = c.UpdateLedgers(ctx, updates)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.Applied || !r.Replayed || r.Error != nil {
			t.Errorf("retried result %d = %+v (error %+v), want recognised: applied, replayed", i, r, r.Error)
		}
	}
	// An update's own error is in its result; the others apply.
	res, err = c.UpdateLedgers(ctx, []api.LedgerBatchUpdate{{Ledger: "alice", Amount: 1, RequestID: "d1"}, {Ledger: "bob", Amount: 1}})
	if err != nil || res[0].Error == nil || res[0].Error.Code != api.CodeRequestConflict || res[0].Applied || res[0].Replayed || !res[1].Applied || res[1].Replayed {
		t.Fatalf("conflict: %+v, %v", res, err)
	}
	// An invalid update refuses the batch as a whole.
	_, err = c.UpdateLedgers(ctx, []api.LedgerBatchUpdate{{Ledger: "alice", Amount: 1}, {Ledger: "alice"}})
	if !client.IsCode(err, api.CodeInvalidArgument) || !strings.Contains(err.Error(), "updates[1]") {
		t.Fatalf("invalid batch: %v", err)
	}
	if a, bob := ledgerValue(t, b, "", "alice"), ledgerValue(t, b, "", "bob"); a != 70 || bob != 6 {
		t.Fatalf("alice %d, bob %d; want 70 and 6", a, bob)
	}
}

// ledgerBatchFlaky applies every ledger batch but reports update 1 of the
// first as an unknown outcome.
type ledgerBatchFlaky struct {
	next    http.Handler
	mu      sync.Mutex
	batches [][]api.LedgerBatchUpdate
}

func (f *ledgerBatchFlaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req api.LedgerBatchRequest
	_ = json.Unmarshal(body, &req)
	f.mu.Lock()
	f.batches = append(f.batches, req.Updates)
	first := len(f.batches) == 1
	f.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	f.next.ServeHTTP(rec, r)
	var resp api.LedgerBatchResponse
	_ = json.Unmarshal(rec.Body.Bytes(), &resp)
	if first && len(resp.Results) > 1 {
		resp.Results[1].Applied, resp.Results[1].Replayed = false, false
		resp.Results[1].Error = &api.Error{Code: api.CodeUnknownOutcome, Message: "lost"}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rec.Code)
	_ = json.NewEncoder(w).Encode(resp)
}

// With retries, only the updates with a retryable result are sent again,
// with their ids, and the ledger counts each once.
func TestUpdateLedgersRetriesOnlyFailedUpdates(t *testing.T) {
	t.Parallel()
	b := servertest.NewBackend(t, nil)
	f := &ledgerBatchFlaky{next: b.Handler}
	c := start(t, f, client.WithRetries(1))
	res, err := c.UpdateLedgers(context.Background(), []api.LedgerBatchUpdate{
		{Ledger: "a", Amount: 1}, {Ledger: "b", Amount: 2}, {Ledger: "c", Amount: 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	// b was applied by the first attempt: its retry is recognised.
	if res[0].Replayed || !res[1].Applied || !res[1].Replayed || res[1].Error != nil || res[2].Replayed || !res[0].Applied || !res[2].Applied {
		t.Errorf("results %+v", res)
	}
	if len(f.batches) != 2 || len(f.batches[1]) != 1 || f.batches[1][0].Ledger != "b" || f.batches[1][0].RequestID != f.batches[0][1].RequestID {
		t.Fatalf("batches sent: %+v", f.batches)
	}
	for ledger, want := range map[string]int64{"a": 1, "b": 2, "c": 3} {
		if got := ledgerValue(t, b, "", ledger); got != want {
			t.Errorf("%s = %d, want %d", ledger, got, want)
		}
	}

	// Without retries the update's error is reported in its result.
	c2 := start(t, &ledgerBatchFlaky{next: b.Handler})
	res, err = c2.UpdateLedgers(context.Background(), []api.LedgerBatchUpdate{{Ledger: "x", Amount: 1}, {Ledger: "y", Amount: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Applied || res[1].Applied || res[1].Replayed || res[1].Error == nil || res[1].Error.Code != api.CodeUnknownOutcome || res[1].RequestID == "" {
		t.Errorf("results %+v", res)
	}
}
