package cassandra

import (
	"context"
	"fmt"
	"math"

	"github.com/abacusdb/abacus/driver"
)

// One partition per namespace holds its cuts, so a process learns every cut
// of a namespace with one read.
const counterCutsDDL = `CREATE TABLE IF NOT EXISTS %[1]s.counter_cuts (
	ns text,
	counter text,
	at bigint,
	deletes_namespace boolean,
	PRIMARY KEY ((ns), counter, at)
)`

type lifecycleStatements struct {
	addCut, readCuts, dropCut, probe string
	deleteNamespace                  string
	// Purges, one partition delete each.
	purgeShards, purgeActor, purgeNative, purgeCAS, purgeLedger string
	purgeEventCounter, purgeEventBucket, readEventBuckets       string
	purgeEventSeals                                             string
}

func newLifecycleStatements(ks string) lifecycleStatements {
	return lifecycleStatements{
		addCut:            "INSERT INTO " + ks + ".counter_cuts (ns, counter, at, deletes_namespace) VALUES (?, ?, ?, ?)",
		readCuts:          "SELECT counter, at, deletes_namespace FROM " + ks + ".counter_cuts WHERE ns = ?",
		dropCut:           "DELETE FROM " + ks + ".counter_cuts WHERE ns = ? AND counter = ? AND at = ?",
		probe:             "SELECT ns FROM " + ks + ".counter_cuts LIMIT 1",
		deleteNamespace:   "DELETE FROM " + ks + ".namespaces WHERE name = ? IF created_at = ?",
		purgeShards:       "DELETE FROM " + ks + ".shards USING TIMESTAMP ? WHERE ns = ? AND counter = ?",
		purgeActor:        "DELETE FROM " + ks + ".actor_values USING TIMESTAMP ? WHERE ns = ? AND counter = ?",
		purgeNative:       "DELETE FROM " + ks + ".native_counters WHERE ns = ? AND counter = ?",
		purgeCAS:          "DELETE FROM " + ks + ".cas_counters USING TIMESTAMP ? WHERE ns = ? AND counter = ?",
		purgeLedger:       "DELETE FROM " + ks + ".ledgers USING TIMESTAMP ? WHERE ns = ? AND ledger = ?",
		purgeEventCounter: "DELETE FROM " + ks + ".event_counters USING TIMESTAMP ? WHERE ns = ? AND counter = ?",
		purgeEventBucket:  "DELETE FROM " + ks + ".events USING TIMESTAMP ? WHERE ns = ? AND counter = ? AND bucket = ?",
		readEventBuckets:  "SELECT bucket FROM " + ks + ".event_counters WHERE ns = ? AND counter = ?",
		// At purgeTimestamp too, unlike DeleteEventSeals: far above the
		// ballot timestamps (about now) the seals were written at, so it
		// covers them, and the commit of a round still under way.
		purgeEventSeals: "DELETE FROM " + ks + ".event_seals USING TIMESTAMP ? WHERE ns = ? AND counter = ? AND bucket = ?",
	}
}

// cutWriteLevel is the level cuts are written at: a quorum at least, and
// a quorum in every data center when cuts are read at LOCAL_QUORUM (or
// written at it), so that a read at LOCAL_QUORUM in any data center sees
// every cut.
func cutWriteLevel(read, write driver.Consistency) driver.Consistency {
	if keyLevel(read) == driver.LocalQuorum || write == driver.LocalQuorum {
		return driver.EachQuorum
	}
	return keyLevel(write)
}

// AddCut implements driver.Lifecycle, at a quorum at least so that every
// later read at a quorum sees it.
func (d *Driver) AddCut(ctx context.Context, p *driver.AddCutParams) error {
	const op = "add cut"
	if p.Cut.At <= 0 {
		return fmt.Errorf("cassandra: %s: time %d is not positive", op, p.Cut.At)
	}
	if p.Cut.DeletesNamespace && p.Cut.Counter != "" {
		return fmt.Errorf("cassandra: %s: only a namespace-wide cut deletes the namespace", op)
	}
	return d.execAt(ctx, op, driver.Default, cutWriteLevel(d.cfg.ReadConsistency, d.cfg.WriteConsistency), d.q.lifecycle.addCut,
		[]any{p.Namespace, p.Cut.Counter, p.Cut.At, p.Cut.DeletesNamespace}, " of %s/%s", p.Namespace, p.Cut.Counter)
}

type cutRow struct {
	Counter *string
	At      *int64
	Deletes *bool
}

func (r *cutRow) dest() []any { return []any{&r.Counter, &r.At, &r.Deletes} }

func cutsFromRows(rows []cutRow) ([]driver.Cut, error) {
	out := make([]driver.Cut, 0, len(rows))
	for _, r := range rows {
		if r.Counter == nil || r.At == nil || *r.At <= 0 {
			return nil, fmt.Errorf("%w: a cut without a counter or a positive time", errBadRow)
		}
		c := driver.Cut{Counter: *r.Counter, At: *r.At, DeletesNamespace: r.Deletes != nil && *r.Deletes}
		if c.DeletesNamespace && c.Counter != "" {
			return nil, fmt.Errorf("%w: a counter's cut marked as deleting the namespace", errBadRow)
		}
		out = append(out, c)
	}
	return out, nil
}

// ReadCuts implements driver.Lifecycle: the namespace's partition, unpaged
// (the purge keeps it to about one cut per deleted counter).
func (d *Driver) ReadCuts(ctx context.Context, p *driver.ReadCutsParams) ([]driver.Cut, error) {
	const op = "read cuts"
	cl, err := d.beginAt(ctx, op, driver.Default, keyLevel(d.cfg.ReadConsistency))
	if err != nil {
		return nil, err
	}
	iter := d.session.Query(d.q.lifecycle.readCuts, p.Namespace).Consistency(cl).IterContext(ctx)
	return readRows(iter, (*cutRow).dest, cutsFromRows, op, " of %s", p.Namespace)
}

// DropCuts implements driver.Lifecycle.
func (d *Driver) DropCuts(ctx context.Context, p *driver.DropCutsParams) error {
	const op = "drop cuts"
	cl, err := d.beginAt(ctx, op, driver.Default, cutWriteLevel(d.cfg.ReadConsistency, d.cfg.WriteConsistency))
	if err != nil {
		return err
	}
	for _, c := range p.Cuts {
		if err := d.exec(ctx, cl, d.q.lifecycle.dropCut, []any{p.Namespace, c.Counter, c.At}, op, " of %s/%s", p.Namespace, c.Counter); err != nil {
			return err
		}
	}
	return nil
}

// purgeTimestamp is the timestamp of a purge's deletes: above every
// timestamp a write can carry (an actor's version may be anything), so
// nothing stored under the purged name survives, nor any late write to it.
const purgeTimestamp int64 = math.MaxInt64 - 1

// PurgeCounter implements driver.Lifecycle with partition deletes. An
// events counter's bucket partitions, of events and of seals, are found
// through its markers and deleted before the markers are: the events
// engine marks every bucket a seal's Start lies in, so the markers lead
// to every partition of seals too. A ledger's request-id claims and
// history entries are left to expire by their TTL.
func (d *Driver) PurgeCounter(ctx context.Context, p *driver.PurgeCounterParams) error {
	const op = "purge counter"
	cl, err := d.beginAt(ctx, op, driver.Default, d.cfg.WriteConsistency)
	if err != nil {
		return err
	}
	q := d.q.lifecycle
	one := func(stmt string, args ...any) error {
		return d.exec(ctx, cl, stmt, args, op, " %s/%s", p.Namespace, p.Counter)
	}
	const ts = purgeTimestamp
	switch p.Model {
	case "sharded":
		return one(q.purgeShards, ts, p.Namespace, p.Counter)
	case "actor":
		return one(q.purgeActor, ts, p.Namespace, p.Counter)
	case "native":
		return one(q.purgeNative, p.Namespace, p.Counter)
	case "cas":
		return one(q.purgeCAS, ts, p.Namespace, p.Counter)
	case "ledger":
		// The history's entries are left to expire by their TTL: with the
		// actor rows and the day markers gone, no read finds or shows them.
		if err := one(d.q.entries.purgeDays, ts, p.Namespace, p.Counter); err != nil {
			return err
		}
		if err := one(d.q.rights.purge, ts, p.Namespace, p.Counter); err != nil {
			return err
		}
		// The shares of the data centers the cluster had when Open ran; a
		// record a data center added since keeps its few bytes: the name
		// is never used again.
		for dc := range d.dataCenters {
			if err := one(d.q.rightsDC.purge, ts, p.Namespace, p.Counter, dc); err != nil {
				return err
			}
		}
		return one(q.purgeLedger, ts, p.Namespace, p.Counter)
	case "events":
		rcl, err := level(driver.Default, d.cfg.ReadConsistency)
		if err != nil {
			return fmt.Errorf("cassandra: %s: %w", op, err)
		}
		buckets, err := readRows(d.session.Query(q.readEventBuckets, p.Namespace, p.Counter).Consistency(rcl).IterContext(ctx),
			func(b **int64) []any { return []any{b} }, func(rows []*int64) ([]*int64, error) { return rows, nil },
			op, " %s/%s: buckets", p.Namespace, p.Counter)
		if err != nil {
			return err
		}
		for _, b := range buckets {
			if b == nil {
				continue // the static-only row of a counter without markers
			}
			if err := one(q.purgeEventBucket, ts, p.Namespace, p.Counter, *b); err != nil {
				return err
			}
			if err := one(q.purgeEventSeals, ts, p.Namespace, p.Counter, *b); err != nil {
				return err
			}
		}
		return one(q.purgeEventCounter, ts, p.Namespace, p.Counter)
	}
	return fmt.Errorf("cassandra: %s: unknown model %q", op, p.Model)
}

// DeleteNamespace implements driver.Lifecycle with a lightweight
// transaction on the record's creation time (deleteRecord).
func (d *Driver) DeleteNamespace(ctx context.Context, p *driver.DeleteNamespaceParams) error {
	return d.deleteRecord(ctx, "delete namespace", "namespace", p.Name, d.q.lifecycle.deleteNamespace, p.Name, p.CreatedAt)
}
