package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSteadyScenarioEmbedded drives one events counter at 200/s and 20
// counters at 1/s each for 2 s apiece on the embedded store, and checks
// that every figure of the report is filled in and sane.
func TestSteadyScenarioEmbedded(t *testing.T) {
	t.Parallel()
	rep, err := RunSuite(context.Background(), Config{
		DataDir: t.TempDir(), NoSync: true,
		Options:   Options{Duration: 2 * time.Second, Warmup: 500 * time.Millisecond},
		Scenarios: []string{ScenarioSteady}, SteadyRates: []int{200}, SteadyCounters: 20,
		SteadyRollupCost: -1, // TestSteadyRollupCost has it
		// This process stands in for a store process, to exercise the
		// sampling of another process's CPU.
		StorePID: os.Getpid(),
	})
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, rep, 2) // the writes of each run are a row of the main table
	if len(rep.Steady) != 2 {
		t.Fatalf("%d steady runs, want 2", len(rep.Steady))
	}
	for i, r := range rep.Steady {
		row := rep.Rows[i]
		if row.Kind != "steady" || row.Model != ModelEvents || row.Counters != r.Counters || row.Ops != r.Acknowledged {
			t.Errorf("row %+v does not match run %q", row, r.Shape)
		}
		if r.Errors != 0 || r.Dropped != 0 || r.FirstError != "" || r.Interrupted {
			t.Errorf("%s: %d errors (%s), %d dropped, interrupted %v", r.Shape, r.Errors, r.FirstError, r.Dropped, r.Interrupted)
		}
		// A loaded machine may pace late, but not by a fifth.
		if r.AchievedRate < 0.8*r.TargetRate || r.AchievedRate > 1.1*r.TargetRate {
			t.Errorf("%s: achieved %.1f increments/s of %.0f", r.Shape, r.AchievedRate, r.TargetRate)
		}
		if r.Sustained != (r.Dropped == 0 && r.AchievedRate >= steadySustainedShare*r.TargetRate) {
			t.Errorf("%s: sustained %v with %.1f of %.0f/s and %d dropped", r.Shape, r.Sustained, r.AchievedRate, r.TargetRate, r.Dropped)
		}
		if r.WriteP50 <= 0 || r.WriteP99 < r.WriteP50 || r.Writers < 1 || r.Duration < 2*time.Second {
			t.Errorf("%s: write p50 %v, p99 %v, %d writers, measured %v", r.Shape, r.WriteP50, r.WriteP99, r.Writers, r.Duration)
		}
		for kind, rd := range map[string]SteadyReads{"full": r.Full, "stale": r.Stale, "native": r.Native} {
			// Every 100 ms for 2 s: about 20 each, fewer on a loaded machine.
			if rd.Reads < 5 || rd.Errors != 0 || rd.P50 <= 0 || rd.P99 < rd.P50 || rd.Max < rd.P99 {
				t.Errorf("%s: %s reads %+v", r.Shape, kind, rd)
			}
		}
		if r.NativeNote != "" || r.FullNativeP50 <= 0 || r.FullNativeP99 <= 0 || r.StaleNativeP50 <= 0 || r.StaleNativeP99 <= 0 {
			t.Errorf("%s: native note %q, ratios %v %v %v %v", r.Shape, r.NativeNote, r.FullNativeP50, r.FullNativeP99, r.StaleNativeP50, r.StaleNativeP99)
		}
		if r.RollupCost != nil {
			t.Errorf("%s: a rollup-cost phase ran with SteadyRollupCost -1", r.Shape)
		}
		if r.ReadMismatches != 0 || r.StaleTooOld != 0 {
			t.Errorf("%s: %d read mismatches (%s), %d stale answers too old", r.Shape, r.ReadMismatches, r.FirstMismatch, r.StaleTooOld)
		}
		// Each counter is rolled up at its first write, to now - Seal -
		// RollupDelay (4 s + 2 s): every later read trails it by more.
		if r.Lag.Samples == 0 || r.Lag.Min < 5*time.Second || r.Lag.P50 < r.Lag.Min || r.Lag.Max > time.Minute {
			t.Errorf("%s: rollup lag %+v, want samples from 6 s to well under a minute", r.Shape, r.Lag)
		}
		if r.EventsMean <= 0 || r.EventsMax < int(r.EventsMean) || r.Stats.Rollups == 0 || r.Stats.Seals == 0 || r.Stats.Reads == 0 || r.Stats.EventsScanned == 0 {
			t.Errorf("%s: %.1f events per read (max %d), stats %+v", r.Shape, r.EventsMean, r.EventsMax, r.Stats)
		}
		if len(r.Windows) != 1 || r.Windows[0].Full.Reads == 0 || r.Windows[0].WriteRate <= 0 || r.Windows[0].LagP99 <= 0 {
			t.Errorf("%s: windows %+v, want one with reads, writes and lag", r.Shape, r.Windows)
		}
		if runtime.GOOS == "linux" && (r.ProcessCPUSeconds <= 0 || r.StoreCPUSeconds < 0 || r.StoreCPUPer1k < 0 || r.HostCPU < 0) {
			t.Errorf("%s: CPU %v s (store %v s, %v s per 1k), host %v cores", r.Shape, r.ProcessCPUSeconds, r.StoreCPUSeconds, r.StoreCPUPer1k, r.HostCPU)
		}
	}
	// At 200/s, with full reads every 100 ms, most bounded-staleness reads
	// of the one counter find a full read fresh enough.
	if one := rep.Steady[0]; one.Shape != "1 counter at 200/s" || one.Cached == 0 || one.StalenessMax > 2*time.Second {
		t.Errorf("%s: %d of %d stale reads cached, staleness max %v", one.Shape, one.Cached, one.Stale.Reads, one.StalenessMax)
	}
	if many := rep.Steady[1]; many.Shape != "20 counters at 1/s each" || many.Counters != 20 || many.TargetRate != 20 {
		t.Errorf("second run %q: %d counters at %.0f/s", many.Shape, many.Counters, many.TargetRate)
	}

	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Steady load", "full/native p99", "lag p99", "store cpu-s/1k", "1 counter at 200/s", "20 counters at 1/s each", "per 10s window"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Steady) != 2 || back.Steady[0].Lag.P99 != rep.Steady[0].Lag.P99 || len(back.Steady[1].Windows) != 1 {
		t.Fatalf("JSON lost the steady runs (%v):\n%s", err, js.String())
	}
	dir := filepath.Join(t.TempDir(), "report")
	if err := rep.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, ReportMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"steady-200.png", "steady-20-counters.png"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
		if !strings.Contains(string(md), "("+f+")") {
			t.Errorf("report.md does not show %s", f)
		}
	}
	if !strings.Contains(string(md), "| 1 counter at 200/s |") {
		t.Errorf("report.md lacks the steady tables:\n%s", md)
	}
}

// TestSteadyRollupCost runs a short one-counter steady run and its
// rollup-cost phase, 2,000 increments at 1,000/s on the embedded store,
// and checks that the phase rolled them all up, read the exact value and
// filled in its figures. It waits Seal + RollupDelay + 1 s (7 s) for the
// events to be sealable.
func TestSteadyRollupCost(t *testing.T) {
	t.Parallel()
	rep, err := RunSuite(context.Background(), Config{
		DataDir: t.TempDir(), NoSync: true,
		Options:   Options{Duration: time.Second, Warmup: -1},
		Scenarios: []string{ScenarioSteady}, SteadyRates: []int{1000}, SteadyRollupCost: 2000,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Steady) != 1 || rep.Steady[0].RollupCost == nil {
		t.Fatalf("steady runs %+v, want one with a rollup cost", rep.Steady)
	}
	rc := rep.Steady[0].RollupCost
	if rc.Events != 2000 || rc.Acknowledged != 2000 || rc.Errors != 0 || rc.FirstError != "" || rc.Interrupted {
		t.Errorf("writes: %d of %d acknowledged, %d errors (%s), interrupted %v", rc.Acknowledged, rc.Events, rc.Errors, rc.FirstError, rc.Interrupted)
	}
	if rc.Value != 2000 || rc.EventsFolded != 2000 || !strings.HasPrefix(rc.Check, "ok:") {
		t.Errorf("read %d, folded %d: %s", rc.Value, rc.EventsFolded, rc.Check)
	}
	if rc.RollupsBefore != 0 || rc.RolledUpBefore || rc.GCCalls < 1 || rc.GCSkips != 0 || rc.Seals < 1 {
		t.Errorf("%d rollups before the phase (rolled up %v), %d GC calls (%d skipped), %d seals", rc.RollupsBefore, rc.RolledUpBefore, rc.GCCalls, rc.GCSkips, rc.Seals)
	}
	// 2,000 at 1,000/s: about 2 s, longer on a loaded machine.
	if rc.TargetRate != 1000 || rc.AchievedRate < 250 || rc.AchievedRate > 1100 || rc.WriteTime < 1800*time.Millisecond || rc.Writers < 1 {
		t.Errorf("%.0f of %.0f increments/s over %v with %d writers", rc.AchievedRate, rc.TargetRate, rc.WriteTime, rc.Writers)
	}
	if rc.Wait < 7*time.Second || rc.RollupTime <= 0 {
		t.Errorf("waited %v (want Seal + RollupDelay + 1 s = 7s at least), rolled up in %v", rc.Wait, rc.RollupTime)
	}
	if rc.StoreCPUFrom != "this process" {
		t.Errorf("store CPU from %q, want this process (embedded)", rc.StoreCPUFrom)
	}
	if runtime.GOOS == "linux" {
		if rc.WriteStoreCPUSeconds <= 0 || rc.RollupStoreCPUSeconds <= 0 || rc.WriteStoreCPUPer1k <= 0 || rc.RollupStoreCPUPer1k <= 0 || rc.RollupWritePercent <= 0 {
			t.Errorf("store CPU: writes %v s (%v per 1k), rollup %v s (%v per 1k), %v%%", rc.WriteStoreCPUSeconds, rc.WriteStoreCPUPer1k,
				rc.RollupStoreCPUSeconds, rc.RollupStoreCPUPer1k, rc.RollupWritePercent)
		}
		// Embedded, the store's CPU is this process's.
		if rc.WriteProcessCPUSeconds != rc.WriteStoreCPUSeconds || rc.RollupProcessCPUSeconds != rc.RollupStoreCPUSeconds {
			t.Errorf("process CPU %v/%v s, store %v/%v s", rc.WriteProcessCPUSeconds, rc.RollupProcessCPUSeconds, rc.WriteStoreCPUSeconds, rc.RollupStoreCPUSeconds)
		}
		if got := rc.RollupStoreCPUSeconds / rc.WriteStoreCPUSeconds * 100; got != rc.RollupWritePercent {
			t.Errorf("rollup/write %v%%, want %v%%", rc.RollupWritePercent, got)
		}
	}

	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Rollup cost", "rollup/write", "rollup store cpu-s/1k", "seals of up to 20,000 events", "ok: read 2000"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| 1 counter at 1000/s | 2000 |") {
		t.Errorf("markdown report lacks the rollup cost row:\n%s", md.String())
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Steady) != 1 || back.Steady[0].RollupCost == nil ||
		*back.Steady[0].RollupCost != *rc {
		t.Fatalf("JSON lost the rollup cost (%v):\n%s", err, js.String())
	}
}

func TestSteadyConfig(t *testing.T) {
	t.Parallel()
	c := Config{}.withDefaults()
	if len(c.SteadyRates) != 2 || c.SteadyRates[0] != 1000 || c.SteadyRates[1] != 10_000 || c.SteadyCounters != 0 ||
		c.SteadyReadEvery != 100*time.Millisecond || c.SteadyStaleness != 2*time.Second || c.SteadyRollupCost != 60_000 {
		t.Errorf("defaults: rates %v, counters %d, every %v, staleness %v, rollup cost %d", c.SteadyRates, c.SteadyCounters, c.SteadyReadEvery, c.SteadyStaleness, c.SteadyRollupCost)
	}
	if got := (Config{SteadyRollupCost: -5}).withDefaults().SteadyRollupCost; got != -1 {
		t.Errorf("rollup cost -5: %d after defaults, want -1 (none)", got)
	}
	if got := (Config{SteadyRates: []int{0}, SteadyCounters: 10_000}).withDefaults().steadyShapes(); len(got) != 1 || got[0].counters != 10_000 || got[0].rate != 10_000 {
		t.Errorf("rate 0 and 10,000 counters: shapes %+v, want the many-counter one alone", got)
	}
	for _, bad := range []Config{
		{Scenarios: []string{ScenarioSteady}, SteadyRates: []int{0}},
		{SteadyRates: []int{100, -1}},
		{SteadyRates: []int{2_000_000}},
		{SteadyCounters: -1},
		{SteadyReadEvery: time.Microsecond},
		{SteadyStaleness: -time.Second},
		{SteadyRollupCost: 20_000_000},
	} {
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "steady") {
			t.Errorf("%+v: error %v, want one about the steady scenario", bad, err)
		}
	}
	if err := (Config{Scenarios: []string{ScenarioSteady}, SteadyRates: []int{1}, SteadyCounters: 5}).Validate(); err != nil {
		t.Error(err)
	}
	if slices.Contains(DefaultScenarios, ScenarioSteady) {
		t.Error("the steady scenario runs by default")
	}
	for rate, want := range map[float64]int{1: 4, 200: 10, 10_000: 500, 1e6: 4096} {
		if got := steadyWriters(rate); got != want {
			t.Errorf("steadyWriters(%v) = %d, want %d", rate, got, want)
		}
	}
}

func TestTimeChart(t *testing.T) {
	t.Parallel()
	if _, err := (TimeChart{Lines: []TimeLine{{Name: "empty", At: []time.Duration{time.Second}, Values: []time.Duration{0}}}}).render(); err == nil {
		t.Error("a chart with no positive value rendered")
	}
	if _, err := (TimeChart{Lines: []TimeLine{{Name: "ragged", At: []time.Duration{time.Second}}}}).render(); err == nil {
		t.Error("a line with a time and no value rendered")
	}
	c := TimeChart{Title: "steady", Lines: []TimeLine{
		{Name: "read p99", At: []time.Duration{10 * time.Second, 20 * time.Second}, Values: []time.Duration{80 * time.Microsecond, 2 * time.Millisecond}},
		{Name: "lag p99", At: []time.Duration{10 * time.Second, 20 * time.Second}, Values: []time.Duration{6500 * time.Millisecond, 7 * time.Second}},
	}}
	var png bytes.Buffer
	if err := c.WritePNG(&png); err != nil || png.Len() == 0 {
		t.Fatalf("PNG: %d bytes, %v", png.Len(), err)
	}
}

// TestSteadyReaderWindows checks that a reader summarises each window
// apart, by the window its reads began in, and leaves gaps empty.
func TestSteadyReaderWindows(t *testing.T) {
	t.Parallel()
	var r steadyReader
	r.record(0, time.Millisecond, readSample{full: true, events: 10, rolled: true, lag: 6 * time.Second}, nil)
	r.record(0, 3*time.Millisecond, readSample{full: true, events: 30}, nil)
	r.record(2, 2*time.Millisecond, readSample{full: true, events: 5, rolled: true, lag: 7 * time.Second}, nil)
	r.record(2, 0, readSample{}, errors.New("down"))
	r.flush()
	w0, w1, w2 := r.window(0), r.window(1), r.window(2)
	if w0.reads.Reads != 2 || w0.eventsMean != 20 || w0.eventsMax != 30 || w0.lagMax != 6*time.Second || w0.reads.P99 < 2900*time.Microsecond {
		t.Errorf("window 0: %+v", w0)
	}
	if w1.reads.Reads != 0 || w1.lagMax != 0 {
		t.Errorf("window 1 (no reads): %+v", w1)
	}
	if w2.reads.Reads != 1 || w2.reads.Errors != 1 || w2.lagMax != 7*time.Second || w2.eventsMean != 5 {
		t.Errorf("window 2: %+v", w2)
	}
	res := r.result()
	if res.Reads != 3 || res.Errors != 1 || res.FirstError != "down" || r.neverRolled != 1 || r.lag.Count() != 2 || r.eventsMean() != 15 {
		t.Errorf("totals %+v, %d never rolled, %d lags, %v events mean", res, r.neverRolled, r.lag.Count(), r.eventsMean())
	}
}
