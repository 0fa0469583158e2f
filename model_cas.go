package abacus

import (
	"context"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/cas"
)

// casModel is the compare-and-set baseline: linearizable, one Paxos round
// per write, and a retry may count twice.
type casModel struct {
	plainSums
	numbersAsGiven
}

func (casModel) apply(ctx context.Context, c *Client, p prepared, u Update) error {
	_, err := cas.Add(ctx, c.cfg.Driver, casTarget(p.ns, u.Counter), u.Delta, cas.Options{})
	return publicError(err)
}

func (casModel) read(ctx context.Context, c *Client, ns *Namespace, counter string, v *Value) error {
	// Serial: the read a user sees of a linearizable counter is
	// linearizable too.
	cv, err := c.cfg.Driver.ReadCAS(ctx, &driver.ReadCASParams{
		Namespace: ns.Name, Counter: counter, Consistency: ns.ReadConsistency, Serial: true,
	})
	if err != nil {
		return publicError(err)
	}
	v.Value, v.Empty = cv.Value, !cv.Exists
	return nil
}

func (casModel) clear(ctx context.Context, c *Client, ns *Namespace, counter counterNames, _ string) (time.Time, error) {
	_, err := cas.Set(ctx, c.cfg.Driver, casTarget(ns, counter.stored), 0, cas.Options{})
	return c.cfg.Clock.Now().UTC(), publicError(err)
}

func casTarget(ns *Namespace, counter string) cas.Target {
	return cas.Target{Namespace: ns.Name, Counter: counter, ReadConsistency: ns.ReadConsistency, WriteConsistency: ns.WriteConsistency}
}

func (casModel) list(ctx context.Context, d driver.Driver, p *driver.ListCountersParams) ([]driver.CounterKey, error) {
	return d.ListCASCounters(ctx, p)
}
