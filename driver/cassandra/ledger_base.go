package cassandra

import (
	"context"
	"errors"
	"fmt"

	"github.com/abacusdb/abacus/driver"
)

// ledgerBaseStatements read a ledger from its cut and swap its base row
// (driver.LedgerBaseActor). The base is a clustering row of the ledger's
// own partition, so one read returns it with the rows it completes; it is
// written only by lightweight transactions, and the other rows only by
// plain writes, so no row mixes the two.
type ledgerBaseStatements struct {
	readFrom, insert, update string
}

func newLedgerBaseStatements(ks string) ledgerBaseStatements {
	return ledgerBaseStatements{
		readFrom: "SELECT actor, state, WRITETIME(state) FROM " + ks + ".ledgers WHERE ns = ? AND ledger = ? AND actor >= ?",
		insert:   "INSERT INTO " + ks + ".ledgers (ns, ledger, actor, state) VALUES (?, ?, ?, ?) IF NOT EXISTS",
		update:   "UPDATE " + ks + ".ledgers SET state = ? WHERE ns = ? AND ledger = ? AND actor = ? IF state = ?",
	}
}

// SwapLedgerBase implements driver.Ledgers with INSERT ... IF NOT EXISTS
// (from no base) or UPDATE ... IF state = ? (from a stored one), the Paxos
// phase at SERIAL, or LOCAL_SERIAL for local levels. A round that times
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
	q = q.Consistency(cl).SerialConsistency(serialFor(consistencyOr(p.Consistency, d.cfg.WriteConsistency)))
	applied, err := q.MapScanCASContext(ctx, map[string]any{})
	if err != nil {
		return false, fmt.Errorf("cassandra: %s %s/%s: %w", op, p.Namespace, p.Ledger, mapError(opWrite, err))
	}
	return applied, nil
}
