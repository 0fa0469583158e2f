package embedded

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/abacusdb/abacus/driver"
	"github.com/cockroachdb/pebble/v2"
)

// Ledger tables. Like the others, their bytes are part of the on-disk
// format: never renumber them. They are registered with the key decoder
// here rather than in keys.go so the ledger's storage lives in one place.
const (
	// tableLedgers holds one LWW cell per (namespace, ledger, actor) whose
	// payload is the encoded actor state.
	tableLedgers byte = 0x10
	// tableLedgerClaims holds one plain value per (namespace, ledger,
	// request id) in strict-mode ledgers: the claim and its expiry.
	tableLedgerClaims byte = 0x11
)

func init() {
	componentsPerTable[tableLedgers] = 3      // namespace, ledger, actor
	componentsPerTable[tableLedgerClaims] = 3 // namespace, ledger, request id
}

func ledgerPrefix(ns, ledger string) []byte {
	b := make([]byte, 0, 8+len(ns)+len(ledger))
	b = append(b, tableLedgers)
	b = appendComponent(b, ns)
	return appendComponent(b, ledger)
}

func ledgerRowKey(ns, ledger, actor string) []byte {
	return appendComponent(ledgerPrefix(ns, ledger), actor)
}

func claimKey(ns, ledger, requestID string) []byte {
	b := make([]byte, 0, 12+len(ns)+len(ledger)+len(requestID))
	b = append(b, tableLedgerClaims)
	b = appendComponent(b, ns)
	b = appendComponent(b, ledger)
	return appendComponent(b, requestID)
}

// claimSweepMin is the fewest claims between two sweeps of expired claims.
const claimSweepMin = 1024

// claimState serialises claims. Pebble has no compare-and-set, but the
// directory lock admits one process, so a mutex makes the check and the
// write one atomic step. It also paces the sweep that removes expired
// claims, which Cassandra drops by itself (TTL) and Pebble never would.
type claimState struct {
	mu sync.Mutex
	// sinceSweep counts claims stored since the last sweep; a sweep runs
	// once it reaches max(claimSweepMin, liveAfterSweep), so the sweep's
	// cost (one pass over the live claims) is spread over at least as many
	// claims as it visits.
	sinceSweep     int
	liveAfterSweep int
}

// WriteLedgerRow implements driver.Ledgers. Like a shard write it is a blind
// merge of one LWW cell; the merge operator keeps the newest.
func (d *Driver) WriteLedgerRow(ctx context.Context, p *driver.WriteLedgerRowParams) error {
	if err := p.CheckEntries(); err != nil {
		return fmt.Errorf("embedded: write ledger row %s/%s/%s: %w", p.Namespace, p.Ledger, p.Row.Actor, err)
	}
	if len(p.Entries) > 0 {
		return d.writeLedgerRowWithEntries(ctx, p)
	}
	value := make([]byte, 0, cellHeaderLen+len(p.Row.State))
	value = appendCell(value, cell{Timestamp: p.Timestamp, Payload: p.Row.State})
	return d.merge(ctx, "write ledger row", ledgerRowKey(p.Namespace, p.Ledger, p.Row.Actor), value, func() string {
		return fmt.Sprintf("%s/%s/%s", p.Namespace, p.Ledger, p.Row.Actor)
	})
}

// WriteLedgerRows implements driver.Ledgers: one Pebble batch holds every
// row and its entries, so all of them are committed (and synced) or none.
func (d *Driver) WriteLedgerRows(ctx context.Context, ws []driver.WriteLedgerRowParams) error {
	if err := driver.CheckLedgerRowWrites(ws); err != nil {
		return fmt.Errorf("embedded: write ledger rows: %w", err)
	}
	return d.writeBatch(ctx, "write ledger rows", func(b *pebble.Batch) error {
		for i := range ws {
			if err := d.addLedgerRow(b, &ws[i]); err != nil {
				return err
			}
		}
		return nil
	}, " (%d, the first %s/%s/%s)", len(ws), ws[0].Namespace, ws[0].Ledger, ws[0].Row.Actor)
}

// ReadLedger implements driver.Ledgers.
func (d *Driver) ReadLedger(ctx context.Context, p *driver.ReadLedgerParams) ([]driver.LedgerRow, error) {
	return readLocked(ctx, d, "read ledger", func() ([]driver.LedgerRow, error) {
		return d.readLedger(p.Namespace, p.Ledger, p.From, readStatsFrom(ctx))
	}, " %s/%s", p.Namespace, p.Ledger)
}

// readLedger returns the ledger's rows whose actor sorts at or after
// from (scanNamedFrom).
func (d *Driver) readLedger(ns, ledger, from string, st *ReadStats) ([]driver.LedgerRow, error) {
	rows := []driver.LedgerRow{}
	var (
		points     uint64
		tombstones int
	)
	err := d.scanNamedFrom(ledgerPrefix(ns, ledger), from, &points, func(actor string, raw []byte) error {
		c, err := decodeCell(raw)
		if err != nil {
			return err
		}
		if c.Tombstone { // never written by this version; skipped like a deleted shard
			tombstones++
		} else {
			rows = append(rows, driver.LedgerRow{Actor: actor, State: slices.Clone(c.Payload), Timestamp: c.Timestamp})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	st.add(len(rows), tombstones, points)
	// Length-prefixed keys sort by actor length first.
	slices.SortFunc(rows, func(a, b driver.LedgerRow) int { return cmp.Compare(a.Actor, b.Actor) })
	return rows, nil
}

// ClaimRequest implements driver.Ledgers with a check-then-set under
// d.claims.mu.
func (d *Driver) ClaimRequest(ctx context.Context, p *driver.ClaimRequestParams) (driver.ClaimResult, error) {
	if err := d.acquire(ctx, "claim request"); err != nil {
		return driver.ClaimResult{}, err
	}
	defer d.mu.RUnlock()
	if p.TTL < 1e9 || p.TTL > driver.MaxClaimTTL {
		return driver.ClaimResult{}, fmt.Errorf("embedded: claim request: TTL %v is outside 1s..%v", p.TTL, driver.MaxClaimTTL)
	}
	key := claimKey(p.Namespace, p.Ledger, p.RequestID)
	d.claims.mu.Lock()
	defer d.claims.mu.Unlock()
	cur, ok, err := d.getClaim(key, p.Now)
	if err != nil {
		return driver.ClaimResult{}, fmt.Errorf("embedded: claim request %s/%s/%s: %w", p.Namespace, p.Ledger, p.RequestID, err)
	}
	if ok {
		return driver.ClaimResult{Current: cur}, nil
	}
	value := encodeClaim(p.Claim, p.Now+p.TTL.Microseconds())
	// Not synced by itself: fsyncing here, under the mutex, would serialise
	// every strict-mode write of the process on the disk. Pebble's WAL is
	// ordered, so the synced row write that must follow a won claim before
	// the request counts makes the claim durable too; a claim lost to a
	// crash before that only ever belonged to a request that was not
	// applied, so losing it loses nothing.
	if err := d.db.Set(key, value, pebble.NoSync); err != nil {
		return driver.ClaimResult{}, fmt.Errorf("embedded: claim request %s/%s/%s: %w", p.Namespace, p.Ledger, p.RequestID, err)
	}
	d.claims.sinceSweep++
	if d.claims.sinceSweep >= max(claimSweepMin, d.claims.liveAfterSweep) {
		if err := d.sweepClaims(p.Now); err != nil {
			// The claim is stored; a failed sweep only leaves garbage for
			// the next one.
			d.logger.Warn("embedded: sweeping expired ledger claims failed", "err", err)
		}
	}
	return driver.ClaimResult{Won: true, Current: p.Claim}, nil
}

// ReleaseClaim implements driver.Ledgers.
func (d *Driver) ReleaseClaim(ctx context.Context, p *driver.ReleaseClaimParams) (bool, error) {
	if err := d.acquire(ctx, "release claim"); err != nil {
		return false, err
	}
	defer d.mu.RUnlock()
	key := claimKey(p.Namespace, p.Ledger, p.RequestID)
	d.claims.mu.Lock()
	defer d.claims.mu.Unlock()
	// Expiry does not matter here: an expired claim equal to Expect may go
	// as well, and Cassandra would not find it either.
	cur, ok, err := d.getClaim(key, minInt64)
	if err != nil {
		return false, fmt.Errorf("embedded: release claim %s/%s/%s: %w", p.Namespace, p.Ledger, p.RequestID, err)
	}
	if !ok || cur != p.Expect {
		return false, nil
	}
	if err := d.db.Delete(key, d.writeOpts); err != nil {
		return false, fmt.Errorf("embedded: release claim %s/%s/%s: %w", p.Namespace, p.Ledger, p.RequestID, err)
	}
	return true, nil
}

// ReadClaim implements driver.Ledgers under d.claims.mu, the lock every
// change of a claim takes.
func (d *Driver) ReadClaim(ctx context.Context, p *driver.ReadClaimParams) (driver.Claim, bool, error) {
	if err := d.acquire(ctx, "read claim"); err != nil {
		return driver.Claim{}, false, err
	}
	defer d.mu.RUnlock()
	d.claims.mu.Lock()
	defer d.claims.mu.Unlock()
	c, ok, err := d.getClaim(claimKey(p.Namespace, p.Ledger, p.RequestID), p.Now)
	if err != nil {
		return driver.Claim{}, false, fmt.Errorf("embedded: read claim %s/%s/%s: %w", p.Namespace, p.Ledger, p.RequestID, err)
	}
	return c, ok, nil
}

const minInt64 = -1 << 63

// getClaim returns the claim stored under key unless it has expired by now.
func (d *Driver) getClaim(key []byte, now int64) (driver.Claim, bool, error) {
	raw, closer, err := d.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return driver.Claim{}, false, nil
	}
	if err != nil {
		return driver.Claim{}, false, err
	}
	defer closer.Close()
	c, expires, err := decodeClaim(raw)
	if err != nil {
		return driver.Claim{}, false, err
	}
	if expires <= now {
		return driver.Claim{}, false, nil
	}
	return c, true, nil
}

// sweepClaims deletes every claim that expired by now. It runs under
// d.claims.mu, so no claim is stored between the check and the delete.
func (d *Driver) sweepClaims(now int64) (err error) {
	lo := []byte{tableLedgerClaims}
	it, err := d.iterPrefix(lo)
	if err != nil {
		return err
	}
	defer closeIter(it, &err, "")
	b := d.db.NewBatch()
	defer b.Close()
	live := 0
	for valid := it.First(); valid; valid = it.Next() {
		raw, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		_, expires, err := decodeClaim(raw)
		if err != nil {
			// Leave what we cannot read for a human; reads of it fail loudly.
			live++
			continue
		}
		if expires > now {
			live++
			continue
		}
		if err := b.Delete(it.Key(), nil); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	if err := b.Commit(d.writeOpts); err != nil {
		return err
	}
	d.claims.sinceSweep, d.claims.liveAfterSweep = 0, live
	return nil
}
