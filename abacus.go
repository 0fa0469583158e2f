package abacus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/background"
	"github.com/abacusdb/abacus/internal/events"
	"github.com/abacusdb/abacus/internal/ledger"
	"github.com/abacusdb/abacus/internal/lifecycle"
	"github.com/abacusdb/abacus/internal/registry"
	"github.com/abacusdb/abacus/internal/sharded"
)

// Client is the entry point of the library. It is safe for concurrent use.
type Client struct {
	cfg        Config
	sharded    *sharded.Engine
	events     *events.Engine
	ledger     *ledger.Engine
	queues     *Queues
	namespaces *registry.Registry[driver.Namespace, Namespace]
	// views holds what this process knows of each namespace's cuts
	// (lifecycle.go).
	views *lifecycle.Cache
	// gcSweeper collects sharded counters and rollupSweeper rolls up
	// events counters, each every Config.GCInterval (see Start): two
	// loops, so that a slow collection does not use up the rollups' time.
	gcSweeper, rollupSweeper background.Sweeper
	// purgeSweeper purges what deletes and TTLs left behind (PurgeAll).
	purgeSweeper background.Sweeper
	// gcComplete and rollupComplete are when the last sweep that reached
	// every counter without skipping one ended (Unix ns; 0: none yet).
	gcComplete, rollupComplete, purgeComplete atomic.Int64
}

// SweepStatus says how current the background work is (Client.Sweeps).
type SweepStatus struct {
	// GCComplete is when the last collection of every sharded counter
	// that skipped none ended, by the sweeper or GCAll over all
	// namespaces; zero if none has since the client started.
	GCComplete time.Time
	// RollupComplete is the same for the rollups of events counters.
	RollupComplete time.Time
	// PurgeComplete is when the last purge over every namespace (PurgeAll,
	// by the sweeper or a caller) ended without an error.
	PurgeComplete time.Time
}

// Driver returns the store the client was made with (Config.Driver), for
// what lives beside the counters in it, such as the server's API keys.
func (c *Client) Driver() driver.Driver { return c.cfg.Driver }

// Sweeps reports how current collections and rollups are. A complete
// sweep older than a few GC intervals means shards or events pile up:
// a replica has been down for long, or the sweeps take longer than the
// interval.
func (c *Client) Sweeps() SweepStatus {
	at := func(v *atomic.Int64) time.Time {
		if n := v.Load(); n != 0 {
			return time.Unix(0, n)
		}
		return time.Time{}
	}
	return SweepStatus{GCComplete: at(&c.gcComplete), RollupComplete: at(&c.rollupComplete), PurgeComplete: at(&c.purgeComplete)}
}

// noteSweep records a sweep over every namespace that ended without error
// as complete unless it skipped a counter.
func noteSweep[R any](c *Client, complete *atomic.Int64, results []R, skipped func(R) bool, err error) {
	if err != nil || slices.ContainsFunc(results, skipped) {
		return
	}
	complete.Store(c.cfg.Clock.Now().UnixNano())
}

func gcSkipped(r GCResult) bool                { return r.Skipped }
func rollupSkipped(r events.RollupResult) bool { return r.Skipped }

// NewClient returns a client on cfg.Driver and makes sure the default
// namespace exists. Call Start to run background garbage collection and
// Stop before closing the driver.
func NewClient(ctx context.Context, cfg Config) (*Client, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	eng, err := sharded.New(sharded.Config{
		Store:              cfg.Driver,
		Clock:              cfg.Clock,
		Lifetime:           cfg.MutatorLifetime,
		RefusalMargin:      cfg.RefusalMargin,
		GCGrace:            cfg.GCGrace,
		MaxMutators:        cfg.MaxMutators,
		DedupWindow:        cfg.RequestIDWindow,
		DedupMax:           cfg.RequestIDMax,
		WriteTimeout:       cfg.WriteTimeout,
		MaxInflightWrites:  cfg.MaxInflightWrites,
		MaxShardBatch:      cfg.MaxShardBatch,
		MaxInflightBatches: cfg.MaxInflightShardBatches,
		Logger:             cfg.Logger,
		Hooks:              cfg.ShardedHooks,
	})
	if err != nil {
		return nil, fmt.Errorf("abacus: %w", err)
	}
	led, err := ledger.New(ledger.Config{
		Store:           cfg.Driver,
		Clock:           cfg.Clock,
		ActorID:         cfg.LedgerActorID,
		MaxActors:       cfg.MaxLedgerActors,
		RightsLease:     cfg.LedgerRightsLease,
		LateWriteWindow: cfg.LedgerLateWriteWindow,
		RightsIdle:      cfg.LedgerRightsIdle,
		DataCenter:      localDataCenter(cfg.Driver),
		WriteTimeout:    cfg.WriteTimeout,
		ClaimWait:       cfg.LedgerClaimWait,
		Logger:          cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	qs, err := newQueues(cfg)
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, sharded: eng, ledger: led, queues: qs, namespaces: newNamespaceRegistry(cfg.Driver)}
	c.views = c.newViews()
	c.events, err = events.New(events.Config{
		Store:         cfg.Driver,
		Clock:         cfg.Clock,
		WriteTimeout:  cfg.WriteTimeout,
		MaxEventBatch: cfg.MaxEventBatch,
		RollupEvery:   cfg.RollupEvery,
		Logger:        cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	_, err = c.CreateNamespace(ctx, NamespaceConfig{Name: DefaultNamespace, Model: ModelSharded, Type: TypeSum})
	if err != nil && !errors.Is(err, ErrNamespaceExists) {
		return nil, fmt.Errorf("abacus: create the default namespace: %w", err)
	}
	return c, nil
}

// Start runs the background sweepers: every Config.GCInterval they
// collect every sharded counter and roll up every events counter, as
// GCAll does, each round within one interval.
func (c *Client) Start(ctx context.Context) error {
	c.gcSweeper.Start(c.cfg.GCInterval, func(ctx context.Context) {
		res, err := c.sharded.CollectAll(ctx, "")
		if err != nil && !stopped(ctx) {
			c.cfg.Logger.Warn("gc sweep failed", "err", err)
		}
		noteSweep(c, &c.gcComplete, res, gcSkipped, err)
		c.purgeShardTombstones(ctx)
	})
	c.rollupSweeper.Start(c.cfg.GCInterval, func(ctx context.Context) {
		res, err := c.rollupAll(ctx, "")
		if err != nil && !stopped(ctx) {
			c.cfg.Logger.Warn("rollup sweep failed", "err", err)
		}
		noteSweep(c, &c.rollupComplete, res, rollupSkipped, err)
	})
	c.purgeSweeper.Start(c.cfg.GCInterval, func(ctx context.Context) {
		if _, err := c.PurgeAll(ctx, ""); err != nil && !stopped(ctx) {
			c.cfg.Logger.Warn("purge sweep failed", "err", err)
		}
	})
	return nil
}

// stopped reports whether a sweep ended because Stop cancelled it, which
// is no failure worth a warning.
func stopped(ctx context.Context) bool { return errors.Is(ctx.Err(), context.Canceled) }

// Stop stops the sweepers (cancelling a round in progress: the next start
// redoes what it did not finish) and waits for in-flight writes, so every update accepted before Stop is either
// acknowledged or reported to its caller. It also stops finishing
// strict-mode ledger writes in the background.
func (c *Client) Stop(ctx context.Context) error {
	c.gcSweeper.Stop()
	c.rollupSweeper.Stop()
	c.purgeSweeper.Stop()
	return errors.Join(c.sharded.Close(ctx), c.events.Close(ctx), c.ledger.Close(ctx))
}

// Ping checks that the store answers, bypassing every cache.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.cfg.Driver.GetNamespace(ctx, &driver.GetNamespaceParams{Name: DefaultNamespace})
	return publicError(err)
}

// PurgeShardTombstones drops, on a store that keeps them until told (the
// embedded store), the deletes of sharded counters' shards that expired
// more than twice GCGrace ago, and reports how many it dropped; on other
// stores (Cassandra drops its own after gc_grace_seconds) it does nothing.
// The GC sweeper runs it after each collection, and GCAll over every
// namespace does too. A shard takes writes only until it expires and is
// folded no sooner than GCGrace after that, so its tombstone has outlived
// every write that could land by GCGrace when it goes
// (docs/architecture.md, "Purging the tombstones of folded shards").
func (c *Client) PurgeShardTombstones(ctx context.Context) (int, error) {
	p, ok := c.cfg.Driver.(driver.ShardTombstonePurger)
	if !ok {
		return 0, nil
	}
	return p.PurgeShardTombstones(ctx, c.sharded.TombstoneCutoff())
}

// purgeShardTombstones runs PurgeShardTombstones for a sweep: failures are
// logged, and the next sweep tries again.
func (c *Client) purgeShardTombstones(ctx context.Context) {
	n, err := c.PurgeShardTombstones(ctx)
	switch {
	case err != nil && !stopped(ctx):
		c.cfg.Logger.Warn("purging the tombstones of folded shards failed", "purged", n, "err", err)
	case n > 0:
		c.cfg.Logger.Debug("purged the tombstones of folded shards", "count", n)
	}
}

// localDataCenter is the data center a driver routes to (the Cassandra
// driver's Config.LocalDataCenter), "" for a driver without one.
func localDataCenter(d driver.Driver) string {
	if l, ok := d.(interface{ LocalDataCenter() string }); ok {
		return l.LocalDataCenter()
	}
	return ""
}
