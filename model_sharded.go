package abacus

import (
	"context"
	"fmt"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/crdt"
	"github.com/abacusdb/abacus/internal/sharded"
)

// shardedModel is the default model: one blind shard write per process,
// group-committed, with the shards folded into a tally by GC (see
// docs/architecture.md).
type shardedModel struct{ noOptions }

func (shardedModel) defaultType() string { return TypeSum }

func (shardedModel) checkNamespace(nc NamespaceConfig) error {
	if _, err := crdt.ParseKind(nc.Type); err != nil {
		return fmt.Errorf("%w: type %q: want sum, max, min or distinct", ErrInvalid, nc.Type)
	}
	return nil
}

func (shardedModel) prepare(_ *Client, p prepared, u Update) (prepared, error) {
	var err error
	if p.sharded, err = shardedTarget(p.ns, u.Counter); err != nil {
		return p, err
	}
	p.op, err = opFor(p.ns, u)
	return p, err
}

// apply returns the engine's errors as they are: they are the Client's.
func (shardedModel) apply(ctx context.Context, c *Client, p prepared, u Update) error {
	return c.sharded.Apply(ctx, p.sharded, p.op, u.RequestID)
}

func (shardedModel) read(ctx context.Context, c *Client, ns *Namespace, counter string, v *Value) error {
	t, err := shardedTarget(ns, counter)
	if err != nil {
		return err
	}
	r, err := c.sharded.Read(ctx, t)
	if err != nil {
		return publicError(err)
	}
	v.Empty, v.Shards = r.Empty, r.Shards
	v.setTotal(r.Total)
	return nil
}

// clear is a delete: a mutator's shard holds everything it counted since
// it started, so only a new generation starts from zero.
func (shardedModel) clear(ctx context.Context, c *Client, ns *Namespace, counter counterNames, _ string) (time.Time, error) {
	return c.cut(ctx, ns, driver.Cut{Counter: counter.user})
}

func (shardedModel) collect(ctx context.Context, c *Client, _ *Namespace, key driver.CounterKey) GCResult {
	return c.sharded.Collect(ctx, key)
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

func (shardedModel) list(ctx context.Context, d driver.Driver, p *driver.ListCountersParams) ([]driver.CounterKey, error) {
	return d.ListCounters(ctx, p)
}
