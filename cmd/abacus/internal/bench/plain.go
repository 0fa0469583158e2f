package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/cockroachdb/pebble/v2"

	"github.com/abacusdb/abacus/driver/cassandra"
)

// PlainTable is the table of the plain-insert ceiling on Cassandra: one
// row per call, nothing read before writing, no counter column.
const PlainTable = "plain_bench"

// Plain is the plain-insert ceiling: the cheapest durable write the store
// offers, with no counter semantics at all. Every call writes a new row
// (key, id) holding 1, so the rows of a key, counted after a run, are the
// writes that landed, just as a counter's value is.
type Plain interface {
	// Insert writes row (k, id) with value 1, blindly.
	Insert(ctx context.Context, k string, id int64) error
	// Read reads one row of key k, the cheapest read of it; a key with no
	// rows is not an error.
	Read(ctx context.Context, k string) error
	// Count returns the number of rows of key k.
	Count(ctx context.Context, k string) (int64, error)
	// Close releases what the store holds (not a shared session).
	Close() error
	// Via names the write path in reports: "cql" or "pebble".
	Via() string
}

// PlainInserts returns an op that inserts a new row under a key chosen by
// p. Row ids are the worker index in the high bits and the worker's own
// sequence number below, so they never repeat within a run and no insert
// overwrites another (which would hide a lost write in the count).
func PlainInserts(pl Plain, p *Picker, workers int) Op {
	seq := make([]int64, workers) // per worker: one goroutine each
	return func(ctx context.Context, worker int) error {
		seq[worker]++
		return pl.Insert(ctx, p.Pick(worker), int64(worker)<<40|seq[worker])
	}
}

// PlainReads returns an op that reads one row of a key chosen by p.
func PlainReads(pl Plain, p *Picker) Op {
	return func(ctx context.Context, worker int) error {
		return pl.Read(ctx, p.Pick(worker))
	}
}

// CQLPlain is Plain on Cassandra: INSERT INTO <ks>.plain_bench (k, id, v)
// VALUES (?, ?, ?) on the benchmark's session, at its consistency.
type CQLPlain struct {
	Session     *gocql.Session
	Keyspace    string
	Consistency gocql.Consistency

	insert, read, count string
	d                   *cassandra.Driver
}

// NewCQLPlain returns a CQLPlain in the keyspace of d, on d's session.
func NewCQLPlain(d *cassandra.Driver, cl gocql.Consistency) *CQLPlain {
	ks := d.Keyspace()
	t := ks + "." + PlainTable
	return &CQLPlain{
		Session: d.Session(), Keyspace: ks, Consistency: cl, d: d,
		insert: "INSERT INTO " + t + " (k, id, v) VALUES (?, ?, ?)",
		read:   "SELECT v FROM " + t + " WHERE k = ? LIMIT 1",
		count:  "SELECT id FROM " + t + " WHERE k = ?",
	}
}

// CreateTable creates the table if it is missing and waits for the
// cluster to agree on the schema.
func (p *CQLPlain) CreateTable(ctx context.Context) error {
	return createTable(ctx, p.d, PlainTable, "(k text, id bigint, v bigint, PRIMARY KEY (k, id))")
}

// Insert implements Plain.
func (p *CQLPlain) Insert(ctx context.Context, k string, id int64) error {
	return p.Session.Query(p.insert, k, id, int64(1)).Consistency(p.Consistency).ExecContext(ctx)
}

// Read implements Plain.
func (p *CQLPlain) Read(ctx context.Context, k string) error {
	var v int64
	err := p.Session.Query(p.read, k).Consistency(p.Consistency).ScanContext(ctx, &v)
	if errors.Is(err, gocql.ErrNotFound) {
		return nil
	}
	return err
}

// Count implements Plain. It pages through the key's rows rather than
// asking for count(*), which old Cassandra versions cap or time out on a
// partition of hundreds of thousands of rows.
func (p *CQLPlain) Count(ctx context.Context, k string) (int64, error) {
	it := p.Session.Query(p.count, k).Consistency(p.Consistency).PageSize(5000).IterContext(ctx)
	var (
		id int64
		n  int64
	)
	for it.Scan(&id) {
		n++
	}
	return n, it.Close()
}

// Close implements Plain; the session belongs to the store's driver.
func (p *CQLPlain) Close() error { return nil }

// Via implements Plain.
func (p *CQLPlain) Via() string { return "cql" }

// PebblePlain is Plain on a Pebble database of its own, next to the
// embedded store and opened with its sync setting: a Set per call, fsynced
// before it returns unless NoSync. The embedded store holds its directory
// locked, hence a separate database; it is the same engine on the same
// disk, without any of the store's encoding, locking or reads.
type PebblePlain struct {
	db   *pebble.DB
	opts *pebble.WriteOptions
	dir  string
	rm   bool
}

// OpenPebblePlain opens (creating) a Pebble database in dir. With remove,
// Close deletes dir afterwards.
func OpenPebblePlain(dir string, noSync, remove bool, log *slog.Logger) (*PebblePlain, error) {
	db, err := pebble.Open(dir, &pebble.Options{Logger: pebbleLogger{log}})
	if err != nil {
		return nil, fmt.Errorf("bench: open the plain-insert store in %s: %w", dir, err)
	}
	p := &PebblePlain{db: db, opts: pebble.Sync, dir: dir, rm: remove}
	if noSync {
		p.opts = pebble.NoSync
	}
	return p, nil
}

// plainKey is k, a 0 byte, then id big-endian: a key's rows are adjacent
// and sorted, like a Cassandra partition's.
func plainKey(k string, id int64) []byte {
	b := make([]byte, 0, len(k)+9)
	b = append(append(b, k...), 0)
	return binary.BigEndian.AppendUint64(b, uint64(id))
}

func (p *PebblePlain) bounds(k string) *pebble.IterOptions {
	lo := append([]byte(k), 0)
	hi := append([]byte(k), 1)
	return &pebble.IterOptions{LowerBound: lo, UpperBound: hi}
}

var one = binary.BigEndian.AppendUint64(nil, 1)

// Insert implements Plain.
func (p *PebblePlain) Insert(ctx context.Context, k string, id int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return p.db.Set(plainKey(k, id), one, p.opts)
}

// Read implements Plain: the first row of the key.
func (p *PebblePlain) Read(ctx context.Context, k string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	it, err := p.db.NewIter(p.bounds(k))
	if err != nil {
		return err
	}
	if it.First() {
		_, err = it.ValueAndErr()
	}
	return errors.Join(err, it.Close())
}

// Count implements Plain.
func (p *PebblePlain) Count(ctx context.Context, k string) (int64, error) {
	it, err := p.db.NewIterWithContext(ctx, p.bounds(k))
	if err != nil {
		return 0, err
	}
	var n int64
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n, it.Close()
}

// Close implements Plain.
func (p *PebblePlain) Close() error {
	err := p.db.Close()
	if p.rm {
		err = errors.Join(err, os.RemoveAll(p.dir))
	}
	return err
}

// Via implements Plain.
func (p *PebblePlain) Via() string { return "pebble" }

// pebbleLogger keeps Pebble's informational chatter out of the benchmark's
// output; errors go to the suite's logger.
type pebbleLogger struct{ l *slog.Logger }

func (pebbleLogger) Infof(string, ...any) {}

func (a pebbleLogger) Errorf(format string, args ...any) {
	a.l.Error(fmt.Sprintf(format, args...), "component", "pebble", "store", "plain")
}

// Fatalf is called by Pebble only when it must not continue.
func (a pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	a.l.Error(msg, "component", "pebble", "store", "plain", "fatal", true)
	panic("pebble: " + msg)
}
