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
	for _, tc := range []struct {
		engine, public error
	}{
		{ledger.ErrNotApplied, abacus.ErrNotApplied},
		{ledger.ErrRequestConflict, abacus.ErrRequestConflict},
		{ledger.ErrOverflow, abacus.ErrOverflow},
		{ledger.ErrInvalidEntry, abacus.ErrInvalid},
		{actor.ErrInvalid, abacus.ErrInvalid},
		{actor.ErrOverflow, abacus.ErrOverflow},
		{actor.ErrVersionConflict, abacus.ErrVersionConflict},
		{cas.ErrContention, abacus.ErrNotApplied},
		{cas.ErrNotApplied, abacus.ErrNotApplied},
		{cas.ErrOverflow, abacus.ErrOverflow},
		{events.ErrInvalid, abacus.ErrInvalid},
		{events.ErrNotApplied, abacus.ErrNotApplied},
		{events.ErrTooLate, abacus.ErrTooLate},
	} {
		err := fmt.Errorf("while doing it: %w", tc.engine)
		if !errors.Is(err, tc.public) || !errors.Is(err, tc.engine) {
			t.Errorf("%q does not match both %q and its engine's error", err, tc.public)
		}
		if err.Error() != "while doing it: "+tc.engine.Error() || tc.engine.Error() == tc.public.Error() && tc.engine != tc.public {
			t.Errorf("%q: the message is not the engine's own", err)
		}
	}
}
