package abacus

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
)

// Config configures a Client. Zero fields take the documented defaults.
type Config struct {
	// Driver stores everything. Required. The Client does not close it.
	Driver driver.Driver

	// MutatorLifetime is how long one process writes to one shard of a
	// counter before starting a new one. Default 24h.
	MutatorLifetime time.Duration

	// RefusalMargin: a mutator stops taking updates this long before its
	// death. Default 1h.
	RefusalMargin time.Duration

	// GCGrace is how long after a mutator's death its shard may be folded
	// into the counter's tally. It must exceed the worst clock skew between
	// processes plus the database's hint window. Default 24h.
	GCGrace time.Duration

	// GCInterval is how often the background sweeper (run by Start) collects
	// every counter. Default 10m; negative disables the sweeper.
	GCInterval time.Duration

	// MaxMutators bounds the live mutators of this process. Default 10,000.
	MaxMutators int

	// RequestIDWindow is how long a request id is remembered to de-duplicate
	// retries reaching this process. Default 10m.
	RequestIDWindow time.Duration

	// RequestIDMax bounds how many request ids are remembered. Default 1,000,000.
	RequestIDMax int

	// WriteTimeout bounds one shard write, time queued for a combined
	// request included (see MaxShardBatch). Default 10s.
	WriteTimeout time.Duration

	// MaxInflightWrites is how many shard writes of one counter this process
	// may have in flight at once (pipelined group commit). Default 4.
	MaxInflightWrites int

	// MaxShardBatch is how many shard writes, of any counters, one request
	// to the store may carry. Writes that queue while
	// MaxInflightShardBatches requests are in flight go out together, so
	// many quiet counters share a round trip as one hot counter's updates
	// share a write; a write that finds a request slot free goes at once.
	// 1 sends every write on its own. Default 32.
	MaxShardBatch int

	// MaxInflightShardBatches is how many shard-write requests this process
	// may have in flight at once when MaxShardBatch is above 1. Default 8.
	MaxInflightShardBatches int

	// MaxEventBatch is how many event writes (events model), of any
	// counters, one request to the store may carry, combined as shard
	// writes are (MaxShardBatch), with up to 8 requests in flight. 1
	// sends every write on its own. Default 32.
	MaxEventBatch int

	// RollupEvery is the shortest pause between two rollups of one events
	// counter that its reads and writes start in the background on this
	// process; a hot counter is rolled up that often. Default 1s; negative
	// starts none (the sweeper, GC and late retries still roll up).
	RollupEvery time.Duration

	// Clock tells the time; tests inject a clock.Manual. Default: system clock.
	Clock clock.Clock

	// Logger receives operational warnings. Default: slog.Default().
	Logger *slog.Logger

	// ShardedHooks receive measurements of the sharded model (for metrics).
	ShardedHooks ShardedHooks

	// LedgerActorID prefixes the actor ids this process writes ledgers
	// under. Default: 16 random hex digits, new at every start. Set it only
	// to something no other process uses or ever used (for example the
	// host name plus the start time): two processes under one actor id
	// overwrite each other's ledger entries.
	LedgerActorID string

	// MaxLedgerActors bounds the ledgers whose actor state this process
	// keeps in memory (LRU); a ledger dropped from memory gets a new actor
	// row on its next write. Default 10,000.
	MaxLedgerActors int

	// LedgerClaimWait is how long a strict-mode ledger write that finds its
	// request id claimed by another process waits for that process's write
	// before returning ErrUnknownOutcome. Default 2s.
	LedgerClaimWait time.Duration

	// LedgerRightsLease is how long a grant of debit rights in a floored
	// ledger namespace lasts before this process renews it; a process
	// sends no debit of a ledger after its lease there ended. Default 10
	// minutes. See docs/ledger.md, "Balance floors".
	LedgerRightsLease time.Duration

	// LedgerLateWriteWindow is how long after it was sent a write may
	// still land: the store's longest delivery of a timed-out write
	// (Cassandra's max_hint_window, 3h by default) plus the write timeout
	// plus the clock skew between servers. A dead process's debit rights
	// are reclaimed only this long after its lease ended (and its rows
	// fenced, so a write landing later still does not count). Default
	// 3h10m.
	LedgerLateWriteWindow time.Duration

	// LedgerRightsIdle is how long this process's actor of a floored
	// ledger goes without a debit before it gives back the debit rights it
	// has not used, so other servers can use them. Default 1s.
	LedgerRightsIdle time.Duration

	// LifecycleRefresh is how long this process trusts what it read of a
	// namespace's deletes (its cuts) and its record before reading them
	// again. Default 5s.
	LifecycleRefresh time.Duration

	// DeleteDelay is how far in the future a delete or a sharded clear
	// takes effect (DeleteCounter, DeleteNamespace). Every process must
	// learn of it first, so it must exceed LifecycleRefresh plus twice
	// WriteTimeout (the longest a delete's write may take, and then the
	// longest taking back a failed one may take) plus the largest
	// disagreement between any two processes' clocks. Default 3m, which
	// leaves 2m35s for the clocks: more than twice the server's default
	// --max-clock-skew, since two servers may each be that far from the
	// store's clock in opposite directions. One process alone on an
	// embedded store has no clocks to disagree with.
	DeleteDelay time.Duration

	// Queues configures the delay queues (Client.Queues). Its Store, Clock
	// and Logger default to Driver, Clock and Logger; see QueuesConfig for
	// the rest.
	Queues QueuesConfig
}

// withDefaults fills the fields the Client itself uses; the sharded engine
// applies (and validates) the defaults of the fields passed on to it.
func (c Config) withDefaults() Config {
	if c.GCInterval == 0 {
		c.GCInterval = 10 * time.Minute
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.LifecycleRefresh == 0 {
		c.LifecycleRefresh = 5 * time.Second
	}
	if c.DeleteDelay == 0 {
		c.DeleteDelay = 3 * time.Minute
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 10 * time.Second // the engines' default too
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	if c.Driver == nil {
		return errors.New("abacus: Config.Driver is required")
	}
	if c.LifecycleRefresh < 0 || c.DeleteDelay < 0 || c.WriteTimeout < 0 {
		return errors.New("abacus: Config.LifecycleRefresh, DeleteDelay and WriteTimeout must not be negative")
	}
	if c.DeleteDelay <= c.LifecycleRefresh+2*c.WriteTimeout {
		return fmt.Errorf("abacus: Config.DeleteDelay (%v) must exceed LifecycleRefresh (%v) plus twice WriteTimeout (%v), or a process could learn of a delete, or of its being taken back, only after its time",
			c.DeleteDelay, c.LifecycleRefresh, c.WriteTimeout)
	}
	return nil
}
