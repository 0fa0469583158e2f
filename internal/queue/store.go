package queue

import (
	"context"
	"errors"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/outcome"
)

// outcomeStore is the service's view of its store: a write whose outcome
// the driver could not learn also matches outcome.ErrUnknownOutcome, the
// one the root package re-exports, so a queue caller tests the same error
// as a counter caller. driver.ErrUnknownOutcome still matches too.
type outcomeStore struct{ driver.Queues }

func unknownOutcome(err error) error {
	if errors.Is(err, driver.ErrUnknownOutcome) && !errors.Is(err, outcome.ErrUnknownOutcome) {
		return outcome.Tag(outcome.ErrUnknownOutcome, err)
	}
	return err
}

func leaseOutcome(r driver.LeaseResult, err error) (driver.LeaseResult, error) {
	return r, unknownOutcome(err)
}

func (s outcomeStore) CreateQueue(ctx context.Context, p *driver.CreateQueueParams) error {
	return unknownOutcome(s.Queues.CreateQueue(ctx, p))
}

func (s outcomeStore) DeleteQueue(ctx context.Context, p *driver.DeleteQueueParams) error {
	return unknownOutcome(s.Queues.DeleteQueue(ctx, p))
}

func (s outcomeStore) PutMessages(ctx context.Context, p *driver.PutMessagesParams) error {
	return unknownOutcome(s.Queues.PutMessages(ctx, p))
}

func (s outcomeStore) PutDedupMessage(ctx context.Context, p *driver.PutDedupParams) (*driver.PutDedupResult, error) {
	r, err := s.Queues.PutDedupMessage(ctx, p)
	return r, unknownOutcome(err)
}

func (s outcomeStore) UpdateMessages(ctx context.Context, p *driver.UpdateMessagesParams) error {
	return unknownOutcome(s.Queues.UpdateMessages(ctx, p))
}

func (s outcomeStore) DeleteMessages(ctx context.Context, p *driver.DeleteMessagesParams) error {
	return unknownOutcome(s.Queues.DeleteMessages(ctx, p))
}

func (s outcomeStore) AcquireLease(ctx context.Context, p *driver.LeaseParams) (driver.LeaseResult, error) {
	return leaseOutcome(s.Queues.AcquireLease(ctx, p))
}

func (s outcomeStore) RenewLease(ctx context.Context, p *driver.LeaseParams) (driver.LeaseResult, error) {
	return leaseOutcome(s.Queues.RenewLease(ctx, p))
}

func (s outcomeStore) ReleaseLease(ctx context.Context, p *driver.LeaseParams) (driver.LeaseResult, error) {
	return leaseOutcome(s.Queues.ReleaseLease(ctx, p))
}

func (s outcomeStore) SetFloor(ctx context.Context, p *driver.SetFloorParams) error {
	return unknownOutcome(s.Queues.SetFloor(ctx, p))
}

func (s outcomeStore) DeadLetter(ctx context.Context, p *driver.DeadLetterParams) error {
	return unknownOutcome(s.Queues.DeadLetter(ctx, p))
}

func (s outcomeStore) DeleteDead(ctx context.Context, p *driver.DeleteDeadParams) error {
	return unknownOutcome(s.Queues.DeleteDead(ctx, p))
}
