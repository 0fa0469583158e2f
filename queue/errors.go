package queue

import (
	"errors"
	"fmt"

	"github.com/abacusdb/abacus/driver"
)

// Errors returned by the queue engine. They are wrapped with detail; test
// with errors.Is.
var (
	// ErrInvalid means an argument is malformed (an empty or over-long
	// name, a negative delay, too few shards). Nothing was written.
	ErrInvalid = errors.New("invalid argument")

	// ErrNotFound means the queue does not exist.
	ErrNotFound = errors.New("queue not found")

	// ErrExists means a queue with that name already exists.
	ErrExists = errors.New("queue already exists")

	// ErrTooLarge means a message body exceeds Config.MaxBodyBytes.
	// Nothing was written.
	ErrTooLarge = errors.New("message body too large")

	// ErrStaleReceipt means a receipt no longer names the delivery it was
	// issued for: the message was delivered again, acknowledged, or moved
	// to the dead letters since.
	ErrStaleReceipt = errors.New("receipt is stale")

	// ErrUnknownOutcome means a write may or may not have happened: a put
	// that may have queued its messages (retrying may queue them twice),
	// or an acknowledgement that may not have deleted its message (it may
	// be delivered again). It wraps driver.ErrUnknownOutcome.
	ErrUnknownOutcome = driver.ErrUnknownOutcome

	// ErrUnavailable means the store could not reach enough replicas;
	// nothing was written.
	ErrUnavailable = driver.ErrUnavailable

	// ErrStopped is returned by Receive after the consumer was stopped.
	ErrStopped = errors.New("consumer stopped")
)

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
