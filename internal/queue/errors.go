package queue

import (
	"fmt"

	"github.com/abacusdb/abacus/internal/outcome"
)

// Errors returned by the queue engine, wrapped with detail; test with
// errors.Is. They are the outcome errors the root package re-exports
// (ErrQueueNotFound and the rest). A write whose outcome is unknown wraps
// driver.ErrUnknownOutcome: a put that may have queued its messages
// (retrying may queue them twice), or an acknowledgement that may not have
// deleted its message (it may be delivered again).
var (
	ErrInvalid      = outcome.ErrInvalid
	ErrNotFound     = outcome.ErrQueueNotFound
	ErrExists       = outcome.ErrQueueExists
	ErrTooLarge     = outcome.ErrMessageTooLarge
	ErrStaleReceipt = outcome.ErrStaleReceipt
	ErrStopped      = outcome.ErrConsumerStopped
)

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
