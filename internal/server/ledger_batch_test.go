package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
)

// ledger reads a ledger through the library, bypassing HTTP.
func (e *testEnv) ledger(ns, name string) *abacus.LedgerValue {
	e.t.Helper()
	v, err := e.client.LedgerValue(context.Background(), ns, name)
	if err != nil {
		e.t.Fatalf("read ledger %s/%s: %v", ns, name, err)
	}
	return v
}

func TestLedgerBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustJSON("POST", "/v1/namespaces", `{"name":"wallets","model":"ledger"}`, 201, nil)

	var res api.LedgerBatchResponse
	e.mustJSON("POST", "/v1/ledger-updates", `{"updates":[
		{"ledger":"alice","amount":100,"request_id":"c1"},
		{"ledger":"bob","amount":50,"request_id":"c1"},
		{"ledger":"alice","amount":-30,"request_id":"d1"},
		{"ledger":"alice","amount":100,"request_id":"c1"},
		{"namespace":"wallets","ledger":"carol","amount":-7}]}`, 200, &res)
	want := []api.LedgerBatchResult{
		{Namespace: "ledgers", Ledger: "alice", RequestID: "c1", Applied: true},
		{Namespace: "ledgers", Ledger: "bob", RequestID: "c1", Applied: true},
		{Namespace: "ledgers", Ledger: "alice", RequestID: "d1", Applied: true},
		{Namespace: "ledgers", Ledger: "alice", RequestID: "c1", Applied: true, Replayed: true}, // the same request again
		{Namespace: "wallets", Ledger: "carol", Applied: true},
	}
	if len(res.Results) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(res.Results), len(want), res.Results)
	}
	if id := res.Results[4].RequestID; len(id) != 36 {
		t.Errorf("generated request id %q, want a UUID", id)
	}
	res.Results[4].RequestID = ""
	for i, r := range res.Results {
		if r != want[i] || r.Error != nil {
			t.Errorf("result %d = %+v (error %+v), want %+v", i, r, r.Error, want[i])
		}
	}
	for _, c := range []struct {
		ns, name               string
		value, credits, debits int64
	}{
		{"", "alice", 70, 100, 30}, {"", "bob", 50, 50, 0}, {"wallets", "carol", -7, 0, 7},
	} {
		if v := e.ledger(c.ns, c.name); v.Value != c.value || v.Credits != c.credits || v.Debits != c.debits {
			t.Errorf("%s/%s = %+v, want value %d (%d - %d)", c.ns, c.name, v, c.value, c.credits, c.debits)
		}
	}
	// Each update is counted like a single one.
	if text := string(e.do("GET", "/metrics", "").body); !strings.Contains(text, `abacus_ledger_updates_total{result="applied"} 4`) ||
		!strings.Contains(text, `abacus_ledger_updates_total{result="duplicate"} 1`) {
		t.Errorf("ledger metrics missing or wrong:\n%s", text)
	}
	// An empty batch is answered with no results, not null.
	for _, body := range []string{`{"updates":[]}`, `{}`} {
		if r := e.do("POST", "/v1/ledger-updates", body); r.status != 200 || string(r.body) != `{"results":[]}`+"\n" {
			t.Errorf("%s: %d %s", body, r.status, r.body)
		}
	}
}

// One caller mistake refuses the whole batch: nothing is applied, and the
// message names the first bad update.
func TestLedgerBatchRefusedAsAWhole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	good := `{"ledger":"alice","amount":5,"request_id":"ok"}`
	tooMany := strings.TrimSuffix(strings.Repeat(good+",", api.MaxBatchItems+1), ",")
	for _, c := range []struct {
		bad    string
		status int
		code   string
		msg    string
	}{
		{`{"ledger":"alice","amount":0}`, 400, api.CodeInvalidArgument, "updates[1]: "},
		{`{"ledger":"alice"}`, 400, api.CodeInvalidArgument, "updates[1]: "},
		{`{"ledger":"","amount":1}`, 400, api.CodeInvalidArgument, "updates[1]: "},
		{`{"amount":1}`, 400, api.CodeInvalidArgument, "updates[1]: "},
		{`{"ledger":"` + strings.Repeat("l", 257) + `","amount":1}`, 400, api.CodeInvalidArgument, "updates[1]: "},
		{`{"ledger":"alice","amount":-9223372036854775808}`, 400, api.CodeOverflow, "updates[1]: "},
		{`{"namespace":"default","ledger":"alice","amount":1}`, 400, api.CodeInvalidArgument, `uses model "sharded"`},
		{`{"namespace":"nope","ledger":"alice","amount":1}`, 404, api.CodeNamespaceNotFound, "updates[1]: "},
		{`{"ledger":"alice","amount":1,"request_id":""}`, 400, api.CodeInvalidArgument, `"updates[1].request_id"`},
		{`{"ledger":"alice","amount":1,"request_id":"` + strings.Repeat("r", 257) + `"}`, 400, api.CodeInvalidArgument, "updates[1]: "},
		{`{"ledger":"alice","amount":1,"delta":1}`, 400, api.CodeInvalidJSON, "updates[1] has an unknown field"},
		{`{"ledger":"alice","amount":1.5}`, 400, api.CodeInvalidArgument, `"updates[1].amount"`},
		{`null`, 400, api.CodeInvalidJSON, "updates[1] must be a JSON object"},
		{`{"ledger":"alice","amount":0},{"ledger":"","amount":1}`, 400, api.CodeInvalidArgument, "(and 1 more invalid updates)"},
		{tooMany, 400, api.CodeInvalidArgument, "1002 items, the limit is 1000"},
	} {
		body := `{"updates":[` + good + `,` + c.bad + `]}`
		r := e.do("POST", "/v1/ledger-updates", body)
		if r.status != c.status || r.apiError().Code != c.code || !strings.Contains(r.apiError().Message, c.msg) {
			t.Errorf("%.200s: %d %s, want %d %s with %q", body, r.status, r.body, c.status, c.code, c.msg)
		}
	}
	if v := e.ledger("", "alice"); v.Value != 0 || v.Actors != 0 {
		t.Errorf("refused batches changed alice: %+v", v)
	}
	if known, err := e.client.HasRequestID(context.Background(), "", "alice", "ok"); err != nil || known {
		t.Errorf("the good update of a refused batch left its request id: %v, %v", known, err)
	}
	if text := string(e.do("GET", "/metrics", "").body); strings.Contains(text, "abacus_ledger_updates_total{") {
		t.Errorf("refused batches were counted as updates:\n%s", text)
	}
}

// A request id recorded with another amount fails that update alone.
func TestLedgerBatchRequestConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustJSON("POST", "/v1/namespaces/ledgers/ledgers/alice/credits", `{"amount":5,"request_id":"r1"}`, 200, nil)
	var res api.LedgerBatchResponse
	e.mustJSON("POST", "/v1/ledger-updates", `{"updates":[
		{"ledger":"alice","amount":6,"request_id":"r1"},
		{"ledger":"alice","amount":1,"request_id":"r2"},
		{"ledger":"bob","amount":2,"request_id":"r1"}]}`, 200, &res)
	if len(res.Results) != 3 {
		t.Fatalf("results %+v", res.Results)
	}
	if r := res.Results[0]; r.Applied || r.Error == nil || r.Error.Code != api.CodeRequestConflict || r.RequestID != "r1" || r.Ledger != "alice" {
		t.Errorf("reused id: %+v (error %+v), want request_conflict", r, r.Error)
	}
	for _, r := range res.Results[1:] {
		if !r.Applied || r.Error != nil {
			t.Errorf("%+v (error %+v), want applied", r, r.Error)
		}
	}
	if a, b := e.ledger("", "alice"), e.ledger("", "bob"); a.Value != 6 || b.Value != 2 {
		t.Errorf("alice %d, bob %d; want 6 and 2", a.Value, b.Value)
	}
	if text := string(e.do("GET", "/metrics", "").body); !strings.Contains(text, `abacus_ledger_updates_total{result="request_conflict"} 1`) {
		t.Errorf("the conflict is not counted:\n%s", text)
	}
}

// A key writes only the namespaces its scopes name, the default ledger
// namespace included; one update beyond them refuses the batch.
func TestLedgerBatchScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, beyondLoopback)
	admin := "Bearer " + e.key("*:admin")
	e.mustJSON("POST", "/v1/namespaces", `{"name":"wallets","model":"ledger"}`, 201, nil, "Authorization", admin)
	writer := "Bearer " + e.key("ns:ledgers:write")
	reader := "Bearer " + e.key("ns:*:read")
	for _, c := range []struct {
		who, auth, body string
		want            int
	}{
		{"writer", writer, `{"updates":[{"ledger":"a","amount":1}]}`, 200},
		{"writer", writer, `{"updates":[{"namespace":"ledgers","ledger":"a","amount":1}]}`, 200},
		{"writer", writer, `{"updates":[{"ledger":"a","amount":1},{"namespace":"wallets","ledger":"a","amount":1}]}`, 403},
		{"reader", reader, `{"updates":[{"ledger":"a","amount":1}]}`, 403},
		{"no key", "", `{"updates":[{"ledger":"a","amount":1}]}`, 401},
	} {
		r := e.do("POST", "/v1/ledger-updates", c.body, "Authorization", c.auth)
		if r.status != c.want {
			t.Errorf("%s: %s: %d %s, want %d", c.who, c.body, r.status, r.body, c.want)
		}
		if r.status == 403 && (r.apiError().Code != api.CodeInsufficientScope || !strings.HasPrefix(r.apiError().Message, "updates[")) {
			t.Errorf("%s: %s: %s, want insufficient_scope naming the update", c.who, c.body, r.body)
		}
	}
	if a, w := e.ledger("", "a"), e.ledger("wallets", "a"); a.Value != 2 || w.Value != 0 {
		t.Errorf("ledgers/a = %d, wallets/a = %d; want 2 and 0", a.Value, w.Value)
	}
}

// A server whose clock is off takes no ledger batch, as it takes no other write.
func TestLedgerBatchRefusedWhileTheClockIsSkewed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.srv.clock.skewed.Store(true)
	r := e.do("POST", "/v1/ledger-updates", `{"updates":[{"ledger":"a","amount":1}]}`)
	if r.status != 503 || r.apiError().Code != api.CodeUnavailable || !strings.Contains(r.apiError().Message, "clock skew") {
		t.Fatalf("%d %s, want 503 unavailable (clock skew)", r.status, r.body)
	}
	e.srv.clock.skewed.Store(false)
	if v := e.ledger("", "a"); v.Value != 0 {
		t.Fatalf("a refused batch applied: %+v", v)
	}
}

// The server refuses exactly the batches api/openapi.yaml refuses, and its
// answers match the documented schemas.
func TestLedgerBatchMatchesTheContract(t *testing.T) {
	t.Parallel()
	c := loadContract(t)
	e := newEnv(t)
	for i, tc := range []struct {
		update string
		valid  bool
	}{
		{`{"ledger":"a","amount":1}`, true},
		{`{"namespace":"ledgers","ledger":"a","amount":-9223372036854775807,"request_id":"r"}`, true},
		{`{"namespace":"","ledger":"m","amount":9223372036854775807}`, true},
		{`{"ledger":"a","amount":0}`, false},
		{`{"ledger":"a"}`, false},
		{`{"amount":1}`, false},
		{`{"ledger":"","amount":1}`, false},
		{`{"ledger":"a","amount":1,"request_id":""}`, false},
		{`{"ledger":"a","amount":1,"request_id":"` + strings.Repeat("r", 257) + `"}`, false},
		{`{"ledger":"` + strings.Repeat("l", 257) + `","amount":1}`, false},
		{`{"ledger":"a","amount":"1"}`, false},
		{`{"ledger":"a","amount":1,"zz":1}`, false},
		{`{"ledger":"a","amount":null}`, false},
	} {
		body := fmt.Sprintf(`{"updates":[%s]}`, tc.update)
		r, specErr := c.exchange(t, e, "POST", "/v1/ledger-updates", body)
		switch {
		case tc.valid && (specErr != nil || r.status != 200):
			t.Errorf("%d %s: spec %v, server %d %s; want both to accept", i, body, specErr, r.status, r.body)
		case !tc.valid && (specErr == nil || r.status != 400):
			t.Errorf("%d %s: spec %v, server %d %s; want both to refuse", i, body, specErr, r.status, r.body)
		}
	}
	// A per-update error is a documented answer too.
	e.mustJSON("POST", "/v1/ledger-updates", `{"updates":[{"ledger":"b","amount":1,"request_id":"x"}]}`, 200, nil)
	r, _ := c.exchange(t, e, "POST", "/v1/ledger-updates", `{"updates":[{"ledger":"b","amount":2,"request_id":"x"}]}`)
	var res api.LedgerBatchResponse
	if err := json.Unmarshal(r.body, &res); err != nil || len(res.Results) != 1 || res.Results[0].Error == nil {
		t.Fatalf("conflicting update: %d %s", r.status, r.body)
	}
}

func FuzzDecodeLedgerBatch(f *testing.F) {
	fuzzDecode(f, []string{
		`{"updates":[{"ledger":"l","amount":1},{"namespace":"n","ledger":"m","amount":-2,"request_id":"r"}]}`,
		`{"updates":[]}`, `{}`, `{"updates":null}`, `{"updates":[null]}`, `{"updates":[{"ledger":1}]}`,
		`{"updates":[{"ledger":"l","amount":1e400}]}`, "{\"updates\":[{\"namespace\":\"\xc3\",\"ledger\":\"l\"}]}",
		`{"updates":[{"ledger":"l"}],"updates":[]}`, `{"updates":[{"ledger":"l","extra":true}]}`,
		`{"updates":[{"ledger":"l","amount":1,"request_id":""}]}`, `{"updates":[{"ledger":"l","Amount":1,"amount":2}]}`,
	}, decodeLedgerBatch, func(t *testing.T, _ []byte, v api.LedgerBatchRequest) {
		if len(v.Updates) > api.MaxBatchItems {
			t.Fatalf("accepted %d updates", len(v.Updates))
		}
		roundTrip(t, v, decodeLedgerBatch)
	})
}
