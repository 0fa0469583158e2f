package api

import (
	"encoding/json"
	"testing"
	"time"
)

// The wire names of the ledger bodies are the contract.
func TestLedgerWireNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    any
		want string
	}{
		{LedgerUpdateRequest{Amount: 5, RequestID: "r"}, `{"amount":5,"request_id":"r"}`},
		{LedgerUpdateRequest{}, `{"amount":0}`},
		{LedgerUpdateResponse{"n", "l", "r", true, false}, `{"namespace":"n","ledger":"l","request_id":"r","applied":true}`},
		{LedgerUpdateResponse{"n", "l", "r", true, true}, `{"namespace":"n","ledger":"l","request_id":"r","applied":true,"replayed":true}`},
		{LedgerValue{"n", "l", 3, 5, 2, 1, 4}, `{"namespace":"n","ledger":"l","value":3,"credits":5,"debits":2,"actors":1,"folds":4}`},
		{RequestIDStatus{"n", "l", "r", false}, `{"namespace":"n","ledger":"l","request_id":"r","known":false}`},
		{LedgerOptions{10, "exact", true, 10, 86400, 3600, nil, 86400}, `{"history_length":10,"mode":"exact","strict":true,"retry_count":10,"claim_ttl_seconds":86400,"entry_retention_seconds":3600,"actor_max_age_seconds":86400}`},
		{LedgerOptions{Floor: new(int64)}, `{"history_length":0,"strict":false,"retry_count":0,"claim_ttl_seconds":0,"entry_retention_seconds":0,"floor":0,"actor_max_age_seconds":0}`},
		{CreateNamespaceRequest{Name: "n", Model: "ledger", Ledger: &LedgerOptions{Strict: true}},
			`{"name":"n","model":"ledger","ledger":{"history_length":0,"strict":true,"retry_count":0,"claim_ttl_seconds":0,"entry_retention_seconds":0,"actor_max_age_seconds":0}}`},
		{LedgerHistory{"n", "l", []LedgerEntry{{"r", -5, time.Date(2026, 11, 28, 6, 0, 0, 1000, time.UTC), "a-1"}}, "cur"},
			`{"namespace":"n","ledger":"l","entries":[{"request_id":"r","amount":-5,"at":"2026-11-28T06:00:00.000001Z","actor":"a-1"}],"next":"cur"}`},
		{LedgerHistory{"n", "l", []LedgerEntry{}, ""}, `{"namespace":"n","ledger":"l","entries":[]}`},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil || string(b) != tc.want {
			t.Errorf("%T encodes as %s, want %s", tc.v, b, tc.want)
		}
	}
}
