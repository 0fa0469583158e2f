package cassandra

import (
	"context"
	"fmt"

	"github.com/abacusdb/abacus/driver"
)

var _ driver.EventSeals = (*Driver)(nil)

// eventSealsDDL holds the seals of the events model: a partition per
// (counter, bucket of the seal's Start), as the events are partitioned, so
// a rollup's deletes can drop a bucket's seals with one partition
// tombstone, and one row per Start, newest first, so the seal holding a
// time is the first row below it. Rows are written only by SealEvents'
// INSERT ... IF NOT EXISTS: mixing plain writes into rows Paxos decides
// would break Paxos' guarantees. The deletes are the one plain write,
// and come only once no seal is written to the partition any more.
//
// Neither start nor end is a reserved word in any CQL from Cassandra 2.1
// to 5.0 or in ScyllaDB's, so they need no quoting. The clear flag is
// named cleared, like a state, not a command.
const eventSealsDDL = `CREATE TABLE IF NOT EXISTS %[1]s.event_seals (
	ns text,
	counter text,
	bucket bigint,
	start bigint,
	end bigint,
	value bigint,
	cleared boolean,
	events blob,
	PRIMARY KEY ((ns, counter, bucket), start)
) WITH CLUSTERING ORDER BY (start DESC)`

// SealEvents implements driver.EventSeals with INSERT ... IF NOT EXISTS,
// the Paxos phase at SERIAL whatever the commit's level (lwtSerial says
// why), as CompareAndSetCAS does. Its level defaults to the fold level:
// sealing is part of a rollup. A Paxos round that times out is
// driver.ErrUnknownOutcome: the next round on the partition may still
// complete it, and the caller's next call settles which seal won. It is
// never retried here. There is no USING TIMESTAMP: Cassandra refuses it
// on a conditional write, whose cells take the ballot's timestamp.
func (d *Driver) SealEvents(ctx context.Context, p *driver.SealEventsParams) (*driver.EventSeal, bool, error) {
	const op = "seal events"
	cl, err := d.beginAt(ctx, op, p.Consistency, d.cfg.FoldConsistency)
	if err != nil {
		return nil, false, err
	}
	s := p.Seal
	// nonNil: a nil slice would be written as a null, which the reads
	// refuse; an empty blob is what an empty list of events is.
	q := d.session.Query(d.q.events.sealEvents,
		p.Namespace, p.Counter, p.Bucket, s.Start, s.End, s.Value, s.Clear, nonNil(s.Events)).
		Consistency(cl).SerialConsistency(lwtSerial)
	existing := sealCASSeeds()
	applied, err := q.MapScanCASContext(ctx, existing)
	if err != nil {
		return nil, false, fmt.Errorf("cassandra: %s %s/%s/%d@%d: %w", op, p.Namespace, p.Counter, p.Bucket, s.Start, mapError(opWrite, err))
	}
	if applied {
		// A copy, so that the caller's slice and the returned seal do not
		// alias, and non-nil, as the reads return it.
		stored := s
		stored.Events = append([]byte{}, s.Events...)
		return &stored, true, nil
	}
	stored, err := sealFromCAS(existing, s.Start)
	if err != nil {
		return nil, false, fmt.Errorf("cassandra: %s %s/%s/%d@%d: %w", op, p.Namespace, p.Counter, p.Bucket, s.Start, err)
	}
	return stored, false, nil
}

// ReadEventSeal implements driver.EventSeals: the first row of the
// bucket's partition below p.Before, which the descending clustering
// order makes the one with the greatest Start. It is a plain read, not a
// serial one: a seal whose Paxos round has not committed yet may be
// missed, and a caller that must know for certain calls SealEvents, whose
// round finishes the one in progress.
func (d *Driver) ReadEventSeal(ctx context.Context, p *driver.ReadEventSealParams) (*driver.EventSeal, error) {
	const op = "read event seal"
	cl, err := d.beginAt(ctx, op, p.Consistency, d.cfg.ReadConsistency)
	if err != nil {
		return nil, err
	}
	iter := d.session.Query(d.q.events.readSeal, p.Namespace, p.Counter, p.Bucket, p.Before).
		Consistency(cl).IterContext(ctx)
	decode := func(rows []sealRow) (*driver.EventSeal, error) { return sealFromRows(rows, p.Before) }
	return readRows(iter, (*sealRow).dest, decode, op, " %s/%s/%d before %d", p.Namespace, p.Counter, p.Bucket, p.Before)
}

// DeleteEventSeals implements driver.EventSeals with a partition delete
// per bucket, at the coordinator's time rather than a rollup's epoch: the
// seals were written by Paxos at ballot timestamps, which are the
// coordinators' clocks at the time, so a tombstone at an epoch could fall
// below them and leave them. The timestamp is left to Cassandra too,
// rather than gocql's default of this process's clock, which nothing
// keeps in step with the nodes': a process whose clock lags could delete
// below a seal written a moment before, such as the one a rollup of a
// long idle counter writes just before deleting its bucket. Nothing is
// retried here; on an error the caller replays the call.
func (d *Driver) DeleteEventSeals(ctx context.Context, p *driver.DeleteEventSealsParams) error {
	const op = "delete event seals"
	cl, err := d.beginAt(ctx, op, p.Consistency, d.cfg.FoldConsistency)
	if err != nil {
		return err
	}
	for _, bucket := range p.Buckets {
		err := d.session.Query(d.q.events.deleteSeals, p.Namespace, p.Counter, bucket).
			Consistency(cl).DefaultTimestamp(false).ExecContext(ctx)
		if err != nil {
			return fmt.Errorf("cassandra: %s %s/%s: seals of bucket %d: %w", op, p.Namespace, p.Counter, bucket, mapError(opWrite, err))
		}
	}
	return nil
}

// sealRow is one seal's columns; nil pointers are nulls. Start is a
// clustering column and never null in a row, but the answer of a
// conditional write may lack it, so it is a pointer like the others.
type sealRow struct {
	Start   *int64
	End     *int64
	Value   *int64
	Cleared *bool
	Events  *[]byte
}

func (r *sealRow) dest() []any { return []any{&r.Start, &r.End, &r.Value, &r.Cleared, &r.Events} }

// sealFromRow converts one seal strictly. SealEvents sets every column, so
// a null is reported rather than read as a zero, which would change what
// a retry learns about its event. Events is never nil: gocql scans an
// empty blob as a nil slice, and the seal comes back as an empty one, as
// SealEvents returns the seal it applied.
func sealFromRow(r sealRow) (*driver.EventSeal, error) {
	var null string
	switch {
	case r.Start == nil:
		null = "start"
	case r.End == nil:
		null = "end"
	case r.Value == nil:
		null = "value"
	case r.Cleared == nil:
		null = "cleared"
	case r.Events == nil:
		null = "events"
	}
	if null != "" {
		return nil, fmt.Errorf("%w: event seal: %s is null", errBadRow, null)
	}
	return &driver.EventSeal{Start: *r.Start, End: *r.End, Value: *r.Value, Clear: *r.Cleared, Events: nonNil(*r.Events)}, nil
}

// sealFromRows converts the answer of ReadEventSeal's query: at most one
// row (LIMIT 1), with a Start below before; none is driver.ErrNotFound.
func sealFromRows(rows []sealRow, before int64) (*driver.EventSeal, error) {
	switch len(rows) {
	case 0:
		return nil, driver.ErrNotFound
	case 1:
	default:
		return nil, fmt.Errorf("%w: %d event seals for LIMIT 1", errBadRow, len(rows))
	}
	s, err := sealFromRow(rows[0])
	if err != nil {
		return nil, err
	}
	if s.Start >= before {
		return nil, fmt.Errorf("%w: event seal at %d is not before %d", errBadRow, s.Start, before)
	}
	return s, nil
}

// sealCASSeeds is the result map handed to SealEvents' MapScanCAS. Each
// column is seeded with a pointer to a nil pointer, as in
// CompareAndSetCAS: gocql scans a column the answer has into the seed and
// stores the inner pointer, nil for a null, and leaves the seed of a
// column the answer lacks (sealFromCAS tells the three apart).
func sealCASSeeds() map[string]any {
	return map[string]any{
		"start":   new(*int64),
		"end":     new(*int64),
		"value":   new(*int64),
		"cleared": new(*bool),
		"events":  new(*[]byte),
	}
}

// sealFromCAS reads the seal that made SealEvents' INSERT ... IF NOT
// EXISTS not apply. Cassandra then answers with every column of the row
// that is there, so a column missing, of another type or null is a
// malformed answer, as is a row under another Start than the one written.
func sealFromCAS(m map[string]any, start int64) (*driver.EventSeal, error) {
	var r sealRow
	for _, err := range []error{
		casColumn(m, "start", &r.Start),
		casColumn(m, "end", &r.End),
		casColumn(m, "value", &r.Value),
		casColumn(m, "cleared", &r.Cleared),
		casColumn(m, "events", &r.Events),
	} {
		if err != nil {
			return nil, err
		}
	}
	s, err := sealFromRow(r)
	if err != nil {
		return nil, err
	}
	if s.Start != start {
		return nil, fmt.Errorf("%w: the seal at %d refused the one at %d", errBadRow, s.Start, start)
	}
	return s, nil
}

// casColumn takes column name of a conditional write's answer into dst:
// the scanned *T (nil for a null), or an error when the answer lacks the
// column (its **T seed is still there) or holds something else.
func casColumn[T any](m map[string]any, name string, dst **T) error {
	switch v := m[name].(type) {
	case *T:
		*dst = v
		return nil
	case **T:
		return fmt.Errorf("%w: event seal: the answer has no column %s", errBadRow, name)
	default:
		return fmt.Errorf("%w: event seal: column %s of type %T", errBadRow, name, m[name])
	}
}
