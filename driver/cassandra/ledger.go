package cassandra

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/abacusdb/abacus/driver"
	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// Ledger tables (the ledger model, “riak-ruby-ledger: Implementation”). %[1]s is the keyspace.
const (
	// One partition per ledger, one clustering row per actor. Each actor's
	// row is replaced whole by its only writer, USING TIMESTAMP, so rows
	// need no read before a write and Cassandra's last-write-wins settles
	// replays and late replicas. state is the encoded actor state (package
	// ledger): a versioned binary blob holding both sections.
	ledgersDDL = `CREATE TABLE IF NOT EXISTS %[1]s.ledgers (
	ns text,
	ledger text,
	actor text,
	state blob,
	PRIMARY KEY ((ns, ledger), actor)
)`

	// Claims of strict-mode ledgers, written only by lightweight
	// transactions and expiring by TTL. One partition per request id, so
	// Paxos rounds of different requests never contend with each other.
	ledgerClaimsDDL = `CREATE TABLE IF NOT EXISTS %[1]s.ledger_claims (
	ns text,
	ledger text,
	request_id text,
	actor text,
	negative boolean,
	seq bigint,
	amount bigint,
	PRIMARY KEY ((ns, ledger, request_id))
)`
)

// ledgerStatements returns the CQL of the ledger operations and the probes
// that check the ledger tables exist.
func ledgerStatements(ks string) (writeRow, readRows, claim, release, readClaim, probeRows, probeClaims string) {
	writeRow = "INSERT INTO " + ks + ".ledgers (ns, ledger, actor, state) VALUES (?, ?, ?, ?) USING TIMESTAMP ?"
	readRows = "SELECT actor, state, WRITETIME(state) FROM " + ks + ".ledgers WHERE ns = ? AND ledger = ?"
	claim = "INSERT INTO " + ks + ".ledger_claims (ns, ledger, request_id, actor, negative, seq, amount)" +
		" VALUES (?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS USING TTL ?"
	release = "DELETE FROM " + ks + ".ledger_claims WHERE ns = ? AND ledger = ? AND request_id = ?" +
		" IF actor = ? AND negative = ? AND seq = ? AND amount = ?"
	readClaim = "SELECT actor, negative, seq, amount FROM " + ks + ".ledger_claims WHERE ns = ? AND ledger = ? AND request_id = ?"
	probeRows = "SELECT ns FROM " + ks + ".ledgers LIMIT 1"
	probeClaims = "SELECT ns FROM " + ks + ".ledger_claims LIMIT 1"
	return
}

// WriteLedgerRow implements driver.Ledgers with INSERT ... USING TIMESTAMP:
// Cassandra's last-write-wins rule gives the contract directly, and for
// two writes at one timestamp it keeps the greater blob, as the embedded
// driver does.
func (d *Driver) WriteLedgerRow(ctx context.Context, p *driver.WriteLedgerRowParams) error {
	const op = "write ledger row"
	if err := p.CheckEntries(); err != nil {
		return fmt.Errorf("cassandra: %s %s/%s/%s: %w", op, p.Namespace, p.Ledger, p.Row.Actor, err)
	}
	cl, err := d.beginAt(ctx, op, p.Consistency, d.cfg.WriteConsistency)
	if err != nil {
		return err
	}
	if err := d.writeLedgerEntries(ctx, cl, p); err != nil {
		return err
	}
	return d.exec(ctx, cl, d.q.writeLedgerRow, []any{p.Namespace, p.Ledger, p.Row.Actor, nonNil(p.Row.State), p.Timestamp},
		op, " %s/%s/%s", p.Namespace, p.Ledger, p.Row.Actor)
}

// WriteLedgerRows implements driver.Ledgers: each row's entries as
// WriteLedgerRow writes them, then the rows in one logged batch, each
// statement at its row's timestamp. Once the batch is in the batch log
// Cassandra applies all of it, replaying it from the log if the
// coordinator fails; before that it has written none of it. The
// coordinator checks every row's replicas before it writes the batch log,
// so an Unavailable answer means no row was written.
func (d *Driver) WriteLedgerRows(ctx context.Context, ws []driver.WriteLedgerRowParams) error {
	const op = "write ledger rows"
	if err := driver.CheckLedgerRowWrites(ws); err != nil {
		return fmt.Errorf("cassandra: %s: %w", op, err)
	}
	cl, err := d.beginAt(ctx, op, ws[0].Consistency, d.cfg.WriteConsistency)
	if err != nil {
		return err
	}
	// Every row's entries land before the rows (readers count an entry
	// only once its row reaches its number); the rows' entries go to
	// partitions of their own, so they are written at once, not one
	// round trip after another.
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	for i := range ws {
		if len(ws[i].Entries) > 0 {
			wg.Go(func() { errs[i] = d.writeLedgerEntries(ctx, cl, &ws[i]) })
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err // the first row's, as when they were written in turn
		}
	}
	b := d.session.Batch(gocql.LoggedBatch).Consistency(cl)
	for i := range ws {
		p := &ws[i]
		b.Query(d.q.writeLedgerRow, p.Namespace, p.Ledger, p.Row.Actor, nonNil(p.Row.State), p.Timestamp)
	}
	if err := b.ExecContext(ctx); err != nil {
		return fmt.Errorf("cassandra: %s (%d, the first %s/%s/%s): %w", op, len(ws), ws[0].Namespace, ws[0].Ledger, ws[0].Row.Actor, mapError(opWrite, err))
	}
	return nil
}

// ReadLedger implements driver.Ledgers. Rows are independent (each is one
// actor's last write), so unlike ReadShards the read may be paged.
func (d *Driver) ReadLedger(ctx context.Context, p *driver.ReadLedgerParams) ([]driver.LedgerRow, error) {
	const op = "read ledger"
	cl, err := d.beginAt(ctx, op, p.Consistency, d.cfg.ReadConsistency)
	if err != nil {
		return nil, err
	}
	q := d.session.Query(d.q.readLedgerRows, p.Namespace, p.Ledger)
	if p.From != "" {
		q = d.session.Query(d.q.base.readFrom, p.Namespace, p.Ledger, p.From)
	}
	iter := traced(ctx, q).Consistency(cl).IterContext(ctx)
	return readRows(iter, (*ledgerRow).dest, ledgerRowsFromScan, op, " %s/%s", p.Namespace, p.Ledger)
}

// ledgerRow is one scanned row; nil pointers are nulls.
type ledgerRow struct {
	Actor     *string
	State     *[]byte
	WriteTime *int64
}

func (r *ledgerRow) dest() []any { return []any{&r.Actor, &r.State, &r.WriteTime} }

// ledgerRowsFromScan converts scanned rows strictly: a row without a state
// was not written by this driver (WriteLedgerRow always sets it) and is
// reported, not skipped.
func ledgerRowsFromScan(rows []ledgerRow) ([]driver.LedgerRow, error) {
	out := make([]driver.LedgerRow, 0, len(rows))
	for i, r := range rows {
		switch {
		case r.Actor == nil:
			return nil, fmt.Errorf("%w: ledger row %d: actor is null", errBadRow, i)
		case r.State == nil || r.WriteTime == nil:
			return nil, fmt.Errorf("%w: ledger row of actor %q: state is null", errBadRow, *r.Actor)
		}
		out = append(out, driver.LedgerRow{Actor: *r.Actor, State: nonNil(*r.State), Timestamp: *r.WriteTime})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Actor < out[j].Actor })
	for i := 1; i < len(out); i++ {
		if out[i].Actor == out[i-1].Actor {
			return nil, fmt.Errorf("%w: actor %q appears twice", errBadRow, out[i].Actor)
		}
	}
	return out, nil
}

// ClaimRequest implements driver.Ledgers with INSERT ... IF NOT EXISTS
// USING TTL. A Paxos round that times out leaves the outcome unknown
// (driver.ErrUnknownOutcome); the caller repeats the call, which finds its
// own claim if the first one was applied.
func (d *Driver) ClaimRequest(ctx context.Context, p *driver.ClaimRequestParams) (driver.ClaimResult, error) {
	const op = "claim request"
	if err := d.begin(ctx, op); err != nil {
		return driver.ClaimResult{}, err
	}
	ttl := int64(p.TTL.Seconds())
	if ttl < 1 || p.TTL > driver.MaxClaimTTL {
		return driver.ClaimResult{}, fmt.Errorf("cassandra: %s: TTL %v is outside 1s..%v", op, p.TTL, driver.MaxClaimTTL)
	}
	if p.Claim.Seq > 1<<63-1 {
		return driver.ClaimResult{}, fmt.Errorf("cassandra: %s: seq %d does not fit a bigint", op, p.Claim.Seq)
	}
	cl, err := level(p.Consistency, d.cfg.WriteConsistency)
	if err != nil {
		return driver.ClaimResult{}, fmt.Errorf("cassandra: %s: %w", op, err)
	}
	c := p.Claim
	q := d.session.Query(d.q.claimRequest, p.Namespace, p.Ledger, p.RequestID,
		c.Actor, c.Negative, int64(c.Seq), c.Amount, ttl).
		Consistency(cl).SerialConsistency(lwtSerial)
	existing := map[string]any{}
	applied, err := q.MapScanCASContext(ctx, existing)
	if err != nil {
		return driver.ClaimResult{}, fmt.Errorf("cassandra: %s %s/%s/%s: %w", op, p.Namespace, p.Ledger, p.RequestID, mapError(opWrite, err))
	}
	if applied {
		return driver.ClaimResult{Won: true, Current: c}, nil
	}
	cur, err := claimFromMap(existing)
	if err != nil {
		return driver.ClaimResult{}, fmt.Errorf("cassandra: %s %s/%s/%s: %w", op, p.Namespace, p.Ledger, p.RequestID, err)
	}
	return driver.ClaimResult{Current: cur}, nil
}

// ReleaseClaim implements driver.Ledgers with a conditional DELETE.
func (d *Driver) ReleaseClaim(ctx context.Context, p *driver.ReleaseClaimParams) (bool, error) {
	const op = "release claim"
	cl, err := d.beginAt(ctx, op, p.Consistency, d.cfg.WriteConsistency)
	if err != nil {
		return false, err
	}
	e := p.Expect
	if e.Seq > 1<<63-1 {
		return false, nil // no stored claim can have it
	}
	q := d.session.Query(d.q.releaseClaim, p.Namespace, p.Ledger, p.RequestID,
		e.Actor, e.Negative, int64(e.Seq), e.Amount).
		Consistency(cl).SerialConsistency(lwtSerial)
	applied, err := q.MapScanCASContext(ctx, map[string]any{})
	if err != nil {
		return false, fmt.Errorf("cassandra: %s %s/%s/%s: %w", op, p.Namespace, p.Ledger, p.RequestID, mapError(opWrite, err))
	}
	return applied, nil
}

// ReadClaim implements driver.Ledgers with a read at SERIAL: it sees every lightweight transaction that returned,
// and finishes one a replica has accepted; one whose coordinator has not
// yet begun can still land afterwards.
func (d *Driver) ReadClaim(ctx context.Context, p *driver.ReadClaimParams) (driver.Claim, bool, error) {
	const op = "read claim"
	if err := d.begin(ctx, op); err != nil {
		return driver.Claim{}, false, err
	}
	var m map[string]any
	err := readSerial(ctx, func() error {
		m = map[string]any{}
		return d.session.Query(d.q.readClaim, p.Namespace, p.Ledger, p.RequestID).
			Consistency(lwtSerial).
			MapScanContext(ctx, m)
	})
	if errors.Is(err, gocql.ErrNotFound) {
		return driver.Claim{}, false, nil
	}
	if err != nil {
		return driver.Claim{}, false, fmt.Errorf("cassandra: %s %s/%s/%s: %w", op, p.Namespace, p.Ledger, p.RequestID, mapError(opRead, err))
	}
	c, err := claimFromMap(m)
	if err != nil {
		return driver.Claim{}, false, fmt.Errorf("cassandra: %s %s/%s/%s: %w", op, p.Namespace, p.Ledger, p.RequestID, err)
	}
	return c, true, nil
}

// readSerial runs read, one read at SERIAL. Such a read
// is a Paxos round, which times out more readily than a plain read under
// load (seen on a busy 2.1 node: "0 of 1 replicas answered at SERIAL").
// It writes nothing of its own: at most it finishes a proposal already
// accepted, or pre-empts one not yet accepted, which then times out as it
// could anyway. So it is sent again, after a short pause, up to three
// times in all; a caller's deadline or cancellation is not retried.
func readSerial(ctx context.Context, read func() error) error {
	const attempts = 3
	for attempt := 1; ; attempt++ {
		err := read()
		if err == nil || attempt == attempts || ctx.Err() != nil || !isTimeout(err) {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
		}
	}
}

// claimFromMap reads the existing row that a conditional insert which was
// not applied returns. Every column is written by ClaimRequest, so a
// missing or null one means the row did not come from this driver.
func claimFromMap(m map[string]any) (driver.Claim, error) {
	var c driver.Claim
	actor, ok := m["actor"].(string)
	if !ok {
		return c, fmt.Errorf("%w: claim without an actor (%T)", errBadRow, m["actor"])
	}
	neg, ok := m["negative"].(bool)
	if !ok {
		return c, fmt.Errorf("%w: claim of actor %q without a negative flag", errBadRow, actor)
	}
	seq, ok := m["seq"].(int64)
	if !ok || seq < 1 {
		return c, fmt.Errorf("%w: claim of actor %q with seq %v", errBadRow, actor, m["seq"])
	}
	amount, ok := m["amount"].(int64)
	if !ok || amount == 0 {
		return c, fmt.Errorf("%w: claim of actor %q with amount %v", errBadRow, actor, m["amount"])
	}
	return driver.Claim{Actor: actor, Negative: neg, Seq: uint64(seq), Amount: amount}, nil
}
