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

// Namespaces and queues are the store's two kinds of named records: one
// value per name, created once, never changed, read one at a time or all
// together. The helpers here are that lifecycle; namespaces.go and
// queue.go supply the keys and encodings.

// createRecord stores value under key unless a record is there already
// (driver.ErrExists). Pebble has no conditional put: the caller's lock
// serialises creates in this process, which is enough to make
// check-then-set atomic because the directory lock keeps every other
// process out.
func (d *Driver) createRecord(ctx context.Context, kind, name string, key []byte, encode func() ([]byte, error), lock func() (unlock func())) error {
	op := "create " + kind
	if err := d.acquire(ctx, op); err != nil {
		return err
	}
	defer d.mu.RUnlock()
	value, err := encode()
	if err != nil {
		return fmt.Errorf("embedded: %s %q: %w", op, name, err)
	}
	defer lock()()
	_, closer, err := d.db.Get(key)
	switch {
	case err == nil:
		_ = closer.Close()
		return fmt.Errorf("embedded: %s %q: %w", op, name, driver.ErrExists)
	case !errors.Is(err, pebble.ErrNotFound):
		return fmt.Errorf("embedded: %s %q: %w", op, name, err)
	}
	if err := d.db.Set(key, value, d.writeOpts); err != nil {
		return fmt.Errorf("embedded: %s %q: %w", op, name, err)
	}
	return nil
}

// getRecord reads the named record, or driver.ErrNotFound. A record that
// names another than its key is corrupt.
func getRecord[T any](ctx context.Context, d *Driver, kind, name string, key []byte, decode func([]byte) (*T, error), nameOf func(*T) string) (*T, error) {
	op := "get " + kind
	if err := d.acquire(ctx, op); err != nil {
		return nil, err
	}
	defer d.mu.RUnlock()
	raw, closer, err := d.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, fmt.Errorf("embedded: %s %q: %w", kind, name, driver.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("embedded: %s %q: %w", op, name, err)
	}
	defer closer.Close()
	t, err := decode(raw)
	if err == nil && nameOf(t) != name {
		err = fmt.Errorf("%w: record names %q", errCorrupt, nameOf(t))
	}
	if err != nil {
		return nil, fmt.Errorf("embedded: %s %q: %w", op, name, err)
	}
	return t, nil
}

// listRecords reads every record of a table, sorted by name. keyName
// decodes the name a key holds; a record that names another is corrupt.
func listRecords[T any](ctx context.Context, d *Driver, op string, table byte, keyName func([]byte) (string, error), decode func([]byte) (*T, error), nameOf func(*T) string) (_ []*T, err error) {
	if err := d.acquire(ctx, op); err != nil {
		return nil, err
	}
	defer d.mu.RUnlock()
	lo := []byte{table}
	it, err := d.iterPrefix(lo)
	if err != nil {
		return nil, fmt.Errorf("embedded: %s: %w", op, err)
	}
	defer closeIter(it, &err, op)
	out := []*T{}
	for valid := it.First(); valid; valid = it.Next() {
		name, err := keyName(it.Key())
		if err != nil {
			return nil, fmt.Errorf("embedded: %s: key %x: %w", op, it.Key(), err)
		}
		raw, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("embedded: %s: %q: %w", op, name, err)
		}
		t, err := decode(raw)
		if err == nil && nameOf(t) != name {
			err = fmt.Errorf("%w: record names %q", errCorrupt, nameOf(t))
		}
		if err != nil {
			return nil, fmt.Errorf("embedded: %s: %q: %w", op, name, err)
		}
		out = append(out, t)
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("embedded: %s: %w", op, err)
	}
	// Length-prefixed keys sort by name length first.
	slices.SortFunc(out, func(a, b *T) int { return cmp.Compare(nameOf(a), nameOf(b)) })
	return out, nil
}
