package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/names"
)

// Deleting a queue.
//
// A delete marks the queue's record deleted; it does not remove it. Every
// process trusts a queue record it read for Config.PauseRefresh, and reads
// it again after that, so within that long of the delete no process takes
// anything more for the queue: every call answers ErrNotFound. The delete
// then removes the queue's messages and dead letters.
//
// The name can be used again once the delete is RecreateWait old: a new
// queue of the name is its next generation, and each generation keeps its
// rows under a stored name of its own (stored). So whatever reaches the
// old generation's rows after the delete — a put from a process that had
// not yet read the delete, a write that lands late — is never read by the
// new one: it is never delivered, listed or counted.

// stored is the name the queue's rows are kept under: the queue's name
// for its first generation (as before deletes existed), and the name, the
// reserved separator and the generation after that. No queue name holds
// the separator, so no two generations of any queues share a stored name.
func (q *Queue) stored() string {
	if q.Generation == 0 {
		return q.Name
	}
	return q.Name + names.Reserved + strconv.FormatInt(q.Generation, 10)
}

// sameGeneration reports whether a and b are one generation of one queue.
func sameGeneration(a, b *Queue) bool {
	return a.Name == b.Name && a.Generation == b.Generation && a.CreatedAt.Equal(b.CreatedAt)
}

// RecreateWait is how long after a delete its name stays taken. It covers
// the time every process may still trust the record it read before the
// delete, the skew between the deleter's clock and the creator's, and the
// puts in flight meanwhile (acknowledged up to a write timeout later):
// so a put is not acknowledged into the old generation after the new one
// exists.
func (s *Service) RecreateWait() time.Duration {
	return max(s.cfg.PauseRefresh, 0) + s.cfg.MaxClockSkew + recreateWriteMargin
}

// recreateWriteMargin bounds how long a put admitted before a process
// learnt of a delete may take to be acknowledged.
const recreateWriteMargin = 10 * time.Second

// DeleteResult is what Delete did.
type DeleteResult struct {
	// DeletedAt is the delete's time, as recorded (a repeat answers the
	// first delete's).
	DeletedAt time.Time
	// Messages and DeadLetters are how many rows this call removed.
	Messages, DeadLetters int
	// Leftover is why some rows could not be removed (nil when all
	// were). They belong to a deleted generation, which nothing reads
	// again; a repeat of the delete removes them.
	Leftover error
}

// removeTimeout bounds the removal of a deleted queue's rows, which goes
// on when the caller gives up: a delete cut short would leave them.
const removeTimeout = 30 * time.Minute

// Delete deletes a queue: within Config.PauseRefresh every process
// answers ErrNotFound for it, its consumers deliver nothing more,
// deliveries in hand and receipts can no longer be settled, and its
// messages and dead letters are removed. The name can be created again
// RecreateWait after the delete, and a queue made then starts empty.
//
// A delete is idempotent: repeated while the name is not made again (a
// retry of one whose answer was lost, say), it answers the first one's
// DeletedAt and removes whatever rows are left. ErrNotFound for a name
// that never was a queue.
func (s *Service) Delete(ctx context.Context, name string) (DeleteResult, error) {
	if err := ValidateName(name); err != nil {
		return DeleteResult{}, err
	}
	// The record itself, not a cached copy: the delete names the
	// generation it deletes.
	d, err := s.readRecord(ctx, name)
	if err != nil {
		return DeleteResult{}, err
	}
	q, err := queueFrom(d)
	if err != nil {
		return DeleteResult{}, err
	}
	if q.DeletedAt.IsZero() {
		at := s.now()
		err = s.store.DeleteQueue(ctx, &driver.DeleteQueueParams{Name: name, CreatedAt: q.CreatedAt, At: at})
		s.records.Forget(name)
		if errors.Is(err, driver.ErrNotFound) {
			// Deleted by another call meanwhile: answer as a repeat.
			at, err = s.deletedAt(ctx, q)
		}
		if err != nil {
			return DeleteResult{}, err
		}
		q.DeletedAt = at
	}
	res := DeleteResult{DeletedAt: q.DeletedAt}
	// The caller may give up; the removal goes on, as a delete cut short
	// would leave rows no call could reach but a repeat.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
	defer cancel()
	// A zero cutoff purges every message, however late it was put.
	rows, err := s.purgeRows(rctx, q, time.Time{}, time.Time{}, true)
	res.Messages, res.DeadLetters, res.Leftover = rows.Messages, rows.DeadLetters, err
	if res.Leftover != nil {
		s.log.Warn("queue: a deleted queue's rows were not all removed; they are never read again, and a repeat of the delete removes them", "queue", name, "err", res.Leftover)
	}
	return res, nil
}

// deletedAt reads when q's generation was deleted, after a delete of it
// was refused: ErrNotFound if it is not stored as deleted.
func (s *Service) deletedAt(ctx context.Context, q *Queue) (time.Time, error) {
	d, err := s.readRecord(ctx, q.Name)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return time.Time{}, err
	}
	if err != nil || d.Generation != q.Generation || !d.CreatedAt.Equal(q.CreatedAt) || d.DeletedAt.IsZero() {
		return time.Time{}, fmt.Errorf("%w: %q (changed by another call during the delete)", ErrNotFound, q.Name)
	}
	return d.DeletedAt, nil
}

// current answers ErrNotFound once q's generation is deleted, as this
// process knows it (read again once a refresh old).
func (s *Service) current(ctx context.Context, q *Queue) error {
	cur, err := s.Queue(ctx, q.Name)
	if err != nil {
		return err
	}
	if !sameGeneration(cur, q) {
		return fmt.Errorf("%w: %q was %w and made again", ErrNotFound, q.Name, errDeleted)
	}
	return nil
}

// errDeleted marks an ErrNotFound that comes from a record known to be
// deleted, not from one that could not be found: the one a running
// consumer stops for.
var errDeleted = errors.New("deleted")

func deletedError(q *Queue) error {
	return fmt.Errorf("%w: %q (%w at %s)", ErrNotFound, q.Name, errDeleted, q.DeletedAt.Format(time.RFC3339Nano))
}

// replaceDeleted creates d in place of the deleted record of its name,
// as its next generation, once the delete is RecreateWait old. It answers
// ErrExists for a live queue of the name and for one deleted too recently.
func (s *Service) replaceDeleted(ctx context.Context, d driver.Queue) (*Queue, error) {
	old, err := s.readRecord(ctx, d.Name)
	if errors.Is(err, ErrNotFound) {
		// Gone meanwhile (no release removes records; a store restored
		// from a backup might): create it as new.
		return s.createRecord(ctx, d, nil)
	}
	if err != nil {
		return nil, err
	}
	if old.DeletedAt.IsZero() {
		return nil, fmt.Errorf("%w: %q", ErrExists, d.Name)
	}
	if free := old.DeletedAt.Add(s.RecreateWait()); d.CreatedAt.Before(free) {
		return nil, fmt.Errorf("%w: %q was deleted at %s; the name can be created again from %s",
			ErrExists, d.Name, old.DeletedAt.Format(time.RFC3339), free.Format(time.RFC3339))
	}
	d.Generation = old.Generation + 1
	return s.createRecord(ctx, d, old)
}
