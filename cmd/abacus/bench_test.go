package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchUsageErrors(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--hot-fraction", "1.5"}, "--hot-fraction 1.5"},
		{[]string{"--hot-fraction", "-0.1"}, "--hot-fraction -0.1"},
		{[]string{"--hot-fraction", "NaN"}, "--hot-fraction NaN"},
		{[]string{"--read-ratio", "1"}, "--read-ratio 1"},
		{[]string{"--read-ratio", "-0.2"}, "--read-ratio -0.2"},
		{[]string{"--models", "sharded,lamport"}, `unknown model "lamport"`},
		{[]string{"--scenarios", "writes"}, `unknown scenario "writes"`},
		{[]string{"--counters", "0"}, "counters must be at least 1"},
		{[]string{"--concurrency", "0"}, "--concurrency"},
		{[]string{"--duration", "0s"}, "--duration"},
		{[]string{"--consistency", "SOME"}, "--consistency"},
		{[]string{"--report", file}, "not a directory"},
		{[]string{"--markdown", "--json"}, "exclude each other"},
	} {
		// Every one fails before opening a store: a benchmark that would
		// run shows up as a missing usage error, not as a slow test.
		r := cli(nil, append([]string{"bench"}, tc.args...)...)
		if r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", tc.args, r.code, exitUsage, r.stderr)
			continue
		}
		if !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: error %q lacks %q", tc.args, r.stderr, tc.want)
		}
	}
}

func TestBenchHelpDocumentsKnobs(t *testing.T) {
	t.Parallel()
	r := cli(nil, "bench", "--help")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{
		"--hot-fraction", "default 0: uniform", "--read-ratio", "default 0: writes only",
		"--report", "report.md", "throughput.png", "latency-cdf.png",
		"--replication-factor", "--consistency", `(default "QUORUM")`, "--concurrency", "(default 64)",
		"sharded,native,events,actor,ledger,cas,plain", "INSERT INTO <keyspace>.plain_bench",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

func TestBenchReportDirEmbedded(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "report")
	r := cli(nil, "bench", "--scenarios", "increments", "--models", "sharded,plain", "--counters", "1,5",
		"--hot-fraction", "0.5", "--read-ratio", "0.25", "--concurrency", "4", "--duration", "150ms", "--warmup", "50ms",
		"--no-sync", "--data", filepath.Join(t.TempDir(), "store"), "--report", dir, "--json")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var rep struct {
		Command     string  `json:"command"`
		HotFraction float64 `json:"hot_fraction"`
		ReadRatio   float64 `json:"read_ratio"`
		Rows        []struct {
			Model    string `json:"model"`
			Via      string `json:"via"`
			Counters int    `json:"counters"`
			ReadOps  uint64 `json:"read_ops"`
			Check    string `json:"check"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s", err, r.stdout)
	}
	if len(rep.Rows) != 4 || rep.HotFraction != 0.5 || rep.ReadRatio != 0.25 {
		t.Fatalf("report: %+v", rep)
	}
	for _, row := range rep.Rows {
		if !strings.HasPrefix(row.Check, "ok") || row.ReadOps == 0 {
			t.Errorf("row %+v", row)
		}
	}
	// The command line is rebuilt from the flags, in a form a shell takes.
	for _, want := range []string{"abacus bench", "--counters 1,5", "--hot-fraction 0.5", "--models sharded,plain", "--no-sync", "--report " + dir} {
		if !strings.Contains(rep.Command, want) {
			t.Errorf("command %q lacks %q", rep.Command, want)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), rep.Command) || !strings.Contains(string(md), "| plain (pebble) | 5 |") {
		t.Errorf("report.md lacks the command or the table:\n%s", md)
	}
	for _, f := range []string{"report.json", "throughput.png", "latency-cdf.png"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	// Not a terminal: plain per-row lines, no redrawn bar.
	if strings.Contains(r.stderr, "\r") || !strings.Contains(r.stderr, "report written to "+dir) {
		t.Errorf("progress on a non-terminal:\n%q", r.stderr)
	}
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"127.0.0.1,127.0.0.2": "127.0.0.1,127.0.0.2",
		"":                    "''",
		"a b":                 "'a b'",
		"it's":                `'it'\''s'`,
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
