package cassandra

import (
	"context"
	"fmt"
	"strings"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// Table definitions. They use only CQL understood by Cassandra 2.1 through
// 5.0 and ScyllaDB, and IF NOT EXISTS so creating them again is harmless.
// %[1]s is the keyspace.
const (
	namespacesDDL = `CREATE TABLE IF NOT EXISTS %[1]s.namespaces (
	name text PRIMARY KEY,
	model text,
	type text,
	read_cl text,
	write_cl text,
	retention_ms bigint,
	options map<text, text>,
	created_at timestamp
)`

	// One partition per counter: a clustering row per mutator's shard and
	// the tally in static columns, so a fold (deletes plus the new tally)
	// is a single-partition batch, applied atomically on each replica.
	shardsDDL = `CREATE TABLE IF NOT EXISTS %[1]s.shards (
	ns text,
	counter text,
	shard text,
	state blob,
	expires_at bigint,
	tally blob static,
	tally_ts bigint static,
	PRIMARY KEY ((ns, counter), shard)
)`
)

// Schema returns the CQL that creates the keyspace and tables for cfg, as
// Open would run it; for operators who create the schema themselves and use
// SchemaExisting.
func Schema(cfg Config) ([]string, error) {
	cfg = cfg.withDefaults()
	if len(cfg.Hosts) == 0 {
		cfg.Hosts = []string{"unused"} // hosts play no part in the schema
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return schemaStatements(cfg), nil
}

// addColumnDDL adds a column to a table that an earlier release made
// without it (keyspace, table, column, type). Cassandra before 5.0 has no
// ADD IF NOT EXISTS, so on a table that has the column it fails, and
// createSchema takes that failure as done (columnExists). Operators who
// run Schema's statements themselves may ignore that error too.
const addColumnDDL = "ALTER TABLE %s.%s ADD %s %s"

// columnExists reports whether err is Cassandra refusing an ADD of a
// column the table already has: "Invalid column name x because it
// conflicts with an existing column" (2.1 to 3.11), "Column with name 'x'
// already exists" (4.0 on).
func columnExists(stmt string, err error) bool {
	if !strings.HasPrefix(stmt, "ALTER TABLE ") {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "conflicts with an existing column") || strings.Contains(msg, "already exists")
}

func schemaStatements(cfg Config) []string {
	return append([]string{
		fmt.Sprintf("CREATE KEYSPACE IF NOT EXISTS %s WITH replication = %s",
			cfg.Keyspace, cfg.Replication.cql()),
		fmt.Sprintf(namespacesDDL, cfg.Keyspace),
		fmt.Sprintf(shardsDDL, cfg.Keyspace),
		fmt.Sprintf(ledgersDDL, cfg.Keyspace),
		fmt.Sprintf(ledgerClaimsDDL, cfg.Keyspace),
		fmt.Sprintf(apiKeysDDL, cfg.Keyspace),
		fmt.Sprintf(counterCutsDDL, cfg.Keyspace),
	}, append(append(append(queueSchemaStatements(cfg), eventSchemaStatements(cfg)...), counterSchemaStatements(cfg.Keyspace)...),
		fmt.Sprintf(queuePausesDDL, cfg.Keyspace), fmt.Sprintf(ledgerEntriesDDL, cfg.Keyspace), fmt.Sprintf(ledgerEntryDaysDDL, cfg.Keyspace),
		fmt.Sprintf(ledgerRightsDDL, cfg.Keyspace), fmt.Sprintf(ledgerRightsDCDDL, cfg.Keyspace))...)
}

// statements holds the CQL of every operation, with the keyspace filled in
// once. Tables are always qualified, so the session needs no keyspace and
// can exist before the keyspace does.
type statements struct {
	insertNamespace string
	getNamespace    string
	listNamespaces  string
	writeShard      string
	readShards      string
	readShardsFrom  string
	foldWriteShard  string
	deleteShard     string
	writeTally      string
	listCounters    string
	probeNamespaces string
	probeShards     string

	// The ledger model's statements (ledger.go).
	writeLedgerRow    string
	readLedgerRows    string
	claimRequest      string
	releaseClaim      string
	readClaim         string
	probeLedgers      string
	probeLedgerClaims string
	base              ledgerBaseStatements

	// The delay queue's statements (queue.go).
	queue queueStatements

	// The events model's statements (events.go).
	events eventStatements

	// The actor, native and cas models' statements (counters.go).
	counters counterStatements

	// API keys (apikeys.go).
	apiKeys apiKeyStatements
	// Producer de-duplication of queue puts (queue_dedup.go).
	dedup dedupStatements
	// Cuts and purges (lifecycle.go).
	lifecycle lifecycleStatements
	// Paused queues (queue_pause.go).
	pause pauseStatements
	// Ledger history entries (ledger_entries.go).
	entries ledgerEntryStatements
	// Ledger rights records (ledger_rights.go).
	rights ledgerRightsStatements
	// rightsDC: the data centers' shares of ledgers' rights.
	rightsDC ledgerRightsStatements
}

const namespaceColumns = "name, model, type, read_cl, write_cl, retention_ms, options, created_at"

func newStatements(ks string) statements {
	q := statements{
		insertNamespace: "INSERT INTO " + ks + ".namespaces (" + namespaceColumns +
			") VALUES (?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS",
		getNamespace:   "SELECT " + namespaceColumns + " FROM " + ks + ".namespaces WHERE name = ?",
		listNamespaces: "SELECT " + namespaceColumns + " FROM " + ks + ".namespaces",
		writeShard: "INSERT INTO " + ks + ".shards (ns, counter, shard, state, expires_at)" +
			" VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ?",
		// A fold's batch carries its timestamp for every statement.
		foldWriteShard: "INSERT INTO " + ks + ".shards (ns, counter, shard, state, expires_at) VALUES (?, ?, ?, ?, ?)",
		readShards: "SELECT shard, state, expires_at, tally, tally_ts FROM " + ks +
			".shards WHERE ns = ? AND counter = ?",
		readShardsFrom: "SELECT shard, state, expires_at, tally, tally_ts FROM " + ks +
			".shards WHERE ns = ? AND counter = ? AND shard >= ?",
		deleteShard:     "DELETE FROM " + ks + ".shards WHERE ns = ? AND counter = ? AND shard = ?",
		writeTally:      "UPDATE " + ks + ".shards SET tally = ?, tally_ts = ? WHERE ns = ? AND counter = ?",
		listCounters:    "SELECT DISTINCT ns, counter FROM " + ks + ".shards",
		probeNamespaces: "SELECT name FROM " + ks + ".namespaces LIMIT 1",
		probeShards:     "SELECT ns FROM " + ks + ".shards LIMIT 1",
		queue:           newQueueStatements(ks),
		events:          newEventStatements(ks),
		counters:        newCounterStatements(ks),
		apiKeys:         newAPIKeyStatements(ks),
		dedup:           newDedupStatements(ks),
		lifecycle:       newLifecycleStatements(ks),
		pause:           newPauseStatements(ks),
		entries:         newLedgerEntryStatements(ks),
		rights:          newLedgerRightsStatements(ks),
		rightsDC:        newLedgerRightsDCStatements(ks),
		base:            newLedgerBaseStatements(ks),
	}
	q.writeLedgerRow, q.readLedgerRows, q.claimRequest, q.releaseClaim, q.readClaim, q.probeLedgers, q.probeLedgerClaims = ledgerStatements(ks)
	return q
}

// prepareSchema makes sure the tables exist. It first probes them: when
// they are there (the usual case) no DDL is sent at all. That matters
// beyond speed: after a schema change the driver waits until every node
// in system.peers reports the same schema version, and a node that is down
// never does, so a process restarting while one node is down would
// otherwise fail to open. Only when a probe fails, and cfg.Schema allows,
// is the schema created.
func (d *Driver) prepareSchema(ctx context.Context) error {
	err := d.probe(ctx)
	if err == nil {
		return nil
	}
	if d.cfg.Schema == SchemaExisting {
		return fmt.Errorf("cassandra: keyspace %s: %w: %w (create it with the statements of Schema, or use SchemaCreate)",
			d.cfg.Keyspace, errNoSchema, err)
	}
	if err := d.createSchema(ctx); err != nil {
		return fmt.Errorf("cassandra: creating the schema of keyspace %s: %w", d.cfg.Keyspace, err)
	}
	if err := d.probe(ctx); err != nil {
		return fmt.Errorf("cassandra: keyspace %s: %w after creating it: %w", d.cfg.Keyspace, errNoSchema, err)
	}
	return nil
}

// probe checks that every table can be queried. A keyspace created by an
// earlier release lacks the newer tables (ledgers, ledger_claims, the queue
// tables, the events tables, the counter models' tables, api_keys, queue_dedup, counter_cuts, ledger_entries, ledger_entry_days, ledger_rights, ledger_rights_dc, event_seals); their probes
// fail, and prepareSchema then creates them.
func (d *Driver) probe(ctx context.Context) error {
	probes := append([]string{d.q.probeNamespaces, d.q.probeShards, d.q.probeLedgers, d.q.probeLedgerClaims}, d.q.queue.probes()...)
	probes = append(probes, d.q.events.probes()...)
	probes = append(probes, d.q.counters.probes()...)
	probes = append(probes, d.q.apiKeys.probe, d.q.dedup.probe, d.q.lifecycle.probe, d.q.pause.probe, d.q.entries.probe, d.q.entries.probeDays, d.q.rights.probe, d.q.rightsDC.probe)
	for _, probe := range probes {
		// ONE: this only asks whether the table exists.
		if err := d.session.Query(probe).Consistency(gocql.One).ExecContext(ctx); err != nil {
			return err
		}
	}
	return nil
}
