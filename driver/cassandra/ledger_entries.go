package cassandra

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/abacusdb/abacus/driver"
	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// ledgerEntriesDDL is the ledger history: one partition per ledger and
// UTC day, so a busy ledger's history is spread over partitions of one
// day each and a day's entries expire together (TTL). The clustering
// order is the history's order (driver.LedgerEntryBefore), every column
// descending, so a page is one slice of one partition and the cursor is
// one multi-column relation, which Cassandra accepts only when the
// columns share a direction.
const ledgerEntriesDDL = `CREATE TABLE IF NOT EXISTS %[1]s.ledger_entries (
	ns text,
	ledger text,
	day int,
	at bigint,
	actor text,
	negative boolean,
	seq bigint,
	request_id text,
	amount bigint,
	PRIMARY KEY ((ns, ledger, day), at, actor, negative, seq)
) WITH CLUSTERING ORDER BY (at DESC, actor DESC, negative DESC, seq DESC)`

// ledgerEntryDaysDDL lists, per ledger, the days whose partitions of
// ledger_entries may hold entries, newest first, so a read visits those
// partitions and not every day of the retention (up to 20 years). A day is
// marked before the day's first entries of each process are written, with
// a TTL that outlives them.
const ledgerEntryDaysDDL = `CREATE TABLE IF NOT EXISTS %[1]s.ledger_entry_days (
	ns text,
	ledger text,
	day int,
	PRIMARY KEY ((ns, ledger), day)
) WITH CLUSTERING ORDER BY (day DESC)`

// entryDayMarks remembers which (ledger, day) this process has marked, so
// a ledger's day costs one marker write per process. Bounded: emptied when
// full, which costs one more marker write per ledger.
type entryDayMarks struct {
	mu     sync.Mutex
	marked map[string]int // ns + 0 + ledger -> last day marked
}

const maxMarkedLedgers = 100_000

func (m *entryDayMarks) has(key string, day int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.marked[key]
	return ok && d == day
}

func (m *entryDayMarks) add(key string, day int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.marked == nil || len(m.marked) >= maxMarkedLedgers {
		m.marked = map[string]int{}
	}
	m.marked[key] = day
}

// markTTL is a day marker's TTL: the entries' own, plus the two days a
// marker written at the start of its day may need to outlive entries
// written at its end (driver.MaxEntryTTL leaves room for them).
func markTTL(entryTTL time.Duration) int {
	return int((entryTTL + 48*time.Hour) / time.Second)
}

// microsPerDay is the width of an entries partition.
const microsPerDay = int64(24 * time.Hour / time.Microsecond)

func entryDay(at int64) int { return int(at / microsPerDay) }

type ledgerEntryStatements struct {
	write, readDay, readDayAfter, probe     string
	markDay, readDays, purgeDays, probeDays string
}

func newLedgerEntryStatements(ks string) ledgerEntryStatements {
	const cols = "at, actor, negative, seq, request_id, amount"
	from := " FROM " + ks + ".ledger_entries WHERE ns = ? AND ledger = ? AND day = ?"
	return ledgerEntryStatements{
		write: "INSERT INTO " + ks + ".ledger_entries (ns, ledger, day, " + cols + ")" +
			" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) USING TTL ? AND TIMESTAMP ?",
		readDay:      "SELECT " + cols + from + " LIMIT ?",
		readDayAfter: "SELECT " + cols + from + " AND (at, actor, negative, seq) < (?, ?, ?, ?) LIMIT ?",
		probe:        "SELECT ns FROM " + ks + ".ledger_entries LIMIT 1",
		markDay:      "INSERT INTO " + ks + ".ledger_entry_days (ns, ledger, day) VALUES (?, ?, ?) USING TTL ?",
		readDays:     "SELECT day FROM " + ks + ".ledger_entry_days WHERE ns = ? AND ledger = ? AND day <= ? AND day >= ?",
		purgeDays:    "DELETE FROM " + ks + ".ledger_entry_days USING TIMESTAMP ? WHERE ns = ? AND ledger = ?",
		probeDays:    "SELECT ns FROM " + ks + ".ledger_entry_days LIMIT 1",
	}
}

// writeLedgerEntries stores a row's entries before the row (see
// driver.Ledgers.WriteLedgerRow): one unlogged batch per day partition,
// which Cassandra applies as one mutation on each replica, so it is not
// subject to the size limit of batches that span partitions. A write's
// entries all carry the write's first time, so that is one batch.
func (d *Driver) writeLedgerEntries(ctx context.Context, cl gocql.Consistency, p *driver.WriteLedgerRowParams) error {
	ttl := int(p.EntryTTL / time.Second)
	for start := 0; start < len(p.Entries); {
		day := entryDay(p.Entries[start].At)
		key := p.Namespace + "\x00" + p.Ledger
		if !d.entryDays.has(key, day) {
			err := d.exec(ctx, cl, d.q.entries.markDay, []any{p.Namespace, p.Ledger, day, markTTL(p.EntryTTL)},
				"write ledger row", " %s/%s/%s: marking day %d", p.Namespace, p.Ledger, p.Row.Actor, day)
			if err != nil {
				return err
			}
			d.entryDays.add(key, day)
		}
		b := d.session.Batch(gocql.UnloggedBatch).Consistency(cl)
		end := start
		for ; end < len(p.Entries) && entryDay(p.Entries[end].At) == day; end++ {
			e := &p.Entries[end]
			b.Query(d.q.entries.write, p.Namespace, p.Ledger, day, e.At, e.Actor, e.Negative, int64(e.Seq), e.RequestID, e.Amount, ttl, p.Timestamp)
		}
		if err := b.ExecContext(ctx); err != nil {
			return fmt.Errorf("cassandra: write ledger row %s/%s/%s: entries: %w", p.Namespace, p.Ledger, p.Row.Actor, mapError(opWrite, err))
		}
		start = end
	}
	return nil
}

// ReadLedgerEntries implements driver.Ledgers: it reads the marked day
// partitions from the newest back to the day of p.Since, until the page is
// full.
func (d *Driver) ReadLedgerEntries(ctx context.Context, p *driver.ReadLedgerEntriesParams) ([]driver.LedgerEntry, error) {
	const op = "read ledger entries"
	if p.Limit < 1 {
		return nil, fmt.Errorf("cassandra: %s: limit %d is below 1", op, p.Limit)
	}
	cl, err := d.beginAt(ctx, op, p.Consistency, d.cfg.ReadConsistency)
	if err != nil {
		return nil, err
	}
	out := []driver.LedgerEntry{}
	first := math.MaxInt32 // every marked day, however far ahead a writer's clock ran
	if p.After != nil {
		first = entryDay(p.After.At)
	}
	last := entryDay(max(p.Since, 0))
	days, err := readRows(d.session.Query(d.q.entries.readDays, p.Namespace, p.Ledger, first, last).Consistency(cl).IterContext(ctx),
		func(day **int) []any { return []any{day} }, func(rows []*int) ([]*int, error) { return rows, nil },
		op, " %s/%s: days", p.Namespace, p.Ledger)
	if err != nil {
		return nil, err
	}
	for _, dp := range days {
		if len(out) == p.Limit {
			break
		}
		if dp == nil {
			return nil, fmt.Errorf("cassandra: %s %s/%s: %w: a null day", op, p.Namespace, p.Ledger, errBadRow)
		}
		day := *dp
		var q *gocql.Query
		if a := p.After; a != nil && entryDay(a.At) == day {
			q = d.session.Query(d.q.entries.readDayAfter, p.Namespace, p.Ledger, day, a.At, a.Actor, a.Negative, int64(a.Seq), p.Limit-len(out))
		} else {
			q = d.session.Query(d.q.entries.readDay, p.Namespace, p.Ledger, day, p.Limit-len(out))
		}
		page, err := readRows(q.Consistency(cl).IterContext(ctx), (*entryRow).dest, entriesFromScan, op, " %s/%s day %d", p.Namespace, p.Ledger, day)
		if err != nil {
			return nil, err
		}
		for _, e := range page {
			if e.At < p.Since {
				return out, nil // the rest of the history is older still
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// entryRow is one scanned entry; nil pointers are nulls.
type entryRow struct {
	At        *int64
	Actor     *string
	Negative  *bool
	Seq       *int64
	RequestID *string
	Amount    *int64
}

func (r *entryRow) dest() []any {
	return []any{&r.At, &r.Actor, &r.Negative, &r.Seq, &r.RequestID, &r.Amount}
}

// entriesFromScan converts scanned entries strictly: a null or an
// impossible number means the row was not written by this driver.
func entriesFromScan(rows []entryRow) ([]driver.LedgerEntry, error) {
	out := make([]driver.LedgerEntry, 0, len(rows))
	for i, r := range rows {
		if r.At == nil || r.Actor == nil || r.Negative == nil || r.Seq == nil || r.RequestID == nil || r.Amount == nil {
			return nil, fmt.Errorf("%w: ledger entry %d has a null column", errBadRow, i)
		}
		if *r.At < 0 || *r.Seq <= 0 || *r.Amount <= 0 {
			return nil, fmt.Errorf("%w: ledger entry %d: at %d, number %d, amount %d", errBadRow, i, *r.At, *r.Seq, *r.Amount)
		}
		out = append(out, driver.LedgerEntry{At: *r.At, Actor: *r.Actor, Negative: *r.Negative, Seq: uint64(*r.Seq), RequestID: *r.RequestID, Amount: *r.Amount})
	}
	return out, nil
}
