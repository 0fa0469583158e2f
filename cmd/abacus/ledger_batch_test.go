package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/internal/servertest"
)

// writeFile writes content to a new file in the test's directory and
// returns its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "updates.txt")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func (s *testServer) ledgerValue(t *testing.T, ns, name string) int64 {
	t.Helper()
	v, err := s.lib.LedgerValue(context.Background(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return v.Value
}

func TestLedgerBatchFromAFile(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	file := writeFile(t, `# transfers of 2026-11-22
alice 100 c1
	bob -5   d1

alice +100 c1
carol 7
`)
	r := s.cli("ledger", "batch", file)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != 0 || r.stderr != "" || len(lines) != 4 {
		t.Fatalf("%+v", r)
	}
	for i, want := range []string{"applied alice 100 c1", "applied bob -5 d1", "already-applied alice 100 c1"} {
		if lines[i] != want {
			t.Errorf("line %d = %q, want %q", i+1, lines[i], want)
		}
	}
	generated, ok := strings.CutPrefix(lines[3], "applied carol 7 ")
	if !ok || len(generated) != 36 {
		t.Errorf("line 4 = %q, want applied with a generated request id", lines[3])
	}
	for name, want := range map[string]int64{"alice": 100, "bob": -5, "carol": 7} {
		if got := s.ledgerValue(t, "", name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}

	// --ns picks the namespace of every line; -o json prints the results.
	if r := s.cli("namespace", "create", "wallets", "--model", "ledger"); r.code != 0 {
		t.Fatalf("create: %+v", r)
	}
	r = s.cli("--ns", "wallets", "ledger", "batch", writeFile(t, "dave 3 w1\ndave -1 w2\n"), "-o", "json")
	var res []api.LedgerBatchResult
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || len(res) != 2 {
		t.Fatalf("-o json: %+v", r)
	}
	for i, want := range []api.LedgerBatchResult{
		{Namespace: "wallets", Ledger: "dave", RequestID: "w1", Applied: true},
		{Namespace: "wallets", Ledger: "dave", RequestID: "w2", Applied: true},
	} {
		if res[i] != want || res[i].Error != nil {
			t.Errorf("result %d = %+v, want %+v", i, res[i], want)
		}
	}
	if got := s.ledgerValue(t, "wallets", "dave"); got != 2 {
		t.Errorf("wallets/dave = %d, want 2", got)
	}
	// An empty input sends nothing and prints no results.
	before := s.requests.Load()
	if r := s.cli("ledger", "batch", writeFile(t, "# nothing today\n"), "-o", "json"); r.code != 0 || r.stdout != "[]\n" {
		t.Errorf("empty input: %+v", r)
	}
	if s.requests.Load() != before {
		t.Error("an empty input sent a request")
	}
}

// Standard input is read when FILE is absent or "-". Not parallel: it
// replaces os.Stdin, and parallel tests only start once the sequential
// ones are done.
func TestLedgerBatchFromStandardInput(t *testing.T) {
	s := newTestServer(t)
	for _, args := range [][]string{{"ledger", "batch"}, {"ledger", "batch", "-"}} {
		ledger := "in" + fmt.Sprint(len(args))
		in, err := os.Open(writeFile(t, ledger+" 4\n"+ledger+" -1 r\n"))
		if err != nil {
			t.Fatal(err)
		}
		old := os.Stdin
		os.Stdin = in
		r := s.cli(args...)
		os.Stdin = old
		in.Close()
		if r.code != 0 || !strings.HasPrefix(r.stdout, "applied "+ledger+" 4 ") || !strings.HasSuffix(r.stdout, "\napplied "+ledger+" -1 r\n") {
			t.Errorf("%v: %+v", args, r)
		}
		if got := s.ledgerValue(t, "", ledger); got != 3 {
			t.Errorf("%v: %s = %d, want 3", args, ledger, got)
		}
	}
}

// A bad line refuses the whole input before anything is sent, naming the line.
func TestLedgerBatchBadLines(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	for _, tc := range []struct{ input, want string }{
		{"a 1\n\nb 0\n", "line 3: AMOUNT must not be zero"},
		{"a 1\nb\n", "line 2 has 1 field(s); want LEDGER AMOUNT [REQUEST_ID]"},
		{"a 1 r extra\n", "line 1 has 4 field(s)"},
		{"a x\n", `line 1: AMOUNT "x" is not a whole number`},
		{"a 9223372036854775808\n", "line 1: AMOUNT 9223372036854775808 is out of range"},
		{strings.Repeat("a 1\n", 1000) + "b -9223372036854775808\n", "line 1001: AMOUNT -9223372036854775808 has no positive counterpart"},
		{"a 1 " + strings.Repeat("r", 257) + "\n", "line 1: REQUEST_ID is 257 bytes, the limit is 256"},
		{strings.Repeat("l", 257) + " 1\n", "line 1: invalid argument: ledger name is 257 bytes"},
		{"a 1\nb\xff 1\n", "line 2 is not valid UTF-8"},
		{"a 1\n" + strings.Repeat("x", 70_000) + "\n", "line 2 of "},
	} {
		r := s.cli("ledger", "batch", writeFile(t, tc.input))
		if r.code != exitUsage || r.stdout != "" || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%.40q: %+v, want exit 2 and %q", tc.input, r, tc.want)
		}
		r.oneLineError(t)
	}
	for _, args := range [][]string{
		{"ledger", "batch", filepath.Join(t.TempDir(), "missing.txt")},
		{"ledger", "batch", "a", "b"},
		{"ledger", "batch", writeFile(t, "a 1\n"), "--request-id", "r"},
	} {
		if r := s.cli(args...); r.code != exitUsage {
			t.Errorf("%v: %+v, want exit 2", args, r)
		}
	}
	if n := s.requests.Load(); n != 0 {
		t.Errorf("bad input sent %d requests", n)
	}
}

// An update that fails alone is printed as an error line, the others are
// applied, and the exit status is that of the failure.
func TestLedgerBatchExitStatus(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	if r := s.cli("ledger", "credit", "alice", "100", "--request-id", "c1"); r.code != 0 {
		t.Fatalf("credit: %+v", r)
	}
	r := s.cli("ledger", "batch", writeFile(t, "bob 1 b1\nalice 5 c1\nbob 2 b2\n"))
	lines := strings.Split(r.stdout, "\n")
	if r.code != exitConflict || len(lines) != 4 || lines[0] != "applied bob 1 b1" || !strings.HasPrefix(lines[1], "error alice 5 c1 request_conflict: ") || lines[2] != "applied bob 2 b2" {
		t.Fatalf("%+v", r)
	}
	if !strings.Contains(r.stderr, "1 of 3 updates failed") || !strings.Contains(r.stderr, "line 2: request_conflict") {
		t.Errorf("stderr %q", r.stderr)
	}
	r.oneLineError(t)
	if got := s.ledgerValue(t, "", "bob"); got != 3 {
		t.Errorf("bob = %d, want 3", got)
	}

	// A refusal of the whole request names the line, and applies nothing.
	r = s.cli("--ns", "nope", "ledger", "batch", writeFile(t, "# header\nx 1\ny 1\n"))
	if r.code != exitNotFound || r.stdout != "" || !strings.Contains(r.stderr, "line 2: ") || !strings.Contains(r.stderr, "(and 1 more invalid updates)") {
		t.Errorf("missing namespace: %+v", r)
	}
	r.oneLineError(t)

	// An unknown outcome of the whole request prints its updates with their
	// ids, to be sent again.
	r = cli(nil, "--server", unknownOutcomeServer(t, "outcome unknown: write failed"), "ledger", "batch", writeFile(t, "a 1 r1\nb 2\n"))
	lines = strings.Split(r.stdout, "\n")
	if r.code != exitUnknown || len(lines) != 3 || !strings.HasPrefix(lines[0], "error a 1 r1 unknown_outcome: ") || !strings.HasPrefix(lines[1], "error b 2 ") ||
		!strings.Contains(r.stderr, "lines 1 to 2 may or may not have been applied") {
		t.Errorf("unknown outcome: %+v", r)
	}
	r.oneLineError(t)
}

// Long inputs go in requests of api.MaxBatchItems; a request refused after
// others were applied stops the command, which prints what was applied.
func TestLedgerBatchSendsRequestsOfAtMostMaxBatchItems(t *testing.T) {
	t.Parallel()
	b := servertest.NewBackend(t, nil)
	var batches, refuseFrom atomic.Int64
	refuseFrom.Store(1 << 30)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/ledger-updates" && batches.Add(1) >= refuseFrom.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(503)
			_ = json.NewEncoder(w).Encode(api.Error{Code: api.CodeUnavailable, Message: "try later"})
			return
		}
		b.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	env := map[string]string{"ABACUS_SERVER": ts.URL}
	var in strings.Builder
	n := 2*api.MaxBatchItems + 5
	for i := range n {
		fmt.Fprintf(&in, "l%d 1\n", i%3)
	}
	file := writeFile(t, in.String())
	r := cli(env, "ledger", "batch", file)
	if r.code != 0 || strings.Count(r.stdout, "applied ") != n || batches.Load() != 3 {
		t.Fatalf("exit %d, %d lines, %d requests; stderr %s", r.code, strings.Count(r.stdout, "\n"), batches.Load(), r.stderr)
	}
	total := int64(0)
	for i := range 3 {
		v, err := b.Lib.LedgerValue(context.Background(), "", fmt.Sprintf("l%d", i))
		if err != nil {
			t.Fatal(err)
		}
		total += v.Value
	}
	if total != int64(n) {
		t.Fatalf("ledgers add up to %d, want %d", total, n)
	}

	batches.Store(0)
	refuseFrom.Store(2)
	r = cli(env, "ledger", "batch", file)
	if r.code != exitUnavailable || strings.Count(r.stdout, "\n") != api.MaxBatchItems || batches.Load() != 2 ||
		!strings.Contains(r.stderr, fmt.Sprintf("try later; nothing from line %d on was applied", api.MaxBatchItems+1)) {
		t.Errorf("exit %d, %d lines, %d requests; stderr %s", r.code, strings.Count(r.stdout, "\n"), batches.Load(), r.stderr)
	}
	r.oneLineError(t)
}
