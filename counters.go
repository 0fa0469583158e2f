package abacus

import (
	"context"
	"fmt"
	"time"

	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/crdt"
	"github.com/abacusdb/abacus/internal/events"
	"github.com/abacusdb/abacus/internal/sharded"
)

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
func NewRequestID() string { return api.NewRequestID(time.Now()) }

// Apply applies an update and returns once it is durable (see the package
// documentation for what each error means).
func (c *Client) Apply(ctx context.Context, u Update) error {
	_, err := c.Update(ctx, u)
	return err
}

// UpdateResult says what an applied update did.
type UpdateResult struct {
	// Replayed is set when the update was a retry of one counted before,
	// recognised by its request id, and added nothing. Events counters
	// report it for a retry that arrives after its event's time range
	// was sealed (older than the namespace's seal); a retry inside the
	// seal window, or one a sharded counter recognises, is absorbed the
	// same way but not reported.
	Replayed bool
}

// Update applies an update as Apply does and says whether it was a
// recognised retry.
func (c *Client) Update(ctx context.Context, u Update) (*UpdateResult, error) {
	p, err := c.prepare(ctx, u)
	if err != nil {
		return nil, err
	}
	u.Counter = p.stored
	p.result = &UpdateResult{}
	if err := p.model.apply(ctx, c, p, u); err != nil {
		return nil, err
	}
	return p.result, nil
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
	stored  string // the name of the counter's current generation
	model   counterModel
	sharded sharded.Target // sharded model only
	op      crdt.Op        // sharded model only
	events  events.Target  // events model only
	event   driver.Event   // events model only: resolved id and time
	result  *UpdateResult  // filled in by apply
}

func (c *Client) prepare(ctx context.Context, u Update) (prepared, error) {
	ns, view, err := c.counterNamespace(ctx, u.Namespace, u.Counter)
	if err != nil {
		return prepared{}, err
	}
	p := prepared{ns: ns, stored: view.stored(u.Counter)}
	u.Counter = p.stored
	if len(u.RequestID) > MaxNameLen {
		return p, fmt.Errorf("%w: request id is longer than %d bytes", ErrInvalid, MaxNameLen)
	}
	if !u.Time.IsZero() && ns.Model != ModelEvents {
		return p, fmt.Errorf("%w: an event time is only meaningful for events counters; namespace %q is of model %q", ErrWrongModel, ns.Name, ns.Model)
	}
	m, ok := counterModelOf(ns.Model)
	if !ok {
		return p, fmt.Errorf("%w: namespace %q uses model %q, which this release cannot serve", ErrInvalid, ns.Name, ns.Model)
	}
	p.model = m
	return m.prepare(c, p, u)
}

// Add adds delta to a sum counter.
func (c *Client) Add(ctx context.Context, namespace, counter string, delta int64) error {
	return c.Apply(ctx, Update{Namespace: namespace, Counter: counter, Delta: delta})
}

// counterNamespace checks a counter name and finds its namespace, which
// must hold counters (not ledgers).
func (c *Client) counterNamespace(ctx context.Context, namespace, counter string) (*Namespace, liveView, error) {
	if err := ValidateName("counter", counter); err != nil {
		return nil, liveView{}, err
	}
	ns, view, err := c.live(ctx, namespaceOrDefault(namespace))
	if err != nil {
		return nil, liveView{}, err
	}
	if ns.Model == ModelLedger {
		return nil, liveView{}, fmt.Errorf("%w: namespace %q holds ledgers; use the ledger operations (Credit, Debit, LedgerValue)", ErrWrongModel, ns.Name)
	}
	return ns, view, nil
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
	// AsOf is the time up to which an events counter's value is complete:
	// every increment acknowledged before it is in it. A read from the
	// store is as of its start; one answered from memory by GetWithin is
	// older, and Cached is set.
	AsOf   time.Time
	Cached bool
	// RolledUpTo is the events counter's rollup epoch: the value up to it
	// is sealed, and the read added the events after it. Zero when never
	// rolled up.
	RolledUpTo time.Time

	maxStaleness time.Duration // GetWithin's bound
}

// Get reads a counter. A counter that was never written reads as 0 (Empty).
func (c *Client) Get(ctx context.Context, namespace, counter string) (*Value, error) {
	return c.GetWithin(ctx, namespace, counter, 0)
}

// GetWithin reads a counter as Get does, but an events counter may be
// answered from this process's memory when what it holds is complete as
// of maxStaleness ago or later (Value.AsOf, Value.Cached): the last rollup
// or read of the counter seen here. Other models, and maxStaleness 0,
// read the store.
func (c *Client) GetWithin(ctx context.Context, namespace, counter string, maxStaleness time.Duration) (*Value, error) {
	if maxStaleness < 0 {
		return nil, fmt.Errorf("%w: max staleness %v is negative", ErrInvalid, maxStaleness)
	}
	ns, view, err := c.counterNamespace(ctx, namespace, counter)
	if err != nil {
		return nil, err
	}
	stored := view.stored(counter)
	v := &Value{Namespace: ns.Name, Counter: counter, Type: ns.Type, Model: ns.Model, maxStaleness: maxStaleness}
	m, ok := counterModelOf(ns.Model)
	if !ok {
		return nil, fmt.Errorf("%w: namespace %q uses model %q, which this release cannot serve", ErrInvalid, ns.Name, ns.Model)
	}
	if err := m.read(ctx, c, ns, stored, v); err != nil {
		return nil, err
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

// Clear resets a counter to zero (see ClearAt).
func (c *Client) Clear(ctx context.Context, namespace, counter, requestID string) error {
	_, err := c.ClearAt(ctx, namespace, counter, requestID)
	return err
}

// ClearAt resets a counter to zero and says when the reset takes effect.
// Only models that can do it safely offer it: events (every increment
// with an event time at or before the clear's time stops counting;
// repeating the clear with the same request id is harmless) and cas (a
// compare-and-set to zero), both at once; sharded, actor and native
// counters have no clear in place, and their clear is a DeleteCounter: it
// takes effect Config.DeleteDelay from now, erasing what was counted
// before then. Ledgers return ErrWrongModel. requestID may be empty for a
// clear at the current time.
func (c *Client) ClearAt(ctx context.Context, namespace, counter, requestID string) (time.Time, error) {
	ns, view, err := c.counterNamespace(ctx, namespace, counter)
	if err != nil {
		return time.Time{}, err
	}
	if len(requestID) > MaxNameLen {
		return time.Time{}, fmt.Errorf("%w: request id is longer than %d bytes", ErrInvalid, MaxNameLen)
	}
	m, ok := counterModelOf(ns.Model)
	if !ok {
		return time.Time{}, noClear(ns)
	}
	return m.clear(ctx, c, ns, counterNames{user: counter, stored: view.stored(counter)}, requestID)
}

// counterNames are a counter's name and the name of its current
// generation.
type counterNames struct{ user, stored string }

// ApplyAndGet applies an update and then reads the counter. The read is a
// separate operation: other updates may land between the two.
func (c *Client) ApplyAndGet(ctx context.Context, u Update) (*Value, error) {
	if err := c.Apply(ctx, u); err != nil {
		return nil, err
	}
	return c.Get(ctx, u.Namespace, u.Counter)
}

// GC folds the final shards of a sharded counter into its tally, or rolls
// up an events counter (Folded is then the number of events folded). A
// collection that cannot reach every replica is reported as Skipped, not
// as an error. Other models have nothing to collect.
func (c *Client) GC(ctx context.Context, namespace, counter string) (GCResult, error) {
	ns, view, err := c.counterNamespace(ctx, namespace, counter)
	if err != nil {
		return GCResult{}, err
	}
	key := driver.CounterKey{Namespace: ns.Name, Counter: view.stored(counter)}
	res := GCResult{Key: key}
	if m, ok := counterModelOf(ns.Model); ok {
		res = m.collect(ctx, c, ns, key)
	}
	res.Key.Counter = counter
	return res, nil
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
	if namespace == "" {
		noteSweep(c, &c.gcComplete, out, gcSkipped, nil)
		c.purgeShardTombstones(ctx)
	}
	rolled, err := c.rollupAll(ctx, namespace)
	if namespace == "" {
		noteSweep(c, &c.rollupComplete, rolled, rollupSkipped, err)
	}
	for _, r := range rolled {
		out = append(out, rollupResult(r))
	}
	for i := range out {
		out[i].Key.Counter = userName(out[i].Key.Counter)
	}
	return out, err
}
