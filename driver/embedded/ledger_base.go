package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/cockroachdb/pebble/v2"
)

// SwapLedgerBase implements driver.Ledgers with a check-then-set of the
// base row's cell under d.rightsMu, which serialises every
// compare-and-set of a ledger's records (the directory lock admits one
// process). The base row is an LWW cell like the actors' rows, so
// ReadLedger returns it with them; its timestamp only moves forward.
//
// As in SwapLedgerRights the write under the mutex is not synced, and
// syncWAL makes it durable before the swap is reported applied.
func (d *Driver) SwapLedgerBase(ctx context.Context, p *driver.SwapLedgerBaseParams) (bool, error) {
	const op = "swap ledger base"
	if len(p.Next) == 0 {
		return false, fmt.Errorf("embedded: %s %s/%s: an empty base", op, p.Namespace, p.Ledger)
	}
	if err := d.acquire(ctx, op); err != nil {
		return false, err
	}
	defer d.mu.RUnlock()
	key := ledgerRowKey(p.Namespace, p.Ledger, driver.LedgerBaseActor)
	applied, err := func() (bool, error) {
		d.rightsMu.Lock()
		defer d.rightsMu.Unlock()
		var (
			cur    []byte
			stored bool
			ts     int64
		)
		raw, closer, err := d.db.Get(key)
		switch {
		case errors.Is(err, pebble.ErrNotFound):
		case err != nil:
			return false, err
		default:
			c, err := decodeCell(raw)
			if err == nil && !c.Tombstone {
				cur, stored = bytes.Clone(c.Payload), true
			}
			ts = c.Timestamp
			closer.Close()
			if err != nil {
				return false, err
			}
		}
		if stored != (p.Expect != nil) || !bytes.Equal(cur, p.Expect) {
			return false, nil
		}
		value := appendCell(nil, cell{Timestamp: max(time.Now().UnixMicro(), ts+1), Payload: p.Next})
		return true, d.db.Merge(key, value, pebble.NoSync)
	}()
	if err != nil {
		return false, fmt.Errorf("embedded: %s %s/%s: %w", op, p.Namespace, p.Ledger, err)
	}
	if !applied {
		return false, nil
	}
	if err := d.syncWAL(); err != nil {
		return false, fmt.Errorf("embedded: %s %s/%s: %w: %w", op, p.Namespace, p.Ledger, driver.ErrUnknownOutcome, err)
	}
	return true, nil
}

// DeleteLedgerRows implements driver.Ledgers: under d.rightsMu, each
// row whose stored write is not newer than the one read is deleted from
// Pebble outright, so its bytes go at the next compaction. The check and
// the delete are one step only against other compare-and-sets: the
// contract leaves a write racing the delete to the caller, who deletes
// only rows no one writes.
func (d *Driver) DeleteLedgerRows(ctx context.Context, p *driver.DeleteLedgerRowsParams) error {
	const op = "delete ledger rows"
	if err := p.Check(); err != nil {
		return fmt.Errorf("embedded: %s %s/%s: %w", op, p.Namespace, p.Ledger, err)
	}
	if err := d.acquire(ctx, op); err != nil {
		return err
	}
	defer d.mu.RUnlock()
	err := func() error {
		d.rightsMu.Lock()
		defer d.rightsMu.Unlock()
		b := d.db.NewBatch()
		defer b.Close()
		for _, r := range p.Rows {
			key := ledgerRowKey(p.Namespace, p.Ledger, r.Actor)
			raw, closer, err := d.db.Get(key)
			if errors.Is(err, pebble.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			c, err := decodeCell(raw)
			newer := err == nil && c.Timestamp > r.Timestamp
			closer.Close()
			if err != nil {
				return err
			}
			if !newer {
				if err := b.Delete(key, nil); err != nil {
					return err
				}
			}
		}
		return b.Commit(d.writeOpts)
	}()
	if err != nil {
		return fmt.Errorf("embedded: %s %s/%s: %w", op, p.Namespace, p.Ledger, err)
	}
	return nil
}
