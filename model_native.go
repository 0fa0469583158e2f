package abacus

import (
	"context"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// nativeModel is the store's own counter (a Cassandra counter column): the
// fastest, and a retry may count twice.
type nativeModel struct {
	plainSums
	numbersAsGiven
}

func (nativeModel) apply(ctx context.Context, c *Client, p prepared, u Update) error {
	err := c.cfg.Driver.AddNative(ctx, &driver.AddNativeParams{
		Namespace: p.ns.Name, Counter: u.Counter, Delta: u.Delta, Consistency: p.ns.WriteConsistency,
	})
	return publicError(err)
}

func (nativeModel) read(ctx context.Context, c *Client, ns *Namespace, counter string, v *Value) error {
	n, err := c.cfg.Driver.ReadNative(ctx, &driver.ReadNativeParams{
		Namespace: ns.Name, Counter: counter, Consistency: ns.ReadConsistency,
	})
	if err != nil {
		return publicError(err)
	}
	// A native counter cannot tell "never written" from "sums to 0".
	v.Value, v.Empty = n, n == 0
	return nil
}

// clear is a delete: a deleted Cassandra counter cannot be written again,
// so the counter moves to a new generation instead.
func (nativeModel) clear(ctx context.Context, c *Client, ns *Namespace, counter counterNames, _ string) (time.Time, error) {
	return c.cut(ctx, ns, driver.Cut{Counter: counter.user})
}

func (nativeModel) list(ctx context.Context, d driver.Driver, p *driver.ListCountersParams) ([]driver.CounterKey, error) {
	return d.ListNativeCounters(ctx, p)
}
