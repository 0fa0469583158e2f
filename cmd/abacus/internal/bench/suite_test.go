package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
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
	// increments of the seven models ×2 (no raw CQL native without
	// Cassandra) and http ×2, reads of 1 and 7 live shards, and of 1 and 7
	// folded ones, reads of 5 events before and after a rollup.
	checkReport(t, rep, 22)
	if rep.Env.Store != "embedded" {
		t.Errorf("store %q", rep.Env.Store)
	}
	if pl := find(rep.Rows, "increments", ModelPlain, "", 3); pl == nil || pl.Via != "pebble" {
		t.Errorf("no plain-insert row on Pebble: %+v", pl)
	}
	// Without Cassandra the library's native model is the baseline, and no
	// bar of docs/benchmarks.md applies.
	names := map[string]bool{}
	for _, r := range rep.Ratios {
		names[r.Name] = true
		if r.Target != "" || r.Met != nil {
			t.Errorf("ratio %q carries a bar on the embedded store", r.Name)
		}
	}
	for _, want := range []string{
		"increments/s over 1 counter: sharded (library) / native (library)",
		"increments/s over 3 counters: events / native (library)",
		"increments/s over 1 counter: ledger / plain-insert ceiling",
		"increments/s over 3 counters: native (library) / plain-insert ceiling",
	} {
		if !names[want] {
			t.Errorf("no ratio %q among %v", want, names)
		}
	}
	if runtime.GOOS == "linux" {
		for _, r := range rep.Rows {
			if r.StoreCPU < 0 || r.HostCPU < 0 || r.ProcessCPU < 0 {
				t.Errorf("%s: CPU not sampled on Linux: process %v store %v host %v", r.Scenario, r.ProcessCPU, r.StoreCPU, r.HostCPU)
			}
			if r.RSSPeak <= 0 || r.RSSEnd <= 0 || r.RSSEnd > r.RSSPeak {
				t.Errorf("%s %s: RSS peak %d, end %d", r.Scenario, r.label(), r.RSSPeak, r.RSSEnd)
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
	// increments of the seven models plus the raw CQL native counter ×2,
	// http ×2, reads of 1 and 7 live and folded shards, native read, reads
	// of 20 events before and after a rollup.
	checkReport(t, rep, 25)
	if pl := find(rep.Rows, "increments", ModelPlain, "", 3); pl == nil || pl.Via != "cql" {
		t.Errorf("no plain-insert row in CQL: %+v", pl)
	}
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
		"1 counter: events / native", "3 counters: cas / native", "read p50 latency: events (read after rollup of 20 events)",
		"1 counter: native (library) / native", "3 counters: ledger / native", "1 counter: native / plain-insert ceiling",
		"3 counters: actor / plain-insert ceiling"} {
		if !strings.Contains(strings.Join(names, "\n"), want) {
			t.Errorf("no ratio %q among %q", want, names)
		}
	}
}

// The aging scenario: five rows a simulated day, every read checked
// against the writes, the folded shards' growth visible in the checks,
// and the ratios and the chart built from the rows.
func TestAgingScenario(t *testing.T) {
	t.Parallel()
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		rep, err := RunSuite(context.Background(), Config{
			DataDir: t.TempDir(), NoSync: true, Options: shortOptions,
			// A second per row, so that every day has reads to take a p50 of
			// even on a loaded machine (60 ms once had none).
			Scenarios: []string{ScenarioAging}, AgingDays: 5, AgingWriters: 12, AgingReadTime: time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		checkReport(t, rep, 25) // hot, cold and events counters, busy and one-actor ledgers, five days; no native read without Cassandra
		for _, r := range rep.Rows {
			if r.Kind != "aging_read" || r.Day < 1 || r.Series == "" || (r.Model == ModelSharded && r.StoredBytes <= 0) {
				t.Errorf("aging row %+v: kind, day, series or stored bytes missing", r)
			}
			if tr := r.Trace; tr == nil || tr.Replicas != 1 || tr.Live < 1 || tr.Points < tr.Live+tr.Tombstones {
				t.Errorf("aging row %q: the driver's read stats %+v", r.Scenario, tr)
			}
		}
		checkAging(t, rep, rep.Rows[len(rep.Rows)-5])
		// The hot counter's read starts above the shards GC folded (12 a
		// day on days 3 to 5): it steps over none of their tombstone
		// cells, which the store keeps until they are purged.
		if hot := rep.Rows[len(rep.Rows)-5]; hot.Trace == nil || hot.Trace.Live < hot.Shards || hot.Trace.Tombstones >= 12 {
			t.Errorf("day 5's hot counter read %d live shards; its stats %+v, want at least as many live rows and fewer than a day's folds (12) in tombstones", hot.Shards, hot.Trace)
		}
		// The busy ledger's read decodes the 24 rows of days 4 and 5 and the
		// base, and skips the 36 folded ones before decoding them.
		if busy := rep.Rows[len(rep.Rows)-2]; busy.Series != "ledger, an actor per writer" || busy.Trace == nil || busy.Trace.Live != 25 {
			t.Errorf("day 5's busy ledger row %q: stats %+v, want 25 live rows (24 actors and the base)", busy.Series, busy.Trace)
		}
	})
	t.Run("cassandra", func(t *testing.T) {
		t.Parallel()
		rep, err := RunSuite(context.Background(), Config{
			Cassandra: cassandratest.Hosts(t), Keyspace: cassandratest.Keyspace(t),
			ReplicationFactor: cassandratest.ReplicationFactor(t),
			Options:           Options{Concurrency: 4, Duration: 300 * time.Millisecond, Warmup: 500 * time.Millisecond},
			// A second per row: on a loaded three-node cluster a 100 ms
			// window once ended with no read done, and no p50 to compare.
			Scenarios: []string{ScenarioAging}, AgingDays: 5, AgingWriters: 12, AgingReadTime: time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		// A native read on the first and the last day around the fifteen
		// counter and ten ledger rows; each native read checks the counter
		// it added to.
		checkReport(t, rep, 27)
		if first, last := rep.Rows[0], rep.Rows[len(rep.Rows)-1]; first.Series != "native read" || last.Series != "native read" || last.Day != 5 {
			t.Errorf("first and last rows %q (day %d) and %q (day %d), want native reads on days 1 and 5", first.Series, first.Day, last.Series, last.Day)
		}
		checkAging(t, rep, rep.Rows[len(rep.Rows)-6])
		// Cassandra's trace of a read: every row has one; the hot counter
		// reads its live shards and starts after the shards GC folded on
		// days 3 to 5 (12 a day), whose tombstones Cassandra keeps for
		// gc_grace_seconds of real time: a read stepping over them would
		// report 36. The busy ledger reads the rows of the actors that may
		// still write (days 4 and 5) and its base, from the cut.
		for _, r := range rep.Rows {
			if tr := r.Trace; (tr == nil || tr.Replicas < 1) != (r.Series == "native read") {
				t.Errorf("aging row %q: trace %+v", r.Scenario, tr)
			}
		}
		if hot := rep.Rows[len(rep.Rows)-6]; hot.Trace == nil || hot.Trace.Live < hot.Shards || hot.Trace.Tombstones >= 12 {
			t.Errorf("day 5's hot counter read %d live shards; its trace %+v, want at least as many live rows and fewer than a day's folds (12) in tombstones", hot.Shards, hot.Trace)
		}
		// An events read steps over at most the markers of the buckets
		// deleted (two a day here: the events' bucket and the one its
		// seal starts in), never the rolled-up events (12 a day): it reads
		// the record's row and, where a replica has not yet heard of a
		// marker, a few events more, never a day's worth.
		if ev := rep.Rows[len(rep.Rows)-4]; ev.Series != "events counter" || ev.Trace == nil || ev.Trace.Tombstones > 10 || ev.Trace.Live < 1 || ev.Trace.Live >= 12 {
			t.Errorf("day 5's events row %q: trace %+v, want at most 10 tombstones and from 1 to 11 live rows", ev.Series, ev.Trace)
		}
		if busy := rep.Rows[len(rep.Rows)-3]; busy.Series != "ledger, an actor per writer" || busy.Trace == nil || busy.Trace.Live != 25 {
			t.Errorf("day 5's busy ledger row %q: trace %+v, want 25 live rows (24 actors and the base)", busy.Series, busy.Trace)
		}
	})
}

// checkAging checks a five-day aging report whose last hot-counter row is
// last.
func checkAging(t *testing.T, rep *Report, last Row) {
	t.Helper()
	// Writers of day d make shards that expire a day later and are final a
	// day after that, so from day 3 on GC folds a day's writers each day
	// and the hot counter keeps about two days of live shards.
	if last.Series != "sharded, hot counter" || last.Shards > 2*12 || !strings.Contains(last.Check, "GC folded 14 shards") {
		t.Errorf("last hot row: %d live shards, check %q; want at most 24 live and 14 folded (12 hot, 2 cold)", last.Shards, last.Check)
	}
	var names []string
	for _, r := range rep.Ratios {
		names = append(names, r.Name)
	}
	for _, want := range []string{"aging read p50, sharded, hot counter: day 5 / day 2 (24 live shards each)", "aging read p50, sharded, cold counter: day 5 / day 2 (4 live shards each)",
		// Each day's rollup folds the day's events before the reads.
		"aging read p50, events counter: day 5 / day 1 (0 un-rolled events each)",
		// 12 writers a day for five days, an actor each. At the default
		// ages (24h, a fold age of about 51h) the actors of days 4 and 5
		// may still write; each day's fold passed one day's actors, those
		// of days 1 to 3.
		"aging read p50, ledger, an actor per writer / ledger, one actor, day 5 (read 60 from 24 actor rows and a base that 3 folds built)",
		// Each collection's time on the last day against the first that
		// folded as much.
		"aging collection time, sharded, hot counter: day 5 / day 3 (folded 12 each)",
		"aging collection time, events counter: day 5 / day 1 (folded 12 each)",
		"aging collection time, ledger, an actor per writer: day 5 / day 3 (folded 1 each)"} {
		if !slices.Contains(names, want) {
			t.Errorf("no ratio %q among %q", want, names)
		}
	}
	if i := slices.IndexFunc(rep.Rows, func(r Row) bool { return r.Series == "events counter" && r.Day == 5 }); i < 0 {
		t.Error("no events row on day 5")
	} else if ev := rep.Rows[i]; ev.Events != 0 || ev.Check != "ok: read 60, 0 events un-rolled; the rollup folded 12 that day" {
		t.Errorf("day 5's events row: %d un-rolled, check %q", ev.Events, ev.Check)
	}
	// Each day's collections keep up: on the last day each folded a day's
	// worth, and what they have folded ends no further before now than
	// the design's wait (the GC grace, the seal plus the rollup delay,
	// the fold age) and a day's schedule. A collection left
	// behind, or one that stopped folding, fails here.
	behind := map[string]struct {
		folded   int
		min, max time.Duration
	}{
		"sharded, hot counter":        {12, 24 * time.Hour, 72 * time.Hour},
		"sharded, cold counter":       {2, 24 * time.Hour, 72 * time.Hour},
		"events counter":              {12, 6 * time.Second, 25 * time.Hour},
		"ledger, an actor per writer": {1, 51 * time.Hour, 76 * time.Hour},
	}
	for _, r := range rep.Rows {
		if (r.Collection == nil) != (r.Series == "native read") {
			t.Errorf("aging row %q: collection %+v", r.Scenario, r.Collection)
		}
		want, ok := behind[r.Series]
		if !ok || r.Day != last.Day {
			continue
		}
		if c := r.Collection; c == nil || c.Folded != want.folded || c.Behind < want.min || c.Behind > want.max || c.Took <= 0 {
			t.Errorf("day %d's %s: collection %+v, want %d folded and behind by %v to %v", r.Day, r.Series, c, want.folded, want.min, want.max)
		}
	}
	chart, ok := rep.agingChart()
	if !ok || len(chart.Lines) < 4 || len(chart.Lines[len(chart.Lines)-1].Days) != 5 {
		t.Fatalf("aging chart: %+v, %v; want a line of five days per counter", chart, ok)
	}
	var png bytes.Buffer
	if err := chart.WritePNG(&png); err != nil || png.Len() == 0 {
		t.Fatalf("aging chart PNG: %d bytes, %v", png.Len(), err)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []Config{
		{Scenarios: []string{"increments", "writes"}},
		{Counters: []int{0}},
		{ReadShards: []int{-1}},
		{Models: []string{"events", "lamport"}},
		{HotFraction: -0.1},
		{HotFraction: 1.5},
		{HotFraction: math.NaN()},
		{ReadRatio: 1},
		{ReadRatio: -0.5},
		{ReadRatio: math.NaN()},
		{EventReads: []int{0}},
		{ReplicationFactor: -2},
		{Consistency: driver.Consistency(200)},
		{Sweep: []int{64, 16}},
		{Sweep: []int{16, 64, 64}},
		{Sweep: []int{0, 16}},
		{SweepGain: -0.5},
		{SweepP99: -time.Millisecond},
		{AgingDays: -1},
		{AgingWriters: 10_001},
		{AgingReadTime: -time.Second},
	} {
		if err := c.withDefaults().validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	if err := (Config{}).withDefaults().validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if err := (Config{HotFraction: 1, ReadRatio: 0.99, Models: Models}).withDefaults().validate(); err != nil {
		t.Errorf("the edges of the valid ranges: %v", err)
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
		{Kind: "increments", Model: "sharded", Via: "library", Counters: 1, Result: Result{OpsPerSec: 50_000}, StoreCPU: 0.5},
		{Kind: "increments", Model: "native", Via: "cql", Counters: 1, Result: Result{OpsPerSec: 4_000}, StoreCPU: 1},
		{Kind: "increments", Model: "native", Via: "library", Counters: 1, Result: Result{OpsPerSec: 3_000}},
		{Kind: "increments", Model: "plain", Via: "cql", Counters: 1, Result: Result{OpsPerSec: 100_000}},
		{Kind: "increments", Model: "sharded", Via: "library", Counters: 100, Result: Result{OpsPerSec: 9_000}},
		{Kind: "increments", Model: "native", Via: "cql", Counters: 100, Result: Result{OpsPerSec: 5_000}},
		{Kind: "read_after_gc", Model: "sharded", Via: "library", Scenario: "read after GC", Counters: 1, Result: Result{P50: 3 * time.Millisecond, P99: 9 * time.Millisecond}},
		{Kind: "read", Model: "native", Via: "cql", Counters: 1, Result: Result{P50: 2 * time.Millisecond, P99: 4 * time.Millisecond}},
		{Kind: "increments", Model: "events", Via: "library", Counters: 1, Result: Result{OpsPerSec: 3_000}},
		{Kind: "read_after_rollup", Model: "events", Via: "library", Scenario: "read after rollup", Counters: 1, Result: Result{P50: 5 * time.Millisecond, P99: 8 * time.Millisecond}},
	}
	checkRatios(t, ratios(rows), []wantRatio{
		{"increments/s over 1 counter: sharded (library) / native", 12.5, isMet(true)},
		{"increments per store CPU-second over 1 counter: sharded (library) / native", 25, nil},
		{"increments/s over 1 counter: native (library) / native", 0.75, nil},
		{"increments/s over 1 counter: plain-insert ceiling / native", 25, nil},
		{"increments/s over 1 counter: events / native", 0.75, isMet(false)},
		{"increments/s over 1 counter: sharded (library) / plain-insert ceiling", 0.5, nil},
		{"increments/s over 1 counter: native / plain-insert ceiling", 0.04, nil},
		{"increments/s over 1 counter: native (library) / plain-insert ceiling", 0.03, nil},
		{"increments/s over 1 counter: events / plain-insert ceiling", 0.03, nil},
		{"increments/s over 100 counters: sharded (library) / native", 1.8, isMet(false)},
		{"read p50 latency: sharded (read after GC) / native", 1.5, isMet(true)},
		{"read p99 latency: sharded (read after GC) / native", 2.25, nil},
		{"read p50 latency: events (read after rollup) / native", 2.5, isMet(false)},
		{"read p99 latency: events (read after rollup) / native", 2, nil},
	})
}

func TestRatiosWithoutBarsForMixedLoads(t *testing.T) {
	t.Parallel()
	// The bars are for writes only, spread uniformly: reads mixed in, or a
	// hot counter among 100, void them; one counter stays one counter
	// whatever the hot fraction.
	rows := []Row{
		{Kind: "increments", Model: "sharded", Via: "library", Counters: 1, HotFraction: 0.5, Result: Result{OpsPerSec: 50_000}},
		{Kind: "increments", Model: "native", Via: "cql", Counters: 1, HotFraction: 0.5, Result: Result{OpsPerSec: 4_000}},
		{Kind: "increments", Model: "sharded", Via: "library", Counters: 100, HotFraction: 0.5, Result: Result{OpsPerSec: 9_000}},
		{Kind: "increments", Model: "native", Via: "cql", Counters: 100, HotFraction: 0.5, Result: Result{OpsPerSec: 3_000}},
		{Kind: "increments", Model: "events", Via: "library", Counters: 7, ReadRatio: 0.2, Result: Result{OpsPerSec: 3_000, ReadOps: 1, ReadP50: 1}},
		{Kind: "increments", Model: "native", Via: "cql", Counters: 7, ReadRatio: 0.2, Result: Result{OpsPerSec: 2_000, ReadOps: 1, ReadP50: 1}},
	}
	checkRatios(t, ratios(rows), []wantRatio{
		{"increments/s over 1 counter: sharded (library) / native", 12.5, isMet(true)},
		{"increments/s over 100 counters: sharded (library) / native", 3, nil},
		{"increments/s over 7 counters: events / native", 1.5, nil},
		{"read p50 latency in the mix over 7 counters: events / native", 1, nil},
	})
}

func TestRatiosEmbeddedBaselineAndReadMix(t *testing.T) {
	t.Parallel()
	// No raw CQL counter: the library's native model is the baseline and
	// no bar applies. Reads mixed into the runs get a latency ratio.
	rows := []Row{
		{Kind: "increments", Model: "sharded", Via: "library", Counters: 1, Result: Result{OpsPerSec: 8_000, ReadOps: 10, ReadP50: 30 * time.Microsecond}},
		{Kind: "increments", Model: "native", Via: "library", Counters: 1, Result: Result{OpsPerSec: 2_000, ReadOps: 10, ReadP50: 20 * time.Microsecond}},
	}
	checkRatios(t, ratios(rows), []wantRatio{
		{"increments/s over 1 counter: sharded (library) / native (library)", 4, nil},
		{"read p50 latency in the mix over 1 counter: sharded (library) / native (library)", 1.5, nil},
	})
}

type wantRatio struct {
	name  string
	value float64
	met   *bool
}

func checkRatios(t *testing.T, rs []Ratio, want []wantRatio) {
	t.Helper()
	got := map[string]Ratio{}
	for _, r := range rs {
		got[r.Name] = r
	}
	if len(got) != len(want) || len(rs) != len(want) {
		t.Fatalf("%d ratios, want %d: %+v", len(rs), len(want), rs)
	}
	for _, w := range want {
		r, ok := got[w.name]
		if !ok {
			t.Fatalf("no ratio %q in %+v", w.name, got)
		}
		if math.Abs(r.Value-w.value) > 1e-9 {
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
	p, err := NewPicker(names, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i := 0; i < 10_000; i++ {
		seen[p.Pick(i%2)]++
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
	for _, bad := range []struct {
		names []string
		hot   float64
	}{{nil, 0}, {names, -0.01}, {names, 1.01}, {names, math.NaN()}} {
		if _, err := NewPicker(bad.names, 1, bad.hot); err == nil {
			t.Errorf("no error for %d names, hot fraction %v", len(bad.names), bad.hot)
		}
	}
}

func TestPickerHotFraction(t *testing.T) {
	t.Parallel()
	names := CounterNames("c", 5)
	const calls = 40_000
	for _, hot := range []float64{0.1, 0.5, 0.9, 1} {
		p, err := NewPicker(names, 4, hot)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for i := 0; i < calls; i++ {
			seen[p.Pick(i%4)]++
		}
		// Binomial: the standard deviation of the hot share is at most
		// sqrt(0.25/40,000) = 0.0025; 0.015 is 6 of them.
		if share := float64(seen[names[0]]) / calls; math.Abs(share-hot) > 0.015 {
			t.Errorf("hot fraction %v: the hot counter got %.4f of the calls", hot, share)
		}
		// The rest is uniform over the cold counters.
		cold := (1 - hot) * calls / float64(len(names)-1)
		for _, n := range names[1:] {
			if math.Abs(float64(seen[n])-cold) > 6*math.Sqrt(cold+1)+1 {
				t.Errorf("hot fraction %v: cold counter %s got %d calls, want about %.0f", hot, n, seen[n], cold)
			}
		}
	}
	// One counter takes every call, whatever the fraction.
	p, err := NewPicker(names[:1], 1, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if got := p.Pick(0); got != names[0] {
			t.Fatalf("picked %q from a single name", got)
		}
	}
}

func TestRunSuiteReadMixEmbedded(t *testing.T) {
	t.Parallel()
	// Every row must show reads and writes, so each gets a whole second:
	// in CI's busiest phase a 150 ms window once ended with not one
	// operation of the plain model done.
	opts := shortOptions
	opts.Duration = time.Second
	rep, err := RunSuite(context.Background(), Config{
		DataDir:     t.TempDir(),
		NoSync:      true,
		Options:     opts,
		Counters:    []int{4},
		HotFraction: 0.5,
		ReadRatio:   0.4,
		Scenarios:   []string{ScenarioIncrements},
		Models:      []string{ModelSharded, ModelLedger, ModelNative, ModelPlain},
	})
	if err != nil {
		t.Fatal(err)
	}
	// checkReport insists every read-back matched the acknowledged writes:
	// the reads mixed in must not be counted as updates.
	checkReport(t, rep, 4)
	for _, r := range rep.Rows {
		if r.ReadOps == 0 || r.Ops == 0 {
			t.Errorf("%s: %d writes and %d reads with a read ratio of 0.4", r.label(), r.Ops, r.ReadOps)
		}
		if r.ReadErrors > 0 {
			t.Errorf("%s: %d read errors: %s", r.label(), r.ReadErrors, r.FirstError)
		}
		if r.HotFraction != 0.5 || r.ReadRatio != 0.4 {
			t.Errorf("%s: row mix %v/%v", r.label(), r.HotFraction, r.ReadRatio)
		}
		if r.ReadP50 <= 0 || r.ReadP50 > r.ReadP99 || r.ReadP99 > r.ReadMax {
			t.Errorf("%s: read percentiles p50 %v p99 %v max %v", r.label(), r.ReadP50, r.ReadP99, r.ReadMax)
		}
	}
	if rep.ReadRatio != 0.4 || rep.HotFraction != 0.5 {
		t.Errorf("report mix %v/%v", rep.ReadRatio, rep.HotFraction)
	}
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"read p50", "reads/s", "hot counter takes 50% of calls", "40% of increments-scenario calls are reads"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, b.String())
		}
	}
}

// The sweep's choice, on made-up measurements: the most throughput within
// the p99 limit, stopping once throughput stops rising or p99 passes it.
func TestSweepChoosesTheSustainableLevel(t *testing.T) {
	t.Parallel()
	type level struct {
		ops float64
		p99 time.Duration
	}
	ms := time.Millisecond
	for _, tc := range []struct {
		name      string
		levels    map[int]level
		wantRuns  []int // concurrencies measured
		wantChose int
	}{
		{"stops rising", map[int]level{1: {100, ms}, 2: {200, ms}, 4: {205, ms}, 8: {400, ms}}, []int{1, 2, 4}, 4},
		{"falls back", map[int]level{1: {100, ms}, 2: {200, ms}, 4: {150, ms}, 8: {400, ms}}, []int{1, 2, 4}, 2},
		{"p99 limit", map[int]level{1: {100, ms}, 2: {200, ms}, 4: {900, time.Second}, 8: {990, time.Second}}, []int{1, 2, 4}, 2},
		{"rises to the end", map[int]level{1: {100, ms}, 2: {200, ms}, 4: {400, ms}, 8: {800, ms}}, []int{1, 2, 4, 8}, 8},
		{"never within the limit", map[int]level{1: {100, time.Second}, 2: {200, time.Second}}, []int{1}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &suite{cfg: Config{Sweep: []int{1, 2, 4, 8}}.withDefaults(), runID: "r"}
			var runs []int
			rows, err := s.swept(func() (Row, error) {
				c := s.cfg.Options.Concurrency
				runs = append(runs, c)
				if !strings.HasSuffix(s.runID, fmt.Sprintf("-c%d", c)) {
					t.Errorf("level %d measured under run id %q: its counters would mix with another level's", c, s.runID)
				}
				l := tc.levels[c]
				return Row{Scenario: "increments", Concurrency: c, Result: Result{OpsPerSec: l.ops, P99: l.p99}, Check: "ok"}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(runs, tc.wantRuns) {
				t.Errorf("measured %v, want %v", runs, tc.wantRuns)
			}
			var chose []int
			for _, r := range rows {
				if r.Sweep == SweepSustainable {
					chose = append(chose, r.Concurrency)
				} else if r.Sweep != SweepStep {
					t.Errorf("row %q: sweep %q", r.Scenario, r.Sweep)
				}
			}
			if len(chose) != 1 || chose[0] != tc.wantChose {
				t.Errorf("sustainable %v, want [%d]", chose, tc.wantChose)
			}
			if got := len(withoutSweepSteps(rows)); got != 1 {
				t.Errorf("%d rows left for ratios, want the sustainable one", got)
			}
			if s.cfg.Options.Concurrency != DefaultConcurrency || s.runID != "r" {
				t.Errorf("sweep left concurrency %d and run id %q behind", s.cfg.Options.Concurrency, s.runID)
			}
		})
	}
}

// A sweep through the real suite: every increments row measured at each
// level until it stops, one sustainable row per model and setting, and the
// ratios built from those.
func TestSweepEmbedded(t *testing.T) {
	t.Parallel()
	rep, err := RunSuite(context.Background(), Config{
		DataDir: t.TempDir(), NoSync: true, Options: shortOptions,
		Scenarios: []string{ScenarioIncrements}, Models: []string{ModelSharded, ModelNative}, Counters: []int{1},
		// Throughput never rises ninefold and p99 never passes a minute, so
		// each sweep measures both levels and stops, however loaded the
		// machine is.
		Sweep: []int{2, 8}, SweepGain: 9, SweepP99: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, rep, 4)
	sustainable := 0
	for _, r := range rep.Rows {
		if r.Sweep == SweepSustainable {
			sustainable++
		}
	}
	if sustainable != 2 {
		t.Errorf("%d sustainable rows, want one per model", sustainable)
	}
	if len(rep.Ratios) == 0 || !strings.Contains(rep.Ratios[0].Name, "sharded (library) / native (library)") {
		t.Errorf("ratios %+v, want sharded against native at their sustainable levels", rep.Ratios)
	}
}
