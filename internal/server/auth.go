package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/internal/apikey"
	"github.com/abacusdb/abacus/internal/outcome"
	"golang.org/x/time/rate"
)

// AuthMode says when requests must carry an API key.
type AuthMode string

// Auth modes.
const (
	// AuthAuto requires keys when the server listens beyond loopback, and
	// leaves a loopback server open (guardBrowsers still keeps web pages
	// out). The default.
	AuthAuto AuthMode = "auto"
	// AuthOn requires keys wherever the server listens.
	AuthOn AuthMode = "on"
	// AuthOff never asks for one: for a network that is itself the guard
	// (client certificates, a private segment).
	AuthOff AuthMode = "off"
)

// ParseAuthMode parses "auto", "on" or "off".
func ParseAuthMode(s string) (AuthMode, error) {
	switch m := AuthMode(s); m {
	case AuthAuto, AuthOn, AuthOff:
		return m, nil
	}
	return "", fmt.Errorf("auth mode %q: want auto, on or off", s)
}

// AuthRequired reports whether a server with mode listening on addr asks
// every request (but health probes) for an API key.
func AuthRequired(mode AuthMode, addr string) bool {
	switch mode {
	case AuthOn:
		return true
	case AuthOff:
		return false
	}
	return !listensOnLoopback(addr)
}

// access is what a route asks of the request's key: nothing (public), any
// valid key (anyKey: the handler checks what the body names), or role over
// the namespace or queue its path names, or over everything (kind "*").
type access struct {
	kind  string // "", "any", apikey.KindNamespace, apikey.KindQueue or "*"
	param string // path value naming the resource
	role  apikey.Role
}

var (
	public      = access{}
	anyKey      = access{kind: "any"}
	globalAdmin = access{kind: "*", role: apikey.Admin}
	// onMetrics: /metrics names namespaces and queues, so it takes a
	// scope of its own (metrics:read) or *:read, not just any key.
	onMetrics = access{kind: apikey.KindMetrics, role: apikey.Read}
)

func onNamespace(role apikey.Role) access {
	return access{kind: apikey.KindNamespace, param: "ns", role: role}
}

func onQueue(role apikey.Role) access {
	return access{kind: apikey.KindQueue, param: "queue", role: role}
}

// routeAccess is the access rule of every route. Registering a route that
// is not here panics, so none can be added without deciding who may call it.
var routeAccess = map[string]access{
	"GET /healthz":                     public,
	"GET /readyz":                      public,
	"GET /v1/openapi.yaml":             public,
	"GET /metrics":                     onMetrics,
	"GET /v1/namespaces":               anyKey, // lists what the key may read
	"POST /v1/namespaces":              anyKey, // admin on the name in the body
	"GET /v1/namespaces/{ns}":          onNamespace(apikey.Read),
	"DELETE /v1/namespaces/{ns}":       onNamespace(apikey.Admin),
	"GET /v1/namespaces/{ns}/counters": onNamespace(apikey.Read),
	"POST /v1/namespaces/{ns}/counters/{counter}/updates":            onNamespace(apikey.Write),
	"GET /v1/namespaces/{ns}/counters/{counter}":                     onNamespace(apikey.Read),
	"DELETE /v1/namespaces/{ns}/counters/{counter}":                  onNamespace(apikey.Write), // as a clear
	"DELETE /v1/namespaces/{ns}/ledgers/{ledger}":                    onNamespace(apikey.Admin), // balances and request ids go
	"POST /v1/namespaces/{ns}/counters/{counter}/gc":                 onNamespace(apikey.Admin),
	"POST /v1/namespaces/{ns}/counters/{counter}/clear":              onNamespace(apikey.Write),
	"POST /v1/namespaces/{ns}/counters/{counter}/actors/{actor}":     onNamespace(apikey.Write),
	"POST /v1/namespaces/{ns}/ledgers/{ledger}/credits":              onNamespace(apikey.Write),
	"POST /v1/namespaces/{ns}/ledgers/{ledger}/debits":               onNamespace(apikey.Write),
	"POST /v1/namespaces/{ns}/ledgers/{ledger}/transfers":            onNamespace(apikey.Write),
	"POST /v1/namespaces/{ns}/ledgers/{ledger}/updates":              onNamespace(apikey.Write),
	"GET /v1/namespaces/{ns}/ledgers/{ledger}":                       onNamespace(apikey.Read),
	"POST /v1/namespaces/{ns}/ledgers/{ledger}/find":                 onNamespace(apikey.Read),
	"GET /v1/namespaces/{ns}/ledgers/{ledger}/requests/{request_id}": onNamespace(apikey.Read),
	"GET /v1/namespaces/{ns}/ledgers/{ledger}/entries":               onNamespace(apikey.Read),
	"POST /v1/updates":                     anyKey, // write on each item's namespace
	"POST /v1/ledger-updates":              anyKey, // write on each item's namespace
	"POST /v1/gc":                          globalAdmin,
	"GET /v1/queues":                       anyKey, // lists what the key may read
	"POST /v1/queues":                      anyKey, // admin on the name in the body
	"GET /v1/queues/{queue}":               onQueue(apikey.Read),
	"DELETE /v1/queues/{queue}":            onQueue(apikey.Admin),
	"POST /v1/queues/{queue}/messages":     onQueue(apikey.Write),
	"POST /v1/queues/{queue}/receive":      onQueue(apikey.Write),
	"POST /v1/queues/{queue}/ack":          onQueue(apikey.Write),
	"POST /v1/queues/{queue}/nack":         onQueue(apikey.Write),
	"POST /v1/queues/{queue}/release":      onQueue(apikey.Write),
	"POST /v1/queues/{queue}/extend":       onQueue(apikey.Write),
	"GET /v1/queues/{queue}/stats":         onQueue(apikey.Read),
	"GET /v1/queues/{queue}/dead":          onQueue(apikey.Read),
	"POST /v1/queues/{queue}/dead/requeue": onQueue(apikey.Admin),
	"POST /v1/queues/{queue}/dead/delete":  onQueue(apikey.Admin),
	"GET /v1/queues/{queue}/pause":         onQueue(apikey.Read),
	"POST /v1/queues/{queue}/pause":        onQueue(apikey.Admin),
	"POST /v1/queues/{queue}/resume":       onQueue(apikey.Admin),
	"POST /v1/queues/{queue}/purge":        onQueue(apikey.Admin),
	"GET /v1/keys":                         globalAdmin,
	"POST /v1/keys":                        globalAdmin,
	"DELETE /v1/keys/{id}":                 globalAdmin,
}

type keyContextKey struct{}

// keyFrom returns the request's authenticated key, or nil when the server
// does not require keys.
func keyFrom(r *http.Request) *apikey.Key {
	k, _ := r.Context().Value(keyContextKey{}).(*apikey.Key)
	return k
}

// allowed reports whether the request may act with role on a resource its
// body names. A server that requires no keys allows everything.
func (s *Server) allowed(r *http.Request, kind, name string, role apikey.Role) bool {
	if !s.authOn.Load() {
		return true
	}
	k := keyFrom(r)
	return k != nil && k.Allows(kind, name, role)
}

// forbidden is the error of a key that lacks a scope.
func forbidden(r *http.Request, kind, name string, role apikey.Role) error {
	id := "?"
	if k := keyFrom(r); k != nil {
		id = k.ID
	}
	what := "everything"
	switch kind {
	case apikey.KindMetrics:
		what = "the metrics"
	case apikey.KindNamespace, apikey.KindQueue:
		what = fmt.Sprintf("%s %q", map[string]string{apikey.KindNamespace: "namespace", apikey.KindQueue: "queue"}[kind], name)
	}
	return errorf(api.CodeInsufficientScope, "API key %q may not %s %s; nothing was done", id, role, what)
}

// authenticate wraps a route's handler with its access rule: when the
// server requires keys, the request must carry a valid one (401), within
// its rate (429), with the scope the route asks for (403).
func (s *Server) authenticate(a access, h http.HandlerFunc) http.HandlerFunc {
	if a == public {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.authOn.Load() {
			h(w, r)
			return
		}
		token, ok := bearer(r)
		if !ok {
			unauthenticated(w, r, "this server requires an API key: send \"Authorization: Bearer <key>\"")
			return
		}
		key, err := s.cfg.Keys.Authenticate(r.Context(), token)
		if errors.Is(err, outcome.ErrUnauthenticated) {
			unauthenticated(w, r, err.Error())
			return
		}
		if err != nil {
			// The store could not say whether the key is good: serving
			// the request would be a guess, refusing it a lie.
			writeError(w, r, errorf(api.CodeUnavailable, "checking the API key: %v; nothing was done", err))
			return
		}
		if wait, ok := s.limits.take(key); !ok {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
			writeError(w, r, errorf(api.CodeRateLimited, "API key %q has used its %v requests per second on this server; retry after %v", key.ID, key.RatePerSecond, wait.Round(time.Millisecond)))
			return
		}
		if a.kind != "any" {
			name := ""
			if a.param != "" {
				name = r.PathValue(a.param)
			}
			if !key.Allows(a.kind, name, a.role) {
				writeError(w, r, forbidden(r.WithContext(context.WithValue(r.Context(), keyContextKey{}, key)), a.kind, name, a.role))
				return
			}
		}
		h(w, r.WithContext(context.WithValue(r.Context(), keyContextKey{}, key)))
	}
}

func unauthenticated(w http.ResponseWriter, r *http.Request, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="abacus"`)
	writeError(w, r, errorf(api.CodeUnauthenticated, "%s", msg))
}

// bearer returns the token of an "Authorization: Bearer" header. Two
// Authorization headers are refused: which one a proxy forwarded is not
// something to guess.
func bearer(r *http.Request) (string, bool) {
	vals := r.Header.Values("Authorization")
	if len(vals) != 1 {
		return "", false
	}
	scheme, token, ok := strings.Cut(vals[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// keyLimits holds a token bucket per key with a rate, on this server.
// Buckets are made when a key is first seen and follow its stored rate;
// they are dropped when the map grows past maxLimiters (a fresh bucket
// only ever allows more, by at most one burst).
type keyLimits struct {
	mu sync.Mutex
	m  map[string]*rate.Limiter
}

const maxLimiters = 10_000

func (l *keyLimits) take(k *apikey.Key) (wait time.Duration, ok bool) {
	if k.RatePerSecond <= 0 {
		return 0, true
	}
	l.mu.Lock()
	if l.m == nil || len(l.m) >= maxLimiters {
		l.m = map[string]*rate.Limiter{}
	}
	lim, found := l.m[k.ID]
	if !found {
		lim = rate.NewLimiter(rate.Limit(k.RatePerSecond), max(k.Burst, 1))
		l.m[k.ID] = lim
	}
	l.mu.Unlock()
	now := time.Now()
	res := lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d, false
	}
	return 0, true
}

// readable returns the items of list the request's key may read, in a new
// slice: list may be a cache's.
func readable[T any](s *Server, r *http.Request, kind string, list []T, nameOf func(T) string) []T {
	if !s.authOn.Load() {
		return list
	}
	out := make([]T, 0, len(list))
	for _, item := range list {
		if s.allowed(r, kind, nameOf(item), apikey.Read) {
			out = append(out, item)
		}
	}
	return out
}
