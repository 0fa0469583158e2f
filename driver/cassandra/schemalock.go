package cassandra

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/abacusdb/abacus/internal/randomid"
	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/abacusdb/abacus/driver"
)

// Creating the schema from several processes at once.
//
// Cassandra's schema is not linearizable: two coordinators that each run
// CREATE TABLE IF NOT EXISTS for the same table at the same moment both
// find it missing, and each makes it with its own random table id. The
// nodes then hold two tables of one name; their schema versions never
// agree again until an operator repairs it by hand. A rollout that starts
// several servers on a fresh keyspace does exactly that.
//
// So the schema has one writer at a time:
//
//  1. The keyspace and one small table, schema_lock, are the only things
//     every process may create concurrently. A keyspace has no id, so
//     identical concurrent creations merge. schema_lock is given an id
//     derived from its name (WITH ID, Cassandra 3.0+), so concurrent
//     creations of it are identical too. Cassandra 2.1 has no WITH ID; there
//     every process sends these two statements to the same node, the live
//     node with the lowest host id, whose IF NOT EXISTS then sees the
//     other's table in all but a narrow window.
//  2. The rest of the schema is created by whoever holds the lock: a row of
//     schema_lock taken with INSERT ... IF NOT EXISTS USING TTL (a Paxos
//     round), renewed after every statement and deleted at the end. A
//     process that finds the lock taken waits, saying by whom, until the
//     tables exist or the lock is free (its holder died: the TTL frees it).
//  3. Every statement goes to one node, the schema coordinator, which
//     applies each before it answers, so each statement sees the ones before
//     it. The writer waits until every live node reports the same schema
//     version only where someone else depends on it: after schema_lock is
//     created (the lock's Paxos round runs on its replicas), before a
//     statement goes to a different coordinator than the one before (the
//     first went down), and after the last statement (before the lock is
//     released and the tables are used). It says which nodes disagree if
//     they never do. Waiting after every statement, as drivers do by
//     default, made a fresh schema on three nodes take 18 s instead of 3.

const (
	schemaLockDDL = `CREATE TABLE IF NOT EXISTS %[1]s.schema_lock (
	name text PRIMARY KEY,
	holder text,
	since timestamp
)`
	// schemaLockTTL bounds how long a dead holder blocks the others. The
	// holder renews it after every statement, and one statement plus its
	// agreement wait takes at most schemaAgreementTimeout.
	schemaLockTTL = 2 * schemaAgreementTimeout
	// schemaAgreementTimeout is how long one schema change may take to
	// reach every live node.
	schemaAgreementTimeout = 60 * time.Second
	// schemaLockPoll is how often a waiting process looks again.
	schemaLockPoll = 500 * time.Millisecond
)

// tableID derives the id a table gets on every process that creates it:
// a name-based (version 5 style) UUID of keyspace.table.
func tableID(keyspace, table string) string {
	sum := sha1.Sum([]byte("abacus table id\x00" + keyspace + "." + table))
	u := sum[:16]
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	h := hex.EncodeToString(u)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// schemaLockStatement is schema_lock's DDL for this cluster.
func (d *Driver) schemaLockStatement() string {
	stmt := fmt.Sprintf(schemaLockDDL, d.cfg.Keyspace)
	if d.caps.TableIDs {
		stmt += " WITH ID = " + tableID(d.cfg.Keyspace, "schema_lock")
	}
	return stmt
}

// createSchema runs every schema statement, one writer at a time across
// processes (see above).
func (d *Driver) createSchema(ctx context.Context) error {
	d.schemaMu.Lock()
	defer d.schemaMu.Unlock()
	sc := &schemaChange{d: d}
	stmts := schemaStatements(d.cfg)
	// stmts[0] creates the keyspace.
	for _, stmt := range []string{stmts[0], d.schemaLockStatement()} {
		if err := sc.ddl(ctx, stmt); err != nil {
			return err
		}
	}
	// The lock's Paxos round runs on schema_lock's replicas, which must
	// all have the table.
	if err := sc.agree(ctx); err != nil {
		return err
	}
	release, done, err := d.takeSchemaLock(ctx)
	if err != nil || done {
		return err
	}
	defer release()
	for _, stmt := range stmts[1:] {
		if err := sc.ddl(ctx, stmt); err != nil && !columnExists(stmt, err) {
			// A column that exists was added by an earlier attempt of
			// this statement (ddl sends a timed-out statement again).
			return err
		}
		if err := d.renewSchemaLock(ctx); err != nil {
			return err
		}
	}
	// Others use the tables once the lock is gone or every probe
	// succeeds: every live node must have them first.
	return sc.agree(ctx)
}

// schemaChange is one run of schema statements (createSchema, or one
// ChangeSchema): which node ran the last of them, and whether the nodes
// may not agree on them yet.
type schemaChange struct {
	d           *Driver
	unagreed    bool   // statements were sent since the last agreement
	coordinator string // the host id the last statement went to
}

// agree waits until the live nodes agree on the schema (awaitAgreement).
func (sc *schemaChange) agree(ctx context.Context) error {
	if err := sc.d.awaitAgreement(ctx); err != nil {
		return err
	}
	sc.unagreed = false
	return nil
}

// lockless reports whether this process creates the schema without the
// lock (see takeSchemaLock).
func (d *Driver) lockless() bool { return d.lockHolder == "" }

// schemaHolder names this process in the lock, for the messages of those
// who wait.
func schemaHolder() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s pid %d (%s)", host, os.Getpid(), randomid.Hex(4))
}

// takeSchemaLock waits for the schema lock. It returns done when another
// process finished the schema meanwhile, so there is nothing left to do.
//
// Several processes starting together all want the lock at once, and
// concurrent Paxos rounds on one row slow each other down until some time
// out with their outcome unknown. So a process contends only when a plain
// read finds the lock free, waits a jittered interval otherwise, and treats
// an unknown outcome as a reason to look again: the next read shows whether
// its own insert landed.
func (d *Driver) takeSchemaLock(ctx context.Context) (release func(), done bool, err error) {
	ks := d.cfg.Keyspace
	take := "INSERT INTO " + ks + ".schema_lock (name, holder, since) VALUES ('schema', ?, ?) IF NOT EXISTS USING TTL ?"
	d.lockHolder = schemaHolder()
	ttl := int(schemaLockTTL / time.Second)
	var waitingFor string
	for {
		holder, err := d.schemaLockHolder(ctx)
		if err == nil && holder == "" {
			existing := map[string]any{}
			var applied bool
			applied, err = d.session.Query(take, d.lockHolder, time.Now(), ttl).
				Consistency(gocql.Quorum).SerialConsistency(gocql.Serial).
				MapScanCASContext(ctx, existing)
			switch {
			case err == nil && applied:
				holder = d.lockHolder
			case err == nil:
				holder, _ = existing["holder"].(string)
			}
		}
		var unavailable *gocql.RequestErrUnavailable
		if errors.As(err, &unavailable) {
			// The lock lives on the keyspace's replicas, and a quorum of
			// them is not alive (or the replication factor exceeds the
			// cluster). Without the lock, creating the schema is what it
			// was before there was one: safe when one process does it.
			d.log.Warn("cassandra: the schema lock needs a quorum of the keyspace's replicas, which is not available; creating the schema without it (start one server at a time, or run abacus migrate first)",
				"keyspace", ks, "err", err)
			d.lockHolder = ""
			return func() {}, false, nil
		}
		if err != nil && mapError(opWrite, err) != nil && !errors.Is(mapError(opWrite, err), driver.ErrUnknownOutcome) {
			return nil, false, fmt.Errorf("taking the schema lock in %s.schema_lock: %w", ks, err)
		}
		if err == nil && holder == d.lockHolder {
			if waitingFor != "" {
				d.log.Info("cassandra: took the schema lock", "after", waitingFor)
			}
			return d.releaseSchemaLock, false, nil
		}
		// Someone else is creating the schema; it may be complete already.
		if d.probe(ctx) == nil {
			return nil, true, d.awaitAgreement(ctx)
		}
		if err == nil && holder != "" && holder != waitingFor {
			d.log.Info("cassandra: waiting for another process to finish creating the schema",
				"keyspace", ks, "holder", holder)
			waitingFor = holder
		}
		select {
		case <-ctx.Done():
			if waitingFor != "" {
				return nil, false, fmt.Errorf("waiting for %s to finish creating the schema in keyspace %s: %w", waitingFor, ks, ctx.Err())
			}
			return nil, false, fmt.Errorf("taking the schema lock in %s.schema_lock: %w (last error: %v)", ks, ctx.Err(), err)
		case <-time.After(schemaLockPoll/2 + time.Duration(mrand.Int64N(int64(schemaLockPoll)))):
		}
	}
}

// schemaLockHolder reads who holds the schema lock ("" when nobody) with a
// plain quorum read, which costs no Paxos round.
func (d *Driver) schemaLockHolder(ctx context.Context) (string, error) {
	var holder string
	err := d.session.Query("SELECT holder FROM "+d.cfg.Keyspace+".schema_lock WHERE name = 'schema'").
		Consistency(gocql.Quorum).ScanContext(ctx, &holder)
	if errors.Is(err, gocql.ErrNotFound) {
		return "", nil
	}
	return holder, err
}

// renewSchemaLock extends the lock, failing if it is no longer ours: after
// a pause longer than the TTL another process may be writing the schema.
func (d *Driver) renewSchemaLock(ctx context.Context) error {
	if d.lockless() {
		return nil
	}
	renew := "UPDATE " + d.cfg.Keyspace + ".schema_lock USING TTL ? SET holder = ?, since = ? WHERE name = 'schema' IF holder = ?"
	existing := map[string]any{}
	var applied bool
	var err error
	// A renewal whose outcome is unknown is simply sent again: it applies
	// only while the lock is ours.
	for attempt := 0; attempt < 5; attempt++ {
		clear(existing)
		applied, err = d.session.Query(renew, int(schemaLockTTL/time.Second), d.lockHolder, time.Now(), d.lockHolder).
			Consistency(gocql.Quorum).SerialConsistency(gocql.Serial).
			MapScanCASContext(ctx, existing)
		if err == nil || !errors.Is(mapError(opWrite, err), driver.ErrUnknownOutcome) || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("renewing the schema lock: %w", err)
	}
	if !applied {
		return fmt.Errorf("lost the schema lock to %v while creating the schema (a statement took longer than %v)", existing["holder"], schemaLockTTL)
	}
	return nil
}

// releaseSchemaLock frees the lock for the next process; if it fails the
// TTL frees it.
func (d *Driver) releaseSchemaLock() {
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.Timeout)
	defer cancel()
	release := "DELETE FROM " + d.cfg.Keyspace + ".schema_lock WHERE name = 'schema' IF holder = ?"
	if _, err := d.session.Query(release, d.lockHolder).
		Consistency(gocql.Quorum).SerialConsistency(gocql.Serial).
		MapScanCASContext(ctx, map[string]any{}); err != nil {
		d.log.Warn("cassandra: releasing the schema lock failed; it expires by itself", "ttl", schemaLockTTL, "err", err)
	}
}

// schemaCoordinator is the host every process sends its schema statements
// to: the live node with the lowest host id. Processes given different
// contact points still agree on it, since they see the same ring.
func (d *Driver) schemaCoordinator() string {
	var ids []string
	for _, h := range d.session.GetHosts() {
		if h.IsUp() && h.HostID() != "" {
			ids = append(ids, h.HostID())
		}
	}
	if len(ids) == 0 {
		return ""
	}
	return slices.Min(ids)
}

// ddl runs one schema statement on the schema coordinator. It does not
// wait for the other nodes (createSchema says when that is needed), except
// when the coordinator changed since the last statement: the new one may
// not have seen what the old one made, and a statement against a table it
// has not seen would fail. Schema changes on Cassandra are slow (each
// flushes the schema tables), so a timed-out statement is sent again; IF
// NOT EXISTS makes that harmless.
func (sc *schemaChange) ddl(ctx context.Context, stmt string) error {
	d := sc.d
	const attempts = 4
	var err error
	for i := 0; i < attempts; i++ {
		if i > 0 {
			d.log.Warn("cassandra: schema statement failed; retrying", "attempt", i+1, "err", err)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(i) * time.Second):
			}
		}
		coord := d.schemaCoordinator()
		if sc.unagreed && coord != sc.coordinator {
			if err := sc.agree(ctx); err != nil {
				return err
			}
		}
		// The level plays no part in schema changes.
		q := d.session.Query(stmt).Consistency(gocql.One)
		if coord != "" {
			q = q.SetHostID(coord)
		}
		sc.unagreed, sc.coordinator = true, coord
		err = q.ExecContext(ctx)
		if err == nil || ctx.Err() != nil || !(isTimeout(err) || errors.Is(err, gocql.ErrNoConnections)) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", firstLine(stmt), err)
	}
	return nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSuffix(strings.TrimSpace(line), " (")
}

// awaitAgreement waits until every node the driver sees up reports the
// same schema version. Nodes that are down are left out: they catch up
// when they return, and waiting for them would make a process restarting
// during an outage fail. On timeout it says which nodes hold which version.
func (d *Driver) awaitAgreement(ctx context.Context) error {
	deadline := time.Now().Add(schemaAgreementTimeout)
	var last map[string][]string
	for {
		versions, err := d.schemaVersions(ctx)
		if err == nil && len(versions) <= 1 {
			return nil
		}
		if err != nil && !isTimeout(err) && !errors.Is(err, gocql.ErrNoConnections) && ctx.Err() == nil {
			return fmt.Errorf("reading the nodes' schema versions: %w", err)
		}
		if err == nil {
			last = versions
		}
		if time.Now().After(deadline) {
			if last == nil {
				return fmt.Errorf("could not read the nodes' schema versions for %v: %w", schemaAgreementTimeout, err)
			}
			return fmt.Errorf("the nodes still report different schema versions after %v (%s): a node may be overloaded, or the schema split; `nodetool describecluster` shows it",
				schemaAgreementTimeout, describeVersions(last))
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for schema agreement (%s): %w", describeVersions(last), ctx.Err())
			}
			return fmt.Errorf("waiting for schema agreement: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// schemaVersions maps each schema version to the live nodes reporting it,
// as the schema coordinator sees them.
func (d *Driver) schemaVersions(ctx context.Context) (map[string][]string, error) {
	down := map[string]bool{}
	addrs := map[string]string{}
	for _, h := range d.session.GetHosts() {
		addrs[h.HostID()] = h.ConnectAddress().String()
		if !h.IsUp() {
			down[h.HostID()] = true
		}
	}
	coord := d.schemaCoordinator()
	query := func(stmt string) *gocql.Query {
		q := d.session.Query(stmt).Consistency(gocql.One)
		if coord != "" {
			q = q.SetHostID(coord)
		}
		return q
	}
	versions := map[string][]string{}
	var addr, id, version string
	var hostID gocql.UUID
	var schema gocql.UUID
	// system.local of 2.1 names no address of its own.
	if err := query("SELECT host_id, schema_version FROM system.local").
		ScanContext(ctx, &hostID, &schema); err != nil {
		return nil, err
	}
	addr = addrs[hostID.String()]
	if addr == "" {
		addr = hostID.String()
	}
	versions[schema.String()] = append(versions[schema.String()], addr)
	iter := query("SELECT peer, host_id, schema_version FROM system.peers").IterContext(ctx)
	for iter.Scan(&addr, &hostID, &schema) {
		id, version = hostID.String(), schema.String()
		if down[id] || version == (gocql.UUID{}).String() {
			continue
		}
		versions[version] = append(versions[version], addr)
	}
	if err := iter.Close(); err != nil {
		return nil, err
	}
	return versions, nil
}

// describeVersions renders schema versions as "0a1b2c3d on 127.0.0.1;
// 4e5f6a7b on 127.0.0.2".
func describeVersions(v map[string][]string) string {
	return describeSorted(v, "; ", func(version string, hosts []string) string {
		return fmt.Sprintf("%s on %s", version[:8], strings.Join(hosts, ", "))
	})
}
