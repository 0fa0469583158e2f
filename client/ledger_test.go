package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/client"
	"github.com/abacusdb/abacus/internal/servertest"
)

func TestLedgerEndToEnd(t *testing.T) {
	t.Parallel()
	b := servertest.NewBackend(t, nil)
	c := start(t, b.Handler)
	ctx := context.Background()

	r, err := c.Credit(ctx, "", "wallet", 100, "c1")
	if err != nil || !r.Applied || r.Replayed || r.Namespace != api.DefaultLedgerNamespace || r.RequestID != "c1" {
		t.Fatalf("Credit = %+v, %v", r, err)
	}
	if r, err := c.Credit(ctx, "", "wallet", 100, "c1"); err != nil || !r.Applied || !r.Replayed {
		t.Fatalf("retried Credit = %+v, %v; want the first answer, replayed", r, err)
	}
	if _, err := c.Debit(ctx, "", "wallet", 30, ""); err != nil {
		t.Fatal(err)
	}
	u, err := c.UpdateLedger(ctx, "", "wallet", api.LedgerUpdateRequest{Amount: -5})
	if err != nil || len(u.RequestID) != 36 {
		t.Fatalf("UpdateLedger = %+v, %v", u, err)
	}
	v, err := c.LedgerValue(ctx, "", "wallet")
	if err != nil || v.Value != 65 || v.Credits != 100 || v.Debits != 35 {
		t.Fatalf("LedgerValue = %+v, %v", v, err)
	}
	for id, want := range map[string]bool{"c1": true, u.RequestID: true, "a/b c": false} {
		if got, err := c.HasRequestID(ctx, "", "wallet", id); err != nil || got != want {
			t.Fatalf("HasRequestID(%q) = %v, %v", id, got, err)
		}
	}
	if v, err := c.FindLedger(ctx, "", "wallet"); err != nil || v.Value != 65 {
		t.Fatalf("FindLedger = %+v, %v", v, err)
	}
	// The history: three entries, newest first, in pages of two.
	var amounts []int64
	after := ""
	for range 5 {
		h, err := c.LedgerHistory(ctx, "", "wallet", after, 2)
		if err != nil {
			t.Fatalf("LedgerHistory: %v", err)
		}
		for _, e := range h.Entries {
			amounts = append(amounts, e.Amount)
		}
		if after = h.Next; after == "" {
			break
		}
	}
	if len(amounts) != 3 || amounts[0] != -5 || amounts[1] != -30 || amounts[2] != 100 {
		t.Fatalf("history amounts = %v, want -5, -30, 100", amounts)
	}
	if _, err := c.LedgerHistory(ctx, "", "wallet", "not-a-cursor", 0); !client.IsCode(err, api.CodeInvalidArgument) {
		t.Fatalf("LedgerHistory with a bad cursor: %v", err)
	}
	// Refused locally, with the request id still returned.
	for _, call := range []func() (*api.LedgerUpdateResponse, error){
		func() (*api.LedgerUpdateResponse, error) { return c.Credit(ctx, "", "wallet", 0, "x") },
		func() (*api.LedgerUpdateResponse, error) { return c.Debit(ctx, "", "wallet", -3, "x") },
		func() (*api.LedgerUpdateResponse, error) {
			return c.UpdateLedger(ctx, "", "wallet", api.LedgerUpdateRequest{RequestID: "x"})
		},
		func() (*api.LedgerUpdateResponse, error) { return c.Credit(ctx, "", "", 1, "x") },
	} {
		r, err := call()
		if !client.IsCode(err, api.CodeInvalidArgument) || r.RequestID != "x" {
			t.Errorf("got %+v, %v; want invalid_argument with the request id", r, err)
		}
	}
	// Refused by the server.
	if _, err := c.Credit(ctx, "", "wallet", 7, "c1"); !client.IsCode(err, api.CodeRequestConflict) {
		t.Errorf("reused id: %v, want request_conflict", err)
	}
	if _, err := c.Credit(ctx, "default", "wallet", 7, ""); !client.IsCode(err, api.CodeInvalidArgument) {
		t.Errorf("ledger on a counter namespace: %v, want invalid_argument", err)
	}
}

// lossyBalancer spreads requests over several servers in turn and loses the
// answer to every other ledger update after it was applied, so each update's
// first attempt is lost and its retry reaches another server.
type lossyBalancer struct {
	backends []http.Handler
	mu       sync.Mutex
	next     int
	posts    int
	lost     int
}

func (l *lossyBalancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	h := l.backends[l.next%len(l.backends)]
	l.next++
	lose := false
	if strings.Contains(r.URL.Path, "/ledgers/") && r.Method == "POST" {
		lose = l.posts%2 == 0
		l.posts++
	}
	if lose {
		l.lost++
	}
	l.mu.Unlock()
	if !lose {
		h.ServeHTTP(w, r)
		return
	}
	h.ServeHTTP(httptest.NewRecorder(), r) // applied, answer lost
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, `{"code":"unknown_outcome","message":"lost by the balancer"}`)
}

// Unlike a sharded counter, a ledger recognises a retry that reaches a
// different server process: the client's automatic retries are exact.
func TestLedgerRetriesAcrossServersCountOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := servertest.OpenStore(t)
	var handlers []http.Handler
	var libs []*abacus.Client
	for range 3 { // three server processes on one store
		b := servertest.NewBackendOn(t, store, nil)
		handlers = append(handlers, b.Handler)
		libs = append(libs, b.Lib)
	}
	lb := &lossyBalancer{backends: handlers}
	c := start(t, lb, client.WithRetries(5))
	for i := range 10 {
		if _, err := c.Credit(ctx, "", "acct", int64(i+1), ""); err != nil {
			t.Fatalf("credit %d: %v", i, err)
		}
	}
	v, err := libs[0].LedgerValue(ctx, "", "acct")
	if err != nil || v.Value != 55 {
		t.Fatalf("value = %+v, %v; want 55 (each credit once, though every first answer was lost)", v, err)
	}
	if lb.lost != 10 || v.Actors < 2 {
		t.Fatalf("%d answers lost, %d actors: the retries did not cross servers", lb.lost, v.Actors)
	}
}

// A server from before replayed existed answers a recognised retry with
// applied false; the client reports it as the replay it is, so callers see
// one meaning during a rolling upgrade.
func TestLedgerRetryAnsweredByAnOlderServer(t *testing.T) {
	t.Parallel()
	older := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/ledger-updates" {
			_, _ = io.WriteString(w, `{"results":[{"namespace":"ledgers","ledger":"a","request_id":"r1","applied":true},{"namespace":"ledgers","ledger":"a","request_id":"r2","applied":false},{"namespace":"ledgers","ledger":"a","request_id":"r3","applied":false,"error":{"code":"request_conflict","message":"other amount"}}]}`)
			return
		}
		_, _ = io.WriteString(w, `{"namespace":"ledgers","ledger":"a","request_id":"r2","applied":false}`)
	})
	c := start(t, older)
	ctx := context.Background()
	if r, err := c.Credit(ctx, "", "a", 5, "r2"); err != nil || !r.Applied || !r.Replayed {
		t.Fatalf("a retry answered applied false = %+v, %v; want applied and replayed", r, err)
	}
	res, err := c.UpdateLedgers(ctx, []api.LedgerBatchUpdate{{Ledger: "a", Amount: 1, RequestID: "r1"}, {Ledger: "a", Amount: 1, RequestID: "r2"}, {Ledger: "a", Amount: 1, RequestID: "r3"}})
	if err != nil || len(res) != 3 {
		t.Fatalf("UpdateLedgers = %+v, %v", res, err)
	}
	if !res[0].Applied || res[0].Replayed || !res[1].Applied || !res[1].Replayed || res[2].Applied || res[2].Replayed || res[2].Error == nil {
		t.Fatalf("results %+v; want applied, replayed, and the conflict untouched", res)
	}
}
