package abacus

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"time"

	"github.com/abacusdb/abacus/actor"
	"github.com/abacusdb/abacus/cas"
	"github.com/abacusdb/abacus/crdt"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/events"
	"github.com/abacusdb/abacus/ledger"
	"github.com/abacusdb/abacus/queue"
	"github.com/abacusdb/abacus/sharded"
)

// Client is the entry point of the library. It is safe for concurrent use.
type Client struct {
	cfg        Config
	sharded    *sharded.Engine
	events     *events.Engine
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
	c.events, err = events.New(events.Config{
		Store:        cfg.Driver,
		Clock:        cfg.Clock,
		WriteTimeout: cfg.WriteTimeout,
		Resolve:      c.resolveEvents,
		Logger:       cfg.Logger,
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

// Start runs the background sweepers (every Config.GCInterval): GC of
// sharded counters and rollups of events counters.
func (c *Client) Start(ctx context.Context) error {
	c.sharded.Start(c.cfg.GCInterval)
	c.events.Start(c.cfg.GCInterval)
	return nil
}

// Stop stops the sweeper and waits for in-flight writes, so every update
// accepted before Stop is either acknowledged or reported to its caller.
// It also stops finishing strict-mode ledger writes in the background.
func (c *Client) Stop(ctx context.Context) error {
	return errors.Join(c.sharded.Close(ctx), c.events.Close(ctx), c.ledger.Close(ctx))
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
	// RequestID identifies the update for retries. Sharded counters count
	// a retry once when it reaches the same process within
	// Config.RequestIDWindow. Events counters count it once from any
	// process within the namespace's accept window; there it must be a
	// version 7 UUID (see NewRequestID) unless Time is given, and empty
	// means a new event at the current time. Native and cas counters
	// ignore it: their retries may count twice.
	RequestID string
	// Time is the event time of an events-model increment; zero takes the
	// time in RequestID. Other models refuse a non-zero Time.
	Time time.Time
}

// NewRequestID returns a fresh request id: a version 7 UUID, whose time
// part lets every model (events included) use it.
func NewRequestID() string { return events.NewID(time.Now()) }

// Apply applies an update and returns once it is durable (see the package
// documentation for what each error means).
func (c *Client) Apply(ctx context.Context, u Update) error {
	p, err := c.prepare(ctx, u)
	if err != nil {
		return err
	}
	switch p.ns.Model {
	case ModelEvents:
		return modelError(c.events.Write(ctx, p.events, p.event))
	case ModelNative:
		err := c.cfg.Driver.AddNative(ctx, &driver.AddNativeParams{
			Namespace: p.ns.Name, Counter: u.Counter, Delta: u.Delta, Consistency: p.ns.WriteConsistency,
		})
		return modelError(err)
	case ModelCAS:
		_, err := cas.Add(ctx, c.cfg.Driver, casTarget(p.ns, u.Counter), u.Delta, cas.Options{})
		return modelError(err)
	}
	return c.sharded.Apply(ctx, p.sharded, p.op, u.RequestID)
}

// Check validates an update as Apply would — names, namespace, model and
// type fit, request id — without applying it. Batch callers use it to
// refuse a batch as a whole before applying any of it.
func (c *Client) Check(ctx context.Context, u Update) error {
	_, err := c.prepare(ctx, u)
	return err
}

// prepared is an update checked against its namespace.
type prepared struct {
	ns      *Namespace
	sharded sharded.Target // sharded model only
	op      crdt.Op        // sharded model only
	events  events.Target  // events model only
	event   driver.Event   // events model only: resolved id and time
}

func (c *Client) prepare(ctx context.Context, u Update) (prepared, error) {
	ns, err := c.counterNamespace(ctx, u.Namespace, u.Counter)
	if err != nil {
		return prepared{}, err
	}
	p := prepared{ns: ns}
	if len(u.RequestID) > MaxNameLen {
		return p, fmt.Errorf("%w: request id is longer than %d bytes", ErrInvalid, MaxNameLen)
	}
	if !u.Time.IsZero() && ns.Model != ModelEvents {
		return p, fmt.Errorf("%w: an event time is only meaningful for events counters; namespace %q is of model %q", ErrWrongModel, ns.Name, ns.Model)
	}
	switch ns.Model {
	case ModelSharded:
		if p.sharded, err = shardedTarget(ns, u.Counter); err != nil {
			return p, err
		}
		p.op, err = opFor(ns, u)
		return p, err
	case ModelEvents, ModelNative, ModelCAS:
		if u.Item != "" {
			return p, fmt.Errorf("%w: namespace %q holds %s sum counters, which take a number, not an item", ErrWrongType, ns.Name, ns.Model)
		}
		if ns.Model == ModelEvents {
			p.events = c.eventsTarget(ns, u.Counter)
			p.event, err = c.events.Event(p.events, events.Request{ID: u.RequestID, Time: u.Time, Delta: u.Delta})
			return p, modelError(err)
		}
		return p, nil
	case ModelActor:
		return p, fmt.Errorf("%w: namespace %q holds actor counters, which take a set (actor, version, value), not an increment", ErrWrongModel, ns.Name)
	}
	return p, fmt.Errorf("%w: namespace %q uses model %q, which this release cannot serve", ErrInvalid, ns.Name, ns.Model)
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

// counterNamespace checks a counter name and finds its namespace, which
// must hold counters (not ledgers).
func (c *Client) counterNamespace(ctx context.Context, namespace, counter string) (*Namespace, error) {
	if err := ValidateName("counter", counter); err != nil {
		return nil, err
	}
	ns, err := c.Namespace(ctx, namespace)
	if err != nil {
		return nil, err
	}
	if ns.Model == ModelLedger {
		return nil, fmt.Errorf("%w: namespace %q holds ledgers; use the ledger operations (Credit, Debit, LedgerValue)", ErrWrongModel, ns.Name)
	}
	return ns, nil
}

func shardedTarget(ns *Namespace, counter string) (sharded.Target, error) {
	kind, err := crdt.ParseKind(ns.Type)
	if err != nil {
		return sharded.Target{}, fmt.Errorf("namespace %q has a corrupt type: %w", ns.Name, err)
	}
	return sharded.Target{
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
	// Value is the sum, the extreme, or the distinct-count estimate. When
	// Saturated it is the int64 bound nearest to the exact sum.
	Value int64
	// Saturated is set when an events or actor sum lies outside the int64
	// range (possible only through concurrent blind writes from several
	// servers, or events a single server cannot see coming); Exact then
	// holds the sum in decimal. The read is still correct: later writes
	// that bring the sum back into range make Value exact again.
	Saturated bool
	Exact     string
	// Empty is true when nothing was ever counted (Value is then 0).
	Empty bool
	// Model is the namespace's model.
	Model Model
	// Shards is how many live shards the read merged (sharded model).
	Shards int
	// Events is how many events after the last rollup the read added
	// (events model).
	Events int
	// Actors is how many actors' values the read summed (actor model).
	Actors int
}

// Get reads a counter. A counter that was never written reads as 0 (Empty).
func (c *Client) Get(ctx context.Context, namespace, counter string) (*Value, error) {
	ns, err := c.counterNamespace(ctx, namespace, counter)
	if err != nil {
		return nil, err
	}
	v := &Value{Namespace: ns.Name, Counter: counter, Type: ns.Type, Model: ns.Model}
	switch ns.Model {
	case ModelSharded:
		t, err := shardedTarget(ns, counter)
		if err != nil {
			return nil, err
		}
		r, err := c.sharded.Read(ctx, t)
		if err != nil {
			return nil, wrapDriverError(err)
		}
		v.Empty, v.Shards = r.Empty, r.Shards
		v.setTotal(r.Total)
	case ModelEvents:
		r, err := c.events.Read(ctx, c.eventsTarget(ns, counter))
		if err != nil {
			return nil, modelError(err)
		}
		v.Value, v.Empty, v.Events = r.Value, r.Empty, r.Events
		v.setTotal(r.Total)
	case ModelActor:
		vals, err := c.cfg.Driver.ReadActorValues(ctx, &driver.ReadActorValuesParams{
			Namespace: ns.Name, Counter: counter, Consistency: ns.ReadConsistency,
		})
		if err != nil {
			return nil, wrapDriverError(err)
		}
		v.setTotal(actor.Sum(vals))
		v.Empty, v.Actors = len(vals) == 0, len(vals)
	case ModelNative:
		n, err := c.cfg.Driver.ReadNative(ctx, &driver.ReadNativeParams{
			Namespace: ns.Name, Counter: counter, Consistency: ns.ReadConsistency,
		})
		if err != nil {
			return nil, wrapDriverError(err)
		}
		// A native counter cannot tell "never written" from "sums to 0".
		v.Value, v.Empty = n, n == 0
	case ModelCAS:
		// Serial: the read a user sees of a linearizable counter is
		// linearizable too.
		cv, err := c.cfg.Driver.ReadCAS(ctx, &driver.ReadCASParams{
			Namespace: ns.Name, Counter: counter, Consistency: ns.ReadConsistency, Serial: true,
		})
		if err != nil {
			return nil, wrapDriverError(err)
		}
		v.Value, v.Empty = cv.Value, !cv.Exists
	default:
		return nil, fmt.Errorf("%w: namespace %q uses model %q, which this release cannot serve", ErrInvalid, ns.Name, ns.Model)
	}
	return v, nil
}

func (v *Value) setTotal(w crdt.Wide) {
	var exact bool
	v.Value, exact = w.Int64()
	if v.Saturated = !exact; v.Saturated {
		v.Exact = w.String()
	}
}

// ApplyAndGet applies an update and then reads the counter. The read is a
// separate operation: other updates may land between the two.
func (c *Client) ApplyAndGet(ctx context.Context, u Update) (*Value, error) {
	if err := c.Apply(ctx, u); err != nil {
		return nil, err
	}
	return c.Get(ctx, u.Namespace, u.Counter)
}

// GCResult is the outcome of collecting one counter.
type GCResult = sharded.GCResult

// GC folds the final shards of a sharded counter into its tally, or rolls
// up an events counter (Folded is then the number of events folded). A
// collection that cannot reach every replica is reported as Skipped, not
// as an error. Other models have nothing to collect.
func (c *Client) GC(ctx context.Context, namespace, counter string) (GCResult, error) {
	ns, err := c.counterNamespace(ctx, namespace, counter)
	if err != nil {
		return GCResult{}, err
	}
	key := driver.CounterKey{Namespace: ns.Name, Counter: counter}
	switch ns.Model {
	case ModelSharded:
		return c.sharded.Collect(ctx, key), nil
	case ModelEvents:
		return rollupResult(c.events.Rollup(ctx, c.eventsTarget(ns, counter))), nil
	}
	return GCResult{Key: key}, nil
}

func rollupResult(r events.RollupResult) GCResult {
	return GCResult{Key: r.Key, Folded: r.Events, Skipped: r.Skipped, Err: r.Err}
}

// GCAll collects every sharded counter and rolls up every events counter,
// or only those of one namespace when namespace is not empty.
func (c *Client) GCAll(ctx context.Context, namespace string) ([]GCResult, error) {
	if namespace != "" {
		if _, err := c.Namespace(ctx, namespace); err != nil {
			return nil, err
		}
	}
	out, err := c.sharded.CollectAll(ctx, namespace)
	if err != nil {
		return out, err
	}
	rolled, err := c.events.RollupAll(ctx, namespace)
	for _, r := range rolled {
		out = append(out, rollupResult(r))
	}
	return out, err
}

// EventsStats returns the events engine's running totals (for metrics).
func (c *Client) EventsStats() *events.Stats { return c.events.Stats() }

// LiveMutators returns how many mutators this process holds (for metrics).
func (c *Client) LiveMutators() int { return c.sharded.LiveMutators() }

// Stats returns the sharded engine's running totals (for metrics).
func (c *Client) Stats() *sharded.Stats { return c.sharded.Stats() }
