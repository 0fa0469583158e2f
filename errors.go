package abacus

import (
	"errors"

	"github.com/abacusdb/abacus/crdt"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/events"
	"github.com/abacusdb/abacus/sharded"
)

// Errors returned by the Client. They are wrapped with detail; test with errors.Is.
var (
	// ErrInvalid means an argument is malformed (an empty or over-long name,
	// an unknown model or type). Nothing was changed.
	ErrInvalid = errors.New("invalid argument")

	// ErrNamespaceNotFound means the namespace does not exist.
	ErrNamespaceNotFound = errors.New("namespace not found")

	// ErrNamespaceExists means a namespace with that name already exists.
	ErrNamespaceExists = errors.New("namespace already exists")

	// ErrWrongType means the update does not fit the namespace's type (an
	// item for a sum counter, a delta for a distinct counter). Nothing was
	// changed.
	ErrWrongType = errors.New("update does not fit the counter's type")

	// ErrOverflow means the update would take the counter outside the int64
	// range. Nothing was changed.
	ErrOverflow = crdt.ErrOverflow

	// ErrUnknownOutcome means the update may or may not have been counted.
	// Retrying with the same RequestID on the same process is safe.
	ErrUnknownOutcome = sharded.ErrUnknownOutcome

	// ErrNotApplied means the update was definitely not counted; retrying is safe.
	ErrNotApplied = sharded.ErrNotApplied

	// ErrRequestConflict means a RequestID was reused for a different update.
	ErrRequestConflict = sharded.ErrRequestConflict

	// ErrVersionConflict means an actor set carries a version already
	// stored with a different value. Nothing was changed.
	ErrVersionConflict = errors.New("version conflict")

	// ErrWrongModel means the operation does not fit the namespace's model
	// (a set on an events namespace, a clear of a native counter, an
	// increment of an actor counter). Nothing was changed.
	ErrWrongModel = errors.New("operation does not fit the namespace's model")

	// ErrTooLate means an events-model increment (or clear) carries an
	// event time at or before the point up to which the counter may already
	// be rolled up: counting it could count a retry twice. Nothing was
	// written; the increment is either already counted (a retry) or lost.
	ErrTooLate = events.ErrTooLate

	// ErrUnavailable means the store could not reach enough replicas.
	ErrUnavailable = driver.ErrUnavailable
)

// tagged is err that also matches sentinel, with err's message alone: the
// model packages' errors already say what went wrong, and prefixing the
// Client's sentinel to them would say it twice.
type tagged struct{ sentinel, err error }

func (t *tagged) Error() string   { return t.err.Error() }
func (t *tagged) Unwrap() []error { return []error{t.err, t.sentinel} }

func tag(sentinel, err error) error { return &tagged{sentinel: sentinel, err: err} }

// wrapDriverError makes a driver's unknown outcome match ErrUnknownOutcome,
// so callers test one sentinel whichever layer timed out.
func wrapDriverError(err error) error {
	if errors.Is(err, driver.ErrUnknownOutcome) && !errors.Is(err, ErrUnknownOutcome) {
		return tag(ErrUnknownOutcome, err)
	}
	return err
}
