package cassandra

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/abacusdb/abacus/driver"
)

// maxBatchStatements is the protocol's limit on statements in one batch
// (an unsigned 16-bit count), less one for the tally update.
const maxBatchStatements = 65535 - 1

// WriteShard replaces the shard's row with INSERT ... USING TIMESTAMP, so
// Cassandra's last-write-wins rule gives exactly the contract: a row written
// or deleted at an equal or higher timestamp stays as it is (on a tie a
// delete wins), and replays are harmless. That p.Timestamp is below
// p.Shard.ExpiresAt is the caller's invariant; like the embedded driver,
// this one does not check it.
func (d *Driver) WriteShard(ctx context.Context, p *driver.WriteShardParams) error {
	return d.execAt(ctx, "write shard", p.Consistency, d.cfg.WriteConsistency,
		d.q.writeShard, []any{p.Namespace, p.Counter, p.Shard.ID, nonNil(p.Shard.State), p.Shard.ExpiresAt, p.Timestamp},
		" %s/%s/%s", p.Namespace, p.Counter, p.Shard.ID)
}

// WriteShards sends the writes as one unlogged batch, each statement with
// its own write timestamp. An unlogged batch spares the batch log because
// nothing asks the writes to land together: each is idempotent and
// reported as unknown when the batch fails. The coordinator still sends
// each partition's mutation to that partition's replicas. A batch that
// finds too few replicas is reported as of unknown outcome, not as
// unavailable: other partitions' writes may have gone out before.
func (d *Driver) WriteShards(ctx context.Context, ws []driver.WriteShardParams) error {
	const op = "write shards"
	if len(ws) == 0 {
		return d.begin(ctx, op)
	}
	if err := driver.CheckShardWrites(ws); err != nil {
		return fmt.Errorf("cassandra: %s: %w", op, err)
	}
	return d.execUnloggedBatch(ctx, op, ws[0].Consistency, len(ws), func(b *gocql.Batch) {
		for _, p := range ws {
			b.Query(d.q.writeShard, p.Namespace, p.Counter, p.Shard.ID, nonNil(p.Shard.State), p.Shard.ExpiresAt, p.Timestamp)
		}
	}, fmt.Sprintf("%s/%s/%s", ws[0].Namespace, ws[0].Counter, ws[0].Shard.ID))
}

// execUnloggedBatch sends the n statements add puts in one unlogged batch
// at level (or the driver's write default); first names the first write
// in an error.
func (d *Driver) execUnloggedBatch(ctx context.Context, op string, level driver.Consistency, n int, add func(*gocql.Batch), first string) error {
	cl, err := d.beginAt(ctx, op, level, d.cfg.WriteConsistency)
	if err != nil {
		return err
	}
	b := d.session.Batch(gocql.UnloggedBatch).Consistency(cl)
	add(b)
	if err := b.ExecContext(ctx); err != nil {
		return fmt.Errorf("cassandra: %s (%d, the first %s): %w", op, n, first, mapBatchError(n, err))
	}
	return nil
}

// mapBatchError is mapError for an unlogged batch of n writes. The
// coordinator checks each partition's replicas as it sends that
// partition's writes, so a batch that finds one partition short of
// replicas may have sent others before: unknown, not unavailable.
func mapBatchError(n int, err error) error {
	mapped := mapError(opWrite, err)
	if n > 1 && errors.Is(mapped, driver.ErrUnavailable) {
		return fmt.Errorf("%w: %w (a batch of several writes may have been applied in part)", driver.ErrUnknownOutcome, err)
	}
	return mapped
}

// ReadShards reads the counter's partition: its shards and the static tally.
// With p.From it reads only the clustering rows from p.From on, so the row
// tombstones of folded shards below it are never scanned; Cassandra then
// returns the static tally only alongside a row, which the sharded engine's
// anchor provides.
//
// The read is deliberately not paged. Pages are separate reads, and a fold
// landing between two of them could let the result count a shard twice
// (in the old page and in the new tally) or miss one. Unpaged, each
// replica answers from one consistent view of the partition, and merging
// replicas cell by cell keeps the fold's deletes and tally together
// because they share one timestamp. GC keeps partitions small.
func (d *Driver) ReadShards(ctx context.Context, p *driver.ReadShardsParams) (*driver.ShardSet, error) {
	const op = "read shards"
	cl, err := d.beginAt(ctx, op, p.Consistency, d.cfg.ReadConsistency)
	if err != nil {
		return nil, err
	}
	q := d.session.Query(d.q.readShards, p.Namespace, p.Counter)
	if p.From != "" {
		q = d.session.Query(d.q.readShardsFrom, p.Namespace, p.Counter, p.From)
	}
	iter := traced(ctx, q).Consistency(cl).PageSize(0).IterContext(ctx)
	return readRows(iter, (*shardRow).dest, shardSetFromRows, op, " %s/%s", p.Namespace, p.Counter)
}

// Fold deletes the folded shards and writes the new tally in one unlogged
// batch. All its statements touch one partition, so each replica applies
// the batch atomically and no batch log is needed; every cell carries
// p.Tally.Timestamp, which makes replays and racing folds converge.
func (d *Driver) Fold(ctx context.Context, p *driver.FoldParams) error {
	const op = "fold"
	if err := d.begin(ctx, op); err != nil {
		return err
	}
	if err := p.Check(); err != nil {
		return fmt.Errorf("cassandra: %s: %w", op, err)
	}
	if len(p.Delete)+len(p.Write) > maxBatchStatements {
		return fmt.Errorf("cassandra: %s %s/%s: %d shards exceed the %d statements of one batch",
			op, p.Namespace, p.Counter, len(p.Delete)+len(p.Write), maxBatchStatements)
	}
	cl, err := level(p.Consistency, d.cfg.FoldConsistency)
	if err != nil {
		return fmt.Errorf("cassandra: %s: %w", op, err)
	}
	b := d.session.Batch(gocql.UnloggedBatch).Consistency(cl).WithTimestamp(p.Tally.Timestamp)
	for _, id := range p.Delete {
		b.Query(d.q.deleteShard, p.Namespace, p.Counter, id)
	}
	for _, s := range p.Write {
		b.Query(d.q.foldWriteShard, p.Namespace, p.Counter, s.ID, nonNil(s.State), s.ExpiresAt)
	}
	b.Query(d.q.writeTally, nonNil(p.Tally.State), p.Tally.Timestamp, p.Namespace, p.Counter)
	if err := b.ExecContext(ctx); err != nil {
		return fmt.Errorf("cassandra: %s %s/%s: %w", op, p.Namespace, p.Counter, mapError(opWrite, err))
	}
	return nil
}

// ListCounters pages through the distinct partition keys of the shards
// table at the ReadConsistency level. Cassandra cannot filter on one part
// of a composite partition key without a full scan either, so the namespace
// filter is applied here. Keys are de-duplicated (paging DISTINCT had
// duplicate bugs in some 2.x releases) and returned sorted.
func (d *Driver) ListCounters(ctx context.Context, p *driver.ListCountersParams) ([]driver.CounterKey, error) {
	return d.listPartitionKeys(ctx, "list counters", d.q.listCounters, p.Namespace)
}

// listPartitionKeys is operation op, which lists the counters of namespace
// ns (or of all namespaces) through partitionKeys.
func (d *Driver) listPartitionKeys(ctx context.Context, op, stmt, ns string) ([]driver.CounterKey, error) {
	if err := d.begin(ctx, op); err != nil {
		return nil, err
	}
	keys, err := d.partitionKeys(ctx, stmt, ns)
	if err != nil {
		return nil, fmt.Errorf("cassandra: %s: %w", op, err)
	}
	return keys, nil
}

// partitionKeys runs stmt, a SELECT DISTINCT ns, counter, at the
// ReadConsistency level and returns the keys in namespace ns (every key
// when ns is empty), de-duplicated and sorted.
func (d *Driver) partitionKeys(ctx context.Context, stmt, ns string) ([]driver.CounterKey, error) {
	cl, err := level(driver.Default, d.cfg.ReadConsistency)
	if err != nil {
		return nil, err
	}
	iter := d.session.Query(stmt).Consistency(cl).IterContext(ctx)
	seen := make(map[driver.CounterKey]struct{})
	var (
		out       []driver.CounterKey
		rowNS, ct *string
	)
	for iter.Scan(&rowNS, &ct) {
		if rowNS == nil || ct == nil {
			continue // not a partition this driver wrote; nothing to list
		}
		k := driver.CounterKey{Namespace: *rowNS, Counter: *ct}
		if ns != "" && k.Namespace != ns {
			continue
		}
		if _, dup := seen[k]; dup {
			continue
		}
		seen[k] = struct{}{}
		out = append(out, k)
	}
	if err := iter.Close(); err != nil {
		return nil, mapError(opRead, err)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Counter < out[j].Counter
	})
	return out, nil
}

// shardRow is one row of a counter's partition as scanned; nil pointers
// are nulls. Every row carries the partition's static tally columns. A
// partition with a tally but no shards comes back as a single row whose
// clustering column (shard) and regular columns are all null.
type shardRow struct {
	Shard     *string
	State     *[]byte
	ExpiresAt *int64
	Tally     *[]byte
	TallyTS   *int64
}

func (r *shardRow) dest() []any {
	return []any{&r.Shard, &r.State, &r.ExpiresAt, &r.Tally, &r.TallyTS}
}

// staticColumns decodes the static columns of row i of a partition, which
// every row carries, and checks that they are the same as row 0's: first
// holds those, stored when i is 0. what names the columns in the error.
func staticColumns[R, S any](i int, r R, decode func(R) (S, error), same func(a, b S) bool, first *S, what string) (S, error) {
	s, err := decode(r)
	if err != nil {
		return s, fmt.Errorf("row %d: %w", i, err)
	}
	if i == 0 {
		*first = s
	} else if !same(*first, s) {
		return s, fmt.Errorf("%w: row %d: static %s differs from row 0", errBadRow, i, what)
	}
	return s, nil
}

// shardSetFromRows converts a partition's rows. It accepts exactly what
// the driver writes: complete shard rows and a tally that is either
// entirely present or entirely absent, identical on every row.
func shardSetFromRows(rows []shardRow) (*driver.ShardSet, error) {
	set := &driver.ShardSet{}
	for i, r := range rows {
		tally, err := staticColumns(i, r, tallyFromRow, sameTally, &set.Tally, "tally")
		if err != nil {
			return nil, err
		}
		if r.Shard == nil {
			// The static-only row of a partition that has no shards.
			if len(rows) != 1 {
				return nil, fmt.Errorf("%w: row %d: null shard id among %d rows", errBadRow, i, len(rows))
			}
			if r.State != nil || r.ExpiresAt != nil {
				return nil, fmt.Errorf("%w: row %d: shard columns set without a shard id", errBadRow, i)
			}
			if tally == nil {
				return nil, fmt.Errorf("%w: row %d: neither a shard nor a tally", errBadRow, i)
			}
			continue
		}
		if r.State == nil {
			return nil, fmt.Errorf("%w: shard %q: state is null", errBadRow, *r.Shard)
		}
		if r.ExpiresAt == nil {
			return nil, fmt.Errorf("%w: shard %q: expires_at is null", errBadRow, *r.Shard)
		}
		set.Shards = append(set.Shards, driver.Shard{
			ID:        *r.Shard,
			State:     nonNil(*r.State),
			ExpiresAt: *r.ExpiresAt,
		})
	}
	// Cassandra returns clustering keys in byte order, which is Go's string
	// order; sorting again costs little and guards against surprises.
	sort.Slice(set.Shards, func(i, j int) bool { return set.Shards[i].ID < set.Shards[j].ID })
	for i := 1; i < len(set.Shards); i++ {
		if set.Shards[i].ID == set.Shards[i-1].ID {
			return nil, fmt.Errorf("%w: shard %q appears twice", errBadRow, set.Shards[i].ID)
		}
	}
	return set, nil
}

// tallyFromRow reads the static columns, which are written together.
func tallyFromRow(r shardRow) (*driver.Tally, error) {
	switch {
	case r.Tally == nil && r.TallyTS == nil:
		return nil, nil
	case r.Tally == nil:
		return nil, fmt.Errorf("%w: tally_ts is set but tally is null", errBadRow)
	case r.TallyTS == nil:
		return nil, fmt.Errorf("%w: tally is set but tally_ts is null", errBadRow)
	}
	return &driver.Tally{State: nonNil(*r.Tally), Timestamp: *r.TallyTS}, nil
}

func sameTally(a, b *driver.Tally) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Timestamp == b.Timestamp && bytes.Equal(a.State, b.State)
}

// nonNil maps a nil slice to an empty one. gocql sends a nil []byte as
// null, which would delete the cell instead of storing an empty state; and
// it scans an empty blob as nil, so reads normalise the other way too.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
