package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/abacusdb/abacus/api"
)

// The design's history_length-3 example, through the CLI.
func TestLedgerCommands(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	if r := s.cli("namespace", "create", "players", "--model", "ledger", "--history-length", "3"); r.code != 0 ||
		!strings.Contains(r.stdout, "model ledger, mode exact, history length 3") {
		t.Fatalf("create: %+v", r)
	}
	for i := 1; i <= 6; i++ {
		id := "req" + string(rune('0'+i))
		r := s.cli("--ns", "players", "ledger", "credit", "player_2", "10", "--request-id", id)
		if r.code != 0 || r.stdout != "applied request "+id+"\n" {
			t.Fatalf("credit %s: %+v", id, r)
		}
	}
	get := func() string { return s.cli("--ns", "players", "ledger", "get", "player_2").stdout }
	if v := get(); v != "60\n" {
		t.Fatalf("get = %q, want 60", v)
	}
	for id, want := range map[string]string{"req1": "false\n", "req2": "false\n", "req3": "true\n", "req6": "true\n"} {
		if r := s.cli("--ns", "players", "ledger", "has", "player_2", id); r.code != 0 || r.stdout != want {
			t.Errorf("has %s = %+v, want %q", id, r, want)
		}
	}
	if r := s.cli("--ns", "players", "ledger", "find", "player_2"); r.code != 0 || r.stdout != "60\n" {
		t.Fatalf("find: %+v", r)
	}
	if r := s.cli("--ns", "players", "ledger", "has", "player_2", "req3"); r.stdout != "false\n" {
		t.Fatalf("has req3 after find: %+v", r)
	}
	// A retry is recognised and says so.
	r := s.cli("--ns", "players", "ledger", "credit", "player_2", "10", "--request-id", "req6")
	if r.code != 0 || r.stdout != "request req6 was already applied; nothing changed\n" {
		t.Fatalf("retry: %+v", r)
	}
	// Debits, signed updates, the default ledger namespace and JSON.
	for _, args := range [][]string{
		{"ledger", "credit", "wallet", "100", "--request-id", "c1"},
		{"ledger", "debit", "wallet", "30"},
		{"ledger", "update", "wallet", "-5"},
		{"ledger", "update", "wallet", "7", "--json"},
	} {
		if r := s.cli(args...); r.code != 0 {
			t.Fatalf("%v: %+v", args, r)
		}
	}
	// The history, newest first; a page that has more says how to go on.
	r = s.cli("ledger", "history", "wallet", "--limit", "3")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 4 || !strings.HasPrefix(lines[0], "AT") || !strings.Contains(lines[1], "+7") ||
		!strings.Contains(lines[3], "-30") || !strings.Contains(r.stderr, "--after ") {
		t.Fatalf("history --limit 3: %+v", r)
	}
	r = s.cli("ledger", "history", "wallet", "--limit", "1", "--all")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); r.code != 0 || len(lines) != 5 || !strings.Contains(lines[4], "c1") || r.stderr != "" {
		t.Fatalf("history --limit 1 --all: %+v", r)
	}
	r = s.cli("ledger", "history", "wallet", "--limit", "1", "--all", "--json")
	var h api.LedgerHistory
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &h) != nil || len(h.Entries) != 4 || h.Entries[3].RequestID != "c1" || h.Next != "" {
		t.Fatalf("history --all --json: %+v (%+v)", r, h)
	}
	if r := s.cli("ledger", "history", "wallet", "--limit", "0"); r.code == 0 || !strings.Contains(r.stderr, "--limit") {
		t.Fatalf("history --limit 0: %+v", r)
	}
	if r := s.cli("namespace", "create", "nohist", "--model", "ledger", "--entry-retention", "0"); r.code != 0 || !strings.Contains(r.stdout, "entry retention none") {
		t.Fatalf("create without history: %+v", r)
	}
	if r := s.cli("namespace", "create", "hourly", "--model", "ledger", "--actor-max-age", "1h"); r.code != 0 || !strings.Contains(r.stdout, "actors retire after 1h0m0s") {
		t.Fatalf("create with --actor-max-age 1h: %+v", r)
	}
	if r := s.cli("namespace", "create", "forever", "--model", "ledger", "--actor-max-age", "0"); r.code != 0 || !strings.Contains(r.stdout, "actors never retire") {
		t.Fatalf("create with --actor-max-age 0: %+v", r)
	}
	if r := s.cli("namespace", "create", "bad-age", "--model", "ledger", "--actor-max-age", "1500ms"); r.code != 2 || !strings.Contains(r.stderr, "--actor-max-age") {
		t.Fatalf("create with --actor-max-age 1500ms: %+v", r)
	}
	// A wallet: a debit past the floor is refused with exit 5 and a reason.
	if r := s.cli("namespace", "create", "wallets", "--model", "ledger", "--floor", "0"); r.code != 0 || !strings.Contains(r.stdout, "floor 0") {
		t.Fatalf("create with --floor 0: %+v", r)
	}
	if r := s.cli("--ns", "wallets", "ledger", "credit", "w", "10"); r.code != 0 {
		t.Fatalf("credit: %+v", r)
	}
	if r := s.cli("--ns", "wallets", "ledger", "debit", "w", "11"); r.code != 5 || !strings.Contains(r.stderr, "below the floor") {
		t.Fatalf("debit past the floor: %+v", r)
	}
	if r := s.cli("namespace", "create", "bad", "--model", "ledger", "--floor", "5"); r.code != 2 || !strings.Contains(r.stderr, "--floor") {
		t.Fatalf("create with --floor 5: %+v", r)
	}
	r = s.cli("ledger", "get", "wallet", "--json")
	var v api.LedgerValue
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &v) != nil || v.Value != 72 || v.Namespace != api.DefaultLedgerNamespace || v.Debits != 35 {
		t.Fatalf("get --json: %+v (%+v)", r, v)
	}
	r = s.cli("ledger", "credit", "wallet", "100", "--request-id", "c1", "--json")
	var up api.LedgerUpdateResponse
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &up) != nil || !up.Applied || !up.Replayed || up.RequestID != "c1" {
		t.Fatalf("retry --json: %+v", r)
	}
}

func TestLedgerBadInput(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	for _, args := range [][]string{
		{"ledger"},
		{"ledger", "credit", "w"},
		{"ledger", "credit", "w", "0"},
		{"ledger", "credit", "w", "-3"},
		{"ledger", "debit", "w", "x"},
		{"ledger", "update", "w", "0"},
		{"ledger", "update", "w", "9223372036854775808"},
		{"ledger", "credit", "", "1"},
		{"ledger", "has", "w"},
		{"ledger", "get"},
		{"namespace", "create", "l", "--model", "ledger", "--claim-ttl", "1500ms"},
	} {
		r := s.cli(args...)
		if r.code != 2 || r.stdout != "" {
			t.Errorf("%v: exit %d, want 2; %+v", args, r.code, r)
		}
		r.oneLineError(t)
	}
	if n := s.requests.Load(); n != 0 {
		t.Errorf("usage errors sent %d requests", n)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--ns", "default", "ledger", "credit", "w", "1"}, exitRefused, "model"},
		{[]string{"--ns", "nope", "ledger", "get", "w"}, exitNotFound, "namespace not found"},
		{[]string{"namespace", "create", "x", "--strict"}, exitRefused, "ledger options"},
		{[]string{"namespace", "create", "x", "--model", "ledger", "--history-length", "5000"}, exitRefused, "history_length"},
	} {
		r := s.cli(tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d stderr %q, want %d and %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
		r.oneLineError(t)
	}
}

func TestLedgerUnknownOutcomeTellsHowToRetry(t *testing.T) {
	t.Parallel()
	lost := unknownOutcomeServer(t, "outcome unknown: write failed 11 times")
	r := cli(nil, "--server", lost, "ledger", "debit", "w", "3", "--request-id", "r-9")
	if r.code != exitUnknown || !strings.Contains(r.stderr, "--request-id r-9") {
		t.Fatalf("%+v", r)
	}
	r.oneLineError(t)
	// A generated id is printed too, so the retry can reuse it.
	r = cli(nil, "--server", lost, "ledger", "credit", "w", "3")
	if r.code != exitUnknown || !strings.Contains(r.stderr, "--request-id ") {
		t.Fatalf("%+v", r)
	}
}
