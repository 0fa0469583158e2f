package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// Rights per data center.
//
// With Config.DataCenter set, an actor takes its grant from its data
// center's record, which hands out at most the data center's share: an
// entry of the ledger's record held by "@" + the data center's name, with
// a lease that never ends. The data center's record is changed by
// compare-and-set among its own replicas only (LOCAL_SERIAL), so grants
// within the share go on while the data centers are cut apart; raising
// the share needs the ledger's record (SERIAL) and a read of the credits
// that every data center's later reads see, so it waits for the cut to
// heal. Three rules keep the floor (docs/ledger.md, "Rights per data
// center", has the argument):
//
//  1. The ledger's record: spent + Σ grants, shares included, ≤ credits
//     seen − floor, the credits read at EACH_QUORUM (every data center's
//     local quorum) before the compare-and-set.
//  2. A data center's record: its spent + Σ its actors' grants ≤ its cap,
//     and its cap ≤ its share in the ledger's record at all times. The
//     cap rises only after the share did (syncShare), and the share falls
//     only after the cap did (returnShare), guarded by the version of the
//     ledger's record the cap was last set from (synced).
//  3. An actor appends debits only within its grant, as without data
//     centers.

// sharePrefix starts the holder names of data centers' shares in the
// ledger's record. Actor ids never start with it.
const sharePrefix = "@"

// shareHolder says whether a holder of the ledger's record is a data
// center's share, and whose.
func shareHolder(holder string) (dc string, ok bool) {
	return strings.CutPrefix(holder, sharePrefix)
}

// raiseTimeout bounds a raise of a share, all its rounds.
const raiseTimeout = 3 * time.Second

// shareLease is the lease of a share: a data center never dies the way a
// process does, so its share is never reclaimed, only given back.
const shareLease = math.MaxInt64

// raiseShare adds to this data center's share of the ledger's rights at
// least want, if the balance allows, plus a part of what is free, split
// with the other holders; local is the data center's record as last read.
// If the ledger's record already holds more for the data center than
// local's cap, it first finishes what left it so: a raise whose second
// step did not land (the cap is brought up) or a return whose second step
// did not (the share is brought down).
func (e *Engine) raiseShare(ctx context.Context, t Target, local *rights, want int64) error {
	// Debits wait on the raise: bounded well inside a caller's patience,
	// since while the data centers are cut apart and not yet known to be
	// (gossip takes seconds), each attempt on the ledger's record waits
	// out Cassandra's own timeouts.
	ctx, cancel := context.WithTimeout(ctx, min(e.cfg.WriteTimeout, raiseTimeout))
	defer cancel()
	dc := e.cfg.DataCenter
	holder := sharePrefix + dc
	var (
		p    int64
		read bool
		last error
	)
	for n := range rightsAttempts {
		if n > 0 {
			if err := e.backoff(ctx, n-1); err != nil {
				return errors.Join(last, err)
			}
		}
		// A failure to read is returned at once: the debits waiting on
		// this raise go on within the share there is, and a store that
		// cannot answer now (the data centers cut apart) will not in the
		// next round either.
		rec, err := e.readRights(ctx, t, "")
		if err != nil {
			return err
		}
		share := rec.grants[holder]
		if share.total > local.cap {
			if local.synced < rec.version {
				// A raise whose second step did not finish: finish it,
				// then raise further from what the records then say.
				if err := e.syncShare(ctx, t, rec); err != nil {
					return err
				}
				synced, err := e.readRights(ctx, t, dc)
				if err != nil {
					return err
				}
				// What the sync added counts towards want: a raise by
				// another process of this data center may have been for
				// the same shortfall.
				if want -= synced.cap - local.cap; want <= 0 {
					return nil
				}
				local = synced
				continue
			}
			// A return lowered the cap from this very version of the
			// ledger's record and did not get to lower the share: while
			// the record stays at this version no one else can change
			// the cap, so finishing the return is safe, and needed, or
			// the cap would stay below the share for good.
			next := rec.clone()
			setShare(next, holder, local.cap)
			next.version++
			applied, err := e.swapRights(ctx, t, "", rec.version, next)
			if err != nil && !errors.Is(err, driver.ErrUnknownOutcome) {
				return err
			}
			if err != nil || !applied {
				last = cmp.Or(err, errors.New("the ledger's rights record changed under the end of a return"))
			}
			continue
		}
		if !read {
			// The credits a grant may count on: read at EACH_QUORUM, so
			// that a later read at LOCAL_QUORUM or above in any data
			// center sees them (blocking read repair writes what a
			// replica of the read lacked).
			rctx, cancel := context.WithTimeout(ctx, e.cfg.WriteTimeout)
			rows, err := e.readRows(rctx, t, driver.EachQuorum, "")
			cancel()
			if err != nil {
				return fmt.Errorf("reading the ledger's credits in every data center: %w", err)
			}
			if p, _, err = rows.value().Totals(); err != nil {
				return err
			}
			read = true
		}
		// Actors listed in the ledger's own record were granted by
		// servers without a data center; with every server in one now,
		// only a raise reclaims their rights once their lease is long
		// over.
		next := rec.clone()
		reclaimed, err := e.reclaim(ctx, t, next, "", driver.Micros(e.cfg.Clock.Now()))
		if err != nil {
			e.cfg.Logger.Warn("ledger: could not read the ledger at ALL, or fence the rows, to reclaim the debit rights of stopped actors; they stay held",
				"namespace", t.Namespace, "ledger", t.Ledger, "err", err)
		}
		p = max(p, reclaimed.p)
		free := saturatingAdd(saturatingAdd(p, -t.Options.Floor), -next.held())
		if free <= 0 {
			return fmt.Errorf("%w: the ledger's balance above its floor is handed out", ErrRightsHeld)
		}
		add := min(want, free)
		if want < free {
			add += (free - want) / int64(2*(len(next.grants)+1))
		}
		setShare(next, holder, saturatingAdd(share.total, add))
		next.version++
		applied, err := e.swapRights(ctx, t, "", rec.version, next)
		if err != nil && !errors.Is(err, driver.ErrUnknownOutcome) {
			return err
		}
		if err != nil {
			last = err
			continue // the next round reads what became of it
		}
		if !applied {
			last = errors.New("the ledger's rights record changed under the raise")
			continue
		}
		return e.syncShare(ctx, t, next)
	}
	return fmt.Errorf("raising this data center's share, %d rounds: %w", rightsAttempts, last)
}

// syncShare brings this data center's cap up to its share in rec, a
// version of the ledger's record, unless the data center's record was
// set from that version or a later one already (a return set it lower on
// purpose, and the share falls next).
func (e *Engine) syncShare(ctx context.Context, t Target, rec *rights) error {
	dc := e.cfg.DataCenter
	share := rec.grants[sharePrefix+dc].total
	var last error
	for n := range rightsAttempts {
		if n > 0 {
			if err := e.backoff(ctx, n-1); err != nil {
				return errors.Join(last, err)
			}
		}
		local, err := e.readRights(ctx, t, dc)
		if err != nil {
			last = err
			continue
		}
		if local.synced >= rec.version || local.cap >= share {
			return nil
		}
		next := local.clone()
		next.cap, next.synced = share, rec.version
		next.version++
		applied, err := e.swapRights(ctx, t, dc, local.version, next)
		if err != nil {
			last = err
			continue
		}
		if applied {
			return nil
		}
		last = errors.New("the data center's rights record changed under the sync")
	}
	return fmt.Errorf("bringing this data center's cap up to its share, %d rounds: %w", rightsAttempts, last)
}

// returnShare gives back the part of this data center's share that its
// record has not handed out, as an actor of it goes idle or its process
// closes: first the cap falls to what is handed out, stamped with the
// version of the ledger's record it was read from, then the share, if the
// ledger's record is still that version. A cap is stamped only with a
// version at least the one it has, so a raise's second step that carries
// an older version cannot lift it again. A swap of the ledger's record
// that is refused (the record moved on) or of unknown outcome is tried
// again from fresh reads, a few rounds. If the ledger's record cannot be
// read (the data centers cut apart) nothing changes: a data center keeps
// its share through a cut, until an actor of it goes idle after healing.
// Best effort, in the caller's background work.
func (e *Engine) returnShare(ctx context.Context, t Target) {
	dc := e.cfg.DataCenter
	if dc == "" {
		return
	}
	for n := range rightsAttempts {
		if n > 0 && e.backoff(ctx, n-1) != nil {
			return
		}
		rec, err := e.readRights(ctx, t, "")
		if err != nil {
			return
		}
		local, err := e.readRights(ctx, t, dc)
		if err != nil || !e.returnShareFrom(ctx, t, rec, local) {
			return
		}
	}
}

// returnShareFrom is one round of returnShare from rec and local, reads
// of the ledger's record and of this data center's, in that order. It
// says whether another round may get further.
func (e *Engine) returnShareFrom(ctx context.Context, t Target, rec, local *rights) (again bool) {
	dc := e.cfg.DataCenter
	holder := sharePrefix + dc
	share, ok := rec.grants[holder]
	if !ok || local.synced > rec.version || local.cap > share.total {
		// A later version of the ledger's record than this read set the
		// cap: the next idle actor returns from there.
		return false
	}
	keep := local.held()
	if keep >= share.total {
		return false // nothing unused
	}
	if keep < local.cap || local.synced < rec.version {
		lower := local.clone()
		lower.cap, lower.synced = keep, rec.version
		lower.version++
		if applied, err := e.swapRights(ctx, t, dc, local.version, lower); err != nil || !applied {
			return true
		}
	}
	// The cap is keep, stamped with rec's version: lowering the share to
	// it at that version keeps cap ≤ share.
	next := rec.clone()
	setShare(next, holder, keep)
	next.version++
	applied, err := e.swapRights(ctx, t, "", rec.version, next)
	return !applied && (err == nil || errors.Is(err, driver.ErrUnknownOutcome))
}

// setShare sets a data center's share in the ledger's record. An entry
// stays at 0: folds find the records of data centers, whose actors may
// hold leases, through these entries.
func setShare(rec *rights, holder string, total int64) {
	rec.grants[holder] = grant{total: total, until: shareLease}
}
