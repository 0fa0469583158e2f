package bench

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// Files of a report directory (Report.WriteDir).
const (
	ReportMarkdown   = "report.md"
	ReportJSON       = "report.json"
	ThroughputPNG    = "throughput.png"
	LatencyCDFPNG    = "latency-cdf.png"
	AgingPNG         = "aging.png"
	reportDirPerm    = 0o755
	reportFilePerm   = 0o644
	reportChartTitle = "increments/s per model"
)

// WriteDir writes the report into dir, creating it: report.md (the
// conditions, the command line, the table, the ratios and the charts),
// report.json (WriteJSON), throughput.png (increments/s of every model
// for every counters setting) and latency-cdf.png (the write latency
// distribution of every model on the hot-counter setting). A chart with
// nothing to show (no increments rows) is left out and report.md says so.
func (rep *Report) WriteDir(dir string) error {
	if err := os.MkdirAll(dir, reportDirPerm); err != nil {
		return fmt.Errorf("bench: report directory: %w", err)
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ReportJSON), js.Bytes(), reportFilePerm); err != nil {
		return fmt.Errorf("bench: %w", err)
	}

	var charts []string // Markdown lines for the charts written
	if bc, ok := rep.throughputChart(); ok {
		line, err := writeChartPNG(dir, ThroughputPNG, bc.Title, bc.WritePNG)
		if err != nil {
			return err
		}
		charts = append(charts, line)
	}
	if cc, ok := rep.latencyChart(); ok {
		line, err := writeChartPNG(dir, LatencyCDFPNG, cc.Title, cc.WritePNG)
		if err != nil {
			return err
		}
		charts = append(charts, line)
	}
	if ac, ok := rep.agingChart(); ok {
		line, err := writeChartPNG(dir, AgingPNG, ac.Title, ac.WritePNG)
		if err != nil {
			return err
		}
		charts = append(charts, line)
	}
	for _, sc := range rep.steadyCharts() {
		line, err := writeChartPNG(dir, sc.file, sc.chart.Title, sc.chart.WritePNG)
		if err != nil {
			return err
		}
		charts = append(charts, line)
	}

	var md bytes.Buffer
	fmt.Fprintf(&md, "# abacus bench report\n\nStarted %s, finished %s (UTC).\n\n",
		rep.Env.Started.Format("2006-01-02 15:04:05"), rep.Finished.Format("2006-01-02 15:04:05"))
	if rep.Command != "" {
		fmt.Fprintf(&md, "```sh\n%s\n```\n\n", rep.Command)
	}
	if err := rep.WriteMarkdown(&md); err != nil {
		return err
	}
	md.WriteString("\n")
	if len(charts) == 0 {
		md.WriteString("No charts: the run measured no increments, no aging and no steady load.\n")
	}
	for _, c := range charts {
		fmt.Fprintf(&md, "%s\n\n", c)
	}
	if err := os.WriteFile(filepath.Join(dir, ReportMarkdown), md.Bytes(), reportFilePerm); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// throughputChart is increments/s per model (a group per row label, in
// the order they ran) and per counters setting (a bar each).
// writeChartPNG renders a chart with writePNG into the file named file in
// dir and returns the Markdown line that shows it under title. The chart is
// rendered in memory first so that a failed rendering leaves no file.
func writeChartPNG(dir, file, title string, writePNG func(io.Writer) error) (string, error) {
	var b bytes.Buffer
	if err := writePNG(&b); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, file), b.Bytes(), reportFilePerm); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	return fmt.Sprintf("![%s](%s)", title, file), nil
}

func (rep *Report) throughputChart() (BarChart, bool) {
	var groups []string
	var settings []int
	for _, r := range withoutSweepSteps(rep.Rows) {
		if r.Kind != "increments" && r.Kind != "http" {
			continue
		}
		if !slices.Contains(groups, r.label()) {
			groups = append(groups, r.label())
		}
		if !slices.Contains(settings, r.Counters) {
			settings = append(settings, r.Counters)
		}
	}
	if len(groups) == 0 {
		return BarChart{}, false
	}
	series := make([]string, len(settings))
	for i, n := range settings {
		series[i] = plural(n, "counter")
	}
	values := make([][]float64, len(groups))
	for g := range values {
		values[g] = slices.Repeat([]float64{-1}, len(settings))
	}
	for _, r := range withoutSweepSteps(rep.Rows) {
		if r.Kind != "increments" && r.Kind != "http" {
			continue
		}
		values[slices.Index(groups, r.label())][slices.Index(settings, r.Counters)] = r.OpsPerSec
	}
	return BarChart{Title: reportChartTitle + " (" + rep.Env.Store + ")", Unit: "ops/s", Groups: groups, Series: series, Values: values}, true
}

// hotSetting is the counters setting whose rows the latency chart shows:
// 1 (one hot counter) when it was measured, else the smallest.
func (rep *Report) hotSetting() (int, bool) {
	best, ok := 0, false
	for _, r := range rep.Rows {
		if r.Kind == "increments" && (!ok || r.Counters < best) {
			best, ok = r.Counters, true
		}
	}
	return best, ok
}

// latencyChart is the write latency distribution of every increments row
// of the hot setting.
func (rep *Report) latencyChart() (CDFChart, bool) {
	n, ok := rep.hotSetting()
	if !ok {
		return CDFChart{}, false
	}
	c := CDFChart{Title: fmt.Sprintf("write latency, increments over %s (%s)", plural(n, "counter"), rep.Env.Store)}
	for _, r := range withoutSweepSteps(rep.Rows) {
		if r.Kind == "increments" && r.Counters == n && len(r.LatencyCDF) > 0 {
			c.Lines = append(c.Lines, CDFLine{Name: r.label(), Points: r.LatencyCDF})
		}
	}
	return c, len(c.Lines) > 0
}
