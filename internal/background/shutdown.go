package background

import (
	"context"
	"fmt"
)

// Shutdown refuses new work and waits until the work in flight has
// finished or ctx ends; the error then says so under name ("sharded:
// writes").
func (w *Work) Shutdown(ctx context.Context, name string) error {
	w.Close()
	if err := w.Wait(ctx); err != nil {
		return fmt.Errorf("%s still in flight: %w", name, err)
	}
	return nil
}
