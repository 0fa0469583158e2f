package background

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Runner is an engine's background side: its work in flight and one
// sweeper. The zero value is open and sweeps nothing.
type Runner struct {
	Work
	sweeper Sweeper
}

// Sweep calls sweep every interval until Shutdown; an error it returns is
// logged as a warning under what ("gc sweep failed") and the next
// interval tries again. An interval of zero or less starts nothing.
func (r *Runner) Sweep(interval time.Duration, logger *slog.Logger, what string, sweep func(context.Context) error) {
	r.sweeper.Start(interval, func(ctx context.Context) {
		if err := sweep(ctx); err != nil {
			logger.Warn(what, "err", err)
		}
	})
}

// Shutdown refuses new work, stops the sweeper (waiting for a sweep in
// progress) and waits until the work in flight has finished or ctx ends;
// the error then says so under name ("sharded: writes").
func (r *Runner) Shutdown(ctx context.Context, name string) error {
	r.Close()
	r.sweeper.Stop()
	if err := r.Wait(ctx); err != nil {
		return fmt.Errorf("%s still in flight: %w", name, err)
	}
	return nil
}
