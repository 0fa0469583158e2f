package bench

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"
)

// rssBytes returns the resident set size of this process (VmRSS in
// /proc/self/status), Linux only. The benchmark's "server" (the library,
// the embedded store, the HTTP server) runs in this process next to the
// load generator, so this is their memory together.
func rssBytes() (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	return statusKB(b, "VmRSS:")
}

// statusKB returns a "Name:   123 kB" field of a /proc status file in bytes.
func statusKB(b []byte, field string) (int64, bool) {
	for line := range bytes.Lines(b) {
		rest, ok := bytes.CutPrefix(line, []byte(field))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || kb < 0 {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}

// rssSampler records the largest RSS seen while a row runs. VmHWM, the
// kernel's own peak, covers the process's whole life (the peak of an
// earlier row would stick), so the peak is sampled instead: a spike
// shorter than the interval can be missed, a lasting one cannot.
type rssSampler struct {
	mu   sync.Mutex
	peak int64
	ok   bool
	stop chan struct{}
	done chan struct{}
}

// startRSS samples now and then every interval until Stop.
func startRSS(interval time.Duration) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{})}
	s.sample()
	go tickUntil(interval, s.stop, s.done, func(time.Time) { s.sample() })
	return s
}

func (s *rssSampler) sample() (int64, bool) {
	v, ok := rssBytes()
	if ok {
		s.mu.Lock()
		s.peak, s.ok = max(s.peak, v), true
		s.mu.Unlock()
	}
	return v, ok
}

// Stop ends the sampling and returns the peak and the RSS now; 0, 0 when
// RSS cannot be read here.
func (s *rssSampler) Stop() (peak, end int64) {
	close(s.stop)
	<-s.done
	end, ok := s.sample()
	if !ok {
		end = 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ok {
		return 0, 0
	}
	return s.peak, end
}
