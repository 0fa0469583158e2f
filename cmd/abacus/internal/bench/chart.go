package bench

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// The charts of a report directory are drawn here with the standard image
// packages and the fixed 7×13 font of x/image: two small chart kinds do
// not justify a plotting library, and the output is byte-for-byte the same
// on every machine.

var (
	white     = color.RGBA{255, 255, 255, 255}
	ink       = color.RGBA{30, 30, 30, 255}
	gridColor = color.RGBA{225, 225, 225, 255}
	// palette holds distinguishable colours for series and lines.
	palette = []color.RGBA{
		{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
		{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
		{188, 189, 34, 255}, {23, 190, 207, 255},
	}
	face = basicfont.Face7x13
)

func seriesColor(i int) color.RGBA { return palette[i%len(palette)] }

// Chart margins, in pixels, around the plot area.
const (
	marginLeft   = 70
	marginRight  = 20
	marginTop    = 50
	marginBottom = 60
)

// BarChart is a grouped bar chart: a group of bars per entry of Groups
// along the x axis, a bar per entry of Series in each group.
type BarChart struct {
	Title  string
	Unit   string   // what the y axis counts, e.g. "ops/s"
	Groups []string // x axis labels
	Series []string // legend entries
	// Values[g][s] is the bar of series s in group g; a negative value or
	// NaN means no bar.
	Values        [][]float64
	Width, Height int // default 900 × 480
}

// WritePNG renders the chart as a PNG.
func (c BarChart) WritePNG(w io.Writer) error {
	img, _, err := c.render()
	if err != nil {
		return err
	}
	return png.Encode(w, img)
}

// render draws the chart and returns where each bar went, [group][series]
// (empty rectangles for missing bars), so tests can look at them.
func (c BarChart) render() (*image.RGBA, [][]image.Rectangle, error) {
	if len(c.Groups) == 0 || len(c.Series) == 0 {
		return nil, nil, errors.New("bench: a bar chart needs groups and series")
	}
	if len(c.Values) != len(c.Groups) {
		return nil, nil, fmt.Errorf("bench: %d value rows for %d groups", len(c.Values), len(c.Groups))
	}
	top := 0.0
	for g, vs := range c.Values {
		if len(vs) != len(c.Series) {
			return nil, nil, fmt.Errorf("bench: group %q has %d values for %d series", c.Groups[g], len(vs), len(c.Series))
		}
		for _, v := range vs {
			if v > top && !math.IsInf(v, 1) {
				top = v
			}
		}
	}
	img, plot := canvas(c.Width, c.Height, 900, 480)
	label(img, c.Title, marginLeft, 16, ink)
	ticks := niceTicks(top)
	yMax := ticks[len(ticks)-1]
	yOf := func(v float64) int { return plot.Max.Y - int(math.Round(v/yMax*float64(plot.Dy()))) }
	for _, t := range ticks {
		y := yOf(t)
		hline(img, plot.Min.X, plot.Max.X, y, gridColor)
		s := fmtCount(t)
		label(img, s, plot.Min.X-6-textWidth(s), y+4, ink)
	}
	label(img, c.Unit, 4, marginTop-12, ink)

	slot := float64(plot.Dx()) / float64(len(c.Groups))
	barW := max(int(slot*0.8/float64(len(c.Series))), 1)
	bars := make([][]image.Rectangle, len(c.Groups))
	for g, vs := range c.Values {
		bars[g] = make([]image.Rectangle, len(vs))
		x0 := plot.Min.X + int(float64(g)*slot+slot*0.1)
		for si, v := range vs {
			if !(v >= 0) || math.IsInf(v, 1) {
				continue
			}
			r := image.Rect(x0+si*barW, yOf(v), x0+(si+1)*barW-1, plot.Max.Y)
			draw.Draw(img, r, image.NewUniform(seriesColor(si)), image.Point{}, draw.Src)
			bars[g][si] = r
			if s := fmtCount(v); textWidth(s) <= barW+10 || len(vs) == 1 {
				label(img, s, r.Min.X+(barW-textWidth(s))/2, r.Min.Y-3, ink)
			}
		}
		// A name too wide for its slot goes on two lines, split at its
		// first space ("plain (pebble)").
		lines := []string{c.Groups[g]}
		if a, b, ok := strings.Cut(c.Groups[g], " "); ok && textWidth(c.Groups[g]) > int(slot)-4 {
			lines = []string{a, b}
		}
		for i, name := range lines {
			label(img, name, plot.Min.X+int(float64(g)*slot+(slot-float64(textWidth(name)))/2), plot.Max.Y+16+14*i, ink)
		}
	}
	axes(img, plot)
	// In the top margin, where no bar can be hidden under it.
	legendRow(img, c.Series, plot.Max.X, 22)
	return img, bars, nil
}

// CDFLine is one distribution of a CDFChart.
type CDFLine struct {
	Name   string
	Points []CDFPoint
}

// CDFChart plots latency distributions: latency on a logarithmic x axis,
// the cumulative fraction on the y axis in nines (50%, 90%, 99%, 99.9%,
// ...), where the tails that matter are spread out instead of squashed
// against 100%.
type CDFChart struct {
	Title         string
	Lines         []CDFLine
	Width, Height int // default 900 × 480
}

// cdfMaxNines is the top of the y axis: 99.99%.
const cdfMaxNines = 4

// WritePNG renders the chart as a PNG.
func (c CDFChart) WritePNG(w io.Writer) error { return encodePNG(w, c.render) }

// encodePNG writes what render draws as a PNG.
func encodePNG(w io.Writer, render func() (*image.RGBA, error)) error {
	img, err := render()
	if err != nil {
		return err
	}
	return png.Encode(w, img)
}

// logDecades returns the whole decades, at least one, that a logarithmic
// axis from lo to hi spans, and where a value falls on it (0 at the low
// end, 1 at the high end).
func logDecades(lo, hi float64) (dLo, dHi float64, at func(v float64) float64) {
	dLo = math.Floor(math.Log10(lo))
	dHi = math.Max(math.Ceil(math.Log10(hi)), dLo+1)
	return dLo, dHi, func(v float64) float64 { return (math.Log10(v) - dLo) / (dHi - dLo) }
}

func (c CDFChart) render() (*image.RGBA, error) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, l := range c.Lines {
		for _, p := range l.Points {
			if p.Latency > 0 {
				lo, hi = math.Min(lo, float64(p.Latency)), math.Max(hi, float64(p.Latency))
			}
		}
	}
	if math.IsInf(lo, 1) {
		return nil, errors.New("bench: a CDF chart needs at least one point of positive latency")
	}
	dLo, dHi, at := logDecades(lo, hi)
	img, plot := canvas(c.Width, c.Height, 900, 480)
	label(img, c.Title, marginLeft, 16, ink)
	xOf := func(d float64) int {
		return plot.Min.X + int(math.Round(at(d)*float64(plot.Dx())))
	}
	yOf := func(f float64) int {
		n := math.Min(Nines(f), cdfMaxNines)
		return plot.Max.Y - int(math.Round(n/cdfMaxNines*float64(plot.Dy())))
	}
	for dec := dLo; dec <= dHi; dec++ {
		x := xOf(math.Pow(10, dec))
		vline(img, x, plot.Min.Y, plot.Max.Y, gridColor)
		s := decadeLabel(time.Duration(math.Pow(10, dec)))
		label(img, s, x-textWidth(s)/2, plot.Max.Y+16, ink)
	}
	for _, f := range []float64{0, 0.5, 0.9, 0.99, 0.999, 0.9999} {
		y := yOf(f)
		hline(img, plot.Min.X, plot.Max.X, y, gridColor)
		s := strconv.FormatFloat(f*100, 'f', -1, 64) + "%"
		label(img, s, plot.Min.X-6-textWidth(s), y+4, ink)
	}
	label(img, "latency (log scale)", plot.Min.X+(plot.Dx()-textWidth("latency (log scale)"))/2, plot.Max.Y+34, ink)
	label(img, "share of calls at or below", 4, marginTop-12, ink)
	names := make([]string, len(c.Lines))
	for i, l := range c.Lines {
		names[i] = l.Name
		col := seriesColor(i)
		// A step plot: the fraction holds until the next bucket's bound.
		prevX, prevY := -1, -1
		for _, p := range l.Points {
			if p.Latency <= 0 {
				continue
			}
			x, y := xOf(float64(p.Latency)), yOf(p.Fraction)
			if prevX >= 0 {
				line(img, prevX, prevY, x, prevY, col)
				line(img, x, prevY, x, y, col)
			}
			prevX, prevY = x, y
		}
	}
	axes(img, plot)
	// Bottom right: the lines climb to the top there, and the bottom
	// right of a CDF is where no line goes.
	legend(img, names, plot.Max.X, plot.Max.Y-8-16*len(names))
	return img, nil
}

// canvas returns a white image of w × h (defaults dw × dh) and its plot
// area inside the margins.
func canvas(w, h, dw, dh int) (*image.RGBA, image.Rectangle) {
	if w <= 0 {
		w = dw
	}
	if h <= 0 {
		h = dh
	}
	w, h = max(w, marginLeft+marginRight+50), max(h, marginTop+marginBottom+50)
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.NewUniform(white), image.Point{}, draw.Src)
	return img, image.Rect(marginLeft, marginTop, w-marginRight, h-marginBottom)
}

func axes(img *image.RGBA, plot image.Rectangle) {
	hline(img, plot.Min.X, plot.Max.X, plot.Max.Y, ink)
	vline(img, plot.Min.X, plot.Min.Y, plot.Max.Y, ink)
}

// legend lists names with their colours, right-aligned at right, from top
// down, on a white box so grid and bars do not show through.
func legend(img *image.RGBA, names []string, right, top int) {
	w := 0
	for _, n := range names {
		w = max(w, textWidth(n))
	}
	x := right - w - 16
	draw.Draw(img, image.Rect(x-4, top-4, right, top+16*len(names)), image.NewUniform(white), image.Point{}, draw.Src)
	for i, n := range names {
		y := top + i*16
		draw.Draw(img, image.Rect(x, y, x+10, y+10), image.NewUniform(seriesColor(i)), image.Point{}, draw.Src)
		label(img, n, x+14, y+10, ink)
	}
}

// label draws s with its baseline at y.
func label(img *image.RGBA, s string, x, y int, c color.Color) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: face, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

// legendRow lists names with their colours on one line, right-aligned at
// right, from top down.
func legendRow(img *image.RGBA, names []string, right, top int) {
	x := right - legendWidth(names)
	for i, n := range names {
		draw.Draw(img, image.Rect(x, top, x+10, top+10), image.NewUniform(seriesColor(i)), image.Point{}, draw.Src)
		label(img, n, x+14, top+10, ink)
		x += 14 + textWidth(n) + 12
	}
}

// legendWidth is how wide legendRow draws names.
func legendWidth(names []string) int {
	w := 0
	for _, n := range names {
		w += 14 + textWidth(n) + 12
	}
	return w
}

// decadeLabel names a power-of-ten duration in ASCII (the 7×13 font has
// no µ): 10us, 1ms, 100ms, 1s.
func decadeLabel(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return strconv.FormatInt(int64(d), 10) + "ns"
	case d < time.Millisecond:
		return strconv.FormatInt(int64(d/time.Microsecond), 10) + "us"
	case d < time.Second:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	default:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
}

func textWidth(s string) int { return font.MeasureString(face, s).Ceil() }

func hline(img *image.RGBA, x0, x1, y int, c color.Color) {
	for x := x0; x <= x1; x++ {
		img.Set(x, y, c)
	}
}

func vline(img *image.RGBA, x, y0, y1 int, c color.Color) {
	for y := y0; y <= y1; y++ {
		img.Set(x, y, c)
	}
}

// line draws a two-pixel-wide straight line (DDA).
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	n := max(abs(x1-x0), abs(y1-y0), 1)
	for i := 0; i <= n; i++ {
		x := x0 + (x1-x0)*i/n
		y := y0 + (y1-y0)*i/n
		img.Set(x, y, c)
		img.Set(x+1, y, c)
		img.Set(x, y+1, c)
		img.Set(x+1, y+1, c)
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// niceTicks returns about five evenly spaced round values from 0 to at
// least top: steps of 1, 2 or 5 times a power of ten.
func niceTicks(top float64) []float64 {
	if !(top > 0) {
		return []float64{0, 1}
	}
	raw := top / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag * 10
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []float64
	for v := 0.0; ; v += step {
		ticks = append(ticks, v)
		if v >= top {
			return ticks
		}
	}
}

// fmtCount prints a throughput compactly: 950, 12.5k, 3.2M.
func fmtCount(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 0, 64) + "k"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	default:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
}
