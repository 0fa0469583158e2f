package cassandra

import (
	"context"
	"errors"
	"fmt"

	"github.com/abacusdb/abacus/driver"
	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// ledgerRightsDDL holds the rights record of each ledger with a balance
// floor (driver.LedgerRightsStore), one partition of one row per ledger,
// so Paxos rounds on different ledgers never contend. Like ledger_claims
// it is written only by lightweight transactions, since mixing Paxos and
// plain writes on one row breaks Paxos' guarantees; the purge's delete is
// the one plain write, and it comes after the name's last use.
const ledgerRightsDDL = `CREATE TABLE IF NOT EXISTS %[1]s.ledger_rights (
	ns text,
	ledger text,
	version bigint,
	state blob,
	PRIMARY KEY ((ns, ledger))
)`

// ledgerRightsDCDDL holds the record of each data center's share of a
// ledger's rights: a partition per ledger and data center, so that each
// data center runs Paxos (at LOCAL_SERIAL) on partitions no other data
// center's rounds touch. Its replicas elsewhere only receive the commits.
const ledgerRightsDCDDL = `CREATE TABLE IF NOT EXISTS %[1]s.ledger_rights_dc (
	ns text,
	ledger text,
	dc text,
	version bigint,
	state blob,
	PRIMARY KEY ((ns, ledger, dc))
)`

// ledgerRightsStatements are the statements of one of the two tables, and
// the Paxos level of its rounds.
type ledgerRightsStatements struct {
	read, insert, update, purge, probe string
	serial                             gocql.Consistency
}

func newLedgerRightsStatements(ks string) ledgerRightsStatements {
	return ledgerRightsStatements{
		read:   "SELECT version, state FROM " + ks + ".ledger_rights WHERE ns = ? AND ledger = ?",
		insert: "INSERT INTO " + ks + ".ledger_rights (ns, ledger, version, state) VALUES (?, ?, ?, ?) IF NOT EXISTS",
		update: "UPDATE " + ks + ".ledger_rights SET version = ?, state = ? WHERE ns = ? AND ledger = ? IF version = ?",
		// At purgeTimestamp, as the other purges: it also shadows the
		// commit of a Paxos round still under way on the ledger.
		purge:  "DELETE FROM " + ks + ".ledger_rights USING TIMESTAMP ? WHERE ns = ? AND ledger = ?",
		probe:  "SELECT ns FROM " + ks + ".ledger_rights LIMIT 1",
		serial: lwtSerial,
	}
}

// newLedgerRightsDCStatements are those of ledger_rights_dc: the same
// statements with the data center last in the key, and LOCAL_SERIAL,
// which is safe here because only the data center's own servers ever
// change its record.
func newLedgerRightsDCStatements(ks string) ledgerRightsStatements {
	return ledgerRightsStatements{
		read:   "SELECT version, state FROM " + ks + ".ledger_rights_dc WHERE ns = ? AND ledger = ? AND dc = ?",
		insert: "INSERT INTO " + ks + ".ledger_rights_dc (ns, ledger, dc, version, state) VALUES (?, ?, ?, ?, ?) IF NOT EXISTS",
		update: "UPDATE " + ks + ".ledger_rights_dc SET version = ?, state = ? WHERE ns = ? AND ledger = ? AND dc = ? IF version = ?",
		purge:  "DELETE FROM " + ks + ".ledger_rights_dc USING TIMESTAMP ? WHERE ns = ? AND ledger = ? AND dc = ?",
		probe:  "SELECT ns FROM " + ks + ".ledger_rights_dc LIMIT 1",
		serial: gocql.LocalSerial,
	}
}

// rightsRecord picks the table and key of the record p names: the
// ledger's own, or a data center's share of it.
func (d *Driver) rightsRecord(ns, ledger, dc string) (*ledgerRightsStatements, []any, string) {
	if dc == "" {
		return &d.q.rights, []any{ns, ledger}, ns + "/" + ledger
	}
	return &d.q.rightsDC, []any{ns, ledger, dc}, ns + "/" + ledger + " in " + dc
}

// ReadLedgerRights implements driver.LedgerRightsStore with a read at
// SERIAL, as ReadClaim reads: it sees
// every swap that returned, and finishes one a replica has accepted.
func (d *Driver) ReadLedgerRights(ctx context.Context, p *driver.ReadLedgerRightsParams) (driver.LedgerRights, error) {
	const op = "read ledger rights"
	if err := d.begin(ctx, op); err != nil {
		return driver.LedgerRights{}, err
	}
	var (
		version *int64
		state   *[]byte
	)
	st, key, what := d.rightsRecord(p.Namespace, p.Ledger, p.DataCenter)
	err := readSerial(ctx, func() error {
		return d.session.Query(st.read, key...).
			Consistency(st.serial).
			ScanContext(ctx, &version, &state)
	})
	if errors.Is(err, gocql.ErrNotFound) {
		return driver.LedgerRights{}, nil
	}
	if err != nil {
		return driver.LedgerRights{}, fmt.Errorf("cassandra: %s %s: %w", op, what, mapError(opRead, err))
	}
	r, err := ledgerRights(version, state)
	if err != nil {
		return driver.LedgerRights{}, fmt.Errorf("cassandra: %s %s: %w", op, what, err)
	}
	return r, nil
}

// SwapLedgerRights implements driver.LedgerRightsStore with INSERT ... IF
// NOT EXISTS (from version 0) or UPDATE ... IF version = ? (from any
// other), the Paxos phase at SERIAL, as
// ClaimRequest does. A Paxos round that times out is
// driver.ErrUnknownOutcome: the next round on the ledger may still
// complete it. It is never retried here.
//
// A refused UPDATE returns only the column of its condition, so the
// record it found is then read again at SERIAL: what the caller gets may
// be newer than what refused the swap, never older.
func (d *Driver) SwapLedgerRights(ctx context.Context, p *driver.SwapLedgerRightsParams) (bool, driver.LedgerRights, error) {
	const op = "swap ledger rights"
	if err := p.Check(); err != nil {
		return false, driver.LedgerRights{}, fmt.Errorf("cassandra: %s %s/%s: %w", op, p.Namespace, p.Ledger, err)
	}
	cl, err := d.beginAt(ctx, op, p.Consistency, d.cfg.WriteConsistency)
	if err != nil {
		return false, driver.LedgerRights{}, err
	}
	st, key, what := d.rightsRecord(p.Namespace, p.Ledger, p.DataCenter)
	var q *gocql.Query
	if p.Expect == 0 {
		q = d.session.Query(st.insert, append(key, p.Next.Version, nonNil(p.Next.State))...)
	} else {
		q = d.session.Query(st.update, append(append([]any{p.Next.Version, nonNil(p.Next.State)}, key...), p.Expect)...)
	}
	q = q.Consistency(cl).SerialConsistency(st.serial)
	// Seeds, as in CompareAndSetCAS: a column the result lacks keeps its
	// seed, and one it has is scanned into a pointer, so a null stays
	// apart from a value (see rightsFromCAS).
	var (
		versionSeed *int64
		stateSeed   *[]byte
	)
	existing := map[string]any{"version": &versionSeed, "state": &stateSeed}
	applied, err := q.MapScanCASContext(ctx, existing)
	if err != nil {
		return false, driver.LedgerRights{}, fmt.Errorf("cassandra: %s %s: %w", op, what, mapError(opWrite, err))
	}
	if applied {
		return true, p.Next, nil
	}
	cur, complete, err := rightsFromCAS(existing)
	if err != nil {
		return false, driver.LedgerRights{}, fmt.Errorf("cassandra: %s %s: %w", op, what, err)
	}
	if !complete {
		cur, err = d.ReadLedgerRights(ctx, &driver.ReadLedgerRightsParams{Namespace: p.Namespace, Ledger: p.Ledger, DataCenter: p.DataCenter, Consistency: p.Consistency})
		if err != nil {
			return false, driver.LedgerRights{}, fmt.Errorf("cassandra: %s %s: refused; reading the record that refused it: %w", op, what, err)
		}
	}
	return false, cur, nil
}

// rightsFromCAS reads the result of a swap that was not applied.
// Cassandra returns every column of the row for IF NOT EXISTS, only the
// condition's (version) for IF version = ?, and for a missing row a null
// version or no column at all. So a version that is null or still its
// seed means no record (Version 0); complete is false when the row exists
// but its state was not returned.
func rightsFromCAS(m map[string]any) (r driver.LedgerRights, complete bool, err error) {
	var version *int64
	switch v := m["version"].(type) {
	case **int64:
		return driver.LedgerRights{}, true, nil
	case *int64:
		version = v
	default:
		return driver.LedgerRights{}, false, fmt.Errorf("%w: ledger rights version of type %T", errBadRow, m["version"])
	}
	if version == nil {
		return driver.LedgerRights{}, true, nil
	}
	switch s := m["state"].(type) {
	case **[]byte:
		if *version < 1 {
			return driver.LedgerRights{}, false, fmt.Errorf("%w: ledger rights version %d", errBadRow, *version)
		}
		return driver.LedgerRights{Version: *version}, false, nil
	case *[]byte:
		rec, err := ledgerRights(version, s)
		return rec, err == nil, err
	default:
		return driver.LedgerRights{}, false, fmt.Errorf("%w: ledger rights state of type %T", errBadRow, m["state"])
	}
}

// ledgerRights builds a stored record from its columns. Both ways of
// writing the row set both columns, and versions start at 1, so a null
// or a version below 1 means the row did not come from this driver.
func ledgerRights(version *int64, state *[]byte) (driver.LedgerRights, error) {
	switch {
	case version == nil || state == nil:
		return driver.LedgerRights{}, fmt.Errorf("%w: ledger rights with a null column", errBadRow)
	case *version < 1:
		return driver.LedgerRights{}, fmt.Errorf("%w: ledger rights version %d", errBadRow, *version)
	}
	// gocql scans an empty blob as nil.
	return driver.LedgerRights{Version: *version, State: nonNil(*state)}, nil
}
