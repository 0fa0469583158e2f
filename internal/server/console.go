package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/abacusdb/abacus/internal/apikey"
	"github.com/abacusdb/abacus/internal/outcome"
)

// consoleGate gives the web console (internal/console) the API's checks:
// the same keys, the same rate limits, the same refusal of changes while
// the server's clock is off.
type consoleGate struct{ s *Server }

func (g consoleGate) Required() bool { return g.s.authOn.Load() }

func (g consoleGate) Authenticate(ctx context.Context, token string) (*apikey.Key, int, error) {
	key, err := g.s.cfg.Keys.Authenticate(ctx, token)
	switch {
	case errors.Is(err, outcome.ErrUnauthenticated):
		return nil, http.StatusUnauthorized, err
	case err != nil:
		return nil, http.StatusServiceUnavailable, fmt.Errorf("checking the API key: %w", err)
	}
	if wait, ok := g.s.limits.take(key); !ok {
		return nil, http.StatusTooManyRequests, fmt.Errorf("API key %q has used its %v requests per second on this server; retry after %v", key.ID, key.RatePerSecond, wait.Round(time.Millisecond))
	}
	return key, http.StatusOK, nil
}

func (g consoleGate) RefuseChange() error {
	if g.s.clock.skewed.Load() {
		return g.s.clockError()
	}
	return nil
}
