package abacus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/lifecycle"
)

// MinTTL is the shortest TTL a namespace may have: every TTL period stores
// each counter under a new name, and the purge of ended periods runs with
// the background sweeps.
const MinTTL = time.Minute

// DeleteCounter deletes a counter of any model but ledger. It takes
// effect at the time it returns, Config.DeleteDelay from now: every update
// a process started before that time (by its clock) is erased — also one
// acknowledged after DeleteCounter returned — the counter reads as never
// written from then on, and updates started from then on count from zero.
// The erased data is purged in the background later (docs/api.md,
// "Deleting, clearing and TTLs"). Deleting again is harmless: the later
// delete wins, and it erases only what the first one would have plus what
// was counted in between. ErrNotApplied means nothing was deleted;
// ErrUnknownOutcome (the delete's write failed, and so did taking it back)
// that it may still take effect, at the time the error names or, if its
// write spreads late, later: delete again to be sure of a time.
func (c *Client) DeleteCounter(ctx context.Context, namespace, counter string) (time.Time, error) {
	ns, _, err := c.counterNamespace(ctx, namespace, counter)
	if err != nil {
		return time.Time{}, err
	}
	return c.cut(ctx, ns, driver.Cut{Counter: counter})
}

// DeleteLedger deletes a ledger as DeleteCounter deletes a counter: its
// balance and the request ids it remembers go at the time it returns. A
// retry arriving after that of a request made before it is applied again,
// to the ledger that starts from zero.
func (c *Client) DeleteLedger(ctx context.Context, namespace, name string) (time.Time, error) {
	ns, _, err := c.ledgerTarget(ctx, namespace, name)
	if err != nil {
		return time.Time{}, err
	}
	return c.cut(ctx, ns, driver.Cut{Counter: name})
}

// DeleteNamespace deletes a namespace and every counter in it. Like
// DeleteCounter it takes effect at the time it returns; from then on the
// namespace answers ErrNamespaceNotFound everywhere. Its data is purged and
// its record removed in the background later, after which the name may be
// used again, for a namespace that starts empty. The default namespaces
// cannot be deleted.
func (c *Client) DeleteNamespace(ctx context.Context, name string) (time.Time, error) {
	if name == "" || name == DefaultNamespace || name == DefaultLedgerNamespace {
		return time.Time{}, fmt.Errorf("%w: the default namespaces %q and %q cannot be deleted", ErrInvalid, DefaultNamespace, DefaultLedgerNamespace)
	}
	ns, err := c.Namespace(ctx, name)
	if err != nil {
		return time.Time{}, err
	}
	// The cut must come after the record's creation time, which another
	// process's clock wrote: a cut before it would not delete this
	// incarnation (lifecycle.NewView) and would only reset its counters.
	return c.cut(ctx, ns, driver.Cut{DeletesNamespace: true, At: ns.CreatedAt.Add(c.cfg.DeleteDelay).UnixMicro()})
}

// cut records a cut Config.DeleteDelay from now. Its write is bounded by
// WriteTimeout, which DeleteDelay exceeds together with LifecycleRefresh:
// a process that did not see the cut read its view before the write
// ended, so it reads again before the cut's time.
//
// A write that failed may still have reached a replica and spread later,
// after its time: processes would then move to the new generation late,
// erasing updates acknowledged in between. So a failed cut is taken back
// (a delete written after it wins over it wherever it lands), and only if
// that fails too is the outcome unknown.
//
// cut.At, when set, is the earliest time the cut may have.
func (c *Client) cut(ctx context.Context, ns *Namespace, cut driver.Cut) (time.Time, error) {
	at := c.cfg.Clock.Now().Add(c.cfg.DeleteDelay).Truncate(time.Microsecond)
	if earliest := time.UnixMicro(cut.At); at.Before(earliest) {
		at = earliest
	}
	cut.At = at.UnixMicro()
	wctx, cancel := context.WithTimeout(ctx, c.cfg.WriteTimeout)
	defer cancel()
	err := c.cfg.Driver.AddCut(wctx, &driver.AddCutParams{Namespace: ns.Name, Cut: cut})
	c.views.Forget(ns.Name)
	if err == nil {
		return at.UTC(), nil
	}
	if errors.Is(err, driver.ErrUnavailable) {
		// Refused before any replica was written (too few alive at the
		// level), so there is nothing to take back, and a take-back would
		// be refused the same way and make the answer unknown. A data
		// center cut off from another ends here once it has seen the
		// other's nodes go down: cuts go out at EACH_QUORUM under local
		// levels.
		return time.Time{}, fmt.Errorf("the delete was refused before it was written; nothing is deleted: %w", err)
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.WriteTimeout)
	defer cancel()
	if uerr := c.cfg.Driver.DropCuts(uctx, &driver.DropCutsParams{Namespace: ns.Name, Cuts: []driver.Cut{cut}}); uerr != nil {
		return time.Time{}, fmt.Errorf("%w: the delete may take effect at %s, or later (its write failed: %v; taking it back failed: %v)",
			ErrUnknownOutcome, at.UTC().Format(time.RFC3339Nano), err, uerr)
	}
	return time.Time{}, fmt.Errorf("%w: the delete's write failed and was taken back; nothing is deleted (%v)", ErrNotApplied, err)
}

// newViews is the Client's cache of namespaces' cuts.
func (c *Client) newViews() *lifecycle.Cache {
	return &lifecycle.Cache{
		Refresh:     c.cfg.LifecycleRefresh,
		Clock:       c.cfg.Clock,
		LoadTimeout: c.cfg.WriteTimeout,
		Load: func(ctx context.Context, name string, readAt time.Time) (*lifecycle.View, error) {
			cuts, err := c.cfg.Driver.ReadCuts(ctx, &driver.ReadCutsParams{Namespace: name})
			if err != nil {
				return nil, err
			}
			var created time.Time
			rec, err := c.cfg.Driver.GetNamespace(ctx, &driver.GetNamespaceParams{Name: name})
			switch {
			case err == nil:
				created = rec.CreatedAt
			case !errors.Is(err, driver.ErrNotFound):
				return nil, err
			}
			return lifecycle.NewView(readAt, created, cuts), nil
		},
	}
}

// liveView is a namespace's view of its cuts and the instant it is trusted
// at: every stored name it gives is the generation at that instant.
type liveView struct {
	view *lifecycle.View
	ttl  time.Duration
	now  time.Time
}

// generation is counter's generation at the view's instant.
func (l liveView) generation(counter string) int64 {
	return l.view.Generation(counter, l.now.UnixMicro(), l.ttl)
}

// stored is the name counter is stored under at the view's instant: its
// own name until its first cut (or TTL period), the generation's name after.
func (l liveView) stored(counter string) string {
	return lifecycle.StoredName(counter, l.generation(counter))
}

// live returns the namespace with a view of its cuts trusted now, or
// ErrNamespaceNotFound once a delete of it has taken effect. A namespace
// record cached here that the view shows deleted and made again (another
// creation time) is read again.
func (c *Client) live(ctx context.Context, name string) (*Namespace, liveView, error) {
	ns, err := c.namespaces.Lookup(ctx, name)
	if err != nil {
		return nil, liveView{}, err
	}
	v, now, err := c.views.Get(ctx, name)
	if err != nil {
		return nil, liveView{}, publicError(err)
	}
	if !v.CreatedAt.Equal(ns.CreatedAt) {
		// One of the two is older than the other: read both again.
		c.views.Forget(name)
		c.namespaces.Forget(name)
		if v, now, err = c.views.Get(ctx, name); err != nil {
			return nil, liveView{}, publicError(err)
		}
		if ns, err = c.namespaces.Lookup(ctx, name); err != nil {
			return nil, liveView{}, err
		}
		if !v.CreatedAt.Equal(ns.CreatedAt) {
			return nil, liveView{}, fmt.Errorf("%w: namespace %q was deleted and made again while it was read; retry", ErrUnavailable, name)
		}
	}
	if v.Deleted(now.UnixMicro()) {
		return nil, liveView{}, fmt.Errorf("%w: %q (deleted)", ErrNamespaceNotFound, name)
	}
	return ns, liveView{view: v, ttl: ns.TTL, now: now}, nil
}

// userName is the name a stored name belongs to.
func userName(stored string) string {
	counter, _, ok := lifecycle.SplitStored(stored)
	if !ok {
		return stored
	}
	return counter
}

// PurgeResult says what one PurgeAll removed.
type PurgeResult struct {
	// Generations is how many stored generations of counters were purged.
	Generations int
	// Namespaces is how many deleted namespaces' records were removed.
	Namespaces int
	// Cuts is how many cuts were dropped because nothing needs them now.
	Cuts int
}

// PurgeAll removes what deletes and TTL periods have made unreachable: the
// data of every generation of a counter that ended at least twice
// Config.DeleteDelay ago (by then no process writes it: each stopped at
// the generation's end by its own clock, and its last write had
// WriteTimeout to land), the records of namespaces deleted that long ago,
// and the cuts no process needs any longer. The background sweeper runs it
// every Config.GCInterval over every namespace; namespace, when not empty,
// limits it to one. It is safe to run at any time, from any number of
// processes.
func (c *Client) PurgeAll(ctx context.Context, namespace string) (PurgeResult, error) {
	var res PurgeResult
	recs, err := c.cfg.Driver.ListNamespaces(ctx, &driver.ListNamespacesParams{})
	if err != nil {
		return res, publicError(err)
	}
	if namespace != "" {
		recs = slices.DeleteFunc(recs, func(r *driver.Namespace) bool { return r.Name != namespace })
	}
	var errs []error
	// settled is taken before any listing: a generation that ended by then
	// has had its last write land before the listing, so the listing holds
	// it, however long the sweep then takes.
	settled := c.cfg.Clock.Now().Add(-2 * c.cfg.DeleteDelay).UnixMicro()
	// Each model's counters are listed once, for all its namespaces: a
	// listing scans the model's whole table on Cassandra anyway.
	listed := map[Model]map[string][]driver.CounterKey{}
	for _, rec := range recs {
		ns, err := namespaceFromRecord(rec)
		if err != nil {
			continue // a model of a later release: not this one's to purge
		}
		m, ok := models[ns.Model]
		if !ok {
			continue
		}
		// What is purged is decided on a view read now, not one a
		// refresh old, and only for the incarnation the listing found:
		// a namespace made again since is another's to purge.
		v, err := c.views.Load(ctx, ns.Name, c.cfg.Clock.Now())
		if err != nil {
			errs = append(errs, fmt.Errorf("namespace %q: %w", ns.Name, err))
			continue
		}
		if !v.CreatedAt.Equal(ns.CreatedAt) || len(v.Cuts()) == 0 && ns.TTL == 0 {
			continue
		}
		if listed[ns.Model] == nil {
			keys, err := m.list(ctx, c.cfg.Driver, &driver.ListCountersParams{})
			if err != nil {
				errs = append(errs, fmt.Errorf("list %s counters: %w", ns.Model, err))
				continue
			}
			byNamespace := map[string][]driver.CounterKey{}
			for _, k := range keys {
				byNamespace[k.Namespace] = append(byNamespace[k.Namespace], k)
			}
			listed[ns.Model] = byNamespace
		}
		if err := c.purgeNamespace(ctx, ns, v, listed[ns.Model][ns.Name], settled, &res); err != nil {
			errs = append(errs, fmt.Errorf("namespace %q: %w", ns.Name, err))
		}
		if ctx.Err() != nil {
			break
		}
	}
	err = errors.Join(errs...)
	if namespace == "" && err == nil && ctx.Err() == nil {
		c.purgeComplete.Store(c.cfg.Clock.Now().UnixNano())
	}
	return res, err
}

// purgeNamespace purges the ended generations among keys, the namespace's
// stored counters. A namespace whose delete is settled has every stored
// name of that incarnation purged (generations before its delete: a
// namespace made again under the name writes only later ones), and then
// its record, if it is still the same incarnation's.
func (c *Client) purgeNamespace(ctx context.Context, ns *Namespace, v *lifecycle.View, keys []driver.CounterKey, settled int64, res *PurgeResult) error {
	deletedAt := v.DeletedAt()
	deleted := deletedAt != 0 && deletedAt <= settled
	for _, k := range keys {
		counter, gen, ok := lifecycle.SplitStored(k.Counter)
		if !ok {
			continue
		}
		if deleted {
			if gen >= deletedAt {
				continue
			}
		} else if end := v.End(counter, gen, ns.TTL); end == 0 || end > settled {
			continue
		}
		if err := c.cfg.Driver.PurgeCounter(ctx, &driver.PurgeCounterParams{Namespace: ns.Name, Counter: k.Counter, Model: string(ns.Model)}); err != nil {
			return err
		}
		res.Generations++
	}
	if deleted {
		err := c.cfg.Driver.DeleteNamespace(ctx, &driver.DeleteNamespaceParams{Name: ns.Name, CreatedAt: ns.CreatedAt})
		switch {
		case err == nil:
			res.Namespaces++
		case !errors.Is(err, driver.ErrNotFound): // gone already, or made again
			return err
		}
		c.views.Forget(ns.Name)
		c.namespaces.Forget(ns.Name)
	}
	// Deleting cuts are never dropped (they say which incarnation they
	// delete): a cut the namespace's deleting cut makes unneeded goes, the
	// deleting cut stays.
	drop := slices.DeleteFunc(lifecycle.Unneeded(v.Cuts(), settled), func(c driver.Cut) bool { return c.DeletesNamespace })
	if len(drop) == 0 {
		return nil
	}
	if err := c.cfg.Driver.DropCuts(ctx, &driver.DropCutsParams{Namespace: ns.Name, Cuts: drop}); err != nil {
		return err
	}
	res.Cuts += len(drop)
	return nil
}
