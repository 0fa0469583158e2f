package abacus

import (
	"context"
	"fmt"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/actor"
)

// actorModel keeps one absolute value per writer (actor), versioned; a
// read sums them. Sets, not increments, change it.
type actorModel struct{ plainSums }

func (actorModel) prepare(_ *Client, p prepared, _ Update) (prepared, error) {
	return p, fmt.Errorf("%w: namespace %q holds actor counters, which take a set (actor, version, value), not an increment", ErrWrongModel, p.ns.Name)
}

// apply is never reached: prepare refuses every increment.
func (actorModel) apply(context.Context, *Client, prepared, Update) error { return nil }

func (actorModel) read(ctx context.Context, c *Client, ns *Namespace, counter string, v *Value) error {
	vals, err := c.cfg.Driver.ReadActorValues(ctx, &driver.ReadActorValuesParams{
		Namespace: ns.Name, Counter: counter, Consistency: ns.ReadConsistency,
	})
	if err != nil {
		return publicError(err)
	}
	v.setTotal(actor.Sum(vals))
	v.Empty, v.Actors = len(vals) == 0, len(vals)
	return nil
}

// clear is a delete: actors' values cannot be taken back in place.
func (actorModel) clear(ctx context.Context, c *Client, ns *Namespace, counter counterNames, _ string) (time.Time, error) {
	return c.cut(ctx, ns, driver.Cut{Counter: counter.user})
}

// ActorSet sets one actor's part of a counter of model actor.
type ActorSet struct {
	// Namespace must be of model actor.
	Namespace string
	Counter   string
	// Actor names the writer whose part this is (1 to 256 bytes of UTF-8).
	Actor string
	// Version orders the actor's sets: the highest version wins whatever
	// order sets arrive in. Positive. One version must carry one value.
	Version int64
	// Value is the actor's absolute value.
	Value int64
}

// Set stores an actor's value of a counter of model actor. It is
// idempotent: sending the same set again, from anywhere, changes nothing.
//
// It first reads the counter (at the namespace's read consistency) and
// refuses, writing nothing, a different value at a version already stored
// (ErrVersionConflict) and a set that would take the sum outside the int64
// range (ErrOverflow). The read sees what reached the replicas it asks:
// two servers setting one version to different values at the same moment
// can both succeed, and the greater value then wins on every replica.
func (c *Client) Set(ctx context.Context, s ActorSet) error {
	ns, view, err := c.counterNamespace(ctx, s.Namespace, s.Counter)
	if err != nil {
		return err
	}
	s.Counter = view.stored(s.Counter)
	if ns.Model != ModelActor {
		return fmt.Errorf("%w: namespace %q is of model %q; only actor namespaces take a set (use Apply for increments)", ErrWrongModel, ns.Name, ns.Model)
	}
	if err := actor.Validate(s.Actor, s.Version); err != nil {
		return publicError(err)
	}
	vals, err := c.cfg.Driver.ReadActorValues(ctx, &driver.ReadActorValuesParams{
		Namespace: ns.Name, Counter: s.Counter, Consistency: ns.ReadConsistency,
	})
	if err != nil {
		return publicError(err)
	}
	if err := actor.Check(vals, s.Actor, s.Version, s.Value); err != nil {
		return publicError(err)
	}
	err = c.cfg.Driver.SetActorValue(ctx, &driver.SetActorValueParams{
		Namespace: ns.Name, Counter: s.Counter, Actor: s.Actor, Value: s.Value, Version: s.Version,
		Consistency: ns.WriteConsistency,
	})
	return publicError(err)
}

func (actorModel) list(ctx context.Context, d driver.Driver, p *driver.ListCountersParams) ([]driver.CounterKey, error) {
	return d.ListActorCounters(ctx, p)
}
