package queue

import (
	"fmt"

	"github.com/abacusdb/abacus/internal/outcome"
)

// Errors returned by the queue engine, wrapped with detail; test with
// errors.Is. They are the outcome errors the root package re-exports
// (ErrQueueNotFound and the rest). ErrUnknownOutcome means a write may or
// may not have happened: a put that may have queued its messages (retrying
// may queue them twice), or an acknowledgement that may not have deleted
// its message (it may be delivered again); such errors wrap the driver's
// driver.ErrUnknownOutcome too.
var (
	ErrUnknownOutcome = outcome.ErrUnknownOutcome
	ErrInvalid        = outcome.ErrInvalid
	ErrNotFound       = outcome.ErrQueueNotFound
	ErrExists         = outcome.ErrQueueExists
	ErrTooLarge       = outcome.ErrMessageTooLarge
	ErrStaleReceipt   = outcome.ErrStaleReceipt
	ErrDedupConflict  = outcome.ErrDedupConflict
	ErrStopped        = outcome.ErrConsumerStopped
)

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
