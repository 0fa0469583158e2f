package server

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/abacusdb/abacus/api"
)

// clockGuard holds the latest comparison of this server's clock with the
// store's.
type clockGuard struct {
	skewed atomic.Bool  // certainly beyond Config.MaxClockSkew
	skew   atomic.Int64 // last measured skew, ns
}

// checkClock measures the skew once and updates the guard. A failed
// measurement (the store did not answer) keeps the previous verdict: the
// store being down is /readyz's business, not the clock's.
func (s *Server) checkClock(ctx context.Context) {
	if s.cfg.MaxClockSkew < 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r, ok, err := s.client.ClockSkew(ctx)
	if !ok {
		return
	}
	if err != nil {
		s.log.Warn("clock check failed", "err", err)
		return
	}
	s.clock.skew.Store(int64(r.Skew))
	s.metrics.clockSkew.Set(r.Skew.Seconds())
	beyond := r.Beyond(s.cfg.MaxClockSkew)
	was := s.clock.skewed.Swap(beyond)
	switch {
	case beyond:
		s.log.Error("clock skew beyond the limit: refusing writes until the clock is fixed",
			"skew", r.Skew, "uncertainty", r.Uncertainty, "max_clock_skew", s.cfg.MaxClockSkew)
	case was:
		s.log.Info("clock skew back within the limit: taking writes again", "skew", r.Skew)
	}
}

// watchClock re-checks the clock every Config.ClockCheckInterval until the
// returned stop function is called.
func (s *Server) watchClock() (stop func()) {
	if s.cfg.MaxClockSkew < 0 || s.cfg.ClockCheckInterval == 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(s.cfg.ClockCheckInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.checkClock(context.Background())
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

func (s *Server) clockError() error {
	return errorf(api.CodeUnavailable,
		"clock skew: this server's clock is %v off the store's, beyond the limit of %v; it takes no writes until its clock is fixed (nothing was written)",
		time.Duration(s.clock.skew.Load()).Round(time.Millisecond), s.cfg.MaxClockSkew)
}

// refuseWhenSkewed wraps a write handler: every timestamp this server
// writes comes from its clock, and the models' margins hold only while
// clocks agree, so a skewed server refuses instead of risking the data.
func (s *Server) refuseWhenSkewed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.clock.skewed.Load() {
			writeError(w, r, s.clockError())
			return
		}
		h(w, r)
	}
}
