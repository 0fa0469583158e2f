package abacus

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/abacusdb/abacus/crdt"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/ledger"
	"github.com/abacusdb/abacus/queue"
	"github.com/abacusdb/abacus/sharded"
)

// Client is the entry point of the library. It is safe for concurrent use.
type Client struct {
	cfg        Config
	sharded    *sharded.Engine
	ledger     *ledger.Engine
	queues     *queue.Service
	namespaces sync.Map // name -> *Namespace
}

// NewClient returns a client on cfg.Driver and makes sure the default
// namespace exists. Call Start to run background garbage collection and
// Stop before closing the driver.
func NewClient(ctx context.Context, cfg Config) (*Client, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	eng, err := sharded.New(sharded.Config{
		Store:             cfg.Driver,
		Clock:             cfg.Clock,
		Lifetime:          cfg.MutatorLifetime,
		RefusalMargin:     cfg.RefusalMargin,
		GCGrace:           cfg.GCGrace,
		MaxMutators:       cfg.MaxMutators,
		DedupWindow:       cfg.RequestIDWindow,
		DedupMax:          cfg.RequestIDMax,
		WriteTimeout:      cfg.WriteTimeout,
		MaxInflightWrites: cfg.MaxInflightWrites,
		Logger:            cfg.Logger,
		Hooks:             cfg.ShardedHooks,
	})
	if err != nil {
		return nil, fmt.Errorf("abacus: %w", err)
	}
	led, err := ledger.New(ledger.Config{
		Store:        cfg.Driver,
		Clock:        cfg.Clock,
		ActorID:      cfg.LedgerActorID,
		MaxActors:    cfg.MaxLedgerActors,
		WriteTimeout: cfg.WriteTimeout,
		ClaimWait:    cfg.LedgerClaimWait,
		Logger:       cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	qs, err := newQueues(cfg)
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, sharded: eng, ledger: led, queues: qs}
	_, err = c.CreateNamespace(ctx, NamespaceConfig{Name: DefaultNamespace, Model: ModelSharded, Type: TypeSum})
	if err != nil && !errors.Is(err, ErrNamespaceExists) {
		return nil, fmt.Errorf("abacus: create the default namespace: %w", err)
	}
	return c, nil
}

// Start runs the background GC sweeper (every Config.GCInterval).
func (c *Client) Start(ctx context.Context) error {
	c.sharded.Start(c.cfg.GCInterval)
	return nil
}

// Stop stops the sweeper and waits for in-flight writes, so every update
// accepted before Stop is either acknowledged or reported to its caller.
// It also stops finishing strict-mode ledger writes in the background.
func (c *Client) Stop(ctx context.Context) error {
	return errors.Join(c.sharded.Close(ctx), c.ledger.Close(ctx))
}

// Update is one change to a counter.
type Update struct {
	// Namespace defaults to "default".
	Namespace string
	// Counter is the counter's name (1 to 256 bytes of UTF-8).
	Counter string
	// Delta is the amount added (type sum) or the value observed (max, min).
	// It must be zero for distinct counters.
	Delta int64
	// Item is the element added to a distinct counter; empty for other types.
	Item string
	// RequestID, when set, makes retries of this update that reach the same
	// process within Config.RequestIDWindow count once.
	RequestID string
}

// Apply applies an update and returns once it is durable (see the package
// documentation for what each error means).
func (c *Client) Apply(ctx context.Context, u Update) error {
	t, op, err := c.prepare(ctx, u)
	if err != nil {
		return err
	}
	return c.sharded.Apply(ctx, t, op, u.RequestID)
}

// Check validates an update as Apply would — names, namespace, type fit,
// request id — without applying it. Batch callers use it to refuse a batch
// as a whole before applying any of it.
func (c *Client) Check(ctx context.Context, u Update) error {
	_, _, err := c.prepare(ctx, u)
	return err
}

func (c *Client) prepare(ctx context.Context, u Update) (sharded.Target, crdt.Op, error) {
	ns, t, err := c.target(ctx, u.Namespace, u.Counter)
	if err != nil {
		return t, crdt.Op{}, err
	}
	op, err := opFor(ns, u)
	if err != nil {
		return t, crdt.Op{}, err
	}
	if len(u.RequestID) > MaxNameLen {
		return t, crdt.Op{}, fmt.Errorf("%w: request id is longer than %d bytes", ErrInvalid, MaxNameLen)
	}
	return t, op, nil
}

// Ping checks that the store answers, bypassing every cache.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.cfg.Driver.GetNamespace(ctx, &driver.GetNamespaceParams{Name: DefaultNamespace})
	return wrapDriverError(err)
}

// Add adds delta to a sum counter.
func (c *Client) Add(ctx context.Context, namespace, counter string, delta int64) error {
	return c.Apply(ctx, Update{Namespace: namespace, Counter: counter, Delta: delta})
}

func opFor(ns *Namespace, u Update) (crdt.Op, error) {
	if ns.Type == TypeDistinct {
		if u.Item == "" || u.Delta != 0 {
			return crdt.Op{}, fmt.Errorf("%w: namespace %q counts distinct items: give an item and no delta", ErrWrongType, ns.Name)
		}
		return crdt.Op{Item: []byte(u.Item)}, nil
	}
	if u.Item != "" {
		return crdt.Op{}, fmt.Errorf("%w: namespace %q holds %s counters, which take a number, not an item", ErrWrongType, ns.Name, ns.Type)
	}
	return crdt.Op{Delta: u.Delta}, nil
}

func (c *Client) target(ctx context.Context, namespace, counter string) (*Namespace, sharded.Target, error) {
	if err := ValidateName("counter", counter); err != nil {
		return nil, sharded.Target{}, err
	}
	ns, err := c.Namespace(ctx, namespace)
	if err != nil {
		return nil, sharded.Target{}, err
	}
	if ns.Model == ModelLedger {
		return nil, sharded.Target{}, fmt.Errorf("%w: namespace %q holds ledgers; use the ledger operations (Credit, Debit, LedgerValue)", ErrInvalid, ns.Name)
	}
	if ns.Model != ModelSharded {
		return nil, sharded.Target{}, fmt.Errorf("%w: namespace %q uses model %q, which this release cannot serve", ErrInvalid, ns.Name, ns.Model)
	}
	kind, err := crdt.ParseKind(ns.Type)
	if err != nil {
		return nil, sharded.Target{}, fmt.Errorf("namespace %q has a corrupt type: %w", ns.Name, err)
	}
	return ns, sharded.Target{
		Namespace:        ns.Name,
		Counter:          counter,
		Kind:             kind,
		ReadConsistency:  ns.ReadConsistency,
		WriteConsistency: ns.WriteConsistency,
	}, nil
}

// Value is a counter's value as read.
type Value struct {
	Namespace string
	Counter   string
	Type      string
	// Value is the sum, the extreme, or the distinct-count estimate.
	Value int64
	// Empty is true when nothing was ever counted (Value is then 0).
	Empty bool
	// Shards is how many live shards the read merged.
	Shards int
}

// Get reads a counter. A counter that was never written reads as 0 (Empty).
func (c *Client) Get(ctx context.Context, namespace, counter string) (*Value, error) {
	ns, t, err := c.target(ctx, namespace, counter)
	if err != nil {
		return nil, err
	}
	r, err := c.sharded.Read(ctx, t)
	if err != nil {
		return nil, wrapDriverError(err)
	}
	return &Value{
		Namespace: ns.Name, Counter: counter, Type: ns.Type,
		Value: r.State.Value(), Empty: r.State.Empty(), Shards: r.Shards,
	}, nil
}

// GCResult is the outcome of collecting one counter.
type GCResult = sharded.GCResult

// GC folds the final shards of one counter into its tally. A collection that
// cannot reach every replica is reported as Skipped, not as an error.
func (c *Client) GC(ctx context.Context, namespace, counter string) (GCResult, error) {
	ns, _, err := c.target(ctx, namespace, counter)
	if err != nil {
		return GCResult{}, err
	}
	return c.sharded.Collect(ctx, driver.CounterKey{Namespace: ns.Name, Counter: counter}), nil
}

// GCAll collects every counter, or every counter of one namespace when
// namespace is not empty.
func (c *Client) GCAll(ctx context.Context, namespace string) ([]GCResult, error) {
	if namespace != "" {
		if _, err := c.Namespace(ctx, namespace); err != nil {
			return nil, err
		}
	}
	return c.sharded.CollectAll(ctx, namespace)
}

// LiveMutators returns how many mutators this process holds (for metrics).
func (c *Client) LiveMutators() int { return c.sharded.LiveMutators() }

// Stats returns the sharded engine's running totals (for metrics).
func (c *Client) Stats() *sharded.Stats { return c.sharded.Stats() }
