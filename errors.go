package abacus

import (
	"errors"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/crdt"
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
	// acknowledgement may not have deleted its message. It takes
	// precedence: an error that is ErrUnknownOutcome may also wrap the
	// ErrUnavailable or ErrNotApplied of a later attempt or of a read that
	// followed, and still means the outcome is unknown.
	ErrUnknownOutcome = outcome.ErrUnknownOutcome

	// ErrNotApplied means the update was definitely not counted; retrying is safe.
	ErrNotApplied = outcome.ErrNotApplied

	// ErrRequestConflict means a RequestID was reused for a different update.
	ErrRequestConflict = outcome.ErrRequestConflict

	// ErrBelowFloor means a ledger debit would take the balance below the
	// namespace's floor (LedgerOptions.Floor). Nothing was written for it;
	// it is also ErrNotApplied.
	ErrBelowFloor = outcome.ErrBelowFloor

	// ErrRightsHeld means the balance above a ledger's floor would cover
	// the debit, but other servers hold it as rights to debit until they
	// go idle, close or their lease ends. Nothing was written for it; it
	// is also ErrNotApplied, and may succeed when retried.
	ErrRightsHeld = outcome.ErrRightsHeld

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

	// ErrDedupConflict means a message was put with a dedup id that, within
	// the de-duplication window, named a message with another body. The
	// first message stays as it was; nothing was written.
	ErrDedupConflict = outcome.ErrDedupConflict

	// ErrConsumerStopped is returned by QueueConsumer.Receive after the
	// consumer was stopped.
	ErrConsumerStopped = outcome.ErrConsumerStopped
)

func tag(sentinel, err error) error { return outcome.Tag(sentinel, err) }

// publicError makes an error from the driver match the Client's errors.
// The engines' refusals already do: each engine's sentinels (an actor's
// invalid set, a compare-and-set that lost every round, a ledger entry
// that would overflow) are tagged with the outcome they amount to where
// they are defined, so they pass through with their own messages. What is
// left is the storage seam's lower vocabulary: a driver's unknown outcome
// becomes ErrUnknownOutcome and its overflow ErrOverflow, so callers test
// one error whichever layer failed. An engine's verdict wins over the
// driver error it wraps: a write the engine knows was not applied is not
// an unknown outcome.
func publicError(err error) error {
	if err == nil {
		return nil
	}
	for _, verdict := range []error{ErrUnknownOutcome, ErrNotApplied, ErrRequestConflict, ErrVersionConflict, ErrOverflow, ErrInvalid} {
		if errors.Is(err, verdict) {
			return err
		}
	}
	switch {
	case errors.Is(err, driver.ErrOverflow):
		return tag(ErrOverflow, err)
	case errors.Is(err, driver.ErrUnknownOutcome):
		return tag(ErrUnknownOutcome, err)
	}
	return err
}
