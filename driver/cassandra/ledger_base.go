package cassandra

import (
	"context"
	"errors"
	"fmt"

	"github.com/abacusdb/abacus/driver"
	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// ledgerBaseStatements read a ledger from its cut and swap its base row
// (driver.LedgerBaseActor). The base is a clustering row of the ledger's
// own partition, so one read returns it with the rows it completes; it is
// written only by lightweight transactions, and the other rows only by
// plain writes, so no row mixes the two.
type ledgerBaseStatements struct {
	readFrom, insert, update, deleteRow string
}

func newLedgerBaseStatements(ks string) ledgerBaseStatements {
	return ledgerBaseStatements{
		readFrom: "SELECT actor, state, WRITETIME(state) FROM " + ks + ".ledgers WHERE ns = ? AND ledger = ? AND actor >= ?",
		insert:   "INSERT INTO " + ks + ".ledgers (ns, ledger, actor, state) VALUES (?, ?, ?, ?) IF NOT EXISTS",
		update:   "UPDATE " + ks + ".ledgers SET state = ? WHERE ns = ? AND ledger = ? AND actor = ? IF state = ?",
		// At the row's own write time: a tombstone wins a tie, so the row
		// as read goes, and a later write would stay.
		deleteRow: "DELETE FROM " + ks + ".ledgers USING TIMESTAMP ? WHERE ns = ? AND ledger = ? AND actor = ?",
	}
}

// SwapLedgerBase implements driver.Ledgers with INSERT ... IF NOT EXISTS
// (from no base) or UPDATE ... IF state = ? (from a stored one), the Paxos
// phase at SERIAL. A round that times
// out is driver.ErrUnknownOutcome and is not retried here: the caller
// reads the base again to learn whether it was applied.
func (d *Driver) SwapLedgerBase(ctx context.Context, p *driver.SwapLedgerBaseParams) (bool, error) {
	const op = "swap ledger base"
	if len(p.Next) == 0 {
		return false, fmt.Errorf("cassandra: %s %s/%s: %w", op, p.Namespace, p.Ledger, errors.New("an empty base"))
	}
	cl, err := d.beginAt(ctx, op, p.Consistency, d.cfg.WriteConsistency)
	if err != nil {
		return false, err
	}
	q := d.session.Query(d.q.base.insert, p.Namespace, p.Ledger, driver.LedgerBaseActor, p.Next)
	if p.Expect != nil {
		q = d.session.Query(d.q.base.update, p.Next, p.Namespace, p.Ledger, driver.LedgerBaseActor, p.Expect)
	}
	q = q.Consistency(cl).SerialConsistency(lwtSerial)
	applied, err := q.MapScanCASContext(ctx, map[string]any{})
	if err != nil {
		return false, fmt.Errorf("cassandra: %s %s/%s: %w", op, p.Namespace, p.Ledger, mapError(opWrite, err))
	}
	return applied, nil
}

// DeleteLedgerRows implements driver.Ledgers with one unlogged batch of
// deletes, each at its row's write time. The rows share the ledger's
// partition, so the batch is one mutation, applied whole on each replica.
func (d *Driver) DeleteLedgerRows(ctx context.Context, p *driver.DeleteLedgerRowsParams) error {
	const op = "delete ledger rows"
	if err := p.Check(); err != nil {
		return fmt.Errorf("cassandra: %s %s/%s: %w", op, p.Namespace, p.Ledger, err)
	}
	cl, err := d.beginAt(ctx, op, p.Consistency, d.cfg.WriteConsistency)
	if err != nil {
		return err
	}
	b := d.session.Batch(gocql.UnloggedBatch).Consistency(cl)
	for _, r := range p.Rows {
		b.Query(d.q.base.deleteRow, r.Timestamp, p.Namespace, p.Ledger, r.Actor)
	}
	if err := b.ExecContext(ctx); err != nil {
		return fmt.Errorf("cassandra: %s %s/%s (%d): %w", op, p.Namespace, p.Ledger, len(p.Rows), mapError(opWrite, err))
	}
	return nil
}
