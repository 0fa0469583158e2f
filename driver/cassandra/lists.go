package cassandra

import (
	"context"

	"github.com/abacusdb/abacus/driver"
)

// The counter models' tables are partitioned by (ns, counter) — (ns,
// ledger) for ledgers — so a listing is a SELECT DISTINCT of the partition
// keys: a scan of every partition of the table, filtered here by
// namespace. That is the cost the GC sweep pays already; the server lists
// page by page from it.

// ListActorCounters implements driver.Actors.
func (d *Driver) ListActorCounters(ctx context.Context, p *driver.ListCountersParams) ([]driver.CounterKey, error) {
	return d.listPartitionKeys(ctx, "list actor counters", "SELECT DISTINCT ns, counter FROM "+d.cfg.Keyspace+".actor_values", p.Namespace)
}

// ListNativeCounters implements driver.NativeCounters.
func (d *Driver) ListNativeCounters(ctx context.Context, p *driver.ListCountersParams) ([]driver.CounterKey, error) {
	return d.listPartitionKeys(ctx, "list native counters", "SELECT DISTINCT ns, counter FROM "+d.cfg.Keyspace+".native_counters", p.Namespace)
}

// ListCASCounters implements driver.CASCounters.
func (d *Driver) ListCASCounters(ctx context.Context, p *driver.ListCountersParams) ([]driver.CounterKey, error) {
	return d.listPartitionKeys(ctx, "list cas counters", "SELECT DISTINCT ns, counter FROM "+d.cfg.Keyspace+".cas_counters", p.Namespace)
}

// ListLedgers implements driver.Ledgers.
func (d *Driver) ListLedgers(ctx context.Context, p *driver.ListCountersParams) ([]driver.CounterKey, error) {
	return d.listPartitionKeys(ctx, "list ledgers", "SELECT DISTINCT ns, ledger FROM "+d.cfg.Keyspace+".ledgers", p.Namespace)
}
