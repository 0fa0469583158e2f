package bench

import (
	"errors"
	"image"
	"image/color"
	"io"
	"math"
	"strconv"
	"time"
)

// DayLine is one series of a DayChart: a latency per simulated day.
type DayLine struct {
	Name string
	// Days and Latencies are parallel: the latency measured on Days[i].
	Days      []int
	Latencies []time.Duration
}

// DayChart plots latencies against simulated days, on a logarithmic
// latency axis so that a flat line at 2 ms and one climbing to 2 s both
// show.
type DayChart struct {
	Title         string
	Lines         []DayLine
	Width, Height int // default 900 × 480
}

// WritePNG renders the chart as a PNG.
func (c DayChart) WritePNG(w io.Writer) error { return encodePNG(w, c.render) }

func (c DayChart) render() (*image.RGBA, error) {
	lo, hi := math.Inf(1), math.Inf(-1)
	lastDay := 1
	for _, l := range c.Lines {
		if len(l.Days) != len(l.Latencies) {
			return nil, errors.New("bench: a day chart line needs a latency per day")
		}
		for i, d := range l.Latencies {
			if d > 0 {
				lo, hi = math.Min(lo, float64(d)), math.Max(hi, float64(d))
			}
			lastDay = max(lastDay, l.Days[i])
		}
	}
	if math.IsInf(lo, 1) {
		return nil, errors.New("bench: a day chart needs at least one positive latency")
	}
	dLo, dHi, at := logDecades(lo, hi)
	img, plot := canvas(c.Width, c.Height, 900, 480)
	// The axis's name shares a row with the legend; a legend too wide to
	// leave it room takes the row, and the title names the scale instead.
	const axisName = "read latency p50 (log scale)"
	names := make([]string, len(c.Lines))
	for i, l := range c.Lines {
		names[i] = l.Name
	}
	title, axisRoom := c.Title, plot.Max.X-legendWidth(names) > 4+textWidth(axisName)+12
	if !axisRoom {
		title += "; latency on a log scale"
	}
	label(img, title, marginLeft, 16, ink)
	xOf := func(day int) int {
		return plot.Min.X + int(math.Round(float64(day)/float64(lastDay)*float64(plot.Dx())))
	}
	yOf := func(d float64) int {
		return plot.Max.Y - int(math.Round(at(d)*float64(plot.Dy())))
	}
	for dec := dLo; dec <= dHi; dec++ {
		y := yOf(math.Pow(10, dec))
		hline(img, plot.Min.X, plot.Max.X, y, gridColor)
		s := decadeLabel(time.Duration(math.Pow(10, dec)))
		label(img, s, plot.Min.X-6-textWidth(s), y+4, ink)
	}
	step := max(1, lastDay/10)
	for day := 0; day <= lastDay; day += step {
		x := xOf(day)
		vline(img, x, plot.Min.Y, plot.Max.Y, gridColor)
		s := strconv.Itoa(day)
		label(img, s, x-textWidth(s)/2, plot.Max.Y+16, ink)
	}
	label(img, "simulated day", plot.Min.X+(plot.Dx()-textWidth("simulated day"))/2, plot.Max.Y+34, ink)
	if axisRoom {
		label(img, axisName, 4, marginTop-12, ink)
	}
	for i, l := range c.Lines {
		polyline(img, seriesColor(i), len(l.Latencies), func(j int) (int, int, bool) {
			return xOf(l.Days[j]), yOf(float64(l.Latencies[j])), l.Latencies[j] > 0
		})
	}
	axes(img, plot)
	legendRow(img, names, plot.Max.X, marginTop-26)
	return img, nil
}

// agingChart is the p50 read latency of each aging series over the
// simulated days.
func (rep *Report) agingChart() (DayChart, bool) {
	var lines []DayLine
	index := map[string]int{}
	for _, r := range rep.Rows {
		if r.Kind != "aging_read" || r.P50 <= 0 {
			continue
		}
		name := r.Series
		i, ok := index[name]
		if !ok {
			i = len(lines)
			index[name] = i
			lines = append(lines, DayLine{Name: name})
		}
		lines[i].Days = append(lines[i].Days, r.Day)
		lines[i].Latencies = append(lines[i].Latencies, r.P50)
	}
	if len(lines) == 0 {
		return DayChart{}, false
	}
	return DayChart{Title: "Read latency p50 over simulated days (" + rep.Env.Store + ")", Lines: lines}, true
}

// polyline draws n points joined by lines, each with a dot so that a lone
// point shows; point j is skipped when ok is false (no value).
func polyline(img *image.RGBA, col color.Color, n int, point func(j int) (x, y int, ok bool)) {
	prevX, prevY := -1, -1
	for j := range n {
		x, y, ok := point(j)
		if !ok {
			continue
		}
		if prevX >= 0 {
			line(img, prevX, prevY, x, y, col)
		}
		for k := -2; k <= 2; k++ {
			line(img, x+k, y-2, x+k, y+2, col)
		}
		prevX, prevY = x, y
	}
}
