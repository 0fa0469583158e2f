package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/driver/cassandra"
	"github.com/abacusdb/abacus/driver/embedded"
	"github.com/abacusdb/abacus/internal/apikey"
	"github.com/abacusdb/abacus/internal/queue"
	"github.com/abacusdb/abacus/internal/server"
	"github.com/abacusdb/abacus/internal/tracing"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type serveFlags struct {
	addr            string
	data            string
	noSync          bool
	cassandra       string
	keyspace        string
	rf              int
	rfGiven         bool // --replication-factor was set (flag, environment or file)
	replication     string
	localDC         string
	protocol        int
	readCL          string
	writeCL         string
	username        string
	password        string
	passwordFile    string
	tls             bool
	tlsCA           string
	tlsCert         string
	tlsKey          string
	schema          string
	gcInterval      time.Duration
	logFormat       string
	logLevel        string
	maxBodyBytes    int64
	shutdownTimeout time.Duration
	ledgerActorID   string
	lifetime        time.Duration
	shardBatch      int
	eventBatch      int
	refusalMargin   time.Duration
	gcGrace         time.Duration
	deleteDelay     time.Duration
	clockOffset     time.Duration
	maxClockSkew    time.Duration
	dedupWindow     time.Duration
	pauseRefresh    time.Duration
	clockCheck      time.Duration
	allowHosts      []string
	httpTLSCert     string
	httpTLSKey      string
	httpClientCA    string
	maxNamespaces   int
	maxQueues       int
	auth            string
	firstKeyFile    string
	metricsMaxNS    int
	otlpEndpoint    string
	traceRatio      float64
	noConsole       bool
}

func (a *app) serveCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the Abacus HTTP server",
		Long: `Run the Abacus HTTP API server until interrupted (SIGINT or SIGTERM), then
shut down gracefully: stop accepting requests, finish the ones in flight
and persist every accepted update.

The store is an embedded database in --data (one server per directory)
unless --cassandra gives the contact points of an Apache Cassandra or
ScyllaDB cluster; the keyspace and tables are created when missing.

Every flag can also be set as ABACUS_<FLAG> in the environment (for example
ABACUS_CASSANDRA=10.0.0.1,10.0.0.2 or ABACUS_PASSWORD) or in a config file
(--config; docs/operations.md); a flag wins over the environment, which wins
over the file.`,
		Example: `  abacus serve
  abacus serve --data /var/lib/abacus --addr 10.0.0.5:7070 --log-format json   # one private interface (docs/security.md)
  abacus serve --cassandra 10.0.0.1,10.0.0.2 --keyspace abacus --replication dc1:3,dc2:3 --local-dc dc1
  abacus serve --cassandra 127.0.0.1 --replication-factor 1                         # one development node
  ABACUS_PASSWORD=secret abacus serve --cassandra db1:9042 --username abacus --tls-ca ca.pem`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.rfGiven = cmd.Flags().Changed("replication-factor")
			return a.serve(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", server.DefaultAddr, "address to listen on; beyond loopback every request needs an API key (--auth; docs/security.md)")
	fl.StringVar(&f.auth, "auth", string(server.AuthAuto), "when requests need an API key: auto (when --addr is not loopback), on (always) or off (never: the network is the only guard)")
	fl.StringVar(&f.firstKeyFile, "first-key-file", "", "when auth is on and the store has no API keys, write the admin key made at first start to this new file (mode 0600) instead of printing it to stderr")
	fl.StringVar(&f.httpTLSCert, "http-tls-cert", "", "PEM certificate (chain) of the HTTP listener: serve HTTPS (needs --http-tls-key)")
	fl.StringVar(&f.httpTLSKey, "http-tls-key", "", "PEM private key of --http-tls-cert")
	fl.StringVar(&f.httpClientCA, "http-client-ca", "", "PEM CA certificates: require every client to present a certificate they signed (needs --http-tls-cert)")
	fl.IntVar(&f.maxNamespaces, "max-namespaces", server.DefaultMaxNamespaces, "most namespaces a create may bring the store to (-1: no limit)")
	fl.IntVar(&f.maxQueues, "max-queues", server.DefaultMaxQueues, "most queues a create may bring the store to (-1: no limit)")
	fl.IntVar(&f.metricsMaxNS, "metrics-max-namespaces", server.DefaultMetricsMaxNamespaces, "how many namespaces get series of their own in abacus_namespace_requests_total; the rest are counted as namespace=\"_other\" (0 or -1: none)")
	fl.StringVar(&f.otlpEndpoint, "otlp-endpoint", "", "OpenTelemetry collector (OTLP/HTTP) to send traces to, such as http://otel-collector:4318 (default: $OTEL_EXPORTER_OTLP_ENDPOINT; unset: no tracing)")
	fl.Float64Var(&f.traceRatio, "trace-sample-ratio", tracing.DefaultSampleRatio, "share of requests traced when their caller's traceparent does not decide it (0 to 1)")
	fl.StringSliceVar(&f.allowHosts, "allow-host", nil, "host name a loopback server also answers to (repeatable); other Host headers get 403, which stops DNS rebinding")
	fl.StringVar(&f.data, "data", "./abacus-data", "data directory of the embedded store")
	fl.BoolVar(&f.noSync, "no-sync", false, "embedded store: acknowledge updates before they are fsynced (survives a process crash, not a machine crash)")
	addCassandraFlags(fl, &f)
	fl.DurationVar(&f.gcInterval, "gc-interval", 10*time.Minute, "how often to garbage-collect every counter; 0 or negative disables it")
	fl.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fl.BoolVar(&f.noConsole, "no-console", false, "do not serve the web console under /ui (it obeys --auth like the API)")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fl.Int64Var(&f.maxBodyBytes, "max-body-bytes", api.DefaultMaxBodyBytes, "largest accepted request body")
	fl.DurationVar(&f.shutdownTimeout, "shutdown-timeout", server.DefaultShutdownTimeout, "how long to wait for in-flight requests on shutdown")
	fl.DurationVar(&f.lifetime, "mutator-lifetime", 24*time.Hour, "sharded: how long one server writes one shard of a counter before starting a new one")
	fl.DurationVar(&f.refusalMargin, "refusal-margin", time.Hour, "sharded: a shard stops taking updates this long before its end (below --mutator-lifetime)")
	fl.IntVar(&f.shardBatch, "shard-batch", 32, "sharded: shard writes of any counters one request to the store may carry (writes that queue behind 8 requests in flight go out together); 1 sends each on its own")
	fl.IntVar(&f.eventBatch, "event-batch", 32, "events: event writes of any counters one request to the store may carry (writes that queue behind 8 requests in flight go out together); 1 sends each on its own")
	fl.DurationVar(&f.gcGrace, "gc-grace", 24*time.Hour, "sharded: how long after its end a shard may be folded; must exceed the worst clock skew between servers plus the store's hint window")
	fl.DurationVar(&f.deleteDelay, "delete-delay", 0, "how far ahead a delete (or a sharded clear) takes effect, so that every server learns of it first; must exceed 25s plus, on Cassandra, twice --max-clock-skew; give every server the same (default: 3m on Cassandra, or more with a larger --max-clock-skew; 30s on the embedded store, where one server has no clock to disagree with)")
	fl.DurationVar(&f.dedupWindow, "queue-dedup-window", queue.DefaultDedupWindow, "how long a message's dedup_id keeps later puts of the id from storing another message (1s to 1h; on Cassandra at most the queue tables' gc_grace_seconds); give every server the same")
	fl.DurationVar(&f.pauseRefresh, "queue-pause-refresh", queue.DefaultPauseRefresh, "how long this server trusts a queue's record and pause state it last read: a pause, resume or delete made on any server takes effect here within this long (1ms to 1m); use the same value on every server")
	fl.DurationVar(&f.maxClockSkew, "max-clock-skew", time.Second, "largest difference from the store's clock (Cassandra) at which this server takes writes; keep it at most half the events rollup delay (2s by default) and below --gc-grace; 0 or negative disables the check")
	fl.DurationVar(&f.clockCheck, "clock-check-interval", 30*time.Second, "how often the clock is compared with the store's")
	fl.DurationVar(&f.clockOffset, "clock-offset", 0, "testing only: shift this server's clock by this much")
	_ = fl.MarkHidden("clock-offset")
	fl.StringVar(&f.ledgerActorID, "ledger-actor-id", "", "prefix of this server's ledger actor ids (default: random at every start); never give two servers, or two runs, the same one")
	return cmd
}

// addCassandraFlags declares the flags that say how to reach Cassandra,
// shared by serve and migrate.
func addCassandraFlags(fl *pflag.FlagSet, f *serveFlags) {
	fl.StringVar(&f.cassandra, "cassandra", "", "comma-separated Cassandra contact points (host or host:port); uses Cassandra instead of the embedded store")
	fl.StringVar(&f.keyspace, "keyspace", cassandra.DefaultKeyspace, "Cassandra keyspace")
	fl.IntVar(&f.rf, "replication-factor", 0, "replication factor of the keyspace when it is created, under SimpleStrategy: for a single development data center (default 1; production clusters use --replication)")
	fl.StringVar(&f.replication, "replication", "", "replicas per data center of the keyspace when it is created, under NetworkTopologyStrategy, such as dc1:3,dc2:3")
	fl.StringVar(&f.localDC, "local-dc", "", "data center this server runs in: only its nodes coordinate requests, and the default levels become LOCAL_QUORUM (docs/datacenters.md)")
	fl.IntVar(&f.protocol, "protocol-version", 0, "Cassandra native protocol version (3, 4 or 5); 0 negotiates, pinning it saves round trips on old clusters")
	fl.StringVar(&f.readCL, "read-consistency", "", "Cassandra consistency of reads for namespaces that use DEFAULT (default QUORUM, or LOCAL_QUORUM with --local-dc)")
	fl.StringVar(&f.writeCL, "write-consistency", "", "Cassandra consistency of writes for namespaces that use DEFAULT (default QUORUM, or LOCAL_QUORUM with --local-dc)")
	fl.StringVar(&f.username, "username", "", "Cassandra user name")
	fl.StringVar(&f.password, "password", "", "Cassandra password (prefer --password-file or $ABACUS_PASSWORD: flags show in process lists)")
	fl.StringVar(&f.passwordFile, "password-file", "", "file whose first line is the Cassandra password (a mounted secret)")
	fl.BoolVar(&f.tls, "tls", false, "connect to Cassandra over TLS, trusting the system's CAs")
	fl.StringVar(&f.tlsCA, "tls-ca", "", "PEM file of CA certificates for Cassandra TLS (implies --tls)")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "PEM client certificate for Cassandra TLS (implies --tls; needs --tls-key)")
	fl.StringVar(&f.tlsKey, "tls-key", "", "PEM key of --tls-cert")
	fl.StringVar(&f.schema, "schema", "create", "create: create the keyspace and tables when missing (one server at a time, under a lock in the keyspace); existing: never change the schema, fail if a table is missing (run 'abacus migrate' first)")
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, slog.Level, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, 0, usagef("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), lvl, nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), lvl, nil
	}
	return nil, 0, usagef("--log-format %q: want text or json", format)
}

func (a *app) serve(ctx context.Context, f serveFlags) error {
	log, lvl, err := newLogger(a.stderr, f.logFormat, f.logLevel)
	if err != nil {
		return err
	}
	listenTLS, err := listenerTLS(f.httpTLSCert, f.httpTLSKey, f.httpClientCA)
	if err != nil {
		return err
	}
	authMode, err := server.ParseAuthMode(f.auth)
	if err != nil {
		return usagef("--auth: %v", err)
	}
	if f.maxNamespaces == 0 || f.maxNamespaces < -1 || f.maxQueues == 0 || f.maxQueues < -1 {
		return usagef("--max-namespaces and --max-queues take a positive number, or -1 for no limit")
	}
	// The stores' own chatter (Pebble reports every flush and compaction)
	// only shows at debug level.
	storeLog, _, _ := newLogger(a.stderr, f.logFormat, max(lvl, slog.LevelWarn).String())
	if lvl <= slog.LevelDebug {
		storeLog = log
	}
	if f.maxBodyBytes <= 0 {
		return usagef("--max-body-bytes must be positive")
	}
	if f.shutdownTimeout <= 0 {
		return usagef("--shutdown-timeout must be positive")
	}
	gcInterval := f.gcInterval
	if gcInterval <= 0 {
		gcInterval = -1 // the library's "disabled"; zero would mean its default
	}
	if f.lifetime <= 0 || f.refusalMargin <= 0 || f.gcGrace <= 0 {
		return usagef("--mutator-lifetime, --refusal-margin and --gc-grace must be positive")
	}
	if f.shardBatch < 1 || f.shardBatch > driver.MaxShardWrites {
		return usagef("--shard-batch %d: want 1 (each write on its own) to %d", f.shardBatch, driver.MaxShardWrites)
	}
	if f.eventBatch < 1 || f.eventBatch > driver.MaxShardWrites {
		return usagef("--event-batch %d: want 1 (each write on its own) to %d", f.eventBatch, driver.MaxShardWrites)
	}
	if f.refusalMargin >= f.lifetime {
		return usagef("--refusal-margin %v must be below --mutator-lifetime %v", f.refusalMargin, f.lifetime)
	}
	if f.clockCheck <= 0 {
		return usagef("--clock-check-interval must be positive")
	}
	if f.dedupWindow < time.Second || f.dedupWindow > queue.MaxDedupWindow {
		return usagef("--queue-dedup-window %v is outside 1s to %v", f.dedupWindow, queue.MaxDedupWindow)
	}
	if f.pauseRefresh < time.Millisecond || f.pauseRefresh > time.Minute {
		return usagef("--queue-pause-refresh %v is outside 1ms to 1m", f.pauseRefresh)
	}
	maxSkew := f.maxClockSkew
	if maxSkew == 0 {
		maxSkew = -1 // the server reads 0 as "its default"; here 0 disables, as the help says
	}
	delDelay, err := deleteDelay(f)
	if err != nil {
		return err
	}
	var clk clock.Clock = clock.Real{}
	if f.clockOffset != 0 {
		clk = clock.Offset{Base: clock.Real{}, By: f.clockOffset}
		log.Warn("clock shifted for testing", "clock_offset", f.clockOffset)
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	exporting, stopTracing, err := tracing.Setup(ctx, tracing.Config{
		Endpoint: f.otlpEndpoint, SampleRatio: f.traceRatio, ServiceVersion: buildVersion().Version, Getenv: a.getenv,
	})
	if err != nil {
		return usagef("tracing: %v", err)
	}
	defer func() {
		// Flush the last spans, briefly: a collector that is gone must not
		// hold up the exit.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := stopTracing(fctx); err != nil {
			log.Warn("flushing traces", "err", err)
		}
	}()
	if exporting {
		log.Info("tracing: exporting spans over OTLP/HTTP", "sample_ratio", f.traceRatio)
	}

	drv, err := a.openStore(ctx, f, log, storeLog)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := drv.Close(); cerr != nil {
			log.Warn("closing the store", "err", cerr)
		}
	}()

	reg := prometheus.NewRegistry()
	c, err := abacus.NewClient(ctx, abacus.Config{
		Driver:          drv,
		GCInterval:      gcInterval,
		Logger:          log,
		ShardedHooks:    server.Hooks(reg),
		LedgerActorID:   f.ledgerActorID,
		MutatorLifetime: f.lifetime,
		RefusalMargin:   f.refusalMargin,
		GCGrace:         f.gcGrace,
		MaxShardBatch:   f.shardBatch,
		MaxEventBatch:   f.eventBatch,
		DeleteDelay:     delDelay,
		Clock:           clk,
		Queues:          abacus.QueuesConfig{DedupWindow: f.dedupWindow, PauseRefresh: f.pauseRefresh},
	})
	if err != nil {
		return err
	}
	// Listen first: whether keys are asked for depends on the address the
	// listener is bound to (a host name may resolve to loopback, or not),
	// and the server decides it from the same address.
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		_ = c.Stop(context.Background())
		return fmt.Errorf("listen on %s: %w", f.addr, err)
	}
	bound := ln.Addr().String()
	keys := apikey.New(drv, 0)
	if server.AuthRequired(authMode, bound) {
		if err := a.firstKey(ctx, keys, f.firstKeyFile, log); err != nil {
			_ = ln.Close()
			_ = c.Stop(context.Background())
			return err
		}
		if listenTLS == nil && !isLoopbackAddr(bound) {
			log.Warn("API keys will cross the network in clear text: serve HTTPS (--http-tls-cert) or put a TLS proxy in front", "addr", bound)
		}
	} else if !isLoopbackAddr(bound) {
		log.Warn("auth is off on a server listening beyond loopback: whoever reaches it can change everything", "addr", bound)
	}
	metricsMaxNS := f.metricsMaxNS
	if metricsMaxNS == 0 {
		metricsMaxNS = -1 // the server reads 0 as "its default"; here 0 means none, as the help says
	}
	build := buildVersion()
	srv, err := server.New(server.Config{
		Auth:                 authMode,
		Keys:                 keys,
		Client:               c,
		Addr:                 f.addr,
		AllowedHosts:         f.allowHosts,
		TLS:                  listenTLS,
		MaxNamespaces:        f.maxNamespaces,
		MaxQueues:            f.maxQueues,
		MetricsMaxNamespaces: metricsMaxNS,
		Version:              build.Version,
		Commit:               build.Commit,
		MaxBodyBytes:         f.maxBodyBytes,
		Logger:               log,
		Registry:             reg,
		ShutdownTimeout:      f.shutdownTimeout,
		MaxClockSkew:         maxSkew,
		ClockCheckInterval:   f.clockCheck,
		NoConsole:            f.noConsole,
	})
	if err != nil {
		_ = ln.Close()
		_ = c.Stop(context.Background())
		return err
	}
	log.Info("starting abacus", "version", buildVersion().Version, "store", drv.Name())
	return srv.Serve(ctx, ln)
}

// firstKey makes the admin key of a store that has none, and hands its
// token over once: to a new file only this user can read, or to stderr.
// It is not logged: logs are kept and shipped, and a key in them is a key
// given to whoever reads them.
func (a *app) firstKey(ctx context.Context, keys *apikey.Keys, file string, log *slog.Logger) error {
	empty, err := keys.Empty(ctx)
	if err != nil || !empty {
		return err
	}
	var fh *os.File
	if file != "" {
		// Made before the key, so that a path that cannot be written
		// leaves no key behind that nobody holds.
		if fh, err = os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
			return usagef("--first-key-file: %v (the store has no API keys, so a new one is to be written there)", err)
		}
	}
	tok, created, err := keys.CreateFirstAdmin(ctx)
	if fh != nil {
		if err == nil && created {
			_, err = fmt.Fprintln(fh, tok)
			if cerr := fh.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				// Nobody holds the key, and while it exists no other
				// first key will be made: take it back.
				if rerr := keys.Revoke(context.WithoutCancel(ctx), apikey.FirstAdminID); rerr != nil {
					err = fmt.Errorf("%w; and revoking the key that could not be written failed too (%v): delete it from the store before the next start", err, rerr)
				}
			}
		} else {
			_ = fh.Close()
		}
		if err != nil || !created {
			_ = os.Remove(file)
		}
	}
	switch {
	case err != nil:
		return fmt.Errorf("making the first API key: %w", err)
	case !created:
		return nil // another server made it
	case fh != nil:
		log.Info("made the first admin API key; its token is in --first-key-file", "id", apikey.FirstAdminID, "file", file)
	default:
		fmt.Fprintf(a.stderr, "\nThe store had no API keys, so this admin key was made (scope *:admin).\n"+
			"It is shown this once; keep it in a secret store, and make narrower keys with it\n"+
			"(abacus key create). ABACUS_API_KEY or --api-key-file give it to the CLI.\n\n    %s\n\n", tok)
	}
	return nil
}

// isLoopbackAddr reports whether host:port binds loopback only.
func isLoopbackAddr(addr string) bool { return !server.AuthRequired(server.AuthAuto, addr) }

func (a *app) openStore(ctx context.Context, f serveFlags, log, storeLog *slog.Logger) (driver.Driver, error) {
	if f.cassandra == "" {
		if f.data == "" {
			return nil, usagef("--data is empty")
		}
		d, err := embedded.Open(ctx, embedded.Config{Dir: f.data, NoSync: f.noSync, Logger: storeLog})
		if err != nil {
			return nil, err
		}
		log.Info("embedded store open", "dir", f.data)
		return d, nil
	}

	cfg, err := cassandraConfig(f, storeLog)
	if err != nil {
		return nil, err
	}
	d, err := openCassandra(ctx, cfg)
	if err != nil {
		return nil, err
	}
	caps := d.Capabilities()
	log.Info("cassandra store open", "hosts", cfg.Hosts, "keyspace", f.keyspace, "release", caps.Version.String(),
		"local_dc", d.LocalDataCenter(), "data_centers", d.DataCenters())
	return d, nil
}

// cassandraConfig builds the driver's configuration from the flags.
func cassandraConfig(f serveFlags, storeLog *slog.Logger) (cassandra.Config, error) {
	var hosts []string
	for _, h := range strings.Split(f.cassandra, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 {
		return cassandra.Config{}, usagef("--cassandra %q lists no hosts", f.cassandra)
	}
	readCL, err := driver.ParseConsistency(f.readCL)
	if err != nil {
		return cassandra.Config{}, usagef("--read-consistency: %v", err)
	}
	writeCL, err := driver.ParseConsistency(f.writeCL)
	if err != nil {
		return cassandra.Config{}, usagef("--write-consistency: %v", err)
	}
	repl, err := replicationOf(f.rf, f.rfGiven, f.replication)
	if err != nil {
		return cassandra.Config{}, err
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return cassandra.Config{}, usagef("--tls-cert and --tls-key go together")
	}
	password, err := secret(f.password, "--password", f.passwordFile, "--password-file")
	if err != nil {
		return cassandra.Config{}, err
	}
	cfg := cassandra.Config{
		Hosts:            hosts,
		Keyspace:         f.keyspace,
		Replication:      repl,
		LocalDataCenter:  strings.TrimSpace(f.localDC),
		ReadConsistency:  readCL,
		WriteConsistency: writeCL,
		ProtocolVersion:  f.protocol,
		Username:         f.username,
		Password:         password,
		Logger:           storeLog,
	}
	if f.tls || f.tlsCA != "" || f.tlsCert != "" {
		cfg.TLS = &cassandra.TLSConfig{CAFile: f.tlsCA, CertFile: f.tlsCert, KeyFile: f.tlsKey}
	}
	switch f.schema {
	case "create":
		cfg.Schema = cassandra.SchemaCreate
	case "existing":
		cfg.Schema = cassandra.SchemaExisting
	default:
		return cassandra.Config{}, usagef("--schema %q: want create or existing", f.schema)
	}
	return cfg, nil
}

// replicationOf reads --replication-factor (SimpleStrategy; given says
// it was set) and --replication (NetworkTopologyStrategy, "dc1:3,dc2:3"),
// which exclude each other.
func replicationOf(rf int, given bool, perDC string) (cassandra.Replication, error) {
	perDC = strings.TrimSpace(perDC)
	if perDC == "" {
		switch {
		case !given:
			rf = cassandra.DefaultReplicationFactor
		case rf < 1:
			return cassandra.Replication{}, usagef("--replication-factor must be at least 1")
		}
		return cassandra.Replication{Strategy: cassandra.SimpleStrategy, ReplicationFactor: rf}, nil
	}
	if given {
		return cassandra.Replication{}, usagef("--replication and --replication-factor exclude each other: give replicas per data center (--replication dc1:3,dc2:3) or one factor for a single data center")
	}
	dcs := map[string]int{}
	for _, part := range strings.Split(perDC, ",") {
		name, n, ok := strings.Cut(strings.TrimSpace(part), ":")
		name = strings.TrimSpace(name)
		count, err := strconv.Atoi(strings.TrimSpace(n))
		switch {
		case !ok || name == "" || err != nil:
			return cassandra.Replication{}, usagef("--replication %q: want DATACENTER:REPLICAS[,DATACENTER:REPLICAS…], such as dc1:3,dc2:3", perDC)
		case count < 0:
			return cassandra.Replication{}, usagef("--replication: %s has %d replicas; want 0 or more", name, count)
		}
		if _, dup := dcs[name]; dup {
			return cassandra.Replication{}, usagef("--replication names data center %s twice", name)
		}
		dcs[name] = count
	}
	total := 0
	for _, n := range dcs {
		total += n
	}
	if total == 0 {
		return cassandra.Replication{}, usagef("--replication %q keeps no replica anywhere", perDC)
	}
	return cassandra.Replication{Strategy: cassandra.NetworkTopologyStrategy, DataCenters: dcs}, nil
}

// openTimeout bounds opening Cassandra: connecting, and, on a fresh
// keyspace, waiting for the schema lock and creating some twenty tables,
// each awaited on every node (seconds apiece on a busy 2.1 cluster).
const openTimeout = 3 * time.Minute

// openCassandra opens the driver. The driver's errors say what failed
// (connecting, the lock, schema agreement, and on which nodes); only a
// plain deadline is put in words here.
func openCassandra(ctx context.Context, cfg cassandra.Config) (*cassandra.Driver, error) {
	openCtx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	d, err := cassandra.Open(openCtx, cfg)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, fmt.Errorf("opening cassandra at %s took longer than %v: %w", strings.Join(cfg.Hosts, ","), openTimeout, err)
		}
		return nil, err
	}
	return d, nil
}

// secret is a value given either as itself (flag, environment) or as a
// file holding it on its first line, as secret stores mount them; giving
// both is a mistake.
func secret(value, valueFlag, file, fileFlag string) (string, error) {
	switch {
	case file == "":
		return value, nil
	case value != "":
		return "", usagef("%s (or its environment variable) and %s: give one", valueFlag, fileFlag)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", usagef("%s: %v", fileFlag, err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	if first = strings.TrimSuffix(first, "\r"); first == "" {
		return "", usagef("%s: %s has an empty first line", fileFlag, file)
	}
	return first, nil
}

// deleteDelay is --delete-delay, or its default for the store. It must
// cover the library's refresh (5s) and write timeout (10s) and, on
// Cassandra, the largest disagreement between two servers' clocks, which
// --max-clock-skew bounds at twice itself (each server within it of the
// store's clock). One embedded server has no other clock to disagree with.
func deleteDelay(f serveFlags) (time.Duration, error) {
	const refreshAndWrite = 25 * time.Second // refresh, and a write and its taking back
	var skew time.Duration
	if f.cassandra != "" && f.maxClockSkew > 0 {
		skew = 2 * f.maxClockSkew
	}
	switch {
	case f.deleteDelay < 0:
		return 0, usagef("--delete-delay %v is negative", f.deleteDelay)
	case f.deleteDelay != 0 && f.deleteDelay <= refreshAndWrite+skew:
		return 0, usagef("--delete-delay %v must exceed %v plus twice --max-clock-skew on Cassandra (%v)", f.deleteDelay, refreshAndWrite, skew)
	case f.deleteDelay != 0:
		return f.deleteDelay, nil
	case f.cassandra == "":
		return refreshAndWrite + 5*time.Second, nil
	}
	return max(3*time.Minute, refreshAndWrite+skew+15*time.Second), nil
}
