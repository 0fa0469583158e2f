package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/cassandratest"
)

// shortOptions keep suite tests quick; the numbers they produce are not
// looked at, only their consistency.
var shortOptions = Options{Concurrency: 4, Duration: 150 * time.Millisecond, Warmup: 50 * time.Millisecond}

func checkReport(t *testing.T, rep *Report, wantRows int) {
	t.Helper()
	if len(rep.Rows) != wantRows {
		for _, r := range rep.Rows {
			t.Logf("row: %s %s %d", r.Scenario, r.Model, r.Counters)
		}
		t.Fatalf("%d rows, want %d", len(rep.Rows), wantRows)
	}
	for _, r := range rep.Rows {
		if !strings.HasPrefix(r.Check, "ok") {
			t.Errorf("%s %s %d counters: check %q", r.Scenario, r.Model, r.Counters, r.Check)
		}
		if r.Interrupted {
			t.Errorf("%s %s: interrupted", r.Scenario, r.Model)
		}
		if r.Model == "sharded" && (r.Kind == "increments" || r.Kind == "http") && r.Ops > 0 && r.ShardWrites == 0 {
			t.Errorf("%s: %d updates acknowledged without a shard write", r.Scenario, r.Ops)
		}
	}
	for name, write := range map[string]func(*bytes.Buffer) error{
		"text":     func(b *bytes.Buffer) error { return rep.WriteText(b) },
		"markdown": func(b *bytes.Buffer) error { return rep.WriteMarkdown(b) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, r := range rep.Rows {
			if !strings.Contains(b.String(), r.Scenario) {
				t.Errorf("%s output lacks %q:\n%s", name, r.Scenario, b.String())
			}
		}
	}
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatalf("JSON does not decode: %v", err)
	}
	if len(back.Rows) != len(rep.Rows) || back.Rows[0].Ops != rep.Rows[0].Ops {
		t.Fatal("JSON lost rows")
	}
}

func TestRunSuiteEmbedded(t *testing.T) {
	t.Parallel()
	var progress bytes.Buffer
	rep, err := RunSuite(context.Background(), Config{
		DataDir:    t.TempDir(),
		NoSync:     true,
		Options:    shortOptions,
		Counters:   []int{1, 3},
		ReadShards: []int{1, 7},
		EventReads: []int{5},
		// This process stands in for a store process, to exercise the
		// sampling of another process's CPU.
		StorePID: os.Getpid(),
		Progress: &progress,
	})
	if err != nil {
		t.Fatal(err)
	}
	// increments (sharded, events, actor, cas) ×2 and http ×2 (no native
	// without Cassandra), reads of 1 and 7 live shards, and of 1 and 7
	// folded ones, reads of 5 events before and after a rollup.
	checkReport(t, rep, 16)
	if len(rep.Ratios) != 0 {
		t.Errorf("ratios without a native baseline: %+v", rep.Ratios)
	}
	if rep.Env.Store != "embedded" {
		t.Errorf("store %q", rep.Env.Store)
	}
	if runtime.GOOS == "linux" {
		for _, r := range rep.Rows {
			if r.StoreCPU < 0 || r.HostCPU < 0 || r.ProcessCPU < 0 {
				t.Errorf("%s: CPU not sampled on Linux: process %v store %v host %v", r.Scenario, r.ProcessCPU, r.StoreCPU, r.HostCPU)
			}
		}
	}
	if !strings.Contains(progress.String(), "increments via HTTP") {
		t.Errorf("progress lacks the HTTP scenario:\n%s", progress.String())
	}
}

func TestRunSuiteCassandra(t *testing.T) {
	t.Parallel()
	hosts := cassandratest.Hosts(t)
	rep, err := RunSuite(context.Background(), Config{
		Cassandra:         hosts,
		Keyspace:          cassandratest.Keyspace(t),
		ReplicationFactor: cassandratest.ReplicationFactor(t),
		// A cold cluster's first prepared statements can take longer than
		// shortOptions' whole window; the warm-up absorbs them.
		Options:    Options{Concurrency: 4, Duration: 500 * time.Millisecond, Warmup: time.Second},
		Counters:   []int{1, 3},
		ReadShards: []int{1, 7},
		EventReads: []int{20},
	})
	if err != nil {
		t.Fatal(err)
	}
	// increments sharded+native+events+actor+cas ×2, http ×2, reads of 1
	// and 7 live and folded shards, native read, reads of 20 events before
	// and after a rollup.
	checkReport(t, rep, 19)
	if rep.Env.StoreVersion == "" {
		t.Error("no Cassandra release version in the report")
	}
	var names []string
	for _, r := range rep.Ratios {
		names = append(names, r.Name)
	}
	for _, r := range rep.Rows {
		if r.Errors > 0 {
			t.Logf("%s %s: %d errors, first: %s", r.Scenario, r.Model, r.Errors, r.FirstError)
		}
	}
	for _, want := range []string{"1 counter: sharded (library) / native", "3 counters: sharded (HTTP) / native", "read p50 latency: sharded (read after GC",
		"1 counter: events / native", "3 counters: cas / native", "read p50 latency: events (read after rollup of 20 events)"} {
		if !strings.Contains(strings.Join(names, "\n"), want) {
			t.Errorf("no ratio %q among %q", want, names)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []Config{
		{Scenarios: []string{"increments", "writes"}},
		{Counters: []int{0}},
		{ReadShards: []int{-1}},
		{Models: []string{"events", "lamport"}},
		{EventReads: []int{0}},
		{ReplicationFactor: -2},
		{Consistency: driver.Consistency(200)},
	} {
		if err := c.withDefaults().validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	if err := (Config{}).withDefaults().validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

func TestCheckCount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		got  int64
		res  Result
		want string
	}{
		{10, Result{Ops: 8, WarmupOps: 2}, "ok"},
		{10, Result{Ops: 8, WarmupOps: 3, WarmupErrors: 1}, "ok"}, // 8 + 3 - 1 acknowledged
		{9, Result{Ops: 8, WarmupOps: 3, WarmupErrors: 1}, "MISMATCH"},
		{11, Result{Ops: 8, WarmupOps: 2}, "MISMATCH"},      // double-counted
		{9, Result{Ops: 8, WarmupOps: 2}, "MISMATCH"},       // lost
		{11, Result{Ops: 8, WarmupOps: 2, Errors: 1}, "ok"}, // a failed call may count
		{12, Result{Ops: 8, WarmupOps: 2, Errors: 1}, "MISMATCH"},
		{-1, Result{}, "MISMATCH"},
	} {
		if got := checkCount(tc.got, tc.res); !strings.HasPrefix(got, tc.want) {
			t.Errorf("checkCount(%d, %+v) = %q, want %s", tc.got, tc.res, got, tc.want)
		}
	}
}

func TestRatios(t *testing.T) {
	t.Parallel()
	rows := []Row{
		{Kind: "increments", Model: "sharded", Counters: 1, Result: Result{OpsPerSec: 50_000}, StoreCPU: 0.5},
		{Kind: "increments", Model: "native", Counters: 1, Result: Result{OpsPerSec: 4_000}, StoreCPU: 1},
		{Kind: "increments", Model: "sharded", Counters: 100, Result: Result{OpsPerSec: 9_000}},
		{Kind: "increments", Model: "native", Counters: 100, Result: Result{OpsPerSec: 5_000}},
		{Kind: "read_after_gc", Model: "sharded", Scenario: "read after GC", Counters: 1, Result: Result{P50: 3 * time.Millisecond, P99: 9 * time.Millisecond}},
		{Kind: "read", Model: "native", Counters: 1, Result: Result{P50: 2 * time.Millisecond, P99: 4 * time.Millisecond}},
		{Kind: "increments", Model: "events", Counters: 1, Result: Result{OpsPerSec: 3_000}},
		{Kind: "read_after_rollup", Model: "events", Scenario: "read after rollup", Counters: 1, Result: Result{P50: 5 * time.Millisecond, P99: 8 * time.Millisecond}},
	}
	got := map[string]Ratio{}
	for _, r := range ratios(rows) {
		got[r.Name] = r
	}
	want := []struct {
		name  string
		value float64
		met   *bool
	}{
		{"increments/s over 1 counter: sharded (library) / native", 12.5, isMet(true)},
		{"increments per store CPU-second over 1 counter: sharded (library) / native", 25, nil},
		{"increments/s over 100 counters: sharded (library) / native", 1.8, isMet(false)},
		{"read p50 latency: sharded (read after GC) / native", 1.5, isMet(true)},
		{"read p99 latency: sharded (read after GC) / native", 2.25, nil},
		{"increments/s over 1 counter: events / native", 0.75, isMet(false)},
		{"read p50 latency: events (read after rollup) / native", 2.5, isMet(false)},
		{"read p99 latency: events (read after rollup) / native", 2, nil},
	}
	if len(got) != len(want) {
		t.Fatalf("ratios %+v", got)
	}
	for _, w := range want {
		r, ok := got[w.name]
		if !ok {
			t.Fatalf("no ratio %q in %+v", w.name, got)
		}
		if r.Value < w.value-1e-9 || r.Value > w.value+1e-9 {
			t.Errorf("%s = %v, want %v", w.name, r.Value, w.value)
		}
		if (r.Met == nil) != (w.met == nil) || (r.Met != nil && *r.Met != *w.met) {
			t.Errorf("%s met = %v, want %v", w.name, r.Met, w.met)
		}
	}
}

func TestPickerSpreadsOverEveryName(t *testing.T) {
	t.Parallel()
	names := CounterNames("c", 10)
	p, err := newPicker(names, 2)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i := 0; i < 10_000; i++ {
		seen[p.pick(i%2)]++
	}
	if len(seen) != len(names) {
		t.Fatalf("picked %d distinct names of %d", len(seen), len(names))
	}
	for _, n := range names {
		// Uniform: 1,000 each expected; 800 is more than 6 standard deviations off.
		if seen[n] < 800 {
			t.Errorf("%s picked %d times of 10,000", n, seen[n])
		}
	}
	if _, err := newPicker(nil, 1); err == nil {
		t.Error("no error for an empty name list")
	}
}
