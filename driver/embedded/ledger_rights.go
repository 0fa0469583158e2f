package embedded

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/abacusdb/abacus/driver"
	"github.com/cockroachdb/pebble/v2"
)

// tableLedgerRights holds one plain value per (namespace, ledger): the
// ledger's rights record (driver.LedgerRightsStore), encoded by
// encodeRights. Like the other tables' bytes it is part of the on-disk
// format: never renumber it.
const tableLedgerRights byte = 0x13

// tableLedgerRightsDC holds the records of data centers' shares of a
// ledger's rights, keyed by namespace, ledger and data center, so that a
// purge of the ledger's prefix takes every one. The embedded store has no
// data centers of its own; these serve an engine told it runs in one.
const tableLedgerRightsDC byte = 0x14

func init() {
	componentsPerTable[tableLedgerRights] = 2   // namespace, ledger
	componentsPerTable[tableLedgerRightsDC] = 3 // namespace, ledger, data center
}

// rightsKey is the key of a ledger's record, or of a data center's share
// of it when dc is set.
func rightsKey(ns, ledger, dc string) []byte {
	if dc == "" {
		return counterKey(tableLedgerRights, ns, ledger, 0)
	}
	return appendComponent(counterKey(tableLedgerRightsDC, ns, ledger, len(dc)+binary.MaxVarintLen32), dc)
}

// ReadLedgerRights implements driver.LedgerRightsStore. The one replica
// is as fresh as a serial read: every swap that returned is in it.
func (d *Driver) ReadLedgerRights(ctx context.Context, p *driver.ReadLedgerRightsParams) (driver.LedgerRights, error) {
	return readLocked(ctx, d, "read ledger rights", func() (driver.LedgerRights, error) {
		return d.getRights(rightsKey(p.Namespace, p.Ledger, p.DataCenter))
	}, " %s/%s%s", p.Namespace, p.Ledger, inDataCenter(p.DataCenter))
}

// SwapLedgerRights implements driver.LedgerRightsStore with a
// check-then-set under d.rightsMu: Pebble has no compare-and-set, but the
// directory lock admits one process, so the mutex makes the check and the
// write one atomic step, as claims.mu does for ClaimRequest.
//
// The write under the mutex is not synced; syncWAL makes it durable once
// the mutex is released, as CompareAndSetCAS does, so swaps on different
// ledgers share fsyncs instead of queueing for the disk one by one.
// Pebble's WAL is ordered, so an applied swap is durable, when it
// returns, together with every swap it was built on.
func (d *Driver) SwapLedgerRights(ctx context.Context, p *driver.SwapLedgerRightsParams) (bool, driver.LedgerRights, error) {
	const op = "swap ledger rights"
	if err := p.Check(); err != nil {
		return false, driver.LedgerRights{}, fmt.Errorf("embedded: %s %s/%s%s: %w", op, p.Namespace, p.Ledger, inDataCenter(p.DataCenter), err)
	}
	if err := d.acquire(ctx, op); err != nil {
		return false, driver.LedgerRights{}, err
	}
	defer d.mu.RUnlock()
	key := rightsKey(p.Namespace, p.Ledger, p.DataCenter)
	applied, cur, err := func() (bool, driver.LedgerRights, error) {
		d.rightsMu.Lock()
		defer d.rightsMu.Unlock()
		cur, err := d.getRights(key)
		if err != nil || cur.Version != p.Expect {
			return false, cur, err
		}
		return true, p.Next, d.db.Set(key, encodeRights(p.Next), pebble.NoSync)
	}()
	if err != nil {
		return false, driver.LedgerRights{}, fmt.Errorf("embedded: %s %s/%s%s: %w", op, p.Namespace, p.Ledger, inDataCenter(p.DataCenter), err)
	}
	if !applied {
		return false, cur, nil
	}
	if err := d.syncWAL(); err != nil {
		// The swap is applied and visible; whether it survives a crash
		// is what the failed sync leaves open.
		return false, driver.LedgerRights{}, fmt.Errorf("embedded: %s %s/%s%s: %w: %w", op, p.Namespace, p.Ledger, inDataCenter(p.DataCenter), driver.ErrUnknownOutcome, err)
	}
	return true, p.Next, nil
}

// getRights returns the rights record stored under key, Version 0 when
// there is none.
func (d *Driver) getRights(key []byte) (driver.LedgerRights, error) {
	raw, closer, err := d.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return driver.LedgerRights{}, nil
	}
	if err != nil {
		return driver.LedgerRights{}, err
	}
	defer closer.Close()
	r, err := decodeRights(raw)
	if err != nil {
		return driver.LedgerRights{}, err
	}
	// raw belongs to Pebble only until closer is closed.
	r.State = slices.Clone(r.State)
	return r, nil
}

// inDataCenter names a data center's record in an error message.
func inDataCenter(dc string) string {
	if dc == "" {
		return ""
	}
	return " in " + dc
}
