package cassandra

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/abacusdb/abacus/driver"
)

var _ driver.Queues = (*Driver)(nil)

// Queue tables (“cassandra-ruby-queue”). %[1]s is the keyspace, %[2]d the configured
// gc_grace_seconds (Config.QueueGCGrace).
const (
	queuesDDL = `CREATE TABLE IF NOT EXISTS %[1]s.queues (
	name text PRIMARY KEY,
	shards int,
	shard_ms bigint,
	max_deliveries int,
	visibility_ms bigint,
	created_at timestamp
)`

	// One partition per (queue, shard); messages cluster by due time, then
	// by their time-based id. The static columns are the shard's consumer
	// lease (lock, written only by lightweight transactions, with a TTL),
	// its read floor, and an anchor cell. See anchorDue for the anchor row.
	queueMessagesDDL = `CREATE TABLE IF NOT EXISTS %[1]s.queue_messages (
	queue text,
	shard int,
	lock text static,
	lock_since timestamp static,
	floor timestamp static,
	anchor boolean static,
	due timestamp,
	id timeuuid,
	body blob,
	enqueued_at timestamp,
	deliveries int,
	visible_at timestamp,
	last_error text,
	PRIMARY KEY ((queue, shard), due, id)
) WITH CLUSTERING ORDER BY (due ASC, id ASC) AND gc_grace_seconds = %[2]d`

	queueDeadDDL = `CREATE TABLE IF NOT EXISTS %[1]s.queue_dead (
	queue text,
	id timeuuid,
	shard int,
	due timestamp,
	body blob,
	enqueued_at timestamp,
	deliveries int,
	last_error text,
	died_at timestamp,
	PRIMARY KEY (queue, id)
) WITH gc_grace_seconds = %[2]d`
)

// queueSchemaStatements returns the queue tables' DDL for cfg.
func queueSchemaStatements(cfg Config) []string {
	grace := int64(cfg.QueueGCGrace / time.Second)
	return []string{
		fmt.Sprintf(queuesDDL, cfg.Keyspace),
		fmt.Sprintf(queueMessagesDDL, cfg.Keyspace, grace),
		fmt.Sprintf(queueDeadDDL, cfg.Keyspace, grace),
		fmt.Sprintf(queueDedupDDL, cfg.Keyspace, grace),
		fmt.Sprintf(addColumnDDL, cfg.Keyspace, "queue_messages", attributesColumn, "blob"),
		fmt.Sprintf(addColumnDDL, cfg.Keyspace, "queue_dead", attributesColumn, "blob"),
		fmt.Sprintf(addColumnDDL, cfg.Keyspace, "queues", spreadColumn, "int"),
		fmt.Sprintf(addColumnDDL, cfg.Keyspace, "queues", generationColumn, "bigint"),
		fmt.Sprintf(addColumnDDL, cfg.Keyspace, "queues", deletedAtColumn, "timestamp"),
		fmt.Sprintf(addColumnDDL, cfg.Keyspace, "queues", prioritiesColumn, "int"),
	}
}

// Each shard partition has an anchor row: a clustering row at due time 0
// (1970-01-01) with a fixed id, written together with the anchor static
// cell the first time the shard's floor is recorded or its lease taken. It
// serves two quirks of Cassandra 2.1.0:
//
//   - Reading a partition's static columns (SELECT DISTINCT, or any slice
//     from the start) goes through every deleted row before the first live
//     one. A shard whose messages were consumed holds tens of thousands of
//     tombstones, and such a read takes hundreds of milliseconds, or fails
//     once it passes tombstone_failure_threshold (100,000). Reading the
//     anchor row by its full key returns the static columns with it at the
//     cost of a point read.
//   - IF lock = null is answered "not applied", without the current value,
//     on a partition that has no static cell at all.
//
// The anchor row is never returned as a message, never counted, and lies
// below every floor.
var (
	anchorDue = time.UnixMilli(0).UTC()
	anchorID  = driver.MessageID{6: 0x10, 8: 0x80} // a version 1 UUID at the UUID epoch
)

func isAnchor(due time.Time, id [16]byte) bool {
	return id == [16]byte(anchorID) && due.Equal(anchorDue)
}

// queueStatements holds the queue operations' CQL with the keyspace filled in.
type queueStatements struct {
	insertQueue, getQueue, listQueues                   string
	replaceQueue, deleteQueue                           string
	putFresh, putFull                                   string
	readMessages, readMessagesNoBody, getMessage        string
	updateMessage, deleteMessage                        string
	extendVisibility                                    string
	readShard, countShard                               string
	acquire, renew, release, anchor, setFloor           string
	insertDead, listDead, listDeadByID, deleteDead      string
	setAttributes, setDeadAttributes                    string
	probeQueues, probeQueueMessages, probeQueueDeadRows string
}

const (
	queueColumns = "name, shards, shard_ms, max_deliveries, visibility_ms, created_at, " + spreadColumn + ", " + prioritiesColumn
	// spread is a column added to queues after it first shipped; a queue
	// made before then has none (null), and spreads over one shard.
	spreadColumn = "spread"
	// priorities came later still: null in an earlier release's record,
	// read as one level.
	prioritiesColumn = "priorities"
	// generation and deleted_at were added when queues could be deleted:
	// null in a record of an earlier release, read as generation 0, live.
	// A create of a first generation leaves both unset (no null cells).
	generationColumn = "generation"
	deletedAtColumn  = "deleted_at"
	queueReadColumns = queueColumns + ", " + generationColumn + ", " + deletedAtColumn
	messageColumns   = "due, id, enqueued_at, deliveries, visible_at, last_error"
	deadColumns      = "id, shard, due, body, enqueued_at, deliveries, last_error, died_at"
	// attributes is a column added to both tables after they first
	// shipped (addColumnStatements); it is written by a statement of its
	// own, only for messages that have attributes, so that the others get
	// no null cell (a tombstone) in it.
	attributesColumn = "attributes"
	byMessage        = " WHERE queue = ? AND shard = ? AND due = ? AND id = ?"
	byShard          = " WHERE queue = ? AND shard = ?"
)

func newQueueStatements(ks string) queueStatements {
	m := ks + ".queue_messages"
	return queueStatements{
		insertQueue: "INSERT INTO " + ks + ".queues (" + queueColumns + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS",
		getQueue:    "SELECT " + queueReadColumns + " FROM " + ks + ".queues WHERE name = ?",
		listQueues:  "SELECT " + queueReadColumns + " FROM " + ks + ".queues",
		replaceQueue: "UPDATE " + ks + ".queues SET shards = ?, shard_ms = ?, max_deliveries = ?, visibility_ms = ?, created_at = ?, " +
			spreadColumn + " = ?, " + prioritiesColumn + " = ?, " + generationColumn + " = ?, " + deletedAtColumn + " = null WHERE name = ? IF created_at = ? AND " + deletedAtColumn + " = ?",
		deleteQueue: "UPDATE " + ks + ".queues SET " + deletedAtColumn + " = ? WHERE name = ? IF created_at = ? AND " + deletedAtColumn + " = null",
		// Messages are written with UPDATE, not INSERT, and deleted cell by
		// cell: see deleteMessage. A fresh message leaves visible_at and
		// last_error unset rather than binding nulls, which would write a
		// tombstone per cell.
		putFresh:           "UPDATE " + m + " SET body = ?, enqueued_at = ?, deliveries = ?" + byMessage,
		putFull:            "UPDATE " + m + " SET body = ?, enqueued_at = ?, deliveries = ?, visible_at = ?, last_error = ?" + byMessage,
		readMessages:       "SELECT " + messageColumns + ", body, attributes FROM " + m + byShard + " AND due >= ? AND due <= ? LIMIT ?",
		readMessagesNoBody: "SELECT " + messageColumns + " FROM " + m + byShard + " AND due >= ? AND due <= ? LIMIT ?",
		getMessage:         "SELECT " + messageColumns + ", body, attributes FROM " + m + byMessage,
		setAttributes:      "UPDATE " + m + " SET attributes = ?" + byMessage,
		updateMessage:      "UPDATE " + m + " SET deliveries = ?, visible_at = ?, last_error = ?" + byMessage,
		extendVisibility:   "UPDATE " + m + " SET visible_at = ?" + byMessage,
		// A message row has no row marker (it was written with UPDATE), so
		// deleting its cells deletes the row. A whole-row DELETE would
		// write a range tombstone instead, and Cassandra 2.1.0 compacts a
		// partition holding many of those in quadratic time: with 100,000
		// consumed messages in one shard, a compaction made no progress in
		// ten minutes (see docs/benchmarks-queue.md). Cell tombstones
		// compact in linear time.
		deleteMessage:     "DELETE body, enqueued_at, deliveries, visible_at, last_error, attributes FROM " + m + byMessage,
		readShard:         "SELECT lock, lock_since, floor, deliveries FROM " + m + byMessage,
		countShard:        "SELECT due, id, enqueued_at, visible_at FROM " + m + byShard + " AND due >= ?",
		acquire:           "UPDATE " + m + " USING TTL ? SET lock = ?, lock_since = ?" + byShard + " IF lock = null",
		renew:             "UPDATE " + m + " USING TTL ? SET lock = ?, lock_since = ?" + byShard + " IF lock = ?",
		release:           "UPDATE " + m + " SET lock = null, lock_since = null" + byShard + " IF lock = ?",
		anchor:            "INSERT INTO " + m + " (queue, shard, due, id, anchor) VALUES (?, ?, ?, ?, true)",
		setFloor:          "INSERT INTO " + m + " (queue, shard, due, id, anchor, floor) VALUES (?, ?, ?, ?, true, ?)",
		insertDead:        "INSERT INTO " + ks + ".queue_dead (queue, " + deadColumns + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
		setDeadAttributes: "UPDATE " + ks + ".queue_dead SET attributes = ? WHERE queue = ? AND id = ?",
		listDead:          "SELECT " + deadColumns + ", attributes FROM " + ks + ".queue_dead WHERE queue = ?",
		listDeadByID:      "SELECT " + deadColumns + ", attributes FROM " + ks + ".queue_dead WHERE queue = ? AND id = ?",
		deleteDead:        "DELETE FROM " + ks + ".queue_dead WHERE queue = ? AND id = ?",
		probeQueues:       "SELECT name, " + prioritiesColumn + " FROM " + ks + ".queues LIMIT 1",
		// The probes name the newest column too: a table of an earlier
		// release lacks it, the probe fails, and the schema is brought up
		// to date (prepareSchema).
		probeQueueMessages: "SELECT queue, attributes FROM " + m + " LIMIT 1",
		probeQueueDeadRows: "SELECT queue, attributes FROM " + ks + ".queue_dead LIMIT 1",
	}
}

// queueProbes are the queries that show the queue tables exist.
func (q queueStatements) probes() []string {
	return []string{q.probeQueues, q.probeQueueMessages, q.probeQueueDeadRows}
}

// ---- queue records -----------------------------------------------------------

// CreateQueue inserts the record with IF NOT EXISTS. An attempt whose
// outcome is unknown (contending Paxos rounds time out) is resolved by
// trying again: the retry either applies or returns the existing row, and
// if that row is exactly this queue the earlier attempt was applied.
func (d *Driver) CreateQueue(ctx context.Context, p *driver.CreateQueueParams) error {
	const op = "create queue"
	if err := d.begin(ctx, op); err != nil {
		return err
	}
	q := p.Queue
	vals, err := queueValues(q)
	if err != nil {
		return fmt.Errorf("cassandra: %s %q: %w", op, q.Name, err)
	}
	if p.Replaces != nil {
		if p.Replaces.DeletedAt.IsZero() {
			return fmt.Errorf("cassandra: %s %q: %w (only a deleted record is replaced)", op, q.Name, driver.ErrExists)
		}
		// The same values, in the UPDATE's order: name moves to the WHERE.
		args := append(append(vals[1:], q.Generation, q.Name), p.Replaces.CreatedAt, nullTime(p.Replaces.DeletedAt))
		// An earlier attempt is recognised by the whole record it wrote:
		// racing replaces may share a creation time (a millisecond), and
		// one that finds another's record must answer ErrExists. A
		// refused conditional UPDATE returns only its condition's columns,
		// so the record is read, at SERIAL, which sees every Paxos write
		// the refusal itself may have finished.
		return d.swapQueue(ctx, op, q.Name, d.q.queue.replaceQueue, args, driver.ErrExists, func(queueRow) bool {
			return d.holdsReplace(ctx, q)
		})
	}
	if q.Generation != 0 || !q.DeletedAt.IsZero() {
		return fmt.Errorf("cassandra: %s %q: a new record is a live first generation", op, q.Name)
	}
	return d.insertRecord(ctx, op, "queue", q.Name, d.q.queue.insertQueue, vals, func(existing map[string]any) bool {
		var r queueRow
		r.fromMap(existing)
		got, err := queueFromRow(r)
		return err == nil && sameQueue(*got, q)
	})
}

// DeleteQueue implements driver.Queues with a lightweight transaction on
// the record.
func (d *Driver) DeleteQueue(ctx context.Context, p *driver.DeleteQueueParams) error {
	const op = "delete queue"
	if err := d.begin(ctx, op); err != nil {
		return err
	}
	at := p.At.Truncate(time.Millisecond)
	return d.swapQueue(ctx, op, p.Name, d.q.queue.deleteQueue, []any{at, p.Name, p.CreatedAt}, driver.ErrNotFound, func(r queueRow) bool {
		return r.CreatedAt != nil && r.CreatedAt.Equal(p.CreatedAt.Truncate(time.Millisecond)) && r.DeletedAt != nil && r.DeletedAt.Equal(at)
	})
}

// swapQueue runs a conditional UPDATE of a queue record, resubmitting it
// while its outcome is unknown; a resubmission refused on a record that
// mine recognises as the earlier attempt's counts as applied. A refusal
// answers refused.
func (d *Driver) swapQueue(ctx context.Context, op, name, stmt string, args []any, refused error, mine func(queueRow) bool) error {
	applied, _, err := d.insertIfNotExists(ctx, d.cfg.WriteConsistency, op, "queue", name, stmt, args, func(existing map[string]any) bool {
		var r queueRow
		r.fromMap(existing)
		return mine(r)
	})
	if err != nil {
		return err
	}
	if !applied {
		return fmt.Errorf("cassandra: %s %q: %w", op, name, refused)
	}
	return nil
}

func sameQueue(a, b driver.Queue) bool {
	return a.Name == b.Name && a.Shards == b.Shards && a.ShardDuration == b.ShardDuration &&
		a.MaxDeliveries == b.MaxDeliveries && a.VisibilityTimeout == b.VisibilityTimeout &&
		max(a.Spread, 1) == max(b.Spread, 1) && max(a.Priorities, 1) == max(b.Priorities, 1) &&
		a.CreatedAt.Equal(b.CreatedAt.Truncate(time.Millisecond))
}

func queueValues(q driver.Queue) ([]any, error) {
	if q.Shards < 0 || q.Shards > math.MaxInt32 || q.MaxDeliveries < 0 || q.MaxDeliveries > math.MaxInt32 ||
		q.Spread < 0 || q.Spread > math.MaxInt32 || q.Priorities < 0 || q.Priorities > math.MaxInt32 {
		return nil, fmt.Errorf("shards %d, spread %d, priorities %d or max deliveries %d out of range", q.Shards, q.Spread, q.Priorities, q.MaxDeliveries)
	}
	if q.ShardDuration < 0 || q.ShardDuration%time.Millisecond != 0 ||
		q.VisibilityTimeout < 0 || q.VisibilityTimeout%time.Millisecond != 0 {
		return nil, fmt.Errorf("durations must be whole, non-negative milliseconds (the columns' unit)")
	}
	return []any{q.Name, q.Shards, q.ShardDuration.Milliseconds(), q.MaxDeliveries,
		q.VisibilityTimeout.Milliseconds(), q.CreatedAt, max(q.Spread, 1), max(q.Priorities, 1)}, nil
}

// queueRow is one row of the queues table as scanned; nil means null.
type queueRow struct {
	Name          *string
	Shards        *int
	ShardMS       *int64
	MaxDeliveries *int
	VisibilityMS  *int64
	CreatedAt     *time.Time
	Spread        *int // null for queues made before the column
	Priorities    *int // likewise
	Generation    *int64
	DeletedAt     *time.Time
}

func (r *queueRow) dest() []any {
	return []any{&r.Name, &r.Shards, &r.ShardMS, &r.MaxDeliveries, &r.VisibilityMS, &r.CreatedAt, &r.Spread, &r.Priorities, &r.Generation, &r.DeletedAt}
}

// fromMap fills r from the row a not-applied IF NOT EXISTS returns.
func (r *queueRow) fromMap(m map[string]any) {
	if v, ok := m["name"].(string); ok {
		r.Name = &v
	}
	if v, ok := m["shards"].(int); ok {
		r.Shards = &v
	}
	if v, ok := m["shard_ms"].(int64); ok {
		r.ShardMS = &v
	}
	if v, ok := m["max_deliveries"].(int); ok {
		r.MaxDeliveries = &v
	}
	if v, ok := m["visibility_ms"].(int64); ok {
		r.VisibilityMS = &v
	}
	if v, ok := m["created_at"].(time.Time); ok {
		r.CreatedAt = &v
	}
	if v, ok := m[spreadColumn].(int); ok {
		r.Spread = &v
	}
	if v, ok := m[prioritiesColumn].(int); ok {
		r.Priorities = &v
	}
	if v, ok := m[generationColumn].(int64); ok {
		r.Generation = &v
	}
	// A null timestamp comes back as the zero time.
	if v, ok := m[deletedAtColumn].(time.Time); ok && !v.IsZero() {
		r.DeletedAt = &v
	}
}

// queueFromRow converts a scanned queues row; every column must be set.
func queueFromRow(r queueRow) (*driver.Queue, error) {
	bad := func(format string, args ...any) (*driver.Queue, error) {
		return nil, badRecordRow("queues", r.Name, format, args...)
	}
	switch {
	case r.Name == nil:
		return bad("name is null")
	case r.Shards == nil:
		return bad("shards is null")
	case r.ShardMS == nil:
		return bad("shard_ms is null")
	case r.MaxDeliveries == nil:
		return bad("max_deliveries is null")
	case r.VisibilityMS == nil:
		return bad("visibility_ms is null")
	case r.CreatedAt == nil:
		return bad("created_at is null")
	case *r.Shards < 0 || *r.MaxDeliveries < 0:
		return bad("negative shards or max_deliveries")
	case r.Spread != nil && *r.Spread < 0:
		return bad("negative spread")
	case r.Priorities != nil && *r.Priorities < 0:
		return bad("negative priorities")
	case r.Generation != nil && *r.Generation < 0:
		return bad("negative generation")
	}
	priorities := 1
	if r.Priorities != nil {
		priorities = max(*r.Priorities, 1)
	}
	spread := 1
	if r.Spread != nil {
		spread = max(*r.Spread, 1)
	}
	var generation int64
	if r.Generation != nil {
		generation = *r.Generation
	}
	var deletedAt time.Time
	if r.DeletedAt != nil && !r.DeletedAt.IsZero() {
		deletedAt = r.DeletedAt.UTC()
	}
	const maxMS = math.MaxInt64 / int64(time.Millisecond)
	for _, v := range []int64{*r.ShardMS, *r.VisibilityMS} {
		if v < 0 || v > maxMS {
			return bad("duration %d ms out of range", v)
		}
	}
	return &driver.Queue{
		Name:              *r.Name,
		Shards:            *r.Shards,
		ShardDuration:     time.Duration(*r.ShardMS) * time.Millisecond,
		MaxDeliveries:     *r.MaxDeliveries,
		VisibilityTimeout: time.Duration(*r.VisibilityMS) * time.Millisecond,
		CreatedAt:         r.CreatedAt.UTC(),
		Spread:            spread,
		Priorities:        priorities,
		Generation:        generation,
		DeletedAt:         deletedAt,
	}, nil
}

// GetQueue reads one queue record at the ReadConsistency level.
func (d *Driver) GetQueue(ctx context.Context, p *driver.GetQueueParams) (*driver.Queue, error) {
	return getRecord[driver.Queue, queueRow](ctx, d, d.cfg.ReadConsistency, "get queue", "queue", p.Name, d.q.queue.getQueue, queueFromRow)
}

// holdsReplace reports whether the stored record is the live one q's
// replace writes: the same generation and configuration, not merely the
// same creation time.
func (d *Driver) holdsReplace(ctx context.Context, q driver.Queue) bool {
	got, err := getRecordAt[driver.Queue, queueRow](ctx, d, lwtSerial, "get queue", "queue", q.Name, d.q.queue.getQueue, queueFromRow)
	return err == nil && got.DeletedAt.IsZero() && got.Generation == q.Generation && sameQueue(*got, q)
}

// ListQueues reads every queue record and sorts them by name.
func (d *Driver) ListQueues(ctx context.Context, _ *driver.ListQueuesParams) ([]*driver.Queue, error) {
	out, err := listRecords[driver.Queue, queueRow](ctx, d, d.cfg.ReadConsistency, "list queues", d.q.queue.listQueues, queueFromRow,
		func(q *driver.Queue) string { return q.Name })
	if err == nil && out == nil {
		out = []*driver.Queue{}
	}
	return out, err
}

// ---- messages ----------------------------------------------------------------

// nullTime binds the zero time as null.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// statement is one CQL statement with its values, to be sent in a batch.
type statement struct {
	cql    string
	values []any
}

// shardWrites collects the statements of a batched write by the shard (the
// partition) each one writes.
type shardWrites map[int][]statement

func (s shardWrites) add(shard int, cql string, values ...any) {
	s[shard] = append(s[shard], statement{cql, values})
}

// writeByShard is the whole of a queue write that batches by shard: collect
// adds the statements (or fails, with an error naming op), shardBatches
// sends them.
func (d *Driver) writeByShard(ctx context.Context, op, queue string, collect func(shardWrites) error) error {
	if err := d.begin(ctx, op); err != nil {
		return err
	}
	shards := shardWrites{}
	if err := collect(shards); err != nil {
		return err
	}
	if err := d.shardBatches(ctx, shards); err != nil {
		return fmt.Errorf("cassandra: %s in %q: %w", op, queue, err)
	}
	return nil
}

// shardBatches runs one unlogged batch per shard: each batch stays within
// one partition, so every replica applies it atomically and no batch log
// is needed. Batches of different shards are sent one after another.
func (d *Driver) shardBatches(ctx context.Context, shards shardWrites) error {
	cl, err := level(driver.Default, d.cfg.WriteConsistency)
	if err != nil {
		return err
	}
	keys := make([]int, 0, len(shards))
	for s := range shards {
		keys = append(keys, s)
	}
	sort.Ints(keys)
	for _, s := range keys {
		stmts := shards[s]
		for len(stmts) > 0 {
			n := min(len(stmts), maxBatchStatements)
			b := d.session.Batch(gocql.UnloggedBatch).Consistency(cl)
			for _, st := range stmts[:n] {
				b.Query(st.cql, st.values...)
			}
			if err := b.ExecContext(ctx); err != nil {
				return fmt.Errorf("shard %d: %w", s, mapError(opWrite, err))
			}
			stmts = stmts[n:]
		}
	}
	return nil
}

// PutMessages inserts the messages, one single-partition batch per shard.
func (d *Driver) PutMessages(ctx context.Context, p *driver.PutMessagesParams) error {
	const op = "put messages"
	return d.writeByShard(ctx, op, p.Queue, func(shards shardWrites) error {
		for _, m := range p.Messages {
			if m.EnqueuedAt.IsZero() {
				return fmt.Errorf("cassandra: %s in %q: message %s has no EnqueuedAt", op, p.Queue, m.ID)
			}
			if len(m.Attributes) > 0 {
				// In the same single-partition batch: the message is
				// never seen without them.
				shards.add(m.Shard, d.q.queue.setAttributes, encodeAttributes(m.Attributes), p.Queue, m.Shard, m.Due, [16]byte(m.ID))
			}
			if m.VisibleAt.IsZero() && m.LastError == "" {
				shards.add(m.Shard, d.q.queue.putFresh, nonNil(m.Body), m.EnqueuedAt, m.Deliveries, p.Queue, m.Shard, m.Due, [16]byte(m.ID))
				continue
			}
			shards.add(m.Shard, d.q.queue.putFull, nonNil(m.Body), m.EnqueuedAt, m.Deliveries, nullTime(m.VisibleAt), nullString(m.LastError),
				p.Queue, m.Shard, m.Due, [16]byte(m.ID))
		}
		return nil
	})
}

// messageRow is one row of queue_messages as scanned; nil means null.
type messageRow struct {
	Due        *time.Time
	ID         *[16]byte
	EnqueuedAt *time.Time
	Deliveries *int
	VisibleAt  *time.Time
	LastError  *string
	Body       *[]byte
	Attributes *[]byte
}

// dest is what a row scans into: with the body come the attributes.
func (r *messageRow) dest(withBody bool) []any {
	d := []any{&r.Due, &r.ID, &r.EnqueuedAt, &r.Deliveries, &r.VisibleAt, &r.LastError}
	if withBody {
		d = append(d, &r.Body, &r.Attributes)
	}
	return d
}

// messageFromRow converts a scanned message row of the given shard. A row
// without enqueued_at is a fragment: an update that landed after its
// message's delete (Cassandra upserts, so the update recreated the cells
// it set). Fragments are reported with fragment true and are not errors.
func messageFromRow(shard int, r messageRow, withBody bool) (m driver.Message, fragment bool, err error) {
	bad := func(format string, args ...any) (driver.Message, bool, error) {
		return driver.Message{}, false, fmt.Errorf("%w: queue_messages row: %s", errBadRow, fmt.Sprintf(format, args...))
	}
	if r.Due == nil || r.ID == nil {
		return bad("due or id is null")
	}
	m.MessageKey = driver.MessageKey{Shard: shard, Due: r.Due.UTC(), ID: driver.MessageID(*r.ID)}
	if !m.ID.Valid() {
		return bad("id %s is not a time-based UUID", m.ID)
	}
	if r.EnqueuedAt == nil {
		return m, true, nil
	}
	if r.Deliveries == nil {
		return bad("message %s: deliveries is null", m.ID)
	}
	if *r.Deliveries < 0 {
		return bad("message %s: deliveries %d is negative", m.ID, *r.Deliveries)
	}
	m.EnqueuedAt = r.EnqueuedAt.UTC()
	m.Deliveries = *r.Deliveries
	if r.VisibleAt != nil {
		m.VisibleAt = r.VisibleAt.UTC()
	}
	if r.LastError != nil {
		m.LastError = *r.LastError
	}
	if withBody {
		if r.Body == nil {
			m.Body = []byte{} // gocql scans an empty blob as null
		} else {
			m.Body = nonNil(*r.Body)
		}
		if r.Attributes != nil {
			if m.Attributes, err = decodeAttributes(*r.Attributes); err != nil {
				return bad("message %s: %v", m.ID, err)
			}
		}
	}
	return m, false, nil
}

// ReadMessages reads one slice of a shard's partition at ReadConsistency.
func (d *Driver) ReadMessages(ctx context.Context, p *driver.ReadMessagesParams) (*driver.MessagePage, error) {
	const op = "read messages"
	if err := d.begin(ctx, op); err != nil {
		return nil, err
	}
	if p.Limit <= 0 {
		return nil, fmt.Errorf("cassandra: %s: limit %d must be positive", op, p.Limit)
	}
	cl, err := level(driver.Default, d.cfg.ReadConsistency)
	if err != nil {
		return nil, fmt.Errorf("cassandra: %s: %w", op, err)
	}
	stmt := d.q.queue.readMessagesNoBody
	if p.WithBody {
		stmt = d.q.queue.readMessages
	}
	page := &driver.MessagePage{}
	from, to := p.From.Truncate(time.Millisecond), p.To.Truncate(time.Millisecond)
	if to.Before(from) {
		return page, nil
	}
	iter := d.session.Query(stmt, p.Queue, p.Shard, from, to, p.Limit).Consistency(cl).IterContext(ctx)
	var badRow error
	for {
		var r messageRow
		if !iter.Scan(r.dest(p.WithBody)...) {
			break
		}
		if r.Due != nil && r.ID != nil && isAnchor(*r.Due, *r.ID) {
			continue
		}
		m, fragment, err := messageFromRow(p.Shard, r, p.WithBody)
		switch {
		case err != nil:
			badRow = err
		case fragment:
			page.Fragments = append(page.Fragments, m.MessageKey)
		default:
			page.Messages = append(page.Messages, m)
		}
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: %s of %q shard %d: %w", op, p.Queue, p.Shard, mapError(opRead, err))
	}
	if badRow != nil {
		return nil, fmt.Errorf("cassandra: %s of %q shard %d: %w", op, p.Queue, p.Shard, badRow)
	}
	return page, nil
}

// GetMessage reads one message; a fragment counts as missing.
func (d *Driver) GetMessage(ctx context.Context, p *driver.GetMessageParams) (*driver.Message, error) {
	const op = "get message"
	cl, err := d.beginAt(ctx, op, driver.Default, d.cfg.ReadConsistency)
	if err != nil {
		return nil, err
	}
	k := p.Key
	if isAnchor(k.Due, k.ID) {
		return nil, fmt.Errorf("cassandra: message %s of %q: %w", k.ID, p.Queue, driver.ErrNotFound)
	}
	iter := d.session.Query(d.q.queue.getMessage, p.Queue, k.Shard, k.Due, [16]byte(k.ID)).Consistency(cl).IterContext(ctx)
	var r messageRow
	found := iter.Scan(r.dest(true)...)
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: %s %s of %q: %w", op, k.ID, p.Queue, mapError(opRead, err))
	}
	if !found {
		return nil, fmt.Errorf("cassandra: message %s of %q: %w", k.ID, p.Queue, driver.ErrNotFound)
	}
	m, fragment, err := messageFromRow(k.Shard, r, true)
	if err != nil {
		return nil, fmt.Errorf("cassandra: %s %s of %q: %w", op, k.ID, p.Queue, err)
	}
	if fragment {
		return nil, fmt.Errorf("cassandra: message %s of %q: %w", k.ID, p.Queue, driver.ErrNotFound)
	}
	return &m, nil
}

// UpdateMessages writes the delivery columns, one batch per shard. An
// update that lands after its message's delete leaves a fragment (see
// messageFromRow), never a message.
func (d *Driver) UpdateMessages(ctx context.Context, p *driver.UpdateMessagesParams) error {
	return d.writeByShard(ctx, "update messages", p.Queue, func(shards shardWrites) error {
		for _, u := range p.Updates {
			shards.add(u.Shard, d.q.queue.updateMessage, u.Deliveries, nullTime(u.VisibleAt), nullString(u.LastError),
				p.Queue, u.Shard, u.Due, [16]byte(u.ID))
		}
		return nil
	})
}

// ExtendVisibility writes the visible_at column alone (see
// driver.Queues): the delivery count is not checked here, where that
// would take a lightweight transaction mixed with the plain writes of
// deliveries; writing one column is what keeps a redelivery's count safe.
func (d *Driver) ExtendVisibility(ctx context.Context, p *driver.ExtendVisibilityParams) (bool, error) {
	err := d.writeByShard(ctx, "extend visibility", p.Queue, func(shards shardWrites) error {
		shards.add(p.Key.Shard, d.q.queue.extendVisibility, nullTime(p.VisibleAt), p.Queue, p.Key.Shard, p.Key.Due, [16]byte(p.Key.ID))
		return nil
	})
	return err == nil, err
}

// DeleteMessages deletes the rows, one batch per shard.
func (d *Driver) DeleteMessages(ctx context.Context, p *driver.DeleteMessagesParams) error {
	return d.writeByShard(ctx, "delete messages", p.Queue, func(shards shardWrites) error {
		for _, k := range p.Keys {
			shards.add(k.Shard, d.q.queue.deleteMessage, p.Queue, k.Shard, k.Due, [16]byte(k.ID))
		}
		return nil
	})
}

// ---- shard state and leases ----------------------------------------------------

// shardStateRow is the shard's static columns, read with the anchor row.
type shardStateRow struct {
	Lock       *string
	Since      *time.Time
	Floor      *time.Time
	Deliveries *int // a regular column, selected because CQL needs one
}

func (r *shardStateRow) dest() []any {
	return []any{&r.Lock, &r.Since, &r.Floor, &r.Deliveries}
}

func shardStateFromRow(r shardStateRow) driver.QueueShardState {
	var s driver.QueueShardState
	if r.Lock != nil {
		s.Holder = *r.Lock
	}
	if r.Since != nil && s.Holder != "" {
		s.Since = r.Since.UTC()
	}
	if r.Floor != nil {
		s.Floor = r.Floor.UTC()
	}
	return s
}

// ReadQueueShard reads the shard's static columns through its anchor row (see
// anchorDue), a point read however many deleted messages the shard holds.
// A shard without an anchor row has never had a floor or a lease; it reads
// as free with no floor.
func (d *Driver) ReadQueueShard(ctx context.Context, p *driver.QueueShardParams) (*driver.QueueShardState, error) {
	const op = "read shard"
	if err := d.begin(ctx, op); err != nil {
		return nil, err
	}
	s, err := d.readShard(ctx, p.Queue, p.Shard)
	if err != nil {
		return nil, fmt.Errorf("cassandra: %s %d of %q: %w", op, p.Shard, p.Queue, err)
	}
	return s, nil
}

func (d *Driver) readShard(ctx context.Context, queue string, shard int) (*driver.QueueShardState, error) {
	cl, err := level(driver.Default, d.cfg.ReadConsistency)
	if err != nil {
		return nil, err
	}
	iter := d.session.Query(d.q.queue.readShard, queue, shard, anchorDue, [16]byte(anchorID)).Consistency(cl).IterContext(ctx)
	var r shardStateRow
	iter.Scan(r.dest()...)
	if err := iter.Close(); err != nil {
		return nil, mapError(opRead, err)
	}
	s := shardStateFromRow(r)
	return &s, nil
}

// ttlSeconds rounds a lease TTL up to Cassandra's whole seconds.
func ttlSeconds(ttl time.Duration) (int, error) {
	if ttl <= 0 {
		return 0, fmt.Errorf("lease TTL %v must be positive", ttl)
	}
	s := (ttl + time.Second - 1) / time.Second
	if s > math.MaxInt32 {
		return 0, fmt.Errorf("lease TTL %v is too long", ttl)
	}
	return int(s), nil
}

// cas runs one lightweight transaction on the lease and reports whether it
// was applied and, if not, which holder the partition has ("" if none).
// hasStatic says whether the answer carried the static columns at all.
func (d *Driver) cas(ctx context.Context, stmt string, args ...any) (applied bool, holder string, hasStatic bool, err error) {
	cl, err := level(driver.Default, d.cfg.WriteConsistency)
	if err != nil {
		return false, "", false, err
	}
	existing := map[string]any{}
	applied, err = d.session.Query(stmt, args...).
		Consistency(cl).SerialConsistency(lwtSerial).
		MapScanCASContext(ctx, existing)
	if err != nil {
		return false, "", false, mapError(opWrite, err)
	}
	v, hasStatic := existing["lock"]
	holder, _ = v.(string)
	return applied, holder, hasStatic, nil
}

// beginLease is begin for AcquireLease and RenewLease, which then check the
// parameters they share; it returns the TTL in Cassandra's whole seconds.
func (d *Driver) beginLease(ctx context.Context, op string, p *driver.LeaseParams) (int, error) {
	if err := d.begin(ctx, op); err != nil {
		return 0, err
	}
	ttl, err := ttlSeconds(p.TTL)
	if err == nil && p.Holder == "" {
		err = errors.New("lease holder is empty")
	}
	if err != nil {
		return 0, fmt.Errorf("cassandra: %s: %w", op, err)
	}
	return ttl, nil
}

// leaseCAS is cas on p's shard, its error naming the operation and shard.
func (d *Driver) leaseCAS(ctx context.Context, op string, p *driver.LeaseParams, stmt string, args ...any) (applied bool, holder string, hasStatic bool, err error) {
	applied, holder, hasStatic, err = d.cas(ctx, stmt, args...)
	if err != nil {
		return false, "", false, fmt.Errorf("cassandra: %s on shard %d of %q: %w", op, p.Shard, p.Queue, err)
	}
	return applied, holder, hasStatic, nil
}

// AcquireLease takes the lease with UPDATE ... USING TTL ... IF lock = null.
func (d *Driver) AcquireLease(ctx context.Context, p *driver.LeaseParams) (driver.LeaseResult, error) {
	const op = "acquire lease"
	var res driver.LeaseResult
	ttl, err := d.beginLease(ctx, op, p)
	if err != nil {
		return res, err
	}
	// ReadQueueShard finds the lease through the anchor row, so the row must
	// exist before the lease does. Cassandra 2.1.0 refuses the compare-and-
	// set on a partition without a static cell, which used to force the
	// anchor in below; 3.0 and later apply it, and a lease taken on a fresh
	// shard would then be invisible to ReadQueueShard. The anchor is permanent, so
	// one plain write per shard and process is enough.
	key := queueShard{p.Queue, p.Shard}
	if _, ok := d.anchored.Load(key); !ok {
		if err := d.writeAnchor(ctx, op, p); err != nil {
			return res, err
		}
		d.anchored.Store(key, struct{}{})
	}
	for attempt := 0; ; attempt++ {
		applied, holder, hasStatic, err := d.leaseCAS(ctx, op, p, d.q.queue.acquire, ttl, p.Holder, p.Since, p.Queue, p.Shard)
		if err != nil {
			return res, err
		}
		if applied || hasStatic || attempt > 0 {
			return driver.LeaseResult{Held: applied, Holder: holder}, nil
		}
		// Not applied, and no current lock value came back: Cassandra
		// 2.1.0 does this for a partition without a static cell, which an
		// anchor written by another process and since lost to a replica
		// down at the time can still leave. Anchor again and ask once more.
		if err := d.writeAnchor(ctx, op, p); err != nil {
			return res, err
		}
	}
}

// queueShard names one shard partition of a queue.
type queueShard struct {
	queue string
	shard int
}

// writeAnchor writes the anchor row of p's shard for operation op, a plain
// idempotent write.
func (d *Driver) writeAnchor(ctx context.Context, op string, p *driver.LeaseParams) error {
	cl, err := level(driver.Default, d.cfg.WriteConsistency)
	if err == nil {
		err = mapError(opWrite, d.session.Query(d.q.queue.anchor, p.Queue, p.Shard, anchorDue, [16]byte(anchorID)).Consistency(cl).ExecContext(ctx))
	}
	if err != nil {
		return fmt.Errorf("cassandra: %s on shard %d of %q: anchoring the partition: %w", op, p.Shard, p.Queue, err)
	}
	return nil
}

// RenewLease extends the lease with ... IF lock = <holder>.
func (d *Driver) RenewLease(ctx context.Context, p *driver.LeaseParams) (driver.LeaseResult, error) {
	const op = "renew lease"
	var res driver.LeaseResult
	ttl, err := d.beginLease(ctx, op, p)
	if err != nil {
		return res, err
	}
	applied, holder, _, err := d.leaseCAS(ctx, op, p, d.q.queue.renew, ttl, p.Holder, p.Since, p.Queue, p.Shard, p.Holder)
	return driver.LeaseResult{Held: applied, Holder: holder}, err
}

// ReleaseLease clears the lease with ... IF lock = <holder>.
func (d *Driver) ReleaseLease(ctx context.Context, p *driver.LeaseParams) (driver.LeaseResult, error) {
	const op = "release lease"
	var res driver.LeaseResult
	if err := d.begin(ctx, op); err != nil {
		return res, err
	}
	if p.Holder == "" {
		return res, fmt.Errorf("cassandra: %s: lease holder is empty", op)
	}
	applied, holder, _, err := d.leaseCAS(ctx, op, p, d.q.queue.release, p.Queue, p.Shard, p.Holder)
	return driver.LeaseResult{Held: applied, Holder: holder}, err
}

// SetFloor writes the static floor column, and the anchor row with it,
// in one plain write.
func (d *Driver) SetFloor(ctx context.Context, p *driver.SetFloorParams) error {
	return d.execAt(ctx, "set floor", driver.Default, d.cfg.WriteConsistency,
		d.q.queue.setFloor, []any{p.Queue, p.Shard, anchorDue, [16]byte(anchorID), nullTime(p.Floor)},
		" on shard %d of %q", p.Shard, p.Queue)
}

// QueueShardStats pages through the partition from p.From (due, id,
// enqueued_at and visible_at only) and counts.
func (d *Driver) QueueShardStats(ctx context.Context, p *driver.QueueShardStatsParams) (*driver.QueueShardStats, error) {
	const op = "shard stats"
	if err := d.begin(ctx, op); err != nil {
		return nil, err
	}
	st, err := d.readShard(ctx, p.Queue, p.Shard)
	if err != nil {
		return nil, fmt.Errorf("cassandra: %s of %q shard %d: %w", op, p.Queue, p.Shard, err)
	}
	cl, err := level(driver.Default, d.cfg.ReadConsistency)
	if err != nil {
		return nil, fmt.Errorf("cassandra: %s: %w", op, err)
	}
	out := &driver.QueueShardStats{QueueShardState: *st}
	now := p.Now.Truncate(time.Millisecond)
	iter := d.session.Query(d.q.queue.countShard, p.Queue, p.Shard, p.From.Truncate(time.Millisecond)).
		Consistency(cl).PageSize(5000).IterContext(ctx)
	var due, enqueued, visible *time.Time
	var id *[16]byte
	for iter.Scan(&due, &id, &enqueued, &visible) {
		if due == nil || enqueued == nil {
			continue // the anchor row, or a fragment
		}
		out.Messages++
		if !due.After(now) {
			out.Due++
			if visible != nil && visible.After(now) {
				out.InFlight++
			} else {
				since := *due
				if visible != nil && visible.After(since) {
					since = *visible // delivered before: waiting since its visibility ended
				}
				if out.OldestWaiting.IsZero() || since.Before(out.OldestWaiting) {
					out.OldestWaiting = since
				}
			}
		}
		due, id, enqueued, visible = nil, nil, nil, nil
	}
	if err := iter.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: %s of %q shard %d: %w", op, p.Queue, p.Shard, mapError(opRead, err))
	}
	return out, nil
}

// ---- dead letters --------------------------------------------------------------

// DeadLetter first stores the letters (one batch on the queue's
// queue_dead partition), then deletes their messages (a batch per shard).
// A failure in between leaves a message both queued and dead; the next
// attempt, or the consumer that finds the message again, repeats both
// steps, which changes nothing the second time.
func (d *Driver) DeadLetter(ctx context.Context, p *driver.DeadLetterParams) error {
	const op = "dead letter"
	if err := d.begin(ctx, op); err != nil {
		return err
	}
	if len(p.Letters) == 0 {
		return nil
	}
	// The dead letters share one partition; -1 is only a map key here.
	dead, msgs := shardWrites{}, shardWrites{}
	for _, l := range p.Letters {
		dead.add(-1, d.q.queue.insertDead, p.Queue, [16]byte(l.ID), l.Shard, l.Due, nonNil(l.Body),
			l.EnqueuedAt, l.Deliveries, nullString(l.LastError), l.DiedAt)
		if len(l.Attributes) > 0 {
			dead.add(-1, d.q.queue.setDeadAttributes, encodeAttributes(l.Attributes), p.Queue, [16]byte(l.ID))
		}
		msgs.add(l.Shard, d.q.queue.deleteMessage, p.Queue, l.Shard, l.Due, [16]byte(l.ID))
	}
	if err := d.shardBatches(ctx, dead); err != nil {
		return fmt.Errorf("cassandra: %s in %q: storing letters: %w", op, p.Queue, err)
	}
	if err := d.shardBatches(ctx, msgs); err != nil {
		return fmt.Errorf("cassandra: %s in %q: deleting messages: %w", op, p.Queue, err)
	}
	return nil
}

// deadRow is one row of queue_dead as scanned; nil means null.
type deadRow struct {
	ID         *[16]byte
	Shard      *int
	Due        *time.Time
	Body       *[]byte
	EnqueuedAt *time.Time
	Deliveries *int
	LastError  *string
	DiedAt     *time.Time
	Attributes *[]byte
}

func (r *deadRow) dest() []any {
	return []any{&r.ID, &r.Shard, &r.Due, &r.Body, &r.EnqueuedAt, &r.Deliveries, &r.LastError, &r.DiedAt, &r.Attributes}
}

func deadFromRow(r deadRow) (driver.DeadLetter, error) {
	var l driver.DeadLetter
	bad := func(format string, args ...any) (driver.DeadLetter, error) {
		return driver.DeadLetter{}, fmt.Errorf("%w: queue_dead row: %s", errBadRow, fmt.Sprintf(format, args...))
	}
	switch {
	case r.ID == nil:
		return bad("id is null")
	case r.Shard == nil || r.Due == nil || r.EnqueuedAt == nil || r.Deliveries == nil || r.DiedAt == nil:
		return bad("%s: shard, due, enqueued_at, deliveries or died_at is null", driver.MessageID(*r.ID))
	case *r.Shard < 0 || *r.Deliveries < 0:
		return bad("%s: negative shard or deliveries", driver.MessageID(*r.ID))
	}
	l.ID = driver.MessageID(*r.ID)
	if !l.ID.Valid() {
		return bad("id %s is not a time-based UUID", l.ID)
	}
	l.Shard, l.Due, l.EnqueuedAt = *r.Shard, r.Due.UTC(), r.EnqueuedAt.UTC()
	l.Deliveries, l.DiedAt = *r.Deliveries, r.DiedAt.UTC()
	l.Body = []byte{}
	if r.Body != nil {
		l.Body = nonNil(*r.Body)
	}
	if r.LastError != nil {
		l.LastError = *r.LastError
	}
	if r.Attributes != nil {
		attrs, err := decodeAttributes(*r.Attributes)
		if err != nil {
			return bad("%s: %v", l.ID, err)
		}
		l.Attributes = attrs
	}
	return l, nil
}

// ListDead reads the queue's dead letters in id (time) order, or the ones
// asked for.
func (d *Driver) ListDead(ctx context.Context, p *driver.ListDeadParams) ([]driver.DeadLetter, error) {
	const op = "list dead letters"
	cl, err := d.beginAt(ctx, op, driver.Default, d.cfg.ReadConsistency)
	if err != nil {
		return nil, err
	}
	out := []driver.DeadLetter{}
	scan := func(iter *gocql.Iter) error {
		var badRow error
		for p.Limit <= 0 || len(out) < p.Limit {
			var r deadRow
			if !iter.Scan(r.dest()...) {
				break
			}
			l, err := deadFromRow(r)
			if err != nil {
				badRow = err
				continue
			}
			out = append(out, l)
		}
		if err := iter.Close(); err != nil {
			return mapError(opRead, err)
		}
		return badRow
	}
	if len(p.IDs) == 0 {
		if err := scan(d.session.Query(d.q.queue.listDead, p.Queue).Consistency(cl).IterContext(ctx)); err != nil {
			return nil, fmt.Errorf("cassandra: %s of %q: %w", op, p.Queue, err)
		}
		return out, nil
	}
	for _, id := range p.IDs {
		if err := scan(d.session.Query(d.q.queue.listDeadByID, p.Queue, [16]byte(id)).Consistency(cl).IterContext(ctx)); err != nil {
			return nil, fmt.Errorf("cassandra: %s of %q: %w", op, p.Queue, err)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		ti, tj := out[i].ID.Time(), out[j].ID.Time()
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return strings.Compare(out[i].ID.String(), out[j].ID.String()) < 0
	})
	return out, nil
}

// DeleteDead deletes dead letters in one batch on the queue's partition.
func (d *Driver) DeleteDead(ctx context.Context, p *driver.DeleteDeadParams) error {
	const op = "delete dead letters"
	if err := d.begin(ctx, op); err != nil {
		return err
	}
	// The dead letters share one partition; -1 is only a map key here.
	stmts := shardWrites{}
	for _, id := range p.IDs {
		stmts.add(-1, d.q.queue.deleteDead, p.Queue, [16]byte(id))
	}
	if err := d.shardBatches(ctx, stmts); err != nil {
		return fmt.Errorf("cassandra: %s of %q: %w", op, p.Queue, err)
	}
	return nil
}
