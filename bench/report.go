package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is everything one RunSuite measured.
type Report struct {
	Env      Env       `json:"env"`
	Options  Options   `json:"options"`
	Rows     []Row     `json:"rows"`
	Ratios   []Ratio   `json:"ratios"`
	Finished time.Time `json:"finished"`
}

// Env describes where the benchmark ran, so numbers are never read without
// their conditions.
type Env struct {
	Started           time.Time `json:"started"`
	GoVersion         string    `json:"go_version"`
	OS                string    `json:"os"`
	Arch              string    `json:"arch"`
	NumCPU            int       `json:"num_cpu"`
	GOMAXPROCS        int       `json:"gomaxprocs"`
	Memory            string    `json:"memory,omitempty"`
	Store             string    `json:"store"`
	StoreVersion      string    `json:"store_version,omitempty"`
	Hosts             []string  `json:"hosts,omitempty"`
	Keyspace          string    `json:"keyspace,omitempty"`
	ReplicationFactor int       `json:"replication_factor,omitempty"`
	DataDir           string    `json:"data_dir,omitempty"`
	NoSync            bool      `json:"no_sync,omitempty"`
	Consistency       string    `json:"consistency"`
	StorePID          int       `json:"store_pid,omitempty"`
	// LoadAvg and LoadAvgAfter are /proc/loadavg (1, 5, 15 minutes) before
	// and after the suite.
	LoadAvg      string `json:"load_avg,omitempty"`
	LoadAvgAfter string `json:"load_avg_after,omitempty"`
}

// Row is one measured scenario.
type Row struct {
	// Scenario is a human-readable name; Kind is a stable one: increments,
	// http, read, read_after_gc or read_after_rollup.
	Scenario string `json:"scenario"`
	Kind     string `json:"kind"`
	// Model is "sharded", "native", "events", "actor" or "cas"; Via is
	// "library", "http" or "cql".
	Model    string `json:"model"`
	Via      string `json:"via"`
	Counters int    `json:"counters"`
	// Concurrency is the number of callers of this row's run.
	Concurrency int `json:"concurrency"`
	// Shards is the number of live shards each read merges (read scenarios).
	Shards int `json:"shards,omitempty"`
	// Events is the number of un-rolled events each read adds (events reads).
	Events int `json:"events,omitempty"`
	// Started is when the run (its warm-up) began, to line rows up with
	// outside measurements such as the store's own CPU use.
	Started time.Time `json:"started"`

	Result

	// ShardWrites are the successful shard writes of the sharded model
	// over the whole run, warm-up included, and UpdatesPerWrite the mean
	// number of updates each acknowledged (the group commit size).
	ShardWrites       uint64  `json:"shard_writes,omitempty"`
	FailedShardWrites uint64  `json:"failed_shard_writes,omitempty"`
	UpdatesPerWrite   float64 `json:"updates_per_write,omitempty"`
	// ShardWriteMean is the mean latency of one shard write. A mutator has
	// one write in flight at a time, so on one hot counter throughput is
	// about UpdatesPerWrite / ShardWriteMean: latency, not store capacity,
	// bounds it.
	ShardWriteMean time.Duration `json:"shard_write_mean_ns,omitempty"`

	// ProcessCPU is the mean number of cores this process (load generator,
	// library and, for HTTP, the server) kept busy during the run; HostCPU
	// is the same for the whole machine, store included. -1 when unknown.
	ProcessCPU float64 `json:"process_cpu_cores"`
	HostCPU    float64 `json:"host_cpu_cores"`
	// StoreCPU is the same for the store's process when Config.StorePID
	// is set (-1 otherwise), averaged over the warm-up and the run.
	StoreCPU float64 `json:"store_cpu_cores"`

	// Check is the result of reading the counters back after the run.
	Check string `json:"check,omitempty"`
}

// Ratio compares the sharded model with the native baseline.
type Ratio struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	// Target is the bar from DESIGN.md §7, empty when there is none; Met
	// says whether Value reaches it.
	Target string `json:"target,omitempty"`
	Met    *bool  `json:"met,omitempty"`
}

func find(rows []Row, kind, model string, counters int) *Row {
	for i := range rows {
		r := &rows[i]
		if r.Kind == kind && r.Model == model && r.Counters == counters {
			return r
		}
	}
	return nil
}

// ratios derives the comparisons DESIGN.md §7 sets bars for.
func ratios(rows []Row) []Ratio {
	out := []Ratio{} // [] rather than null in JSON
	for _, r := range rows {
		if r.Kind != "increments" || r.Model != "native" || r.OpsPerSec <= 0 {
			continue
		}
		n := r.Counters
		if lib := find(rows, "increments", "sharded", n); lib != nil {
			ratio := Ratio{
				Name:  fmt.Sprintf("increments/s over %s: sharded (library) / native", plural(n, "counter")),
				Value: lib.OpsPerSec / r.OpsPerSec,
			}
			switch n {
			case 1:
				ratio.Target, ratio.Met = "≥ 10×", isMet(ratio.Value >= 10)
			case 100:
				ratio.Target, ratio.Met = "≥ 2×", isMet(ratio.Value >= 2)
			}
			out = append(out, ratio)
			if lib.StoreCPU > 0 && r.StoreCPU > 0 {
				// Updates per second of store CPU: what each model costs the
				// database, independent of how much CPU it could get.
				out = append(out, Ratio{
					Name:  fmt.Sprintf("increments per store CPU-second over %s: sharded (library) / native", plural(n, "counter")),
					Value: (lib.OpsPerSec / lib.StoreCPU) / (r.OpsPerSec / r.StoreCPU),
				})
			}
		}
		for _, m := range Models {
			mr := find(rows, "increments", m, n)
			if mr == nil {
				continue
			}
			ratio := Ratio{
				Name:  fmt.Sprintf("increments/s over %s: %s / native", plural(n, "counter"), m),
				Value: mr.OpsPerSec / r.OpsPerSec,
			}
			if m == ModelEvents {
				ratio.Target, ratio.Met = "≥ 1×", isMet(ratio.Value >= 1)
			}
			out = append(out, ratio)
		}
		if h := find(rows, "http", "sharded", n); h != nil {
			out = append(out, Ratio{
				Name:  fmt.Sprintf("increments/s over %s: sharded (HTTP) / native", plural(n, "counter")),
				Value: h.OpsPerSec / r.OpsPerSec,
			})
		}
	}
	nat := find(rows, "read", "native", 1)
	if nat != nil && nat.P50 > 0 {
		for _, r := range rows {
			if (r.Model != "sharded" && r.Model != ModelEvents) || (r.Kind != "read" && r.Kind != "read_after_gc" && r.Kind != "read_after_rollup") {
				continue
			}
			ratio := Ratio{
				Name:  fmt.Sprintf("read p50 latency: %s (%s) / native", r.Model, r.Scenario),
				Value: float64(r.P50) / float64(nat.P50),
			}
			if r.Kind == "read_after_gc" || r.Kind == "read_after_rollup" {
				ratio.Target, ratio.Met = "≤ 2×", isMet(ratio.Value <= 2)
			}
			out = append(out, ratio)
			if (r.Kind == "read_after_gc" || r.Kind == "read_after_rollup") && nat.P99 > 0 {
				out = append(out, Ratio{
					Name:  fmt.Sprintf("read p99 latency: %s (%s) / native", r.Model, r.Scenario),
					Value: float64(r.P99) / float64(nat.P99),
				})
			}
		}
	}
	return out
}

func isMet(b bool) *bool { return &b }

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// fmtDuration prints latencies in µs below a millisecond and in ms with two
// decimals above, which keeps columns readable from embedded reads (tens of
// µs) to Cassandra tails (tens of ms).
func fmtDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}

func fmtCores(v float64) string {
	if v < 0 {
		return "?"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func fmtRatio(r Ratio) string {
	s := strconv.FormatFloat(r.Value, 'f', 2, 64) + "×"
	if r.Target != "" {
		verdict := "missed"
		if r.Met != nil && *r.Met {
			verdict = "met"
		}
		s += fmt.Sprintf(" (target %s: %s)", r.Target, verdict)
	}
	return s
}

// header names the table's columns; the "cpu store" column is left out of
// reports that did not sample a store process (see columns).
var header = []string{"scenario", "model", "counters", "ops/s", "p50", "p99", "p99.9", "max", "errors", "upd/write", "write avg", "cpu bench", "cpu store", "cpu host"}

const storeColumn = 12

// columns returns the header and rows of the table.
func (rep *Report) columns() ([]string, [][]string) {
	withStore := false
	for _, r := range rep.Rows {
		withStore = withStore || r.StoreCPU >= 0
	}
	drop := func(c []string) []string {
		if withStore {
			return c
		}
		return append(append([]string(nil), c[:storeColumn]...), c[storeColumn+1:]...)
	}
	rows := make([][]string, len(rep.Rows))
	for i, r := range rep.Rows {
		rows[i] = drop(r.cells())
	}
	return drop(header), rows
}

func (r Row) cells() []string {
	upw := "-"
	if r.UpdatesPerWrite > 0 {
		upw = strconv.FormatFloat(r.UpdatesPerWrite, 'f', 1, 64)
	}
	return []string{
		r.Scenario, r.Model, strconv.Itoa(r.Counters),
		strconv.FormatFloat(r.OpsPerSec, 'f', 0, 64),
		fmtDuration(r.P50), fmtDuration(r.P99), fmtDuration(r.P999), fmtDuration(r.Max),
		strconv.FormatUint(r.Errors, 10), upw, fmtDuration(r.ShardWriteMean), fmtCores(r.ProcessCPU), fmtCores(r.StoreCPU), fmtCores(r.HostCPU),
	}
}

func (rep *Report) envLine() string {
	e := rep.Env
	store := e.Store
	if e.StoreVersion != "" {
		store += " " + e.StoreVersion
	}
	if len(e.Hosts) > 0 {
		store += " at " + strings.Join(e.Hosts, ",")
	}
	if e.Store == "embedded" {
		if e.NoSync {
			store += " (no fsync)"
		} else {
			store += " (fsync per write)"
		}
	}
	s := fmt.Sprintf("%s; %s %s/%s; %d CPUs (GOMAXPROCS %d)", store, e.GoVersion, e.OS, e.Arch, e.NumCPU, e.GOMAXPROCS)
	if e.Memory != "" {
		s += "; " + e.Memory
	}
	if e.Store == "cassandra" { // the embedded store has one replica and ignores levels
		s += "; consistency " + e.Consistency
	}
	s += fmt.Sprintf("; concurrency %d, warmup %v, duration %v",
		rep.Options.Concurrency, rep.Options.Warmup, rep.Options.Duration)
	if e.LoadAvg != "" {
		s += fmt.Sprintf("; load avg %s before, %s after", e.LoadAvg, e.LoadAvgAfter)
	}
	return s
}

// WriteText writes the results as an aligned plain-text table followed by
// the ratios.
func (rep *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, rep.envLine())
	fmt.Fprintln(tw)
	head, rows := rep.columns()
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return rep.writeTrailer(w, "")
}

// WriteMarkdown writes the results as a Markdown table followed by the
// ratios as a list.
func (rep *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", rep.envLine())
	head, rows := rep.columns()
	fmt.Fprintf(&b, "| %s |\n", strings.Join(head, " | "))
	align := make([]string, len(head))
	for i := range align {
		align[i] = "---:"
		if i < 2 {
			align[i] = "---"
		}
	}
	fmt.Fprintf(&b, "|%s|\n", strings.Join(align, "|"))
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s |\n", strings.Join(r, " | "))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	return rep.writeTrailer(w, "- ")
}

func (rep *Report) writeTrailer(w io.Writer, bullet string) error {
	var b strings.Builder
	if len(rep.Ratios) > 0 {
		b.WriteString("\n")
		for _, r := range rep.Ratios {
			fmt.Fprintf(&b, "%s%s: %s\n", bullet, r.Name, fmtRatio(r))
		}
	}
	var notes []string
	for _, r := range rep.Rows {
		if r.FirstError != "" {
			notes = append(notes, fmt.Sprintf("%s %s (%d counters): first error: %s", r.Scenario, r.Model, r.Counters, r.FirstError))
		}
		if strings.HasPrefix(r.Check, "MISMATCH") || strings.HasPrefix(r.Check, "not checked") {
			notes = append(notes, fmt.Sprintf("%s %s (%d counters): %s", r.Scenario, r.Model, r.Counters, r.Check))
		}
		if r.Interrupted {
			notes = append(notes, fmt.Sprintf("%s %s (%d counters): interrupted", r.Scenario, r.Model, r.Counters))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "%s%s\n", bullet, n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the report as indented JSON; durations are integer
// nanoseconds (fields ending in _ns).
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}
