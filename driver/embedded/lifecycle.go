package embedded

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/abacusdb/abacus/driver"
	"github.com/cockroachdb/pebble/v2"
)

// tableCuts holds one key per cut: namespace, counter ("" for the whole
// namespace) and the cut's time as 8 big-endian bytes. The value is one
// byte of flags.
const tableCuts byte = 0x50

func init() { componentsPerTable[tableCuts] = 3 }

// cutDeletesNamespace is the flag of a namespace-deleting cut.
const cutDeletesNamespace byte = 1

func cutKey(ns string, c driver.Cut) []byte {
	var at [8]byte
	binary.BigEndian.PutUint64(at[:], uint64(c.At))
	return appendComponent(counterKey(tableCuts, ns, c.Counter, 9), string(at[:]))
}

// AddCut implements driver.Lifecycle.
func (d *Driver) AddCut(ctx context.Context, p *driver.AddCutParams) error {
	if p.Cut.At <= 0 {
		return fmt.Errorf("embedded: add cut: time %d is not positive", p.Cut.At)
	}
	flags := byte(0)
	if p.Cut.DeletesNamespace {
		if p.Cut.Counter != "" {
			return fmt.Errorf("embedded: add cut: only a namespace-wide cut deletes the namespace")
		}
		flags = cutDeletesNamespace
	}
	return d.writeBatch(ctx, "add cut", func(b *pebble.Batch) error {
		return b.Set(cutKey(p.Namespace, p.Cut), []byte{flags}, nil)
	}, " of %s/%s", p.Namespace, p.Cut.Counter)
}

// ReadCuts implements driver.Lifecycle.
func (d *Driver) ReadCuts(ctx context.Context, p *driver.ReadCutsParams) ([]driver.Cut, error) {
	return readLocked(ctx, d, "read cuts", func() ([]driver.Cut, error) {
		var out []driver.Cut
		err := d.scanPrefix(namespacePrefix(tableCuts, p.Namespace), nil, func(key, value []byte) error {
			c, err := decodeCut(key, value)
			if err != nil {
				return err
			}
			out = append(out, c)
			return nil
		})
		return out, err
	}, " of %s", p.Namespace)
}

// decodeCut reads one stored cut; both parts come from disk.
func decodeCut(key, value []byte) (driver.Cut, error) {
	_, parts, err := decodeKey(key)
	if err != nil {
		return driver.Cut{}, err
	}
	if len(parts[2]) != 8 {
		return driver.Cut{}, fmt.Errorf("%w: cut time of %d bytes", errCorrupt, len(parts[2]))
	}
	if len(value) != 1 || value[0]&^cutDeletesNamespace != 0 {
		return driver.Cut{}, fmt.Errorf("%w: cut flags %x", errCorrupt, value)
	}
	c := driver.Cut{Counter: parts[1], At: int64(binary.BigEndian.Uint64([]byte(parts[2]))),
		DeletesNamespace: value[0] == cutDeletesNamespace}
	if c.At <= 0 || c.DeletesNamespace && c.Counter != "" {
		return driver.Cut{}, fmt.Errorf("%w: cut %+v", errCorrupt, c)
	}
	return c, nil
}

// DropCuts implements driver.Lifecycle.
func (d *Driver) DropCuts(ctx context.Context, p *driver.DropCutsParams) error {
	return d.writeBatch(ctx, "drop cuts", func(b *pebble.Batch) error {
		for _, c := range p.Cuts {
			if err := b.Delete(cutKey(p.Namespace, c), nil); err != nil {
				return err
			}
		}
		return nil
	}, " of %s", p.Namespace)
}

// modelTables names the tables that hold a counter of each model, each
// keyed by namespace and counter first.
var modelTables = map[string][]byte{
	"sharded": {tableShards, tableTally},
	"events":  {tableEvents, tableEventCounters, tableEventSeals},
	"actor":   {tableActorValues},
	"native":  {tableNativeCounters},
	"cas":     {tableCASCounters},
	"ledger":  {tableLedgers, tableLedgerClaims, tableLedgerEntries, tableLedgerRights, tableLedgerRightsDC},
}

// PurgeCounter implements driver.Lifecycle with one range delete per table.
func (d *Driver) PurgeCounter(ctx context.Context, p *driver.PurgeCounterParams) error {
	tables, ok := modelTables[p.Model]
	if !ok {
		return fmt.Errorf("embedded: purge counter: unknown model %q", p.Model)
	}
	return d.writeBatch(ctx, "purge counter", func(b *pebble.Batch) error {
		for _, t := range tables {
			prefix := counterKey(t, p.Namespace, p.Counter, 0)
			if err := b.DeleteRange(prefix, prefixEnd(prefix), nil); err != nil {
				return err
			}
		}
		return nil
	}, " %s/%s", p.Namespace, p.Counter)
}

// DeleteNamespace implements driver.Lifecycle: the check and the delete
// under the namespaces' mutex, as CreateNamespace's.
func (d *Driver) DeleteNamespace(ctx context.Context, p *driver.DeleteNamespaceParams) error {
	d.nsMu.Lock()
	defer d.nsMu.Unlock()
	ns, err := d.GetNamespace(ctx, &driver.GetNamespaceParams{Name: p.Name})
	if err != nil {
		return err
	}
	if !ns.CreatedAt.Equal(p.CreatedAt) {
		return fmt.Errorf("embedded: namespace %q made at %v, not %v: %w", p.Name, ns.CreatedAt, p.CreatedAt, driver.ErrNotFound)
	}
	return d.writeBatch(ctx, "delete namespace", func(b *pebble.Batch) error {
		return b.Delete(namespaceKey(p.Name), nil)
	}, " %s", p.Name)
}
