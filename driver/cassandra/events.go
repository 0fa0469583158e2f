package cassandra

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/abacusdb/abacus/driver"
)

var _ driver.Events = (*Driver)(nil)

// Tables of the events model (“Highly Available Counters Using Cassandra”, op-based). %[1]s is the keyspace.
const (
	// One partition per counter. The static columns hold the rollup, both
	// written by one UPDATE at the rollup's epoch, so the pair changes
	// together and a rollup with a lower epoch loses to the one stored.
	// Each clustering row marks a bucket that may hold events; markers are
	// written with UPDATE (no row marker), so deleting the marked cell
	// deletes the row with a cell tombstone, not a range tombstone, which
	// Cassandra 2.1 compacts slowly when a partition holds many.
	eventCountersDDL = `CREATE TABLE IF NOT EXISTS %[1]s.event_counters (
	ns text,
	counter text,
	bucket bigint,
	rollup_value bigint static,
	rollup_epoch bigint static,
	marked boolean,
	PRIMARY KEY ((ns, counter), bucket)
)`

	// One partition per (counter, time bucket), one row per event, newest
	// first. Each row is written USING TIMESTAMP its event time, so a
	// retry rewrites the same cells, and a partition delete at a rollup's
	// epoch removes exactly the events at or before it, including ones
	// that arrive late.
	eventsDDL = `CREATE TABLE IF NOT EXISTS %[1]s.events (
	ns text,
	counter text,
	bucket bigint,
	time bigint,
	id text,
	delta bigint,
	PRIMARY KEY ((ns, counter, bucket), time, id)
) WITH CLUSTERING ORDER BY (time DESC, id ASC)`
)

// eventsPageSize is the page size of ReadEvents: large enough that a busy
// bucket takes few round trips, small enough that no single response is
// big (a row is a few dozen bytes).
const eventsPageSize = 5000

// maxMarkerDeletesPerBatch bounds the marker deletes sent in one batch. A
// cell tombstone is some 40 bytes of mutation, so a hundred stay below
// Cassandra's default batch_size_warn_threshold (5 KiB); the deletes need
// no atomicity between them, so larger lists are simply split.
const maxMarkerDeletesPerBatch = 100

// eventStatements holds the events model's CQL with the keyspace filled in.
type eventStatements struct {
	markBucket, deleteMarker, writeRollup, readCounter, listCounters string
	writeEvent, readEvents, deleteBucket                             string
	sealEvents, readSeal, deleteSeals                                string
	probeCounters, probeEvents, probeSeals                           string
}

func newEventStatements(ks string) eventStatements {
	c, e, s := ks+".event_counters", ks+".events", ks+".event_seals"
	return eventStatements{
		markBucket: "UPDATE " + c + " USING TIMESTAMP ? SET marked = true WHERE ns = ? AND counter = ? AND bucket = ?",
		// The timestamp goes into each statement, not into the batch
		// frame: Cassandra refuses a negative protocol-level timestamp,
		// while USING TIMESTAMP takes any bigint, as everywhere else here.
		deleteMarker: "DELETE marked FROM " + c + " USING TIMESTAMP ? WHERE ns = ? AND counter = ? AND bucket = ?",
		writeRollup:  "UPDATE " + c + " USING TIMESTAMP ? SET rollup_value = ?, rollup_epoch = ? WHERE ns = ? AND counter = ?",
		readCounter:  "SELECT bucket, marked, rollup_value, rollup_epoch FROM " + c + " WHERE ns = ? AND counter = ?",
		listCounters: "SELECT DISTINCT ns, counter FROM " + c,
		writeEvent: "INSERT INTO " + e + " (ns, counter, bucket, time, id, delta) VALUES (?, ?, ?, ?, ?, ?)" +
			" USING TIMESTAMP ?",
		readEvents: "SELECT time, id, delta FROM " + e +
			" WHERE ns = ? AND counter = ? AND bucket = ? AND time > ? AND time <= ?",
		// The whole partition key and nothing else: a partition tombstone.
		deleteBucket:  "DELETE FROM " + e + " USING TIMESTAMP ? WHERE ns = ? AND counter = ? AND bucket = ?",
		probeCounters: "SELECT ns FROM " + c + " LIMIT 1",
		probeEvents:   "SELECT ns FROM " + e + " LIMIT 1",
		probeSeals:    "SELECT ns FROM " + s + " LIMIT 1",
		sealEvents: "INSERT INTO " + s + " (ns, counter, bucket, start, end, value, cleared, events)" +
			" VALUES (?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS",
		// Descending clustering: the first row below the bound is the
		// seal with the greatest start before it.
		readSeal: "SELECT start, end, value, cleared, events FROM " + s +
			" WHERE ns = ? AND counter = ? AND bucket = ? AND start < ? LIMIT 1",
		// A partition tombstone at the server's time (DeleteEventSeals).
		deleteSeals: "DELETE FROM " + s + " WHERE ns = ? AND counter = ? AND bucket = ?",
	}
}

func (q eventStatements) probes() []string {
	return []string{q.probeCounters, q.probeEvents, q.probeSeals}
}

func eventSchemaStatements(cfg Config) []string {
	return []string{
		fmt.Sprintf(eventCountersDDL, cfg.Keyspace),
		fmt.Sprintf(eventsDDL, cfg.Keyspace),
		fmt.Sprintf(eventSealsDDL, cfg.Keyspace),
	}
}

// MarkEventBucket implements driver.Events: an UPDATE of the bucket's row
// USING TIMESTAMP the bucket start.
func (d *Driver) MarkEventBucket(ctx context.Context, p *driver.MarkEventBucketParams) error {
	return d.execAt(ctx, "mark event bucket", p.Consistency, d.cfg.WriteConsistency,
		d.q.events.markBucket, []any{p.Bucket, p.Namespace, p.Counter, p.Bucket},
		" %s/%s/%d", p.Namespace, p.Counter, p.Bucket)
}

// WriteEvent implements driver.Events with INSERT ... USING TIMESTAMP the
// event time. Of two writes of one (time, id) with different deltas,
// Cassandra keeps the greater serialized value on every replica.
func (d *Driver) WriteEvent(ctx context.Context, p *driver.WriteEventParams) error {
	e := p.Event
	return d.execAt(ctx, "write event", p.Consistency, d.cfg.WriteConsistency,
		d.q.events.writeEvent, []any{p.Namespace, p.Counter, p.Bucket, e.Time, e.ID, e.Delta, e.Time},
		" %s/%s/%d/%s", p.Namespace, p.Counter, e.Time, e.ID)
}

// WriteEvents implements driver.Events with an unlogged batch: each
// statement is the one WriteEvent sends, with its own write timestamp.
func (d *Driver) WriteEvents(ctx context.Context, ws []driver.WriteEventParams) error {
	const op = "write events"
	if len(ws) == 0 {
		return d.begin(ctx, op)
	}
	if err := driver.CheckEventWrites(ws); err != nil {
		return fmt.Errorf("cassandra: %s: %w", op, err)
	}
	return d.execUnloggedBatch(ctx, op, ws[0].Consistency, len(ws), func(b *gocql.Batch) {
		for _, p := range ws {
			e := p.Event
			b.Query(d.q.events.writeEvent, p.Namespace, p.Counter, p.Bucket, e.Time, e.ID, e.Delta, e.Time)
		}
	}, fmt.Sprintf("%s/%s/%d/%s", ws[0].Namespace, ws[0].Counter, ws[0].Event.Time, ws[0].Event.ID))
}

// ReadEventCounter implements driver.Events by reading the counter's
// partition in one unpaged request, for the reason ReadShards gives: a
// rollup landing between two pages could pair the old rollup with a
// marker list from which its deletes already removed buckets, and the
// events of those buckets after the old epoch would be missed. Unpaged,
// each replica answers from one view, and merging replicas keeps the
// newest rollup and every delete. Markers are few: a rollup removes them.
func (d *Driver) ReadEventCounter(ctx context.Context, p *driver.ReadEventCounterParams) (*driver.EventCounter, error) {
	const op = "read event counter"
	cl, err := d.beginAt(ctx, op, p.Consistency, d.cfg.ReadConsistency)
	if err != nil {
		return nil, err
	}
	iter := traced(ctx, d.session.Query(d.q.events.readCounter, p.Namespace, p.Counter)).
		Consistency(cl).PageSize(0).IterContext(ctx)
	return readRows(iter, (*eventCounterRow).dest, eventCounterFromRows, op, " %s/%s", p.Namespace, p.Counter)
}

// eventCounterRow is one scanned row of a counter's record partition; nil
// pointers are nulls. Every row carries the static rollup. A partition
// with a rollup and no markers comes back as one row whose bucket and
// marked are null; a counter never rolled up has null statics.
type eventCounterRow struct {
	Bucket      *int64
	Marked      *bool
	RollupValue *int64
	RollupEpoch *int64
}

func (r *eventCounterRow) dest() []any {
	return []any{&r.Bucket, &r.Marked, &r.RollupValue, &r.RollupEpoch}
}

// eventCounterFromRows converts a record partition strictly: it accepts
// what the driver writes (marker rows with marked = true, a rollup whose
// two columns are both set or both null, the same on every row) and
// reports anything else rather than guess.
func eventCounterFromRows(rows []eventCounterRow) (*driver.EventCounter, error) {
	ec := &driver.EventCounter{Buckets: []int64{}}
	for i, r := range rows {
		rollup, err := staticColumns(i, r, rollupFromRow, sameRollup, &ec.Rollup, "rollup")
		if err != nil {
			return nil, err
		}
		if r.Bucket == nil {
			// The static-only row of a partition without markers.
			switch {
			case len(rows) != 1:
				return nil, fmt.Errorf("%w: row %d: null bucket among %d rows", errBadRow, i, len(rows))
			case r.Marked != nil:
				return nil, fmt.Errorf("%w: row %d: marked is set without a bucket", errBadRow, i)
			case rollup == nil:
				return nil, fmt.Errorf("%w: row %d: neither a marker nor a rollup", errBadRow, i)
			}
			continue
		}
		if r.Marked == nil || !*r.Marked {
			return nil, fmt.Errorf("%w: bucket %d: marked is %v, want true", errBadRow, *r.Bucket, fmtBool(r.Marked))
		}
		ec.Buckets = append(ec.Buckets, *r.Bucket)
	}
	// The clustering order is ascending already; sorting again costs
	// little and makes the duplicate check below a neighbour comparison.
	slices.Sort(ec.Buckets)
	for i := 1; i < len(ec.Buckets); i++ {
		if ec.Buckets[i] == ec.Buckets[i-1] {
			return nil, fmt.Errorf("%w: bucket %d appears twice", errBadRow, ec.Buckets[i])
		}
	}
	return ec, nil
}

func fmtBool(b *bool) string {
	if b == nil {
		return "null"
	}
	return fmt.Sprint(*b)
}

func rollupFromRow(r eventCounterRow) (*driver.Rollup, error) {
	switch {
	case r.RollupValue == nil && r.RollupEpoch == nil:
		return nil, nil
	case r.RollupValue == nil:
		return nil, fmt.Errorf("%w: rollup_epoch is set but rollup_value is null", errBadRow)
	case r.RollupEpoch == nil:
		return nil, fmt.Errorf("%w: rollup_value is set but rollup_epoch is null", errBadRow)
	}
	return &driver.Rollup{Value: *r.RollupValue, Epoch: *r.RollupEpoch}, nil
}

func sameRollup(a, b *driver.Rollup) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// ReadEvents implements driver.Events. Unlike the record read it is
// paged: event rows never change once written, so pages cannot disagree
// about a row, and a busy bucket may hold more rows than one response
// should carry. A DeleteEventBuckets landing mid-read can remove rows not
// yet read, but only rows at or before its timestamp, which the new
// rollup counts; a caller that reads the record again sees that rollup.
func (d *Driver) ReadEvents(ctx context.Context, p *driver.ReadEventsParams) ([]driver.Event, error) {
	const op = "read events"
	cl, err := d.beginAt(ctx, op, p.Consistency, d.cfg.ReadConsistency)
	if err != nil {
		return nil, err
	}
	if p.After >= p.UpTo {
		return []driver.Event{}, nil // an empty range; Cassandra would reject some of them
	}
	iter := traced(ctx, d.session.Query(d.q.events.readEvents, p.Namespace, p.Counter, p.Bucket, p.After, p.UpTo)).
		Consistency(cl).PageSize(eventsPageSize).IterContext(ctx)
	decode := func(rows []eventRow) ([]driver.Event, error) { return eventsFromRows(rows, p.After, p.UpTo) }
	return readRows(iter, (*eventRow).dest, decode, op, " %s/%s/%d", p.Namespace, p.Counter, p.Bucket)
}

// eventRow is one scanned event. time and id are clustering columns and
// cannot be null; delta is always written but checked, since a null would
// otherwise scan as a silent zero.
type eventRow struct {
	Time  int64
	ID    string
	Delta *int64
}

func (r *eventRow) dest() []any { return []any{&r.Time, &r.ID, &r.Delta} }

// eventsFromRows converts a slice of a bucket: every row must lie in
// (after, upTo] and carry a delta, and no (time, id) may appear twice. The
// result is newest first, ties by id ascending.
func eventsFromRows(rows []eventRow, after, upTo int64) ([]driver.Event, error) {
	out := make([]driver.Event, 0, len(rows))
	for _, r := range rows {
		if r.Time <= after || r.Time > upTo {
			return nil, fmt.Errorf("%w: event %d/%q is outside the range (%d, %d]", errBadRow, r.Time, r.ID, after, upTo)
		}
		if r.Delta == nil {
			return nil, fmt.Errorf("%w: event %d/%q: delta is null", errBadRow, r.Time, r.ID)
		}
		out = append(out, driver.Event{ID: r.ID, Time: r.Time, Delta: *r.Delta})
	}
	// Cassandra returns the clustering order (time DESC, id ASC in byte
	// order, which is Go's string order); sorting an ordered slice is
	// linear and guards against surprises.
	slices.SortFunc(out, compareEvents)
	for i := 1; i < len(out); i++ {
		if compareEvents(out[i-1], out[i]) == 0 {
			return nil, fmt.Errorf("%w: event %d/%q appears twice", errBadRow, out[i].Time, out[i].ID)
		}
	}
	return out, nil
}

// compareEvents orders events newest first, ties by id ascending.
func compareEvents(a, b driver.Event) int {
	return cmp.Or(cmp.Compare(b.Time, a.Time), cmp.Compare(a.ID, b.ID))
}

// WriteRollup implements driver.Events: one UPDATE of both static columns
// USING TIMESTAMP the epoch.
func (d *Driver) WriteRollup(ctx context.Context, p *driver.WriteRollupParams) error {
	r := p.Rollup
	return d.execAt(ctx, "write rollup", p.Consistency, d.cfg.FoldConsistency,
		d.q.events.writeRollup, []any{r.Epoch, r.Value, r.Epoch, p.Namespace, p.Counter},
		" %s/%s@%d", p.Namespace, p.Counter, r.Epoch)
}

// DeleteEventBuckets implements driver.Events. Each bucket's events go
// with one partition tombstone at p.Timestamp, which also covers events
// that arrive later with an event time at or before it. The markers go
// afterwards, in single-partition batches timestamped p.Timestamp: were
// they removed first and the event deletes then failed, nothing would
// point at the leftover events any more and no later rollup would remove
// them. Nothing is retried here; on an error the caller replays the call.
func (d *Driver) DeleteEventBuckets(ctx context.Context, p *driver.DeleteEventBucketsParams) error {
	const op = "delete event buckets"
	cl, err := d.beginAt(ctx, op, p.Consistency, d.cfg.FoldConsistency)
	if err != nil {
		return err
	}
	for _, bucket := range p.Buckets {
		err := d.exec(ctx, cl, d.q.events.deleteBucket, []any{p.Timestamp, p.Namespace, p.Counter, bucket},
			op, " %s/%s: events of bucket %d", p.Namespace, p.Counter, bucket)
		if err != nil {
			return err
		}
	}
	for chunk := range slices.Chunk(p.Buckets, maxMarkerDeletesPerBatch) {
		b := d.session.Batch(gocql.UnloggedBatch).Consistency(cl)
		for _, bucket := range chunk {
			b.Query(d.q.events.deleteMarker, p.Timestamp, p.Namespace, p.Counter, bucket)
		}
		if err := b.ExecContext(ctx); err != nil {
			return fmt.Errorf("cassandra: %s %s/%s: markers: %w", op, p.Namespace, p.Counter, mapError(opWrite, err))
		}
	}
	return nil
}

// ListEventCounters implements driver.Events like ListCounters: it pages
// through the distinct partition keys of event_counters, filters the
// namespace here, de-duplicates and sorts.
func (d *Driver) ListEventCounters(ctx context.Context, p *driver.ListCountersParams) ([]driver.CounterKey, error) {
	return d.listPartitionKeys(ctx, "list event counters", d.q.events.listCounters, p.Namespace)
}
