package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/abacusdb/abacus/api"
)

func TestLedgerEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base := "/v1/namespaces/ledgers/ledgers/wallet"

	var up api.LedgerUpdateResponse
	r := e.do("POST", base+"/credits", `{"amount":100,"request_id":"c1"}`)
	if err := json.Unmarshal(r.body, &up); err != nil || r.status != 200 ||
		up != (api.LedgerUpdateResponse{Namespace: "ledgers", Ledger: "wallet", RequestID: "c1", Applied: true}) ||
		r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("credit: %d %s, header Idempotent-Replayed %q", r.status, r.body, r.header.Get("Idempotent-Replayed"))
	}
	// The retry gets the first attempt's answer, marked as a replay in
	// the body and in a header.
	r = e.do("POST", base+"/credits", `{"amount":100,"request_id":"c1"}`)
	if err := json.Unmarshal(r.body, &up); err != nil || r.status != 200 ||
		up != (api.LedgerUpdateResponse{Namespace: "ledgers", Ledger: "wallet", RequestID: "c1", Applied: true, Replayed: true}) ||
		r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("a retried credit: %d %s, header Idempotent-Replayed %q", r.status, r.body, r.header.Get("Idempotent-Replayed"))
	}
	e.mustJSON("POST", base+"/debits", `{"amount":30,"request_id":"d1"}`, 200, &up)
	r = e.do("POST", base+"/updates", `{"amount":-5}`)
	if r.status != 200 || len(r.header.Get("Abacus-Request-Id")) != 36 {
		t.Fatalf("update without an id: status %d, header %q", r.status, r.header.Get("Abacus-Request-Id"))
	}

	var v api.LedgerValue
	e.mustJSON("GET", base, "", 200, &v)
	if v != (api.LedgerValue{Namespace: "ledgers", Ledger: "wallet", Value: 65, Credits: 100, Debits: 35, Actors: 1}) {
		t.Fatalf("value = %+v", v)
	}
	var st api.RequestIDStatus
	e.mustJSON("GET", base+"/requests/c1", "", 200, &st)
	if !st.Known {
		t.Fatal("c1 unknown")
	}
	e.mustJSON("GET", base+"/requests/"+strings.ReplaceAll("a/b", "/", "%2F"), "", 200, &st)
	if st.Known || st.RequestID != "a/b" {
		t.Fatalf("status of an unknown, escaped id = %+v", st)
	}
	e.mustJSON("POST", base+"/find", "", 200, &v)
	if v.Value != 65 {
		t.Fatalf("find = %+v", v)
	}

	// A ledger namespace with options, described with them filled in.
	var ns api.Namespace
	e.mustJSON("POST", "/v1/namespaces", `{"name":"strict","model":"ledger","ledger":{"strict":true,"history_length":3}}`, 201, &ns)
	want := api.LedgerOptions{HistoryLength: 3, Mode: api.LedgerModeExact, Strict: true, RetryCount: 10, ClaimTTLSeconds: 86400, EntryRetentionSeconds: 30 * 86400, ActorMaxAgeSeconds: 86400}
	if ns.Model != "ledger" || ns.Type != "" || ns.Ledger == nil || *ns.Ledger != want {
		t.Fatalf("created %+v (ledger %+v)", ns, ns.Ledger)
	}
	e.mustJSON("GET", "/v1/namespaces/strict", "", 200, &ns)
	if ns.Ledger == nil || *ns.Ledger != want {
		t.Fatalf("described %+v", ns.Ledger)
	}
	e.mustJSON("POST", "/v1/namespaces/strict/ledgers/x/credits", `{"amount":1,"request_id":"r"}`, 200, &up)
	if !up.Applied || up.Namespace != "strict" {
		t.Fatalf("strict credit = %+v", up)
	}
	// Exact is the default; the weaker mode is asked for by name.
	e.mustJSON("POST", "/v1/namespaces", `{"name":"plain","model":"ledger"}`, 201, &ns)
	if ns.Ledger == nil || ns.Ledger.Mode != api.LedgerModeExact || !ns.Ledger.Strict {
		t.Fatalf("default ledger options %+v, want mode exact", ns.Ledger)
	}
	e.mustJSON("POST", "/v1/namespaces", `{"name":"legacy","model":"ledger","ledger":{"strict":false}}`, 201, &ns)
	if ns.Ledger == nil || ns.Ledger.Mode != api.LedgerModeExact {
		t.Fatalf("\"strict\": false made options %+v; it must not choose the weaker mode", ns.Ledger)
	}
	e.mustJSON("POST", "/v1/namespaces", `{"name":"loose","model":"ledger","ledger":{"mode":"concurrent_retries_may_double"}}`, 201, &ns)
	if ns.Ledger == nil || ns.Ledger.Mode != api.LedgerModeConcurrentRetriesMayDouble || ns.Ledger.Strict {
		t.Fatalf("opt-in ledger options %+v", ns.Ledger)
	}
	if text := string(e.do("GET", "/metrics", "").body); !strings.Contains(text, `abacus_ledger_updates_total{result="applied"} 4`) ||
		!strings.Contains(text, `abacus_ledger_updates_total{result="duplicate"} 1`) {
		t.Errorf("ledger metrics missing or wrong:\n%s", text)
	}
}

// The history lists each applied request once, newest first, a page at a
// time; a namespace made without one says so.
func TestLedgerHistoryEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base := "/v1/namespaces/ledgers/ledgers/h"
	for _, body := range []string{`{"amount":10,"request_id":"c1"}`, `{"amount":3,"request_id":"c2"}`, `{"amount":10,"request_id":"c1"}`} {
		e.mustJSON("POST", base+"/credits", body, 200, nil)
	}
	e.mustJSON("POST", base+"/debits", `{"amount":4,"request_id":"d1"}`, 200, nil)
	var got []string
	after := ""
	for range 10 {
		var page api.LedgerHistory
		e.mustJSON("GET", base+"/entries?limit=2&after="+after, "", 200, &page)
		for _, en := range page.Entries {
			if en.Actor == "" || en.At.IsZero() {
				t.Fatalf("entry without actor or time: %+v", en)
			}
			got = append(got, fmt.Sprintf("%s:%d", en.RequestID, en.Amount))
		}
		if after = page.Next; after == "" {
			break
		}
	}
	if want := []string{"d1:-4", "c2:3", "c1:10"}; !slices.Equal(got, want) {
		t.Fatalf("history = %v, want %v", got, want)
	}

	var ns api.Namespace
	e.mustJSON("POST", "/v1/namespaces", `{"name":"nohist","model":"ledger","ledger":{"entry_retention_seconds":-1}}`, 201, &ns)
	if ns.Ledger == nil || ns.Ledger.EntryRetentionSeconds != -1 {
		t.Fatalf("a namespace without history described as %+v", ns.Ledger)
	}
	e.mustJSON("POST", "/v1/namespaces/nohist/ledgers/x/credits", `{"amount":1}`, 200, nil)
	// Actors that never retire: -1 in a request and in a description.
	e.mustJSON("POST", "/v1/namespaces", `{"name":"nofold","model":"ledger","ledger":{"actor_max_age_seconds":-1}}`, 201, &ns)
	if ns.Ledger == nil || ns.Ledger.ActorMaxAgeSeconds != -1 {
		t.Fatalf("a namespace whose actors never retire described as %+v", ns.Ledger)
	}
	e.mustJSON("POST", "/v1/namespaces", `{"name":"hourly","model":"ledger","ledger":{"actor_max_age_seconds":3600}}`, 201, &ns)
	if ns.Ledger == nil || ns.Ledger.ActorMaxAgeSeconds != 3600 {
		t.Fatalf("a namespace of hour-long actors described as %+v", ns.Ledger)
	}
	r := e.do("GET", "/v1/namespaces/nohist/ledgers/x/entries", "")
	if r.status != 400 || r.apiError().Code != api.CodeInvalidArgument || !strings.Contains(r.apiError().Message, "keeps no history") {
		t.Fatalf("history of a namespace without one: %d %s", r.status, r.body)
	}
}

// Caller mistakes get a 4xx and change nothing.
func TestLedgerBadRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base := "/v1/namespaces/ledgers/ledgers/w"
	e.mustJSON("POST", base+"/credits", `{"amount":9223372036854775807,"request_id":"max"}`, 200, nil)
	for _, c := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", base + "/credits", `{"amount":0}`, 400, api.CodeInvalidArgument},
		{"POST", base + "/credits", `{"amount":-1}`, 400, api.CodeInvalidArgument},
		{"POST", base + "/debits", `{}`, 400, api.CodeInvalidArgument},
		{"POST", base + "/updates", `{"amount":0}`, 400, api.CodeInvalidArgument},
		{"POST", base + "/credits", `{"amount":1}`, 400, api.CodeOverflow},
		{"POST", base + "/credits", `{"amount":9223372036854775808}`, 400, api.CodeInvalidArgument},
		{"POST", base + "/credits", `{"amount":5,"request_id":"max"}`, 409, api.CodeRequestConflict},
		{"POST", base + "/credits", `{"amount":1,"extra":1}`, 400, api.CodeInvalidJSON},
		{"POST", base + "/credits", `{"amount":1,"request_id":"` + strings.Repeat("x", 257) + `"}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces/default/ledgers/w/credits", `{"amount":1}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces/nope/ledgers/w/credits", `{"amount":1}`, 404, api.CodeNamespaceNotFound},
		{"GET", "/v1/namespaces/ledgers/counters/w", "", 400, api.CodeWrongModel},
		{"PATCH", base, "", 405, api.CodeMethodNotAllowed},
		{"POST", "/v1/namespaces", `{"name":"x","model":"ledger","type":"sum"}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces", `{"name":"x","ledger":{"strict":true}}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces", `{"name":"x","model":"ledger","ledger":{"mode":"strict"}}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces", `{"name":"x","model":"ledger","ledger":{"strict":true,"mode":"concurrent_retries_may_double"}}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces", `{"name":"x","model":"ledger","ledger":{"history_length":5000}}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces", `{"name":"x","model":"ledger","ledger":{"claim_ttl_seconds":-1}}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces", `{"name":"x","model":"ledger","ledger":{"entry_retention_seconds":-2}}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces", `{"name":"x","model":"ledger","ledger":{"entry_retention_seconds":220752001}}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces", `{"name":"x","model":"ledger","ledger":{"actor_max_age_seconds":-2}}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces", `{"name":"x","model":"ledger","ledger":{"actor_max_age_seconds":630720001}}`, 400, api.CodeInvalidArgument},
		{"GET", base + "/entries?limit=0", "", 400, api.CodeInvalidArgument},
		{"GET", base + "/entries?limit=1001", "", 400, api.CodeInvalidArgument},
		{"GET", base + "/entries?after=nonsense", "", 400, api.CodeInvalidArgument},
		{"GET", "/v1/namespaces/default/ledgers/w/entries", "", 400, api.CodeInvalidArgument},
	} {
		r := e.do(c.method, c.path, c.body)
		if r.status != c.status || r.apiError().Code != c.code {
			t.Errorf("%s %s %s: %d %s, want %d %s", c.method, c.path, c.body, r.status, r.body, c.status, c.code)
		}
	}
	var v api.LedgerValue
	e.mustJSON("GET", base, "", 200, &v)
	if v.Value != 9223372036854775807 || v.Actors != 1 {
		t.Fatalf("refused requests changed the ledger: %+v", v)
	}
}

func FuzzDecodeLedgerUpdate(f *testing.F) {
	fuzzDecode(f, []string{
		`{"amount":1}`, `{"amount":-9223372036854775808,"request_id":"r"}`, `{}`, `{"amount":1.5}`,
		`{"amount":"1"}`, `{"amount":1}{}`, `{"Amount":1}`, `{"amount":null}`, "{\"request_id\":\"\xff\"}",
		`{"request_id":"\ud800"}`, ``, `null`, `[]`, ` {"amount" : 2 } `, `{"amount":9223372036854775808}`,
	}, decodeLedgerUpdate, roundTripping(decodeLedgerUpdate))
}

func TestLedgerRequestIDHeaderOnFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do("POST", "/v1/namespaces/ledgers/ledgers/w/credits", `{"amount":0}`)
	if r.status != http.StatusBadRequest || r.header.Get("Abacus-Request-Id") == "" {
		t.Fatalf("status %d, request id header %q", r.status, r.header.Get("Abacus-Request-Id"))
	}
}

func TestLedgerFloorEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var ns api.Namespace
	e.mustJSON("POST", "/v1/namespaces", `{"name":"wallets","model":"ledger","ledger":{"floor":0}}`, 201, &ns)
	if ns.Ledger == nil || ns.Ledger.Floor == nil || *ns.Ledger.Floor != 0 {
		t.Fatalf("a floored namespace described as %+v", ns.Ledger)
	}
	var open api.Namespace
	e.mustJSON("POST", "/v1/namespaces", `{"name":"open","model":"ledger"}`, 201, &open)
	if open.Ledger == nil || open.Ledger.Floor != nil {
		t.Fatalf("a namespace without a floor described as %+v", open.Ledger)
	}
	base := "/v1/namespaces/wallets/ledgers/alice"
	e.mustJSON("POST", base+"/credits", `{"amount":100,"request_id":"c1"}`, 200, nil)
	e.mustJSON("POST", base+"/debits", `{"amount":70,"request_id":"d1"}`, 200, nil)
	r := e.do("POST", base+"/debits", `{"amount":31,"request_id":"d2"}`)
	if r.status != 409 || r.apiError().Code != api.CodeBelowFloor || !strings.Contains(r.apiError().Message, "value is 30") {
		t.Fatalf("debit below the floor: %d %s", r.status, r.body)
	}
	var v api.LedgerValue
	e.mustJSON("GET", base, "", 200, &v)
	if v.Value != 30 {
		t.Fatalf("value after a refused debit = %d, want 30", v.Value)
	}
	for _, body := range []string{
		`{"name":"x","model":"ledger","ledger":{"floor":1}}`,
		`{"name":"x","model":"ledger","ledger":{"floor":-4611686018427387905}}`,
		`{"name":"x","model":"ledger","ledger":{"floor":0},"read_consistency":"ONE"}`,
	} {
		if r := e.do("POST", "/v1/namespaces", body); r.status != 400 || r.apiError().Code != api.CodeInvalidArgument {
			t.Errorf("%s: %d %s, want 400 invalid_argument", body, r.status, r.body)
		}
	}
}
