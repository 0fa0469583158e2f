package abacus

import (
	"context"

	"github.com/abacusdb/abacus/driver"
)

// Counters returns the names of the counters stored in the namespace (its
// ledgers, in a ledger namespace), sorted. A counter is there once any
// write of it reached the store, including one whose outcome was reported
// unknown. The store scans every counter of the model to answer
// (docs/api.md), so this is for consoles and scripts, not for each request.
func (c *Client) Counters(ctx context.Context, namespace string) ([]string, error) {
	ns, err := c.Namespace(ctx, namespace)
	if err != nil {
		return nil, err
	}
	keys, err := models[ns.Model].list(ctx, c.cfg.Driver, &driver.ListCountersParams{Namespace: ns.Name})
	if err != nil {
		return nil, publicError(err)
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.Counter
	}
	return out, nil
}
