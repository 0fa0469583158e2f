package abacus

import (
	"context"
	"slices"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/lifecycle"
)

// Counters returns the names of the counters stored in the namespace (its
// ledgers, in a ledger namespace), sorted. A counter is there once any
// write of it reached the store, including one whose outcome was reported
// unknown, and leaves when a delete of it takes effect (or its TTL period
// ends) until it is written again. The store scans every counter of the
// model to answer (docs/api.md), so this is for consoles and scripts, not
// for each request.
func (c *Client) Counters(ctx context.Context, namespace string) ([]string, error) {
	ns, view, err := c.live(ctx, namespaceOrDefault(namespace))
	if err != nil {
		return nil, err
	}
	keys, err := models[ns.Model].list(ctx, c.cfg.Driver, &driver.ListCountersParams{Namespace: ns.Name})
	if err != nil {
		return nil, publicError(err)
	}
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		counter, gen, ok := lifecycle.SplitStored(k.Counter)
		if ok && gen == view.generation(counter) {
			out = append(out, counter)
		}
	}
	// Stored names sort by the user's name only up to a separator
	// ("a" U+FFFF… after "a0"); each name is there once, at its current
	// generation.
	slices.Sort(out)
	return out, nil
}

func namespaceOrDefault(name string) string {
	if name == "" {
		return DefaultNamespace
	}
	return name
}
