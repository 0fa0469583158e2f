package cassandra

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/abacusdb/abacus/driver"
)

// Driver stores Abacus data in Cassandra. It is safe for concurrent use.
type Driver struct {
	cfg     Config
	session *gocql.Session
	log     *slog.Logger
	q       statements
	// entryDays remembers the ledger history days this process marked
	// (ledger_entries.go).
	entryDays entryDayMarks

	// anchored remembers the queue shards (queueShard) whose anchor row
	// this process has written; see AcquireLease.
	anchored sync.Map

	caps Capabilities
	// dataCenters counts the nodes of each data center, read by Open.
	dataCenters map[string]int
	lockHolder  string // this process in schema_lock, while creating the schema
	// schemaMu runs this process's schema changes (createSchema,
	// ChangeSchema) one at a time: Cassandra before 4.0 could give one
	// table two ids when two nodes created it at once.
	schemaMu sync.Mutex

	closed atomic.Bool
}

var _ driver.Driver = (*Driver)(nil)

// Open connects to the cluster, creates the keyspace and tables unless
// cfg.Schema is SchemaExisting, and returns a ready driver.
func Open(ctx context.Context, cfg Config) (*Driver, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cluster, err := cfg.cluster()
	if err != nil {
		return nil, err
	}
	session, err := createSession(ctx, cluster)
	if err != nil {
		if cfg.LocalDataCenter != "" {
			// A local data center that no node is in filters every node
			// out, and gocql says only that no connection was made. The
			// probe gets time of its own: ctx may be spent by now.
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ConnectTimeout+cfg.Timeout)
			dcs, derr := probeDataCenters(pctx, cfg)
			cancel()
			if derr == nil {
				if e := cfg.checkDataCenters(dcs); e != nil {
					return nil, e
				}
				return nil, fmt.Errorf("cassandra: connecting to %v: %w (only nodes of the local data center %q are used: give contact points in it)", cfg.Hosts, err, cfg.LocalDataCenter)
			}
		}
		return nil, fmt.Errorf("cassandra: connecting to %v: %w", cfg.Hosts, err)
	}
	d := &Driver{cfg: cfg, session: session, log: cfg.Logger, q: newStatements(cfg.Keyspace)}
	if d.caps, err = readCapabilities(ctx, session); err != nil {
		session.Close()
		return nil, fmt.Errorf("cassandra: %w", err)
	}
	known, err := d.checkTopology(ctx)
	if err != nil {
		session.Close()
		return nil, err
	}
	if err := d.prepareSchema(ctx); err != nil {
		session.Close()
		return nil, err
	}
	if err := d.checkLocalReplicas(ctx, known); err != nil {
		session.Close()
		return nil, err
	}
	return d, nil
}

// createSession runs gocql's blocking CreateSession so that ctx can cut the
// wait short; a session that arrives after ctx is done is closed.
func createSession(ctx context.Context, cluster *gocql.ClusterConfig) (*gocql.Session, error) {
	type result struct {
		s   *gocql.Session
		err error
	}
	ch := make(chan result, 1)
	go func() {
		s, err := cluster.CreateSession()
		ch <- result{s, err}
	}()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.s != nil {
				r.s.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// cluster translates the Config into gocql's.
func (c Config) cluster() (*gocql.ClusterConfig, error) {
	cl := gocql.NewCluster(c.Hosts...)
	cl.Port = c.Port
	cl.Timeout = c.Timeout
	cl.ConnectTimeout = c.ConnectTimeout
	cl.NumConns = c.NumConns
	// Every request sets its level explicitly; this only covers gocql's own
	// queries.
	cl.Consistency = gocql.Quorum
	// Zero negotiates: Cassandra 2.1 speaks v3, newer releases v4 or v5,
	// and gocql steps down from its highest version when a node refuses.
	cl.ProtoVersion = c.ProtocolVersion
	// Route each request to a replica of its partition. Replicas are
	// shuffled so one hot counter's load spreads over all its replicas.
	cl.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(
		gocql.RoundRobinHostPolicy(), gocql.ShuffleReplicas())
	if c.LocalDataCenter != "" {
		// The local data center's replicas first, and no other node at
		// all: gocql's data-center-aware policy falls back to remote
		// nodes when the local ones fail, and a remote coordinator would
		// count LOCAL_QUORUM in its own data center, where this process's
		// last writes may not have arrived yet. With the filter, a cut-off
		// data center answers "unavailable" instead of going stale.
		cl.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(
			gocql.DCAwareRoundRobinPolicy(c.LocalDataCenter), gocql.ShuffleReplicas())
		cl.HostFilter = gocql.HostFilterFunc(func(h *gocql.HostInfo) bool {
			return inDataCenter(c.LocalDataCenter, h.DataCenter())
		})
	}
	// gocql's default is to retry nothing; writes must never be retried
	// behind the caller's back (see mapError), so keep it that way.
	cl.RetryPolicy = nil
	// Token-aware routing needs only keyspace metadata; full table
	// metadata would be re-read after every schema change, and tests
	// create many keyspaces.
	cl.Metadata.CacheMode = gocql.KeyspaceOnly
	// Always ask for result metadata instead of reusing what PREPARE
	// returned. Cassandra 2.1.0 shares one metadata object per prepared
	// statement between all clients: once any execution asked to skip
	// metadata, responses to everyone (and later PREPAREs) carry a stale
	// "no metadata" flag, and rows then decode against the wrong columns.
	// Newer releases have the related CASSANDRA-10786. The cost is a few
	// bytes per response.
	cl.DisableSkipMetadata = true
	// A node restarted in a fault test should be used again soon.
	cl.ReconnectInterval = 10 * time.Second
	// gocql waits for schema agreement after every schema change; the
	// driver waits itself, only where it must (schemalock.go), so gocql's
	// wait is off and the warning it logs for that dropped (slogAdapter).
	cl.MaxWaitSchemaAgreement = 0
	cl.Logger = slogAdapter{c.Logger}
	cl.QueryObserver, cl.BatchObserver = queryTracer{}, queryTracer{}
	if c.Username != "" {
		cl.Authenticator = gocql.PasswordAuthenticator{Username: c.Username, Password: c.Password}
	}
	if c.TLS != nil {
		tc, err := c.TLS.build()
		if err != nil {
			return nil, err
		}
		cl.SslOpts = &gocql.SslOptions{Config: tc, EnableHostVerification: !c.TLS.InsecureSkipVerify}
	}
	return cl, nil
}

func (t *TLSConfig) build() (*tls.Config, error) {
	var tc *tls.Config
	if t.Config != nil {
		tc = t.Config.Clone()
	} else {
		tc = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	tc.InsecureSkipVerify = t.InsecureSkipVerify
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("cassandra: reading TLS.CAFile: %w", err)
		}
		if tc.RootCAs == nil {
			tc.RootCAs = x509.NewCertPool()
		}
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("cassandra: TLS.CAFile %s holds no PEM certificate", t.CAFile)
		}
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("cassandra: loading TLS client certificate: %w", err)
		}
		tc.Certificates = append(tc.Certificates, cert)
	}
	return tc, nil
}

// Name returns "cassandra".
func (d *Driver) Name() string { return "cassandra" }

// Session returns the underlying gocql session, for benchmarks that compare
// against native counters on identical session settings. Closing the driver
// closes it.
func (d *Driver) Session() *gocql.Session { return d.session }

// ChangeSchema runs one schema statement (say, a table of the caller's
// own in the driver's keyspace) the way the driver runs its own: on the
// schema coordinator, sent again after a timeout, and then waits until
// every live node has it, or says which nodes hold which version. Schema
// statements sent through Session are not waited for (see cluster), and
// an agreement wait is only sound as seen from the node that ran the
// statement: another node's view of its peers comes from gossip, and
// right after the change every node it knows of may still look alike on
// the old version.
func (d *Driver) ChangeSchema(ctx context.Context, stmt string) error {
	d.schemaMu.Lock()
	defer d.schemaMu.Unlock()
	sc := &schemaChange{d: d}
	if err := sc.ddl(ctx, stmt); err != nil {
		return fmt.Errorf("cassandra: %w", err)
	}
	if err := sc.agree(ctx); err != nil {
		return fmt.Errorf("cassandra: %s: %w", firstLine(stmt), err)
	}
	return nil
}

// Capabilities returns what the cluster's release allows beyond the CQL of
// Cassandra 2.1, as read when the driver opened.
func (d *Driver) Capabilities() Capabilities { return d.caps }

// Keyspace returns the keyspace holding the driver's tables.
func (d *Driver) Keyspace() string { return d.cfg.Keyspace }

// GCReadConsistency returns the configured level for reads before a fold.
func (d *Driver) GCReadConsistency() driver.Consistency { return d.cfg.GCReadConsistency }

// Close closes the session. Operations after Close, and a second Close,
// fail with driver.ErrClosed.
func (d *Driver) Close() error {
	if d.closed.Swap(true) {
		return fmt.Errorf("cassandra: close: %w", driver.ErrClosed)
	}
	d.session.Close()
	return nil
}

// begin is called first by every operation. Failing here means nothing was
// sent, so the caller's context error is returned unwrapped by the
// outcome sentinels.
func (d *Driver) begin(ctx context.Context, op string) error {
	if d.closed.Load() {
		return fmt.Errorf("cassandra: %s: %w", op, driver.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cassandra: %s: %w", op, err)
	}
	return nil
}

// beginAt is begin followed by level, the start of every operation run at
// a consistency level: the level's error names the operation as begin's do.
func (d *Driver) beginAt(ctx context.Context, op string, c, configured driver.Consistency) (gocql.Consistency, error) {
	if err := d.begin(ctx, op); err != nil {
		return 0, err
	}
	cl, err := level(c, configured)
	if err != nil {
		return 0, fmt.Errorf("cassandra: %s: %w", op, err)
	}
	return cl, nil
}

// scanRows reads every row of iter, each into a fresh R since gocql reuses
// the targets' memory, and closes iter.
func scanRows[R any](iter *gocql.Iter, dest func(*R) []any) ([]R, error) {
	var rows []R
	for {
		var r R
		if !iter.Scan(dest(&r)...) {
			break
		}
		rows = append(rows, r)
	}
	return rows, iter.Close()
}

// exec runs one write statement at cl; a failure names op and what was
// written (subject, formatted with args only then).
func (d *Driver) exec(ctx context.Context, cl gocql.Consistency, stmt string, values []any, op, subject string, args ...any) error {
	if err := d.session.Query(stmt, values...).Consistency(cl).ExecContext(ctx); err != nil {
		return fmt.Errorf("cassandra: %s%s: %w", op, fmt.Sprintf(subject, args...), mapError(opWrite, err))
	}
	return nil
}

// execAt is a whole single-statement write: beginAt, then exec.
func (d *Driver) execAt(ctx context.Context, op string, c, configured driver.Consistency, stmt string, values []any, subject string, args ...any) error {
	cl, err := d.beginAt(ctx, op, c, configured)
	if err != nil {
		return err
	}
	return d.exec(ctx, cl, stmt, values, op, subject, args...)
}

// readRows scans every row of iter and converts them with decode; a
// failure of either names op and what was read (subject, formatted with
// args only then).
func readRows[R, T any](iter *gocql.Iter, dest func(*R) []any, decode func([]R) (T, error), op, subject string, args ...any) (T, error) {
	rows, err := scanRows(iter, dest)
	if err != nil {
		err = mapError(opRead, err)
	} else {
		var out T
		if out, err = decode(rows); err == nil {
			return out, nil
		}
	}
	var zero T
	return zero, fmt.Errorf("cassandra: %s%s: %w", op, fmt.Sprintf(subject, args...), err)
}

// level resolves an operation's level: Default means the configured one.
func level(c, configured driver.Consistency) (gocql.Consistency, error) {
	if c == driver.Default {
		c = configured
	}
	g, ok := gocqlConsistency(c)
	if !ok {
		return 0, fmt.Errorf("unknown consistency level %v", c)
	}
	return g, nil
}

// slogAdapter passes gocql's log messages to slog. gocql's info messages
// (host up/down, reconnects) are chatty, so they go out at debug level.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) log(lvl slog.Level, msg string, fields []gocql.LogField) {
	ctx := context.Background()
	if !a.l.Enabled(ctx, lvl) {
		return
	}
	attrs := make([]slog.Attr, 0, len(fields)+1)
	attrs = append(attrs, slog.String("component", "gocql"))
	for _, f := range fields {
		attrs = append(attrs, slog.Any(f.Name, f.Value.Any()))
	}
	a.l.LogAttrs(ctx, lvl, msg, attrs...)
}

func (a slogAdapter) Error(msg string, f ...gocql.LogField) { a.log(slog.LevelError, msg, f) }
func (a slogAdapter) Warning(msg string, f ...gocql.LogField) {
	if msg == gocqlSkippedAgreement {
		return
	}
	a.log(slog.LevelWarn, msg, f)
}

// gocqlSkippedAgreement is what gocql logs after every schema change when
// its own agreement wait is off, as the driver sets it (cluster).
const gocqlSkippedAgreement = "Error while awaiting for schema agreement after a schema change event."

func (a slogAdapter) Info(msg string, f ...gocql.LogField)  { a.log(slog.LevelDebug, msg, f) }
func (a slogAdapter) Debug(msg string, f ...gocql.LogField) { a.log(slog.LevelDebug, msg, f) }

// errNoSchema is returned by Open under SchemaExisting when a table is
// missing.
var errNoSchema = errors.New("schema missing")
