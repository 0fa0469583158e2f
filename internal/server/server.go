package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/internal/apikey"
	"github.com/abacusdb/abacus/internal/console"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Defaults of Config.
const (
	DefaultAddr            = "127.0.0.1:7070"
	DefaultShutdownTimeout = 30 * time.Second
	DefaultMaxNamespaces   = 10_000
	DefaultMaxQueues       = 1_000

	DefaultMetricsMaxNamespaces = 100
)

// Config configures a Server. Zero fields take the documented defaults.
type Config struct {
	// Client serves every request. Required. Run starts it and stops it on
	// shutdown; the caller still owns (and closes) its driver.
	Client *abacus.Client

	// Addr is the TCP address Run listens on. Default "127.0.0.1:7070":
	// loopback only, where (with Auth auto) no API key is asked for.
	Addr string

	// AllowedHosts are host names (no port) the server answers to besides
	// loopback names and addresses when Addr is a loopback address: every
	// other Host header is refused (403 forbidden), which is what stops DNS
	// rebinding. Ignored when Addr is not loopback. Default none.
	AllowedHosts []string

	// TLS, when set, makes Run and Serve speak HTTPS with it: its
	// certificates, and client certificates verified when its ClientAuth
	// asks for them. Default nil: plain HTTP, for loopback or a network
	// whose TLS ends in a proxy in front.
	TLS *tls.Config

	// MaxNamespaces and MaxQueues bound how many namespaces and queues a
	// create may bring the store to (403 quota_exceeded past them), so
	// that no client can fill the store or the metrics with names.
	// Servers check on their own, so servers creating at once may pass a
	// limit by one each. Default 10,000 and 1,000; negative: no limit.
	MaxNamespaces, MaxQueues int

	// MetricsMaxNamespaces is how many namespaces get series of their own
	// in abacus_namespace_requests_total; requests about the others are
	// counted under namespace="_other". Default 100; negative: none get
	// their own.
	MetricsMaxNamespaces int

	// Version and Commit identify the build in the abacus_build_info
	// metric. Default "dev" and "".
	Version, Commit string

	// MaxBodyBytes limits request bodies. Default 1 MiB.
	MaxBodyBytes int64

	// Logger receives request logs (debug for successes, info for caller
	// errors, warn for server errors). Default slog.Default().
	Logger *slog.Logger

	// Registry receives the server's metrics and is exported on /metrics.
	// Default: a new registry. To also record the sharded engine's
	// measurements, create the client with Hooks(Registry).
	Registry *prometheus.Registry

	// ShutdownTimeout bounds how long Run waits for in-flight requests and
	// shard writes after its context is cancelled. Default 30s.
	ShutdownTimeout time.Duration

	// ReadyTimeout bounds the store probe of /readyz. Default 2s.
	ReadyTimeout time.Duration

	// MaxClockSkew is how far this server's clock may be from the store's
	// (Client.ClockSkew) before the server stops taking writes: every POST
	// answers 503 unavailable and /readyz fails, until the clock is back
	// within it. Keep it below the smallest margin the models rely on (the
	// events rollup delay, 5m by default; the sharded GC grace, 24h).
	// Default 1m; negative disables the check. Stores without a clock (the
	// embedded store) are never checked.
	MaxClockSkew time.Duration

	// ClockCheckInterval is how often the clock is compared with the
	// store's while serving (once before serving, too). Default 30s.
	ClockCheckInterval time.Duration

	// Auth says when requests must carry an API key (AuthMode). Default
	// AuthAuto: when the listener is not loopback only — Serve's listener,
	// or, for Handler() mounted elsewhere, Addr (default loopback).
	Auth AuthMode

	// Keys authenticates API keys and serves /v1/keys. Default: keys kept
	// in the client's store, trusted for apikey.DefaultCacheTTL.
	Keys *apikey.Keys

	// NoConsole leaves out the web console under /ui (internal/console),
	// which is served by default and obeys Auth like the API.
	NoConsole bool
}

func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, api.DefaultMaxBodyBytes)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, DefaultShutdownTimeout)
	c.ReadyTimeout = cmp.Or(c.ReadyTimeout, 2*time.Second)
	c.MaxClockSkew = cmp.Or(c.MaxClockSkew, time.Minute)
	c.ClockCheckInterval = cmp.Or(c.ClockCheckInterval, 30*time.Second)
	c.MaxNamespaces = cmp.Or(c.MaxNamespaces, DefaultMaxNamespaces)
	c.MaxQueues = cmp.Or(c.MaxQueues, DefaultMaxQueues)
	c.Auth = cmp.Or(c.Auth, AuthAuto)
	c.MetricsMaxNamespaces = cmp.Or(c.MetricsMaxNamespaces, DefaultMetricsMaxNamespaces)
	if c.Keys == nil && c.Client != nil {
		c.Keys = apikey.New(c.Client.Driver(), 0)
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("server: Config.Client is required")
	case c.MaxBodyBytes < 0:
		return fmt.Errorf("server: Config.MaxBodyBytes is %d, must not be negative", c.MaxBodyBytes)
	case c.ShutdownTimeout < 0 || c.ReadyTimeout < 0:
		return errors.New("server: timeouts in Config must not be negative")
	case c.ClockCheckInterval < 0:
		return errors.New("server: Config.ClockCheckInterval must not be negative")
	case c.Auth != AuthAuto && c.Auth != AuthOn && c.Auth != AuthOff:
		return fmt.Errorf("server: Config.Auth %q: want auto, on or off", c.Auth)
	}
	return nil
}

// Server is the Abacus HTTP API server.
type Server struct {
	cfg      Config
	client   *abacus.Client
	log      *slog.Logger
	metrics  *metrics
	handler  http.Handler
	routes   []string // "METHOD /path" patterns, for tests and the OpenAPI check
	draining atomic.Bool
	// loopbackOnly is set while the server is known to listen on loopback
	// only; guardBrowsers then checks Host headers (origin.go).
	loopbackOnly atomic.Bool
	// authOn is set while requests must carry an API key (auth.go).
	authOn atomic.Bool
	limits keyLimits
	queues consumers // pull consumers of the receive endpoint (queue.go)
	clock  clockGuard
}

// New returns a server for cfg. It does not listen yet; see Run, Serve and Handler.
func New(cfg Config) (*Server, error) {
	explicitLoopback := cfg.Addr != "" && listensOnLoopback(cfg.Addr)
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:     cfg,
		client:  cfg.Client,
		log:     cfg.Logger,
		metrics: newMetrics(cfg.Registry),
	}
	s.metrics.nsLabels.max = max(cfg.MetricsMaxNamespaces, 0)
	registerClient(cfg.Registry, cfg.Client)
	registerBuildInfo(cfg.Registry, cmp.Or(cfg.Version, "dev"), cfg.Commit)
	register(cfg.Registry, newQueueCollector(cfg.Client.Queues()))
	s.loopbackOnly.Store(explicitLoopback)
	s.authOn.Store(AuthRequired(cfg.Auth, cfg.Addr))
	mux := s.routesMux()
	if !cfg.NoConsole {
		ui, err := console.New(console.Config{Client: cfg.Client, Gate: consoleGate{s}, Logger: cfg.Logger})
		if err != nil {
			return nil, err
		}
		mux.Handle("/ui", ui)
		mux.Handle("/ui/", ui)
	}
	s.handler = s.instrument(s.guardBrowsers(refuseUncleanPaths(mux)))
	return s, nil
}

// Handler returns the server's HTTP handler, for tests and for embedding in
// another server. It does not start or stop the client.
func (s *Server) Handler() http.Handler { return s.handler }

// Routes returns the registered route patterns, like
// "POST /v1/namespaces/{ns}/counters/{counter}/updates".
func (s *Server) Routes() []string { return append([]string(nil), s.routes...) }

func (s *Server) routesMux() *http.ServeMux {
	mux := http.NewServeMux()
	methods := map[string][]string{} // path -> methods, for 405 answers
	register := func(method, path string, h http.HandlerFunc, takesKey bool) {
		pattern := method + " " + path
		if method == "POST" || method == "DELETE" {
			// Every change is stamped by this server's clock (a delete's
			// effective time too).
			h = s.refuseWhenSkewed(h)
		}
		if method == "POST" && !takesKey {
			h = refuseIdempotencyKey(path, h)
		}
		a, ok := routeAccess[pattern]
		if !ok {
			panic("server: route " + pattern + " has no access rule in routeAccess")
		}
		mux.HandleFunc(pattern, s.authenticate(a, h))
		s.routes = append(s.routes, pattern)
		methods[path] = append(methods[path], method)
	}
	handle := func(method, path string, h http.HandlerFunc) { register(method, path, h, false) }
	// handleRequest registers a POST whose request id the Idempotency-Key
	// header may set (idempotency.go).
	handleRequest := func(path string, h http.HandlerFunc) { register("POST", path, h, true) }

	handle("GET", "/healthz", s.healthz)
	handle("GET", "/readyz", s.readyz)
	handle("GET", "/metrics", promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{}).ServeHTTP)
	handle("GET", "/v1/openapi.yaml", s.openapi)
	handle("GET", "/v1/namespaces", s.listNamespaces)
	handle("POST", "/v1/namespaces", s.createNamespace)
	handle("GET", "/v1/namespaces/{ns}", s.getNamespace)
	handle("DELETE", "/v1/namespaces/{ns}", s.deleteNamespace)
	handle("GET", "/v1/namespaces/{ns}/counters", s.listCounters)
	handleRequest("/v1/namespaces/{ns}/counters/{counter}/updates", s.update)
	handle("GET", "/v1/namespaces/{ns}/counters/{counter}", s.get)
	handle("DELETE", "/v1/namespaces/{ns}/counters/{counter}", s.deleteCounter)
	handle("POST", "/v1/namespaces/{ns}/counters/{counter}/gc", s.gc)
	handleRequest("/v1/namespaces/{ns}/counters/{counter}/clear", s.clear)
	handle("POST", "/v1/namespaces/{ns}/counters/{counter}/actors/{actor}", s.setActor)
	handleRequest("/v1/namespaces/{ns}/ledgers/{ledger}/credits", s.ledgerUpdate(opCredit))
	handleRequest("/v1/namespaces/{ns}/ledgers/{ledger}/debits", s.ledgerUpdate(opDebit))
	handleRequest("/v1/namespaces/{ns}/ledgers/{ledger}/updates", s.ledgerUpdate(opUpdate))
	handleRequest("/v1/namespaces/{ns}/ledgers/{ledger}/transfers", s.ledgerTransfer)
	handle("GET", "/v1/namespaces/{ns}/ledgers/{ledger}", s.ledgerValue)
	handle("DELETE", "/v1/namespaces/{ns}/ledgers/{ledger}", s.deleteLedger)
	handle("POST", "/v1/namespaces/{ns}/ledgers/{ledger}/find", s.ledgerFind)
	handle("GET", "/v1/namespaces/{ns}/ledgers/{ledger}/requests/{request_id}", s.ledgerHasRequest)
	handle("GET", "/v1/namespaces/{ns}/ledgers/{ledger}/entries", s.ledgerHistory)
	handle("POST", "/v1/updates", s.batch)
	handle("POST", "/v1/ledger-updates", s.ledgerBatch)
	handle("POST", "/v1/gc", s.gcAll)
	s.queueRoutes(handle)
	handle("GET", "/v1/keys", s.listKeys)
	handle("POST", "/v1/keys", s.createKey)
	handle("DELETE", "/v1/keys/{id}", s.revokeKey)

	// ServeMux answers unknown routes and wrong methods with plain text; a
	// method-less pattern per path (less specific than the ones above) and a
	// catch-all keep every error in the JSON format.
	for path, ms := range methods {
		allow := append([]string(nil), ms...)
		for _, m := range ms {
			if m == "GET" {
				allow = append(allow, "HEAD")
			}
		}
		sort.Strings(allow)
		allowed := strings.Join(allow, ", ")
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allowed)
			writeError(w, r, errorf(api.CodeMethodNotAllowed, "%s is not allowed on %s; use %s", r.Method, path, allowed))
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, errorf(api.CodeNotFound, "no route for %s %s", r.Method, r.URL.Path))
	})
	return mux
}

// refuseUncleanPaths answers a path with an empty, "." or ".." segment
// with a JSON error. ServeMux would redirect it to the cleaned path, which
// is a different resource (".../counters//updates" is not an update of a
// counter named ""), with an empty body a client cannot act on.
func refuseUncleanPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath()
		if p == "" || p[0] != '/' || p == "/" || p == "/ui/" { // the console sends "/ui/" on to "/ui"
			next.ServeHTTP(w, r)
			return
		}
		for seg := range strings.SplitSeq(p[1:], "/") {
			switch seg {
			case "":
				writeError(w, r, errorf(api.CodeInvalidArgument, "path %q has an empty segment: names must not be empty, and paths have no trailing slash", p))
				return
			case ".", "..":
				writeError(w, r, errorf(api.CodeInvalidArgument, "path %q has a %q segment; to name a counter %q, percent-encode it (%%2E)", p, seg, seg))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Run listens on Config.Addr and serves until ctx is cancelled; see Serve.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w", s.cfg.Addr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve starts the client's background work and serves on ln until ctx is
// cancelled. Then it shuts down gracefully: it stops accepting connections,
// waits for in-flight requests (an update's response waits for its shard
// write) and finally stops the client so that no accepted write is left
// behind. Everything after cancellation is bounded by Config.ShutdownTimeout.
// Serve closes ln. It returns nil after a clean shutdown.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if err := s.client.Start(ctx); err != nil {
		_ = ln.Close()
		return fmt.Errorf("server: start client: %w", err)
	}
	// The first comparison runs before the first request, so a server
	// started with a wrong clock never takes a write.
	s.checkClock(ctx)
	stopClock := s.watchClock()
	defer stopClock()
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		// Bounds a slow body upload. There is deliberately no WriteTimeout:
		// an update's answer waits for its shard write, and cutting it off
		// would turn an acknowledged update into an unknown outcome.
		ReadTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.loopbackOnly.Store(listensOnLoopback(ln.Addr().String()))
	s.authOn.Store(AuthRequired(s.cfg.Auth, ln.Addr().String()))
	scheme := "http"
	if s.cfg.TLS != nil {
		ln, scheme = tls.NewListener(ln, s.cfg.TLS), "https"
	}
	s.log.Info("listening", "addr", ln.Addr().String(), "scheme", scheme)

	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()

	var err error
	select {
	case <-ctx.Done():
	case err = <-serveErr:
		// The listener failed; still drain and stop the client below.
		err = fmt.Errorf("server: serve: %w", err)
	}

	s.draining.Store(true)
	s.log.Info("shutting down", "timeout", s.cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	if serr := hs.Shutdown(sctx); serr != nil {
		// Requests still running past the deadline are cut off; their
		// updates end as unknown outcomes, which is the truth.
		_ = hs.Close()
		err = errors.Join(err, fmt.Errorf("server: shutdown: %w", serr))
	}
	if qerr := s.queues.stop(sctx); qerr != nil {
		err = errors.Join(err, fmt.Errorf("server: stop queue consumers: %w", qerr))
	}
	if cerr := s.client.Stop(sctx); cerr != nil {
		err = errors.Join(err, fmt.Errorf("server: stop client: %w", cerr))
	}
	s.log.Info("stopped")
	return err
}
