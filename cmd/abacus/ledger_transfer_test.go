package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/abacusdb/abacus/api"
)

func TestLedgerTransferCommand(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	if r := s.cli("namespace", "create", "wallets", "--model", "ledger", "--floor", "0"); r.code != 0 {
		t.Fatalf("create: %+v", r)
	}
	if r := s.cli("--ns", "wallets", "ledger", "credit", "alice", "100"); r.code != 0 {
		t.Fatalf("credit: %+v", r)
	}
	r := s.cli("--ns", "wallets", "ledger", "transfer", "alice", "bob", "40", "--request-id", "pay-1")
	if r.code != 0 || r.stdout != "moved 40 from alice to bob (request pay-1)\n" {
		t.Fatalf("transfer: %+v", r)
	}
	r = s.cli("--ns", "wallets", "ledger", "transfer", "alice", "bob", "40", "--request-id", "pay-1", "--json")
	var tr api.LedgerTransferResponse
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &tr) != nil || !tr.Applied || !tr.Replayed || tr.From != "alice" || tr.To != "bob" {
		t.Fatalf("retry --json: %+v", r)
	}
	// Past the floor: exit 5, a one-line reason, nothing moved.
	r = s.cli("--ns", "wallets", "ledger", "transfer", "alice", "bob", "61")
	if r.code != 5 || !strings.Contains(r.stderr, "below the floor") {
		t.Fatalf("transfer past the floor: %+v", r)
	}
	r.oneLineError(t)
	for name, want := range map[string]string{"alice": "60\n", "bob": "40\n"} {
		if r := s.cli("--ns", "wallets", "ledger", "get", name); r.code != 0 || r.stdout != want {
			t.Errorf("get %s: %+v, want %q", name, r, want)
		}
	}
	for _, args := range [][]string{
		{"ledger", "transfer", "alice", "bob"},
		{"ledger", "transfer", "alice", "alice", "1"},
		{"ledger", "transfer", "alice", "bob", "0"},
		{"ledger", "transfer", "alice", "bob", "-2"},
		{"ledger", "transfer", "", "bob", "1"},
	} {
		r := s.cli(args...)
		if r.code != 2 || r.stdout != "" {
			t.Errorf("%v: exit %d, want 2; %+v", args, r.code, r)
		}
		r.oneLineError(t)
	}
}
