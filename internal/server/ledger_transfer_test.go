package server

import (
	"encoding/json"
	"testing"

	"github.com/abacusdb/abacus/api"
)

func TestLedgerTransferEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var ns api.Namespace
	e.mustJSON("POST", "/v1/namespaces", `{"name":"wallets","model":"ledger","ledger":{"floor":0}}`, 201, &ns)
	var up api.LedgerUpdateResponse
	e.mustJSON("POST", "/v1/namespaces/wallets/ledgers/alice/credits", `{"amount":100,"request_id":"topup"}`, 200, &up)

	path := "/v1/namespaces/wallets/ledgers/alice/transfers"
	want := api.LedgerTransferResponse{Namespace: "wallets", From: "alice", To: "bob", RequestID: "pay-1", Applied: true}
	var tr api.LedgerTransferResponse
	r := e.do("POST", path, `{"to":"bob","amount":40,"request_id":"pay-1"}`)
	if err := json.Unmarshal(r.body, &tr); err != nil || r.status != 200 || tr != want || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("transfer: %d %s", r.status, r.body)
	}
	r = e.do("POST", path, `{"to":"bob","amount":40,"request_id":"pay-1"}`)
	want.Replayed = true
	if err := json.Unmarshal(r.body, &tr); err != nil || r.status != 200 || tr != want || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("a retried transfer: %d %s, header %q", r.status, r.body, r.header.Get("Idempotent-Replayed"))
	}
	// The Idempotency-Key header sets the request id.
	r = e.do("POST", path, `{"to":"bob","amount":10}`, "Idempotency-Key", "pay-2")
	if err := json.Unmarshal(r.body, &tr); err != nil || r.status != 200 || tr.RequestID != "pay-2" || !tr.Applied {
		t.Fatalf("a transfer keyed by header: %d %s", r.status, r.body)
	}

	for _, c := range []struct {
		body   string
		status int
		code   string
	}{
		{`{"to":"bob","amount":51,"request_id":"pay-3"}`, 409, api.CodeBelowFloor},
		{`{"to":"bob","amount":41,"request_id":"pay-1"}`, 409, api.CodeRequestConflict},
		{`{"to":"alice","amount":1}`, 400, api.CodeInvalidArgument},
		{`{"to":"bob","amount":0}`, 400, api.CodeInvalidArgument},
		{`{"to":"","amount":1}`, 400, api.CodeInvalidArgument},
		{`{"amount":1}`, 400, api.CodeInvalidArgument},
		{`{"to":"bob","amount":1,"extra":true}`, 400, api.CodeInvalidJSON},
	} {
		r := e.do("POST", path, c.body)
		var er api.Error
		if err := json.Unmarshal(r.body, &er); err != nil || r.status != c.status || er.Code != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.body, r.status, r.body, c.status, c.code)
		}
	}
	var v api.LedgerValue
	for name, want := range map[string]int64{"alice": 50, "bob": 50} {
		e.mustJSON("GET", "/v1/namespaces/wallets/ledgers/"+name, "", 200, &v)
		if v.Value != want {
			t.Errorf("%s = %d, want %d", name, v.Value, want)
		}
	}
}

func FuzzDecodeLedgerTransfer(f *testing.F) {
	fuzzDecode(f, []string{
		`{"to":"b","amount":1}`, `{"to":"b","amount":-9223372036854775808,"request_id":"r"}`, `{}`, `{"to":"b","amount":1.5}`,
		`{"to":1,"amount":1}`, `{"to":"b","amount":1}{}`, `{"To":"b"}`, `{"to":null}`, "{\"to\":\"\xff\"}",
		`{"request_id":"\ud800"}`, ``, `null`, `[]`, `{"to":"b","amount":9223372036854775808}`,
	}, decodeLedgerTransfer, roundTripping(decodeLedgerTransfer))
}
