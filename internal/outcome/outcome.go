package outcome

import "errors"

// The outcome errors. Their texts are what the public API has always said.
var (
	// ErrInvalid means an argument is malformed (an empty or over-long name,
	// an unknown model or type, a negative delay). Nothing was changed.
	ErrInvalid = errors.New("invalid argument")

	// ErrUnknownOutcome means the request may or may not have been applied:
	// the write that should persist it failed or timed out.
	ErrUnknownOutcome = errors.New("outcome unknown")

	// ErrNotApplied means the update was definitely not applied; retrying is
	// safe.
	ErrNotApplied = errors.New("update not applied")

	// ErrRequestConflict means a request id was reused for a different update.
	ErrRequestConflict = errors.New("request id already used for a different update")

	// ErrVersionConflict means an actor set carries a version already stored
	// with a different value. Nothing was changed.
	ErrVersionConflict = errors.New("version conflict")

	// ErrTooLate means an events-model increment (or clear) carries an event
	// time at or before the point up to which the counter may already be
	// rolled up. Nothing was written.
	ErrTooLate = errors.New("event is too late to de-duplicate")

	// ErrWrongModel means the operation does not fit the namespace's model.
	ErrWrongModel = errors.New("operation does not fit the namespace's model")

	// ErrWrongType means the update does not fit the namespace's type.
	ErrWrongType = errors.New("update does not fit the counter's type")

	// ErrNamespaceNotFound means the namespace does not exist.
	ErrNamespaceNotFound = errors.New("namespace not found")

	// ErrNamespaceExists means a namespace with that name already exists.
	ErrNamespaceExists = errors.New("namespace already exists")

	// ErrQueueNotFound means the queue does not exist.
	ErrQueueNotFound = errors.New("queue not found")

	// ErrQueueExists means a queue with that name already exists.
	ErrQueueExists = errors.New("queue already exists")

	// ErrMessageTooLarge means a message body exceeds the configured limit.
	ErrMessageTooLarge = errors.New("message body too large")

	// ErrStaleReceipt means a receipt no longer names the delivery it was
	// issued for.
	ErrStaleReceipt = errors.New("receipt is stale")

	// ErrDedupConflict means a message was put with a dedup id already
	// used, within the window, for a message with another body.
	ErrDedupConflict = errors.New("dedup id already used for another body")

	// ErrBelowFloor means a debit would take a ledger below its namespace's
	// floor, as far as the balance read shows. Nothing was written for it.
	ErrBelowFloor = errors.New("debit would take the balance below the floor")

	// ErrRightsHeld means the balance above a ledger's floor would cover a
	// debit, but other servers' actors hold it as their rights to debit
	// (until they go idle, close, or their lease runs out). Nothing was
	// written for it; it may succeed when retried.
	ErrRightsHeld = errors.New("the balance above the floor is held as debit rights by other servers")

	// ErrConsumerStopped means the consumer was stopped.
	ErrConsumerStopped = errors.New("consumer stopped")

	// ErrUnauthenticated means a request carried no API key, or one that
	// is malformed, unknown, revoked or wrong.
	ErrUnauthenticated = errors.New("not authenticated")

	// ErrKeyNotFound means no API key has that id.
	ErrKeyNotFound = errors.New("API key not found")
)
