package bench

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func decodePNG(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	return img
}

// renderPNG renders a chart with writePNG, decodes it and fails unless it
// is width by height pixels; what names the size in the failure.
func renderPNG(t *testing.T, writePNG func(io.Writer) error, width, height int, what string) image.Image {
	t.Helper()
	var b bytes.Buffer
	if err := writePNG(&b); err != nil {
		t.Fatal(err)
	}
	img := decodePNG(t, b.Bytes())
	if img.Bounds().Dx() != width || img.Bounds().Dy() != height {
		t.Fatalf("%s %v", what, img.Bounds())
	}
	return img
}

// countColour counts the pixels of img that are exactly c.
func countColour(img image.Image, r image.Rectangle, c color.RGBA) int {
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if color.RGBAModel.Convert(img.At(x, y)) == c {
				n++
			}
		}
	}
	return n
}

func TestBarChart(t *testing.T) {
	t.Parallel()
	c := BarChart{
		Title: "t", Unit: "ops/s",
		Groups: []string{"sharded", "native", "plain"},
		Series: []string{"1 counter", "100 counters"},
		Values: [][]float64{{30_000, 3_500}, {3_400, -1}, {60_000, 55_000}},
		Width:  600, Height: 300,
	}
	img := renderPNG(t, c.WritePNG, 600, 300, "size")
	_, bars, err := c.render()
	if err != nil {
		t.Fatal(err)
	}
	// Every bar is drawn in its series' colour where render says it is,
	// and the decoded PNG shows it.
	for g, row := range c.Values {
		for s, v := range row {
			r := bars[g][s]
			if v < 0 {
				if !r.Empty() {
					t.Errorf("missing value %d/%d drawn at %v", g, s, r)
				}
				continue
			}
			if r.Empty() {
				t.Fatalf("bar %d/%d not drawn", g, s)
			}
			if got := countColour(img, r, seriesColor(s)); got < r.Dx()*r.Dy()*9/10 {
				t.Errorf("bar %d/%d: %d of %d pixels in its colour", g, s, got, r.Dx()*r.Dy())
			}
		}
	}
	// Heights follow the values: bigger is taller, and in proportion.
	h := func(g, s int) float64 { return float64(bars[g][s].Dy()) }
	if !(h(2, 0) > h(2, 1) && h(2, 1) > h(0, 0) && h(0, 0) > h(0, 1)) {
		t.Errorf("bar heights do not follow the values: %v", bars)
	}
	if ratio := h(2, 0) / h(0, 0); math.Abs(ratio-2) > 0.05 {
		t.Errorf("a bar for twice the value is %.2f× as tall", ratio)
	}
	// The labels drew dark text somewhere above the plot (the title).
	if countColour(img, image.Rect(0, 0, 600, marginTop), ink) == 0 {
		t.Error("no text in the title area")
	}

	for _, bad := range []BarChart{
		{},
		{Groups: []string{"a"}, Series: []string{"x"}},
		{Groups: []string{"a"}, Series: []string{"x", "y"}, Values: [][]float64{{1}}},
	} {
		if err := bad.WritePNG(&bytes.Buffer{}); err == nil {
			t.Errorf("no error for %+v", bad)
		}
	}
}

func TestCDFChart(t *testing.T) {
	t.Parallel()
	fast := []CDFPoint{{100 * time.Microsecond, 0.5}, {200 * time.Microsecond, 0.99}, {time.Millisecond, 1}}
	slow := []CDFPoint{{5 * time.Millisecond, 0.5}, {20 * time.Millisecond, 0.99}, {80 * time.Millisecond, 1}}
	c := CDFChart{Title: "latency", Lines: []CDFLine{{"fast", fast}, {"slow", slow}}}
	img := renderPNG(t, c.WritePNG, 900, 480, "default size")
	// The fast line lies left of the slow one: the mean x of each
	// colour's pixels inside the plot area.
	plot := image.Rect(marginLeft+1, marginTop, 900-marginRight, 480-marginBottom)
	meanX := func(c color.RGBA) float64 {
		var sum, n float64
		for y := plot.Min.Y; y < plot.Max.Y; y++ {
			for x := plot.Min.X; x < plot.Max.X; x++ {
				if color.RGBAModel.Convert(img.At(x, y)) == c {
					sum += float64(x)
					n++
				}
			}
		}
		if n == 0 {
			t.Fatalf("no pixel of colour %v in the plot", c)
		}
		return sum / n
	}
	if f, s := meanX(seriesColor(0)), meanX(seriesColor(1)); f >= s {
		t.Errorf("fast line at x %.0f, slow at %.0f", f, s)
	}
	if err := (CDFChart{}).WritePNG(&bytes.Buffer{}); err == nil {
		t.Error("no error for a chart without points")
	}
}

func TestNiceTicks(t *testing.T) {
	t.Parallel()
	for _, top := range []float64{0.3, 7, 42, 999, 31_234, 5e6} {
		ticks := niceTicks(top)
		if ticks[0] != 0 || ticks[len(ticks)-1] < top || len(ticks) < 3 || len(ticks) > 12 {
			t.Errorf("niceTicks(%v) = %v", top, ticks)
		}
	}
}

func TestWriteDir(t *testing.T) {
	t.Parallel()
	hist := func(d time.Duration) []CDFPoint {
		var h Histogram
		for i := range 1000 {
			h.Record(d + time.Duration(i)*time.Microsecond)
		}
		return h.CDF()
	}
	rep := &Report{
		Env:     Env{Store: "embedded", GoVersion: "go1.x", NumCPU: 2, GOMAXPROCS: 2, LoadAvg: "1.00 2.00 3.00", LoadAvgAfter: "4.00 5.00 6.00"},
		Options: Options{Concurrency: 64, Duration: 5 * time.Second, Warmup: 2 * time.Second},
		Command: "abacus bench --duration 5s --report out",
		Rows: []Row{
			{Scenario: "increments", Kind: "increments", Model: "sharded", Via: "library", Counters: 1, Result: Result{Ops: 10, OpsPerSec: 20_000, P50: time.Millisecond}, LatencyCDF: hist(time.Millisecond)},
			{Scenario: "increments", Kind: "increments", Model: "plain", Via: "pebble", Counters: 1, Result: Result{Ops: 10, OpsPerSec: 40_000, P50: 300 * time.Microsecond}, LatencyCDF: hist(300 * time.Microsecond)},
			{Scenario: "increments", Kind: "increments", Model: "sharded", Via: "library", Counters: 100, Result: Result{Ops: 10, OpsPerSec: 9_000}},
		},
	}
	rep.Ratios = ratios(rep.Rows)
	dir := filepath.Join(t.TempDir(), "new", "report")
	if err := rep.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, ReportMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"```sh\nabacus bench --duration 5s --report out\n```", // the command
		"| scenario | model | counters | ops/s |",             // the table
		"| increments | plain (pebble) | 1 | 40000 |",
		"load avg 1.00 2.00 3.00 before, 4.00 5.00 6.00 after",            // the conditions
		"- increments/s over 1 counter: sharded (library) / plain-insert", // the ratios
		"![", ThroughputPNG, LatencyCDFPNG,
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	js, err := os.ReadFile(filepath.Join(dir, ReportJSON))
	if err != nil || !strings.Contains(string(js), `"latency_cdf"`) || !strings.Contains(string(js), `"command": "abacus bench`) {
		t.Errorf("report.json (%v):\n%.500s", err, js)
	}
	for _, name := range []string{ThroughputPNG, LatencyCDFPNG} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		img := decodePNG(t, b)
		if countColour(img, img.Bounds(), seriesColor(0)) == 0 || countColour(img, img.Bounds(), seriesColor(1)) == 0 {
			t.Errorf("%s lacks a series", name)
		}
	}

	// A report without increments has no charts, and says so.
	dir2 := t.TempDir()
	reads := &Report{Env: Env{Store: "embedded"}, Rows: []Row{{Scenario: "read", Kind: "read", Model: "sharded", Counters: 1}}}
	if err := reads.WriteDir(dir2); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir2, ThroughputPNG)); !os.IsNotExist(err) {
		t.Errorf("a throughput chart without increments: %v", err)
	}
	if md, _ := os.ReadFile(filepath.Join(dir2, ReportMarkdown)); !strings.Contains(string(md), "No charts") {
		t.Errorf("report.md does not say why there are no charts:\n%s", md)
	}
}
