package embedded

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/abacusdb/abacus/driver"
)

// The actor, native, cas and ledger tables never delete a counter's keys,
// so a counter is listed when any key of it is there. Their keys begin
// with the namespace and counter components; listKeys reads the first key
// of each counter and seeks past the rest.

// ListActorCounters implements driver.Actors.
func (d *Driver) ListActorCounters(ctx context.Context, p *driver.ListCountersParams) ([]driver.CounterKey, error) {
	return d.listKeys(ctx, "list actor counters", tableActorValues, p.Namespace)
}

// ListNativeCounters implements driver.NativeCounters.
func (d *Driver) ListNativeCounters(ctx context.Context, p *driver.ListCountersParams) ([]driver.CounterKey, error) {
	return d.listKeys(ctx, "list native counters", tableNativeCounters, p.Namespace)
}

// ListCASCounters implements driver.CASCounters.
func (d *Driver) ListCASCounters(ctx context.Context, p *driver.ListCountersParams) ([]driver.CounterKey, error) {
	return d.listKeys(ctx, "list cas counters", tableCASCounters, p.Namespace)
}

// ListLedgers implements driver.Ledgers.
func (d *Driver) ListLedgers(ctx context.Context, p *driver.ListCountersParams) ([]driver.CounterKey, error) {
	return d.listKeys(ctx, "list ledgers", tableLedgers, p.Namespace)
}

func (d *Driver) listKeys(ctx context.Context, op string, table byte, ns string) ([]driver.CounterKey, error) {
	return readLocked(ctx, d, op, func() (_ []driver.CounterKey, err error) {
		it, err := d.iterPrefix(namespacePrefix(table, ns))
		if err != nil {
			return nil, err
		}
		defer closeIter(it, &err, "")
		out := []driver.CounterKey{}
		for valid := it.First(); valid; {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			_, parts, err := decodeKey(it.Key())
			if err != nil {
				return nil, fmt.Errorf("key %x: %w", it.Key(), err)
			}
			out = append(out, driver.CounterKey{Namespace: parts[0], Counter: parts[1]})
			valid = it.SeekGE(prefixEnd(counterKey(table, parts[0], parts[1], 0)))
		}
		if err := it.Error(); err != nil {
			return nil, err
		}
		// Length-prefixed components sort by length first.
		slices.SortFunc(out, func(a, b driver.CounterKey) int {
			return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Counter, b.Counter))
		})
		return out, nil
	}, "")
}
