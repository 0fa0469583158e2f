package abacus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/events"
)

// EventsOptions configure a namespace of model events: bucket width,
// accept window, rollup delay and future limit (see the fields). Zero
// fields take the documented defaults; a created namespace reports them
// filled in. Every process must use the same values, so they are stored
// with the namespace and cannot change. They are the events engine's own
// options, under the name users spell them by.
type EventsOptions = events.Options

func (c *Client) eventsTarget(ns *Namespace, counter string) events.Target {
	return events.Target{
		Namespace: ns.Name, Counter: counter, Options: *ns.Events,
		ReadConsistency: ns.ReadConsistency, WriteConsistency: ns.WriteConsistency,
	}
}

// rollupAll rolls up every counter of the events model (of one namespace
// if ns is set). A counter whose namespace cannot be read is reported as
// skipped; one whose namespace is gone or of another model is passed over.
func (c *Client) rollupAll(ctx context.Context, ns string) ([]events.RollupResult, error) {
	keys, err := c.cfg.Driver.ListEventCounters(ctx, &driver.ListCountersParams{Namespace: ns})
	if err != nil {
		return nil, err
	}
	out := make([]events.RollupResult, 0, len(keys))
	for _, k := range keys {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		ns, err := c.Namespace(ctx, k.Namespace)
		switch {
		case errors.Is(err, ErrNamespaceNotFound):
		case err != nil:
			out = append(out, events.RollupResult{Key: k, Skipped: true, Err: err})
		case ns.Model == ModelEvents:
			out = append(out, c.events.Rollup(ctx, c.eventsTarget(ns, k.Counter)))
		}
	}
	return out, nil
}

func rollupResult(r events.RollupResult) GCResult {
	return GCResult{Key: r.Key, Folded: r.Events, Skipped: r.Skipped, Err: r.Err}
}

// eventsModel counts each increment once from any process: an increment
// is an event keyed by its request id, rolled up into a total after its
// accept window (see docs/architecture.md).
type eventsModel struct{}

func (eventsModel) defaultType() string { return TypeSum }

func (eventsModel) checkNamespace(nc NamespaceConfig) error {
	if err := sumsOnly(nc); err != nil {
		return err
	}
	if err := nc.eventsOptions().WithDefaults().Validate(); err != nil {
		return fmt.Errorf("%w: events options: %v", ErrInvalid, err)
	}
	return nil
}

func (eventsModel) storedOptions(nc NamespaceConfig) map[string]string {
	return nc.eventsOptions().Stored()
}

func (eventsModel) loadOptions(ns *Namespace, stored map[string]string) error {
	o, err := events.OptionsFromStored(stored)
	if err != nil {
		return fmt.Errorf("namespace %q has corrupt events options: %w", ns.Name, err)
	}
	ns.Events = &o
	return nil
}

func (eventsModel) prepare(c *Client, p prepared, u Update) (prepared, error) {
	if err := numbersOnly(p.ns, u); err != nil {
		return p, err
	}
	var err error
	p.events = c.eventsTarget(p.ns, u.Counter)
	p.event, err = c.events.Event(p.events, events.Request{ID: u.RequestID, Time: u.Time, Delta: u.Delta})
	return p, publicError(err)
}

func (eventsModel) apply(ctx context.Context, c *Client, p prepared, _ Update) error {
	o, err := c.events.Write(ctx, p.events, p.event)
	if p.result != nil {
		p.result.Replayed = o.Replayed
	}
	return publicError(err)
}

func (eventsModel) read(ctx context.Context, c *Client, ns *Namespace, counter string, v *Value) error {
	t := c.eventsTarget(ns, counter)
	var r *events.Reading
	var err error
	if v.maxStaleness > 0 {
		r, err = c.events.ReadWithin(ctx, t, v.maxStaleness)
	} else {
		r, err = c.events.Read(ctx, t)
	}
	if err != nil {
		return publicError(err)
	}
	v.Value, v.Empty, v.Events, v.Cached = r.Value, r.Empty, r.Events, r.Cached
	v.AsOf = r.AsOf.UTC()
	if r.Epoch != 0 {
		v.RolledUpTo = time.UnixMicro(r.Epoch).UTC()
	}
	v.setTotal(r.Total)
	return nil
}

func (eventsModel) clear(ctx context.Context, c *Client, ns *Namespace, counter counterNames, requestID string) (time.Time, error) {
	epoch, err := c.events.Clear(ctx, c.eventsTarget(ns, counter.stored), requestID, time.Time{})
	if err != nil {
		return time.Time{}, publicError(err)
	}
	return time.UnixMicro(epoch).UTC(), nil
}

func (eventsModel) collect(ctx context.Context, c *Client, ns *Namespace, key driver.CounterKey) GCResult {
	return rollupResult(c.events.Rollup(ctx, c.eventsTarget(ns, key.Counter)))
}

func (eventsModel) list(ctx context.Context, d driver.Driver, p *driver.ListCountersParams) ([]driver.CounterKey, error) {
	return d.ListEventCounters(ctx, p)
}
