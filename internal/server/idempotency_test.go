package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
)

// The Idempotency-Key header is the request id where the API has one: a
// client that knows nothing of request_id gets its retries recognised.
func TestIdempotencyKeyIsTheRequestID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := e.client.CreateNamespace(context.Background(), abacus.NamespaceConfig{Name: "ev", Model: abacus.ModelEvents}); err != nil {
		t.Fatal(err)
	}
	// An events increment's id must fix its time: a version 7 UUID.
	for ns, id := range map[string]string{"default": "k-1", "ev": api.NewRequestID(time.Now())} {
		path := "/v1/namespaces/" + ns + "/counters/c/updates"
		for i, key := range []string{id, `"` + id + `"`, " " + id + " "} {
			r := e.do("POST", path, `{"delta":5}`, "Idempotency-Key", key)
			if r.status != 200 || r.header.Get("Abacus-Request-Id") != id || !strings.Contains(string(r.body), `"request_id":"`+id+`"`) {
				t.Fatalf("%s, send %d with key %s: %d %s %v", ns, i+1, key, r.status, r.body, r.header)
			}
		}
		if r := e.do("POST", path, `{"delta":5,"request_id":"`+id+`"}`, "Idempotency-Key", id); r.status != 200 {
			t.Fatalf("%s: the same id in body and header: %d %s", ns, r.status, r.body)
		}
		if v := e.value(ns, "c"); v.Value != 5 {
			t.Fatalf("%s: four sends of one key counted %d, want 5", ns, v.Value)
		}
	}

	// A ledger: the retry is recognised, and the key reused for another
	// amount is a conflict.
	led := "/v1/namespaces/ledgers/ledgers/alice/credits"
	var first, again api.LedgerUpdateResponse
	e.mustJSON("POST", led, `{"amount":50}`, 200, &first, "Idempotency-Key", "order-7")
	e.mustJSON("POST", led, `{"amount":50}`, 200, &again, "Idempotency-Key", "order-7")
	if !first.Applied || again.Applied || again.RequestID != "order-7" {
		t.Fatalf("ledger credit and its retry: %+v, %+v", first, again)
	}
	if r := e.do("POST", led, `{"amount":60}`, "Idempotency-Key", "order-7"); r.status != 409 || r.apiError().Code != api.CodeRequestConflict {
		t.Fatalf("the key reused for another amount: %d %s", r.status, r.body)
	}
	if v, err := e.client.LedgerValue(context.Background(), "ledgers", "alice"); err != nil || v.Value != 50 {
		t.Fatalf("ledger after a credit, its retry and a conflicting reuse: %+v, %v", v, err)
	}
}

// A header the server cannot honour is refused, and nothing changes.
func TestIdempotencyKeyRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	upd := "/v1/namespaces/default/counters/c/updates"
	for _, tc := range []struct {
		name, path, body string
		headers          []string
	}{
		{"differs from the body's request_id", upd, `{"delta":1,"request_id":"a"}`, []string{"Idempotency-Key", "b"}},
		{"empty", upd, `{"delta":1}`, []string{"Idempotency-Key", `""`}},
		{"a broken quoted string", upd, `{"delta":1}`, []string{"Idempotency-Key", `"open`}},
		{"on a batch", "/v1/updates", `{"updates":[{"counter":"c","delta":1}]}`, []string{"Idempotency-Key", "k"}},
		{"on a route without a request id", "/v1/namespaces", `{"name":"made"}`, []string{"Idempotency-Key", "k"}},
	} {
		r := e.do("POST", tc.path, tc.body, tc.headers...)
		if r.status != 400 || r.apiError().Code != api.CodeInvalidArgument || !strings.Contains(r.apiError().Message, "Idempotency-Key") {
			t.Errorf("%s: %d %s, want 400 invalid_argument naming the header", tc.name, r.status, r.body)
		}
	}
	req, _ := http.NewRequest("POST", e.ts.URL+upd, strings.NewReader(`{"delta":1}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Add("Idempotency-Key", "a")
	req.Header.Add("Idempotency-Key", "b")
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("two Idempotency-Key headers: %d, want 400", resp.StatusCode)
	}
	if v := e.value("default", "c"); !v.Empty {
		t.Errorf("refused requests changed the counter to %d", v.Value)
	}
	if _, err := e.client.Namespace(context.Background(), "made"); err == nil {
		t.Error("a refused namespace create made the namespace")
	}
}
