package cassandra

import (
	"context"
	"errors"
	"fmt"
	"sort"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/abacusdb/abacus/driver"
)

// Tables of the actor, native and cas models. %[1]s is the keyspace.
const (
	// The actor model (“Highly Available Counters Using Cassandra”, state-based): one partition per counter,
	// one clustering row per actor holding its absolute value, written
	// USING TIMESTAMP the actor's version so that Cassandra's
	// last-write-wins keeps each actor's latest value without a read.
	actorValuesDDL = `CREATE TABLE IF NOT EXISTS %[1]s.actor_values (
	ns text,
	counter text,
	actor text,
	value bigint,
	PRIMARY KEY ((ns, counter), actor)
)`

	// The native baseline (the “Counters” design notes): a counter column. Counter columns
	// cannot share a table with other non-key columns, hence a table of
	// its own.
	nativeCountersDDL = `CREATE TABLE IF NOT EXISTS %[1]s.native_counters (
	ns text,
	counter text,
	value counter,
	PRIMARY KEY ((ns, counter))
)`

	// The cas baseline (“Highly Available Counters Using Cassandra”, linearizable): a plain bigint changed
	// only by lightweight transactions. Plain writes are never mixed in,
	// since they would bypass Paxos and break its guarantees.
	casCountersDDL = `CREATE TABLE IF NOT EXISTS %[1]s.cas_counters (
	ns text,
	counter text,
	value bigint,
	PRIMARY KEY ((ns, counter))
)`
)

func counterSchemaStatements(ks string) []string {
	return []string{
		fmt.Sprintf(actorValuesDDL, ks),
		fmt.Sprintf(nativeCountersDDL, ks),
		fmt.Sprintf(casCountersDDL, ks),
	}
}

// counterStatements holds the CQL of the three models with the keyspace
// filled in.
type counterStatements struct {
	setActor, readActors                 string
	addNative, readNative                string
	insertCAS, updateCAS, readCAS        string
	probeActors, probeNative, probeCASes string
}

func newCounterStatements(ks string) counterStatements {
	return counterStatements{
		// INSERT rather than UPDATE: the row marker it writes carries the
		// same timestamp, so it changes nothing about which value wins.
		setActor:   "INSERT INTO " + ks + ".actor_values (ns, counter, actor, value) VALUES (?, ?, ?, ?) USING TIMESTAMP ?",
		readActors: "SELECT actor, value, WRITETIME(value) FROM " + ks + ".actor_values WHERE ns = ? AND counter = ?",
		addNative:  "UPDATE " + ks + ".native_counters SET value = value + ? WHERE ns = ? AND counter = ?",
		readNative: "SELECT value FROM " + ks + ".native_counters WHERE ns = ? AND counter = ?",
		insertCAS:  "INSERT INTO " + ks + ".cas_counters (ns, counter, value) VALUES (?, ?, ?) IF NOT EXISTS",
		updateCAS:  "UPDATE " + ks + ".cas_counters SET value = ? WHERE ns = ? AND counter = ? IF value = ?",
		readCAS:    "SELECT value FROM " + ks + ".cas_counters WHERE ns = ? AND counter = ?",

		probeActors: "SELECT ns FROM " + ks + ".actor_values LIMIT 1",
		probeNative: "SELECT ns FROM " + ks + ".native_counters LIMIT 1",
		probeCASes:  "SELECT ns FROM " + ks + ".cas_counters LIMIT 1",
	}
}

func (q counterStatements) probes() []string {
	return []string{q.probeActors, q.probeNative, q.probeCASes}
}

var (
	_ driver.Actors         = (*Driver)(nil)
	_ driver.NativeCounters = (*Driver)(nil)
	_ driver.CASCounters    = (*Driver)(nil)
)

// ---- actors ----------------------------------------------------------------

// SetActorValue implements driver.Actors with INSERT ... USING TIMESTAMP.
// Cassandra settles everything the contract asks for on its own: the
// higher timestamp wins on every replica whatever the arrival order, and a
// replay writes an identical cell. At equal timestamps it keeps the cell
// whose value bytes compare greater as signed bytes (see driver.Actors).
func (d *Driver) SetActorValue(ctx context.Context, p *driver.SetActorValueParams) error {
	const op = "set actor value"
	if err := d.begin(ctx, op); err != nil {
		return err
	}
	if p.Version < 1 {
		return fmt.Errorf("cassandra: %s: version %d is not positive", op, p.Version)
	}
	cl, err := level(p.Consistency, d.cfg.WriteConsistency)
	if err != nil {
		return fmt.Errorf("cassandra: %s: %w", op, err)
	}
	return d.exec(ctx, cl, d.q.counters.setActor, []any{p.Namespace, p.Counter, p.Actor, p.Value, p.Version},
		op, " %s/%s/%s", p.Namespace, p.Counter, p.Actor)
}

// ReadActorValues implements driver.Actors. Each row is one actor's last
// write and independent of the others, so the read may be paged.
func (d *Driver) ReadActorValues(ctx context.Context, p *driver.ReadActorValuesParams) ([]driver.ActorValue, error) {
	const op = "read actor values"
	cl, err := d.beginAt(ctx, op, p.Consistency, d.cfg.ReadConsistency)
	if err != nil {
		return nil, err
	}
	iter := d.session.Query(d.q.counters.readActors, p.Namespace, p.Counter).Consistency(cl).IterContext(ctx)
	return readRows(iter, (*actorRow).dest, actorValuesFromScan, op, " %s/%s", p.Namespace, p.Counter)
}

// actorRow is one scanned row of actor_values; nil pointers are nulls.
type actorRow struct {
	Actor     *string
	Value     *int64
	WriteTime *int64
}

func (r *actorRow) dest() []any { return []any{&r.Actor, &r.Value, &r.WriteTime} }

// actorValuesFromScan converts scanned rows strictly. SetActorValue always
// sets value, so a row without one (a cell deleted by hand, or a row
// inserted by something else) is reported rather than read as 0, which
// would silently change the counter's sum. A version below 1 cannot come
// from SetActorValue either.
func actorValuesFromScan(rows []actorRow) ([]driver.ActorValue, error) {
	out := make([]driver.ActorValue, 0, len(rows))
	for i, r := range rows {
		switch {
		case r.Actor == nil:
			return nil, fmt.Errorf("%w: actor row %d: actor is null", errBadRow, i)
		case r.Value == nil || r.WriteTime == nil:
			return nil, fmt.Errorf("%w: row of actor %q: value is null", errBadRow, *r.Actor)
		case *r.WriteTime < 1:
			return nil, fmt.Errorf("%w: row of actor %q written at version %d", errBadRow, *r.Actor, *r.WriteTime)
		}
		out = append(out, driver.ActorValue{Actor: *r.Actor, Value: *r.Value, Version: *r.WriteTime})
	}
	// Cassandra returns clustering order (UTF-8 bytes, which is Go's
	// string order), but the contract should not rest on that.
	sort.Slice(out, func(i, j int) bool { return out[i].Actor < out[j].Actor })
	for i := 1; i < len(out); i++ {
		if out[i].Actor == out[i-1].Actor {
			return nil, fmt.Errorf("%w: actor %q appears twice", errBadRow, out[i].Actor)
		}
	}
	return out, nil
}

// ---- native counters --------------------------------------------------------

// AddNative implements driver.NativeCounters with a counter column update.
// Counter updates are not idempotent, and one that times out may have been
// applied by the leader replica already: every such failure is
// driver.ErrUnknownOutcome (mapError), never retried here. The sum wraps
// around at the ends of the int64 range, as Java longs do.
func (d *Driver) AddNative(ctx context.Context, p *driver.AddNativeParams) error {
	return d.execAt(ctx, "add native", p.Consistency, d.cfg.WriteConsistency,
		d.q.counters.addNative, []any{p.Delta, p.Namespace, p.Counter},
		" %s/%s", p.Namespace, p.Counter)
}

// ReadNative implements driver.NativeCounters.
func (d *Driver) ReadNative(ctx context.Context, p *driver.ReadNativeParams) (int64, error) {
	const op = "read native"
	cl, err := d.beginAt(ctx, op, p.Consistency, d.cfg.ReadConsistency)
	if err != nil {
		return 0, err
	}
	var v *int64
	err = d.session.Query(d.q.counters.readNative, p.Namespace, p.Counter).Consistency(cl).ScanContext(ctx, &v)
	if errors.Is(err, gocql.ErrNotFound) {
		return 0, nil // never added to
	}
	if err != nil {
		return 0, fmt.Errorf("cassandra: %s %s/%s: %w", op, p.Namespace, p.Counter, mapError(opRead, err))
	}
	// A counter table's row exists only through its counter cells, so a
	// row whose value is null did not come from Cassandra's own writes.
	if v == nil {
		return 0, fmt.Errorf("cassandra: %s %s/%s: %w: value is null", op, p.Namespace, p.Counter, errBadRow)
	}
	return *v, nil
}

// ---- cas counters ------------------------------------------------------------

// ReadCAS implements driver.CASCounters. The read's level is chosen by
// casReadLevel; a serial read goes through Paxos, so it sees every set
// that was applied, and finishes one still in progress first; a plain
// read is one ordinary read.
func (d *Driver) ReadCAS(ctx context.Context, p *driver.ReadCASParams) (driver.CASValue, error) {
	const op = "read cas"
	if err := d.begin(ctx, op); err != nil {
		return driver.CASValue{}, err
	}
	cl, err := casReadLevel(p.Consistency, p.Serial, d.cfg.ReadConsistency)
	if err != nil {
		return driver.CASValue{}, fmt.Errorf("cassandra: %s: %w", op, err)
	}
	var v *int64
	err = d.session.Query(d.q.counters.readCAS, p.Namespace, p.Counter).Consistency(cl).ScanContext(ctx, &v)
	if errors.Is(err, gocql.ErrNotFound) {
		return driver.CASValue{}, nil
	}
	if err != nil {
		return driver.CASValue{}, fmt.Errorf("cassandra: %s %s/%s: %w", op, p.Namespace, p.Counter, mapError(opRead, err))
	}
	cur, err := casValue(true, v)
	if err != nil {
		return driver.CASValue{}, fmt.Errorf("cassandra: %s %s/%s: %w", op, p.Namespace, p.Counter, err)
	}
	return cur, nil
}

// casReadLevel maps a ReadCAS level (Default: the configured read level).
// A serial read is a Paxos round at SERIAL whatever the level, like the
// compare-and-sets it reads: a round at LOCAL_SERIAL that found a
// proposal in progress would finish it with a local majority, which need
// not share a replica with the majority that decided otherwise. A plain
// read is an ordinary read at the level.
func casReadLevel(c driver.Consistency, serial bool, configured driver.Consistency) (gocql.Consistency, error) {
	if serial {
		return lwtSerial, nil
	}
	return level(c, configured)
}

// CompareAndSetCAS implements driver.CASCounters with INSERT ... IF NOT
// EXISTS (Expect.Exists false) or UPDATE ... IF value = ? (true), with the
// Paxos phase at SERIAL whatever the level (lwtSerial says why), as
// ClaimRequest does. A Paxos round that times out, under contention for instance, is
// driver.ErrUnknownOutcome: it may still be completed by the next round on
// the counter. It is never retried here.
func (d *Driver) CompareAndSetCAS(ctx context.Context, p *driver.CompareAndSetCASParams) (driver.CASResult, error) {
	const op = "compare and set cas"
	cl, err := d.beginAt(ctx, op, p.Consistency, d.cfg.WriteConsistency)
	if err != nil {
		return driver.CASResult{}, err
	}
	var q *gocql.Query
	if p.Expect.Exists {
		q = d.session.Query(d.q.counters.updateCAS, p.Value, p.Namespace, p.Counter, p.Expect.Value)
	} else {
		q = d.session.Query(d.q.counters.insertCAS, p.Namespace, p.Counter, p.Value)
	}
	q = q.Consistency(cl).SerialConsistency(lwtSerial)
	// Seeding "value" with a **int64 makes gocql scan it into a *int64, so
	// a null stays distinguishable from 0, and a result without the column
	// leaves the seed in place (see casValueFromMap).
	var seed *int64
	existing := map[string]any{"value": &seed}
	applied, err := q.MapScanCASContext(ctx, existing)
	if err != nil {
		return driver.CASResult{}, fmt.Errorf("cassandra: %s %s/%s: %w", op, p.Namespace, p.Counter, mapError(opWrite, err))
	}
	if applied {
		return driver.CASResult{Applied: true, Current: driver.CASValue{Exists: true, Value: p.Value}}, nil
	}
	cur, err := casValueFromMap(existing)
	if err != nil {
		return driver.CASResult{}, fmt.Errorf("cassandra: %s %s/%s: %w", op, p.Namespace, p.Counter, err)
	}
	return driver.CASResult{Current: cur}, nil
}

// casValueFromMap reads the current value from the result of a
// conditional write that did not apply. Cassandra returns the row's
// columns when the row exists (all of them for IF NOT EXISTS, the
// condition's for IF value = ?) and only [applied] when it does not, so
// "value" still holding its **int64 seed means there is no row.
func casValueFromMap(m map[string]any) (driver.CASValue, error) {
	switch v := m["value"].(type) {
	case **int64:
		return driver.CASValue{}, nil
	case *int64:
		return casValue(true, v)
	default:
		return driver.CASValue{}, fmt.Errorf("%w: cas counter value of type %T", errBadRow, m["value"])
	}
}

// casValue builds the value of a cas counter whose row was (found) or was
// not found. Both ways of writing the row set value, so a null is
// reported, never read as 0.
func casValue(found bool, v *int64) (driver.CASValue, error) {
	if !found {
		return driver.CASValue{}, nil
	}
	if v == nil {
		return driver.CASValue{}, fmt.Errorf("%w: cas counter value is null", errBadRow)
	}
	return driver.CASValue{Exists: true, Value: *v}, nil
}
