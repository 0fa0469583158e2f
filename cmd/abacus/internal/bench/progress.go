package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progress reports one row while it runs. Without a terminal it writes
// the row's label when the row starts and its result when it ends, one
// line per row, which suits logs and pipes. On a terminal (Config.
// ProgressBar) it redraws the line in place with a bar, the percentage of
// the row's warm-up plus measured time gone, and the time elapsed, then
// replaces it with the result.
type progress struct {
	w       io.Writer
	bar     bool
	label   string
	start   time.Time
	warmup  time.Duration
	total   time.Duration
	mu      sync.Mutex // serialises writes from the ticker and finish
	stop    chan struct{}
	stopped chan struct{}
}

// progressTick is how often the bar is redrawn.
const progressTick = 200 * time.Millisecond

func startProgress(w io.Writer, bar bool, label string, warmup, duration time.Duration) *progress {
	p := &progress{w: w, bar: bar, label: label, start: time.Now(), warmup: warmup, total: warmup + duration,
		stop: make(chan struct{}), stopped: make(chan struct{})}
	if !bar {
		fmt.Fprintf(w, "%s warmup %v + %v ...", label, warmup, duration)
		close(p.stopped)
		return p
	}
	p.draw(time.Now())
	go tickUntil(progressTick, p.stop, p.stopped, p.draw)
	return p
}

// tickUntil calls f with the time of every tick of interval until stop is
// closed, and then closes done, so that the caller can wait for the last
// call to f to have returned.
func tickUntil(interval time.Duration, stop <-chan struct{}, done chan<- struct{}, f func(now time.Time)) {
	defer close(done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			f(now)
		}
	}
}

// barWidth is the number of cells of the bar.
const barWidth = 24

// line renders the bar at time now.
func (p *progress) line(now time.Time) string {
	el := now.Sub(p.start)
	frac := 1.0
	if p.total > 0 {
		frac = min(float64(el)/float64(p.total), 1)
	}
	fill := int(frac * barWidth)
	phase := "measuring"
	switch {
	case el < p.warmup:
		phase = "warm-up"
	case el >= p.total:
		phase = "finishing"
	}
	return fmt.Sprintf("%s [%s%s] %3.0f%% %5.1fs/%.1fs %s", p.label,
		strings.Repeat("#", fill), strings.Repeat(".", barWidth-fill), frac*100, el.Seconds(), p.total.Seconds(), phase)
}

func (p *progress) draw(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// \r returns to the line's start and ESC[K clears what a longer
	// previous rendering left behind.
	fmt.Fprintf(p.w, "\r\x1b[K%s", p.line(now))
}

// finish ends the row's line with its result.
func (p *progress) finish(result string) {
	if !p.bar {
		fmt.Fprintf(p.w, " %s\n", result)
		return
	}
	close(p.stop)
	<-p.stopped
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r\x1b[K%s %.1fs: %s\n", p.label, time.Since(p.start).Seconds(), result)
}
