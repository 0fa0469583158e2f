package embedded

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/abacusdb/abacus/driver"
	"github.com/cockroachdb/pebble/v2"
)

// CreateNamespace implements driver.Namespaces.
func (d *Driver) CreateNamespace(ctx context.Context, p *driver.CreateNamespaceParams) error {
	if err := d.acquire(ctx, "create namespace"); err != nil {
		return err
	}
	defer d.mu.RUnlock()

	ns := &p.Namespace
	value, err := encodeNamespace(ns)
	if err != nil {
		return fmt.Errorf("embedded: create namespace %q: %w", ns.Name, err)
	}
	key := namespaceKey(ns.Name)

	// Pebble has no conditional put. Serialising creates in this process is
	// enough to make check-then-set atomic, because the directory lock keeps
	// every other process out.
	d.nsMu.Lock()
	defer d.nsMu.Unlock()
	_, closer, err := d.db.Get(key)
	switch {
	case err == nil:
		_ = closer.Close()
		return fmt.Errorf("embedded: create namespace %q: %w", ns.Name, driver.ErrExists)
	case !errors.Is(err, pebble.ErrNotFound):
		return fmt.Errorf("embedded: create namespace %q: %w", ns.Name, err)
	}
	if err := d.db.Set(key, value, d.writeOpts); err != nil {
		return fmt.Errorf("embedded: create namespace %q: %w", ns.Name, err)
	}
	return nil
}

// GetNamespace implements driver.Namespaces.
func (d *Driver) GetNamespace(ctx context.Context, p *driver.GetNamespaceParams) (*driver.Namespace, error) {
	if err := d.acquire(ctx, "get namespace"); err != nil {
		return nil, err
	}
	defer d.mu.RUnlock()

	raw, closer, err := d.db.Get(namespaceKey(p.Name))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, fmt.Errorf("embedded: namespace %q: %w", p.Name, driver.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("embedded: get namespace %q: %w", p.Name, err)
	}
	defer closer.Close()
	ns, err := decodeNamespace(raw)
	if err != nil {
		return nil, fmt.Errorf("embedded: get namespace %q: %w", p.Name, err)
	}
	if ns.Name != p.Name {
		return nil, fmt.Errorf("embedded: get namespace %q: %w: record names %q", p.Name, errCorrupt, ns.Name)
	}
	return ns, nil
}

// ListNamespaces implements driver.Namespaces.
func (d *Driver) ListNamespaces(ctx context.Context, p *driver.ListNamespacesParams) (_ []*driver.Namespace, err error) {
	if err := d.acquire(ctx, "list namespaces"); err != nil {
		return nil, err
	}
	defer d.mu.RUnlock()

	lo := []byte{tableNamespaces}
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return nil, fmt.Errorf("embedded: list namespaces: %w", err)
	}
	defer func() {
		if cerr := it.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("embedded: list namespaces: %w", cerr)
		}
	}()

	out := []*driver.Namespace{}
	for valid := it.First(); valid; valid = it.Next() {
		_, parts, err := decodeKey(it.Key())
		if err != nil {
			return nil, fmt.Errorf("embedded: list namespaces: key %x: %w", it.Key(), err)
		}
		raw, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("embedded: list namespaces: %q: %w", parts[0], err)
		}
		ns, err := decodeNamespace(raw)
		if err != nil {
			return nil, fmt.Errorf("embedded: list namespaces: %q: %w", parts[0], err)
		}
		if ns.Name != parts[0] {
			return nil, fmt.Errorf("embedded: list namespaces: %q: %w: record names %q", parts[0], errCorrupt, ns.Name)
		}
		out = append(out, ns)
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("embedded: list namespaces: %w", err)
	}
	// Length-prefixed keys sort by name length first.
	slices.SortFunc(out, func(a, b *driver.Namespace) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}
