package cassandra

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/abacusdb/abacus/driver"
)

// Namespaces and queues are the driver's two kinds of named records: one
// row per name, created once with a lightweight transaction, never
// changed, read one at a time or all together. The helpers here are that
// lifecycle; namespaces.go and queue.go supply the statements and rows.

// lwtAttempts bounds the attempts of a conditional insert whose outcome
// stays unknown.
const lwtAttempts = 5

// insertRecord inserts a named record with a lightweight transaction
// (INSERT ... IF NOT EXISTS), so of two processes racing to create the
// same name exactly one succeeds and the other gets driver.ErrExists. The
// commit uses the WriteConsistency level; Paxos uses SERIAL, so a name is created
// once across data centers.
//
// Paxos rounds that contend for one name often time out on Cassandra (the
// server gives up after cas_contention_timeout), leaving the outcome
// unknown. Such an attempt is resolved by trying again: the retry either
// applies, or returns the row that exists, and if same says that row is
// exactly the record being created, the earlier attempt was applied after
// all. This is the only write the driver repeats, and it does so because
// the repetition is itself conditional. After lwtAttempts unknown outcomes
// the error wraps driver.ErrUnknownOutcome.
func (d *Driver) insertRecord(ctx context.Context, op, kind, name, stmt string, vals []any, same func(existing map[string]any) bool) error {
	return d.insertRecordAt(ctx, d.cfg.WriteConsistency, op, kind, name, stmt, vals, same)
}

// insertRecordAt is insertRecord committing at configured.
func (d *Driver) insertRecordAt(ctx context.Context, configured driver.Consistency, op, kind, name, stmt string, vals []any, same func(existing map[string]any) bool) error {
	applied, _, err := d.insertIfNotExists(ctx, configured, op, kind, name, stmt, vals, same)
	if err != nil {
		return err
	}
	if !applied {
		return fmt.Errorf("cassandra: %s %q: %w", kind, name, driver.ErrExists)
	}
	return nil
}

// insertIfNotExists runs an INSERT … IF NOT EXISTS at configured,
// resubmitting it while its outcome is unknown (contending Paxos rounds
// time out). It reports whether the row is this insert's and, when not,
// the existing row. A resubmission that finds a row mine says is ours
// (an earlier attempt applied) counts as applied.
func (d *Driver) insertIfNotExists(ctx context.Context, configured driver.Consistency, op, kind, name, stmt string, vals []any, mine func(existing map[string]any) bool) (applied bool, existing map[string]any, _ error) {
	cl, err := level(driver.Default, configured)
	if err != nil {
		return false, nil, fmt.Errorf("cassandra: %s %q: %w", op, name, err)
	}
	var lastErr error
	// unknown remembers an attempt whose outcome is unknown: a later
	// attempt refused as unavailable (at a partition's start, a timeout,
	// then the nodes marked down) does not make the first one undone.
	unknown := false
	for attempt := range lwtAttempts {
		if attempt > 0 {
			if err := sleepCtx(ctx, lwtBackoff(attempt)); err != nil {
				break // lastErr holds the unknown outcome
			}
		}
		// When the insert is not applied Cassandra returns the existing
		// row; MapScanCAS accepts whatever columns come back.
		existing = map[string]any{}
		applied, err := d.session.Query(stmt, vals...).
			Consistency(cl).SerialConsistency(lwtSerial).
			MapScanCASContext(ctx, existing)
		if err == nil {
			return applied || (attempt > 0 && mine(existing)), existing, nil
		}
		lastErr = mapError(opWrite, err)
		unknown = unknown || errors.Is(lastErr, driver.ErrUnknownOutcome)
		if !errors.Is(lastErr, driver.ErrUnknownOutcome) || ctx.Err() != nil {
			break
		}
		d.log.Debug("cassandra: "+op+" outcome unknown; retrying", kind, name, "attempt", attempt+1, "err", err)
	}
	return false, nil, fmt.Errorf("cassandra: %s %q: %w", op, name, earlierUnknown(unknown, lastErr))
}

// earlierUnknown keeps the unknown outcome of an earlier attempt when the
// last one failed otherwise.
func earlierUnknown(unknown bool, last error) error {
	if unknown && !errors.Is(last, driver.ErrUnknownOutcome) {
		return fmt.Errorf("%w: an earlier attempt's outcome is unknown; the last failed with: %w", driver.ErrUnknownOutcome, last)
	}
	return last
}

// lwtBackoff spreads contending retries apart: 50ms, 100ms, 200ms, ...
// plus up to as much again at random.
func lwtBackoff(attempt int) time.Duration {
	base := 25 * time.Millisecond << attempt
	return base + rand.N(base)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// recordRow is a scanned row of a record table: dest gives gocql the
// targets of its columns.
type recordRow interface{ dest() []any }

// getRecord reads the named record at level read (the ReadConsistency
// level, for namespaces and queues), or driver.ErrNotFound.
func getRecord[T any, R any, PR interface {
	*R
	recordRow
}](ctx context.Context, d *Driver, read driver.Consistency, op, kind, name, stmt string, decode func(R) (*T, error)) (*T, error) {
	cl, err := level(driver.Default, read)
	if err != nil {
		return nil, fmt.Errorf("cassandra: %s %q: %w", op, name, err)
	}
	return getRecordAt[T, R, PR](ctx, d, cl, op, kind, name, stmt, decode)
}

// getRecordAt is getRecord at a level of the driver's own, such as SERIAL
// for telling whose conditional write landed.
func getRecordAt[T any, R any, PR interface {
	*R
	recordRow
}](ctx context.Context, d *Driver, cl gocql.Consistency, op, kind, name, stmt string, decode func(R) (*T, error)) (*T, error) {
	if err := d.begin(ctx, op); err != nil {
		return nil, err
	}
	iter := d.session.Query(stmt, name).Consistency(cl).IterContext(ctx)
	var r R
	found := iter.Scan(PR(&r).dest()...)
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: %s %q: %w", op, name, mapError(opRead, err))
	}
	if !found {
		return nil, fmt.Errorf("cassandra: %s %q: %w", kind, name, driver.ErrNotFound)
	}
	t, err := decode(r)
	if err != nil {
		return nil, fmt.Errorf("cassandra: %s %q: %w", op, name, err)
	}
	return t, nil
}

// listRecords reads every record at level read, page by
// page, and returns them sorted by name (nil when there are none). A row
// that cannot be decoded fails the whole listing rather than silently
// hiding a record.
func listRecords[T any, R any, PR interface {
	*R
	recordRow
}](ctx context.Context, d *Driver, read driver.Consistency, op, stmt string, decode func(R) (*T, error), name func(*T) string) ([]*T, error) {
	cl, err := d.beginAt(ctx, op, driver.Default, read)
	if err != nil {
		return nil, err
	}
	iter := d.session.Query(stmt).Consistency(cl).IterContext(ctx)
	var (
		out    []*T
		badRow error
	)
	for {
		var r R // fresh per row: gocql reuses the targets' memory
		if !iter.Scan(PR(&r).dest()...) {
			break
		}
		t, err := decode(r)
		if err != nil {
			badRow = err
			break
		}
		out = append(out, t)
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: %s: %w", op, mapError(opRead, err))
	}
	if badRow != nil {
		return nil, fmt.Errorf("cassandra: %s: %w", op, badRow)
	}
	sort.Slice(out, func(i, j int) bool { return name(out[i]) < name(out[j]) })
	return out, nil
}

// deleteRecord deletes a named record with a lightweight transaction
// (DELETE ... IF ...), at a quorum at least, so that "not found" is a fact
// and not a guess: a delete that does not apply returns driver.ErrNotFound.
// An attempt whose outcome is unknown is resolved as insertRecord does, by
// trying again, where "not applied" on a retry means an earlier attempt
// deleted it.
func (d *Driver) deleteRecord(ctx context.Context, op, kind, name, stmt string, vals ...any) error {
	if err := d.begin(ctx, op); err != nil {
		return err
	}
	configured := keyLevel(d.cfg.WriteConsistency)
	cl, err := level(driver.Default, configured)
	if err != nil {
		return fmt.Errorf("cassandra: %s %q: %w", op, name, err)
	}
	var lastErr error
	// unknown remembers an attempt whose outcome is unknown: a later
	// attempt refused as unavailable (at a partition's start, a timeout,
	// then the nodes marked down) does not make the first one undone.
	unknown := false
	for attempt := range lwtAttempts {
		if attempt > 0 {
			if err := sleepCtx(ctx, lwtBackoff(attempt)); err != nil {
				break
			}
		}
		applied, err := d.session.Query(stmt, vals...).
			Consistency(cl).SerialConsistency(lwtSerial).
			MapScanCASContext(ctx, map[string]any{})
		if err == nil {
			if applied || attempt > 0 {
				return nil
			}
			return fmt.Errorf("cassandra: %s %q: %w", kind, name, driver.ErrNotFound)
		}
		lastErr = mapError(opWrite, err)
		unknown = unknown || errors.Is(lastErr, driver.ErrUnknownOutcome)
		if !errors.Is(lastErr, driver.ErrUnknownOutcome) || ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("cassandra: %s %q: %w", op, name, earlierUnknown(unknown, lastErr))
}
