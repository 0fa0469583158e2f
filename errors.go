package abacus

import (
	"errors"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/actor"
	"github.com/abacusdb/abacus/internal/cas"
	"github.com/abacusdb/abacus/internal/crdt"
	"github.com/abacusdb/abacus/internal/events"
	"github.com/abacusdb/abacus/internal/ledger"
	"github.com/abacusdb/abacus/internal/outcome"
)

// Errors returned by the Client. They are wrapped with detail; test with
// errors.Is. Each is defined once, in internal/outcome, and the engines
// return the same values, so a test matches whichever layer failed.
var (
	// ErrInvalid means an argument is malformed (an empty or over-long name,
	// an unknown model or type). Nothing was changed.
	ErrInvalid = outcome.ErrInvalid

	// ErrNamespaceNotFound means the namespace does not exist.
	ErrNamespaceNotFound = outcome.ErrNamespaceNotFound

	// ErrNamespaceExists means a namespace with that name already exists.
	ErrNamespaceExists = outcome.ErrNamespaceExists

	// ErrWrongType means the update does not fit the namespace's type (an
	// item for a sum counter, a delta for a distinct counter). Nothing was
	// changed.
	ErrWrongType = outcome.ErrWrongType

	// ErrOverflow means the update would take the counter outside the int64
	// range. Nothing was changed.
	ErrOverflow = crdt.ErrOverflow

	// ErrUnknownOutcome means the update may or may not have been counted.
	// Retrying with the same RequestID on the same process is safe. From
	// the queues it means a put may have queued its messages, or an
	// acknowledgement may not have deleted its message.
	ErrUnknownOutcome = outcome.ErrUnknownOutcome

	// ErrNotApplied means the update was definitely not counted; retrying is safe.
	ErrNotApplied = outcome.ErrNotApplied

	// ErrRequestConflict means a RequestID was reused for a different update.
	ErrRequestConflict = outcome.ErrRequestConflict

	// ErrVersionConflict means an actor set carries a version already
	// stored with a different value. Nothing was changed.
	ErrVersionConflict = outcome.ErrVersionConflict

	// ErrWrongModel means the operation does not fit the namespace's model
	// (a set on an events namespace, a clear of a native counter, an
	// increment of an actor counter). Nothing was changed.
	ErrWrongModel = outcome.ErrWrongModel

	// ErrTooLate means an events-model increment (or clear) carries an
	// event time at or before the point up to which the counter may already
	// be rolled up: counting it could count a retry twice. Nothing was
	// written; the increment is either already counted (a retry) or lost.
	ErrTooLate = outcome.ErrTooLate

	// ErrUnavailable means the store could not reach enough replicas.
	ErrUnavailable = driver.ErrUnavailable

	// ErrQueueNotFound means the queue does not exist.
	ErrQueueNotFound = outcome.ErrQueueNotFound

	// ErrQueueExists means a queue with that name already exists.
	ErrQueueExists = outcome.ErrQueueExists

	// ErrMessageTooLarge means a message body exceeds
	// QueuesConfig.MaxBodyBytes. Nothing was written.
	ErrMessageTooLarge = outcome.ErrMessageTooLarge

	// ErrStaleReceipt means a receipt no longer names the delivery it was
	// issued for: the message was delivered again, acknowledged, or moved
	// to the dead letters since.
	ErrStaleReceipt = outcome.ErrStaleReceipt

	// ErrConsumerStopped is returned by QueueConsumer.Receive after the
	// consumer was stopped.
	ErrConsumerStopped = outcome.ErrConsumerStopped
)

func tag(sentinel, err error) error { return outcome.Tag(sentinel, err) }

// publicError makes an error from an engine or the driver match the
// Client's errors. The engines' own refusals (an actor's invalid set, a
// compare-and-set that lost every round, a ledger entry that would
// overflow) keep their messages and gain the outcome they amount to. A
// driver's unknown outcome becomes ErrUnknownOutcome, so callers test one
// error whichever layer timed out.
func publicError(err error) error {
	var sentinel error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrUnknownOutcome):
		return err
	case errors.Is(err, ledger.ErrNotApplied):
		sentinel = ErrNotApplied
	case errors.Is(err, ledger.ErrRequestConflict):
		sentinel = ErrRequestConflict
	case errors.Is(err, ledger.ErrOverflow):
		sentinel = ErrOverflow
	case errors.Is(err, ledger.ErrInvalidEntry):
		sentinel = ErrInvalid
	case errors.Is(err, actor.ErrVersionConflict):
		sentinel = ErrVersionConflict
	case errors.Is(err, events.ErrInvalid), errors.Is(err, actor.ErrInvalid):
		sentinel = ErrInvalid
	case errors.Is(err, events.ErrNotApplied), errors.Is(err, cas.ErrContention), errors.Is(err, cas.ErrNotApplied):
		sentinel = ErrNotApplied
	case errors.Is(err, cas.ErrOverflow), errors.Is(err, actor.ErrOverflow), errors.Is(err, driver.ErrOverflow):
		sentinel = ErrOverflow
	case errors.Is(err, driver.ErrUnknownOutcome):
		sentinel = ErrUnknownOutcome
	default:
		return err
	}
	return tag(sentinel, err)
}
