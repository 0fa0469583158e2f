package abacus_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/internal/actor"
	"github.com/abacusdb/abacus/internal/cas"
	"github.com/abacusdb/abacus/internal/events"
	"github.com/abacusdb/abacus/internal/ledger"
)

// Each engine's refusal is, where it is defined, the outcome it amounts
// to: a caller tests the Client's errors, whichever engine refused, and
// the message stays the engine's own.
func TestEngineRefusalsAreOutcomes(t *testing.T) {
	t.Parallel()
	for public, engines := range map[error][]error{
		abacus.ErrNotApplied:      {ledger.ErrNotApplied, cas.ErrContention, cas.ErrNotApplied, events.ErrNotApplied, ledger.ErrBelowFloor, ledger.ErrRightsHeld},
		abacus.ErrBelowFloor:      {ledger.ErrBelowFloor},
		abacus.ErrRightsHeld:      {ledger.ErrRightsHeld},
		abacus.ErrRequestConflict: {ledger.ErrRequestConflict},
		abacus.ErrOverflow:        {ledger.ErrOverflow, actor.ErrOverflow, cas.ErrOverflow},
		abacus.ErrInvalid:         {ledger.ErrInvalidEntry, actor.ErrInvalid, events.ErrInvalid},
		abacus.ErrVersionConflict: {actor.ErrVersionConflict},
		abacus.ErrTooLate:         {events.ErrTooLate},
	} {
		for _, engine := range engines {
			err := fmt.Errorf("while doing it: %w", engine)
			if !errors.Is(err, public) || !errors.Is(err, engine) {
				t.Errorf("%q does not match both %q and its engine's error", err, public)
			}
			if engine != public && engine.Error() == public.Error() {
				t.Errorf("%q: the message is not the engine's own", err)
			}
		}
	}
}
