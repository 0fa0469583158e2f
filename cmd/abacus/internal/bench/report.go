package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is everything one RunSuite measured.
type Report struct {
	Env     Env     `json:"env"`
	Options Options `json:"options"`
	// HotFraction and ReadRatio are the increments scenario's mix (see
	// Config).
	HotFraction float64 `json:"hot_fraction"`
	ReadRatio   float64 `json:"read_ratio"`
	// Command is the command line of the run, when the caller gave it.
	Command  string    `json:"command,omitempty"`
	Rows     []Row     `json:"rows"`
	Ratios   []Ratio   `json:"ratios"`
	Finished time.Time `json:"finished"`

	// Steady holds the steady scenario's runs (steady.go), whose writes
	// are also rows.
	Steady []SteadyRun `json:"steady,omitempty"`
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
	// http, read, read_after_gc, read_after_rollup, aging_read or steady
	// (the writes of a steady run; its reads are in Report.Steady).
	Scenario string `json:"scenario"`
	Kind     string `json:"kind"`
	// Model is one of Models; Via is "library", "http", "cql" (the raw CQL
	// native counter, the plain insert on Cassandra) or "pebble" (the plain
	// insert on the embedded store's engine).
	Model    string `json:"model"`
	Via      string `json:"via"`
	Counters int    `json:"counters"`
	// Concurrency is the number of callers of this row's run.
	Concurrency int `json:"concurrency"`
	// HotFraction and ReadRatio are the mix of this row's calls (see
	// Config); both 0 outside the increments scenario.
	HotFraction float64 `json:"hot_fraction,omitempty"`
	ReadRatio   float64 `json:"read_ratio,omitempty"`
	// Shards is the number of live shards each read merges (read scenarios).
	Shards int `json:"shards,omitempty"`
	// Events is the number of un-rolled events each read adds (events reads).
	Events int `json:"events,omitempty"`
	// Sweep is SweepStep or SweepSustainable for rows of a concurrency
	// sweep (Config.Sweep), empty otherwise.
	Sweep string `json:"sweep,omitempty"`
	// Day is the simulated day of an aging row, from 1, and Series the
	// line of the aging chart it belongs to.
	Day    int    `json:"day,omitempty"`
	Series string `json:"series,omitempty"`
	// StoredBytes is the size of the embedded store's files after an aging
	// row; 0 on Cassandra.
	StoredBytes int64 `json:"stored_bytes,omitempty"`
	// Trace is what Cassandra's tracing (the embedded driver's read
	// stats) reported of one read of an aging row's counter or ledger,
	// made after the row's run.
	Trace *ReadTrace `json:"trace,omitempty"`
	// Collection is what the day's collection of an aging row's counter
	// or ledger did before the row's reads: nil for native reads.
	Collection *Collection `json:"collection,omitempty"`
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

	// RSSPeak is the largest resident set size of this process seen while
	// the row ran (sampled every 100 ms), RSSEnd the one at its end, in
	// bytes; 0 where unknown (Linux only). The process holds the load
	// generator and the library, and on the embedded store the store too.
	RSSPeak int64 `json:"rss_peak_bytes,omitempty"`
	RSSEnd  int64 `json:"rss_end_bytes,omitempty"`

	// LatencyCDF is the distribution of the write latency of increments
	// rows (thinned, see ThinCDF), for plots.
	LatencyCDF []CDFPoint `json:"latency_cdf,omitempty"`

	// Check is the result of reading the counters back after the run.
	Check string `json:"check,omitempty"`
}

// label names the row's model and, when it is not the library, its path:
// "sharded", "native (cql)", "plain (pebble)", "sharded (http)".
func (r Row) label() string {
	if r.Via == "" || r.Via == "library" {
		return r.Model
	}
	return r.Model + " (" + r.Via + ")"
}

// ratioLabel is the row's name in the ratios.
func (r Row) ratioLabel() string {
	switch {
	case r.Model == ModelPlain:
		return "plain-insert ceiling"
	case r.Model == ModelSharded && r.Via == "library":
		return "sharded (library)"
	case r.Via == "http":
		return r.Model + " (HTTP)"
	case r.Model == ModelNative && r.Via == "library":
		return "native (library)"
	}
	return r.Model
}

// Ratio compares the sharded model with the native baseline.
type Ratio struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	// Target is the bar docs/benchmarks.md sets, empty when there is none; Met
	// says whether Value reaches it.
	Target string `json:"target,omitempty"`
	Met    *bool  `json:"met,omitempty"`
}

// find returns the first row of that kind, model and number of counters,
// and of that path unless via is "".
func find(rows []Row, kind, model, via string, counters int) *Row {
	for i := range rows {
		r := &rows[i]
		if r.Kind == kind && r.Model == model && r.Counters == counters && (via == "" || r.Via == via) {
			return r
		}
	}
	return nil
}

// ratios derives the comparisons docs/benchmarks.md sets bars for, and every
// model's share of the plain-insert ceiling.
//
// The baseline is the raw CQL native counter; the bars apply to it only.
// Without Cassandra the library's native model on the embedded store (an
// atomic add) stands in, and the ratios carry no target: the bars are set
// for Cassandra.
func ratios(rows []Row) []Ratio {
	out := []Ratio{} // [] rather than null in JSON
	rows = withoutSweepSteps(rows)
	var settings []int
	for _, r := range rows {
		if r.Kind == "increments" && !slices.Contains(settings, r.Counters) {
			settings = append(settings, r.Counters)
		}
	}
	for _, n := range settings {
		base, baseName, bars := find(rows, "increments", ModelNative, "cql", n), "native", true
		if base == nil {
			base, baseName, bars = find(rows, "increments", ModelNative, "library", n), "native (library)", false
		}
		if base != nil && base.OpsPerSec > 0 {
			for i := range rows {
				r := &rows[i]
				if r == base || r.Counters != n || (r.Kind != "increments" && r.Kind != "http") {
					continue
				}
				ratio := Ratio{
					Name:  fmt.Sprintf("increments/s over %s: %s / %s", plural(n, "counter"), r.ratioLabel(), baseName),
					Value: r.OpsPerSec / base.OpsPerSec,
				}
				// The bars are set for writes only, uniform over the
				// counters: a skewed or mixed run is compared without them.
				plainLoad := r.ReadRatio == 0 && base.ReadRatio == 0 && (n == 1 || (r.HotFraction == 0 && base.HotFraction == 0))
				if bars && plainLoad && r.Kind == "increments" && r.Via == "library" {
					switch {
					case r.Model == ModelSharded && n == 1:
						ratio.Target, ratio.Met = "≥ 10×", isMet(ratio.Value >= 10)
					case r.Model == ModelSharded && n == 100:
						ratio.Target, ratio.Met = "≥ 2×", isMet(ratio.Value >= 2)
					case r.Model == ModelEvents:
						ratio.Target, ratio.Met = "≥ 1×", isMet(ratio.Value >= 1)
					}
				}
				out = append(out, ratio)
				if r.Kind == "increments" && r.Model == ModelSharded && r.StoreCPU > 0 && base.StoreCPU > 0 {
					// Updates per second of store CPU: what each model costs
					// the database, independent of how much CPU it could get.
					out = append(out, Ratio{
						Name:  fmt.Sprintf("increments per store CPU-second over %s: sharded (library) / %s", plural(n, "counter"), baseName),
						Value: (r.OpsPerSec / r.StoreCPU) / (base.OpsPerSec / base.StoreCPU),
					})
				}
			}
			if base.ReadP50 > 0 {
				for i := range rows {
					r := &rows[i]
					if r == base || r.Counters != n || r.Kind != "increments" || r.ReadP50 <= 0 {
						continue
					}
					out = append(out, Ratio{
						Name:  fmt.Sprintf("read p50 latency in the mix over %s: %s / %s", plural(n, "counter"), r.ratioLabel(), baseName),
						Value: float64(r.ReadP50) / float64(base.ReadP50),
					})
				}
			}
		}
		if pl := find(rows, "increments", ModelPlain, "", n); pl != nil && pl.OpsPerSec > 0 {
			for i := range rows {
				r := &rows[i]
				if r == pl || r.Counters != n || (r.Kind != "increments" && r.Kind != "http") {
					continue
				}
				out = append(out, Ratio{
					Name:  fmt.Sprintf("increments/s over %s: %s / plain-insert ceiling", plural(n, "counter"), r.ratioLabel()),
					Value: r.OpsPerSec / pl.OpsPerSec,
				})
			}
		}
	}
	out = append(out, agingRatios(rows)...)
	nat := find(rows, "read", ModelNative, "cql", 1)
	if nat != nil && nat.P50 > 0 {
		for _, r := range rows {
			if (r.Model != ModelSharded && r.Model != ModelEvents) || (r.Kind != "read" && r.Kind != "read_after_gc" && r.Kind != "read_after_rollup") {
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

// agingRatios compares, for each sharded or events series of the aging
// scenario, the read p50 of its last day with that of the first day that
// merged as many live shards or un-rolled events (the number of shards
// grows over the first days, until the first shards are folded), and with
// the native read of the last day; and the
// last day's read of the ledger of many actors with that of the ledger of
// one.
func agingRatios(rows []Row) []Ratio {
	series := map[string][]*Row{}
	var order []string
	for i := range rows {
		r := &rows[i]
		if r.Kind != "aging_read" || r.P50 <= 0 {
			continue
		}
		if _, ok := series[r.Series]; !ok {
			order = append(order, r.Series)
		}
		series[r.Series] = append(series[r.Series], r)
	}
	var out []Ratio
	nat := series["native read"]
	for _, name := range order {
		rs := series[name]
		last := rs[len(rs)-1]
		if one := series["ledger, one actor"]; last.Model == ModelLedger && name != "ledger, one actor" && len(one) > 0 && one[len(one)-1].Day == last.Day {
			out = append(out, Ratio{
				Name:  fmt.Sprintf("aging read p50, %s / %s, day %d (%s)", name, "ledger, one actor", last.Day, strings.TrimPrefix(last.Check, "ok: ")),
				Value: float64(last.P50) / float64(one[len(one)-1].P50),
			})
		}
		// What a sharded read merges is its live shards; an events read,
		// its rollup and its un-rolled events.
		size := func(r *Row) int { return r.Shards }
		what := "live shard"
		switch last.Model {
		case ModelSharded:
		case ModelEvents:
			size, what = func(r *Row) int { return r.Events }, "un-rolled event"
		default:
			continue
		}
		first := last
		for _, r := range rs {
			if size(r) == size(last) {
				first = r
				break
			}
		}
		if first != last {
			out = append(out, Ratio{
				Name:  fmt.Sprintf("aging read p50, %s: day %d / day %d (%s each)", name, last.Day, first.Day, plural(size(last), what)),
				Value: float64(last.P50) / float64(first.P50),
			})
		}
		if len(nat) > 0 {
			out = append(out, Ratio{
				Name:  fmt.Sprintf("aging read p50, %s, day %d / native read", name, last.Day),
				Value: float64(last.P50) / float64(nat[len(nat)-1].P50),
			})
		}
	}
	return append(out, collectionRatios(series, order)...)
}

// collectionRatios compares, for each aging series, the time of the last
// day's collection with that of the first day's collection that folded as
// much: a collection that slows down as the counter ages would show here.
func collectionRatios(series map[string][]*Row, order []string) []Ratio {
	var out []Ratio
	for _, name := range order {
		rs := series[name]
		last := rs[len(rs)-1]
		if last.Collection == nil || last.Collection.Folded == 0 || last.Collection.Took <= 0 {
			continue
		}
		for _, r := range rs {
			if c := r.Collection; c != nil && c.Folded == last.Collection.Folded && c.Took > 0 {
				if r != last {
					out = append(out, Ratio{
						Name:  fmt.Sprintf("aging collection time, %s: day %d / day %d (folded %d each)", name, last.Day, r.Day, c.Folded),
						Value: float64(last.Collection.Took) / float64(c.Took),
					})
				}
				break
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
	case d < time.Microsecond: // in-memory reads of the embedded store
		return fmt.Sprintf("%dns", d.Nanoseconds())
	case d < 10*time.Microsecond:
		return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
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

// column is one column of the table: its header, its cell of a row, and
// whether a report shows it at all (read and store columns only when
// something filled them).
type column struct {
	head string
	cell func(Row) string
	show func(rows []Row) bool
}

func always([]Row) bool { return true }

func anyRow(pred func(Row) bool) func([]Row) bool {
	return func(rows []Row) bool {
		for _, r := range rows {
			if pred(r) {
				return true
			}
		}
		return false
	}
}

var hasReads = anyRow(func(r Row) bool { return r.ReadOps+r.ReadErrors > 0 })

var columns = []column{
	{"scenario", func(r Row) string { return r.Scenario }, always},
	{"model", func(r Row) string { return r.label() }, always},
	{"counters", func(r Row) string { return strconv.Itoa(r.Counters) }, always},
	{"ops/s", func(r Row) string { return strconv.FormatFloat(r.OpsPerSec, 'f', 0, 64) }, always},
	{"p50", func(r Row) string { return fmtDuration(r.P50) }, always},
	{"p99", func(r Row) string { return fmtDuration(r.P99) }, always},
	{"p99.9", func(r Row) string { return fmtDuration(r.P999) }, always},
	{"max", func(r Row) string { return fmtDuration(r.Max) }, always},
	{"errors", func(r Row) string { return strconv.FormatUint(r.Errors, 10) }, always},
	{"reads/s", func(r Row) string { return strconv.FormatFloat(r.ReadOpsPerSec, 'f', 0, 64) }, hasReads},
	{"read p50", func(r Row) string { return fmtDuration(r.ReadP50) }, hasReads},
	{"read p99", func(r Row) string { return fmtDuration(r.ReadP99) }, hasReads},
	{"read p99.9", func(r Row) string { return fmtDuration(r.ReadP999) }, hasReads},
	{"read errors", func(r Row) string { return strconv.FormatUint(r.ReadErrors, 10) }, hasReads},
	{"upd/write", func(r Row) string {
		if r.UpdatesPerWrite > 0 {
			return strconv.FormatFloat(r.UpdatesPerWrite, 'f', 1, 64)
		}
		return "-"
	}, always},
	{"write avg", func(r Row) string { return fmtDuration(r.ShardWriteMean) }, always},
	{"cpu bench", func(r Row) string { return fmtCores(r.ProcessCPU) }, always},
	{"cpu store", func(r Row) string { return fmtCores(r.StoreCPU) }, anyRow(func(r Row) bool { return r.StoreCPU >= 0 })},
	{"cpu host", func(r Row) string { return fmtCores(r.HostCPU) }, always},
	{"rss peak", func(r Row) string { return fmtBytes(r.RSSPeak) }, always},
	{"rss end", func(r Row) string { return fmtBytes(r.RSSEnd) }, always},
	{"collection: took / folded / behind", func(r Row) string {
		if r.Collection == nil {
			return "-"
		}
		c := r.Collection
		behind := "nothing folded"
		if c.Behind > 0 {
			behind = fmtHours(c.Behind)
		}
		return fmtDuration(c.Took) + " / " + strconv.Itoa(c.Folded) + " / " + behind
	}, anyRow(func(r Row) bool { return r.Collection != nil })},
	{"traced read: live / tombstones", func(r Row) string {
		if r.Trace == nil {
			return "-"
		}
		return strconv.Itoa(r.Trace.Live) + " / " + strconv.Itoa(r.Trace.Tombstones)
	}, anyRow(func(r Row) bool { return r.Trace != nil })},
}

// fmtHours prints a simulated span in hours, to a tenth.
func fmtHours(d time.Duration) string {
	return strconv.FormatFloat(d.Hours(), 'f', 1, 64) + " h"
}

// fmtBytes prints a memory size in MiB; "?" when unknown.
func fmtBytes(b int64) string {
	if b <= 0 {
		return "?"
	}
	return strconv.FormatFloat(float64(b)/(1<<20), 'f', 0, 64) + " MiB"
}

// columns returns the header and rows of the table.
func (rep *Report) columns() ([]string, [][]string) {
	var cols []column
	for _, c := range columns {
		if c.show(rep.Rows) {
			cols = append(cols, c)
		}
	}
	head := make([]string, len(cols))
	for i, c := range cols {
		head[i] = c.head
	}
	rows := make([][]string, len(rep.Rows))
	for i, r := range rep.Rows {
		rows[i] = make([]string, len(cols))
		for j, c := range cols {
			rows[i][j] = c.cell(r)
		}
	}
	return head, rows
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
	if rep.HotFraction > 0 {
		s += fmt.Sprintf("; hot counter takes %.0f%% of calls", rep.HotFraction*100)
	}
	if rep.ReadRatio > 0 {
		s += fmt.Sprintf("; %.0f%% of increments-scenario calls are reads", rep.ReadRatio*100)
	}
	// The CPU and RSS of "bench" are of this one process, which is the
	// load generator, the library and, where there is one, the server.
	if e.Store == "embedded" {
		s += "; cpu bench and rss: load generator, library, HTTP server and embedded store in one process"
	} else {
		s += "; cpu bench and rss: load generator, library and HTTP server in one process"
	}
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
	if err := rep.writeSteady(w, false); err != nil {
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
	if err := rep.writeSteady(w, true); err != nil {
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
