package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/apikey"
	"github.com/abacusdb/abacus/internal/names"
)

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, api.Health{Status: "ok"})
}

// readyz asks the store itself: a namespace lookup would be answered from the
// client's cache and say nothing about whether the store still answers.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		writeError(w, r, errorf(api.CodeUnavailable, "shutting down"))
		return
	}
	if s.clock.skewed.Load() {
		writeError(w, r, s.clockError())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.ReadyTimeout)
	defer cancel()
	if _, err := s.client.Namespaces(ctx); err != nil {
		writeError(w, r, errorf(api.CodeUnavailable, "store does not answer: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, api.Health{Status: "ok"})
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(api.OpenAPI)
}

func namespaceJSON(ns *abacus.Namespace) api.Namespace {
	return api.Namespace{
		Name:             ns.Name,
		Model:            string(ns.Model),
		Type:             ns.Type,
		ReadConsistency:  ns.ReadConsistency.String(),
		WriteConsistency: ns.WriteConsistency.String(),
		CreatedAt:        ns.CreatedAt,
		TTLSeconds:       int64(ns.TTL / time.Second),
		Ledger:           ledgerOptionsJSON(ns.Ledger),
		Events:           eventsOptionsJSON(ns.Events),
	}
}

func (s *Server) listNamespaces(w http.ResponseWriter, r *http.Request) {
	after, limit, err := pageParams(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	list, err := s.client.Namespaces(r.Context())
	if err != nil {
		writeError(w, r, err)
		return
	}
	list = readable(s, r, apikey.KindNamespace, list, func(ns *abacus.Namespace) string { return ns.Name })
	items, next := page(list, func(ns *abacus.Namespace) string { return ns.Name }, after, limit)
	writeJSON(w, http.StatusOK, api.NamespaceList{Namespaces: jsonEach(items, namespaceJSON), Next: next})
}

func (s *Server) listCounters(w http.ResponseWriter, r *http.Request) {
	after, limit, err := pageParams(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	ns := r.PathValue("ns")
	names, err := s.client.Counters(r.Context(), ns)
	if err != nil {
		writeError(w, r, err)
		return
	}
	items, next := page(names, func(n string) string { return n }, after, limit)
	writeJSON(w, http.StatusOK, api.CounterList{Namespace: ns, Counters: append([]string{}, items...), Next: next})
}

func (s *Server) createNamespace(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeRequest(s, w, r, decodeNamespaceCreate)
	if !ok {
		return
	}
	if !s.allowed(r, apikey.KindNamespace, req.Name, apikey.Admin) {
		writeError(w, r, forbidden(r, apikey.KindNamespace, req.Name, apikey.Admin))
		return
	}
	nc, err := namespaceConfig(req)
	// A name the library will refuse anyway is refused for that, not
	// for the quota.
	if err == nil && names.CheckNew("namespace", req.Name) == nil {
		err = withinQuota(r.Context(), "namespaces", s.cfg.MaxNamespaces, s.client.Namespaces,
			func(ns *abacus.Namespace) string { return ns.Name }, req.Name)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	ns, err := s.client.CreateNamespace(r.Context(), nc)
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/namespaces/"+url.PathEscape(ns.Name))
	writeJSON(w, http.StatusCreated, namespaceJSON(ns))
}

// withinQuota refuses to create name once list says there are limit of
// what it makes already; a negative limit is none. A name that exists
// passes, so that its create answers "exists" as it always has.
func withinQuota[T any](ctx context.Context, what string, limit int, list func(context.Context) ([]T, error), nameOf func(T) string, name string) error {
	if limit < 0 {
		return nil
	}
	existing, err := list(ctx)
	if err != nil {
		return err
	}
	if n := len(existing); n >= limit && !slices.ContainsFunc(existing, func(e T) bool { return nameOf(e) == name }) {
		return errorf(api.CodeQuotaExceeded, "this server allows %d %s and there are %d; nothing was created (the operator sets the limit: serve --max-%s)", limit, what, n, what)
	}
	return nil
}

func namespaceConfig(req api.CreateNamespaceRequest) (abacus.NamespaceConfig, error) {
	rc, err := driver.ParseConsistency(req.ReadConsistency)
	if err != nil {
		return abacus.NamespaceConfig{}, errorf(api.CodeInvalidArgument, "field \"read_consistency\": %v", err)
	}
	wc, err := driver.ParseConsistency(req.WriteConsistency)
	if err != nil {
		return abacus.NamespaceConfig{}, errorf(api.CodeInvalidArgument, "field \"write_consistency\": %v", err)
	}
	lo, err := ledgerOptionsFromJSON(req.Ledger)
	if err != nil {
		return abacus.NamespaceConfig{}, err
	}
	eo, err := eventsOptionsFromJSON(req.Events)
	if err != nil {
		return abacus.NamespaceConfig{}, err
	}
	// The library owns the TTL's rules (abacus.MinTTL); this only keeps
	// seconds from overflowing a duration on the way there.
	if req.TTLSeconds > maxTTLSeconds {
		return abacus.NamespaceConfig{}, errorf(api.CodeInvalidArgument, "field \"ttl_seconds\": %d is more than %d", req.TTLSeconds, maxTTLSeconds)
	}
	// The library canonicalises model and type spelling itself.
	return abacus.NamespaceConfig{
		TTL:              time.Duration(req.TTLSeconds) * time.Second,
		Name:             req.Name,
		Model:            abacus.Model(req.Model),
		Type:             req.Type,
		ReadConsistency:  rc,
		WriteConsistency: wc,
		Ledger:           lo,
		Events:           eo,
	}, nil
}

// maxTTLSeconds is the longest TTL the API takes: a century, far below
// where seconds overflow a duration.
const maxTTLSeconds = 100 * 366 * 24 * 3600

func (s *Server) getNamespace(w http.ResponseWriter, r *http.Request) {
	ns, err := s.client.Namespace(r.Context(), r.PathValue("ns"))
	writeResult(w, r, ns, err, namespaceJSON)
}

// newRequestID returns a version 7 UUID: 74 random bits per millisecond
// are enough that two updates never share an id by chance (which would
// make the second a "retry" of the first), and its time part lets an
// events counter use it as the event's time.
func newRequestID() string { return abacus.NewRequestID() }

// announceRequestID returns the request's id — the body's, else the
// Idempotency-Key header's, else one the server chooses — after putting it
// in the answer's header and the log. Both carry it even on failure, so a
// caller that let the server choose it can still retry an unknown outcome
// safely. A header and a body that name different ids are refused.
func announceRequestID(w http.ResponseWriter, r *http.Request, id string) (string, error) {
	key, err := idempotencyKey(r)
	switch {
	case err != nil:
		return "", err
	case key != "" && id != "" && key != id:
		return "", errorf(api.CodeInvalidArgument, "%s %q and request_id %q differ; send the request id once", idempotencyKeyHeader, key, id)
	case id == "":
		id = key
	}
	if id == "" {
		id = newRequestID()
	}
	w.Header().Set("Abacus-Request-Id", id)
	logAttrs(r, slog.String("request_id", id))
	return id, nil
}

func (s *Server) update(w http.ResponseWriter, r *http.Request) {
	ns, counter := r.PathValue("ns"), r.PathValue("counter")
	body, err := readBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		s.countUpdate(err)
		writeError(w, r, err)
		return
	}
	req, err := decodeUpdate(body)
	if err != nil {
		s.countUpdate(err)
		writeError(w, r, err)
		return
	}
	if req.RequestID, err = announceRequestID(w, r, req.RequestID); err != nil {
		s.countUpdate(err)
		writeError(w, r, err)
		return
	}
	res, err := s.client.Update(r.Context(), abacus.Update{
		Namespace: ns, Counter: counter, Delta: req.Delta, Item: req.Item, RequestID: req.RequestID,
		Time: timeOrZero(req.Time),
	})
	s.countUpdate(err)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := api.UpdateResponse{Namespace: nsOrDefault(ns), Counter: counter, RequestID: req.RequestID, Acknowledged: true, Replayed: res.Replayed}
	if req.ReturnValue {
		// The update is stored whatever the read does, so the answer is
		// 200 either way: an error status would tell the caller to retry
		// (or not) as if nothing had been written.
		v, err := s.client.Get(r.Context(), ns, counter)
		if err != nil {
			code, msg := errorCode(err)
			out.ValueError = &api.Error{Code: code, Message: "the update was acknowledged; reading the value after it failed: " + msg}
		} else {
			vj := valueJSON(v)
			out.Value = &vj
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func timeOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

func valueJSON(v *abacus.Value) api.Value {
	out := api.Value{
		Namespace: v.Namespace, Counter: v.Counter, Type: v.Type, Model: string(v.Model),
		Value: v.Value, Saturated: v.Saturated, Exact: v.Exact, Empty: v.Empty, Shards: v.Shards, Events: v.Events, Actors: v.Actors,
		Cached: v.Cached,
	}
	if !v.AsOf.IsZero() {
		out.AsOf = &v.AsOf
	}
	if !v.RolledUpTo.IsZero() {
		out.RolledUpTo = &v.RolledUpTo
	}
	return out
}

func nsOrDefault(ns string) string {
	if ns == "" {
		return abacus.DefaultNamespace
	}
	return ns
}

func (s *Server) countUpdate(err error) {
	result := "acknowledged"
	if err != nil {
		result, _ = errorCode(err)
	}
	s.metrics.updates.WithLabelValues(result).Inc()
}

func (s *Server) batch(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeRequest(s, w, r, decodeBatch)
	if !ok {
		return
	}
	// All or nothing for caller mistakes: check every item before applying
	// any, so a client that fixes its request does not double-count the
	// items that happened to be fine the first time.
	err := firstInvalid(len(req.Updates), func(i int) error {
		u := req.Updates[i]
		if ns := nsOrDefault(u.Namespace); !s.allowed(r, apikey.KindNamespace, ns, apikey.Write) {
			return forbidden(r, apikey.KindNamespace, ns, apikey.Write)
		}
		return s.checkUpdate(r.Context(), u)
	})
	if err != nil {
		writeError(w, r, err)
		return
	}

	res := api.BatchResponse{Results: make([]api.BatchResult, len(req.Updates))}
	var wg sync.WaitGroup
	for i, u := range req.Updates {
		if u.RequestID == "" {
			u.RequestID = newRequestID()
		}
		res.Results[i].RequestID = u.RequestID
		// Concurrent, so updates to one counter share a group commit
		// instead of each waiting for its own shard write.
		wg.Go(func() {
			err := s.client.Apply(r.Context(), abacus.Update{
				Namespace: u.Namespace, Counter: u.Counter, Delta: u.Delta, Item: u.Item, RequestID: u.RequestID,
				Time: timeOrZero(u.Time),
			})
			s.countUpdate(err)
			if err != nil {
				code, msg := errorCode(err)
				res.Results[i].Error = &api.Error{Code: code, Message: msg}
				return
			}
			res.Results[i].Acknowledged = true
		})
	}
	wg.Wait()
	logAttrs(r, slog.Int("updates", len(req.Updates)))
	writeJSON(w, http.StatusOK, res)
}

// checkUpdate makes the checks Client.Apply would make, without applying,
// so a batch can be refused as a whole.
func (s *Server) checkUpdate(ctx context.Context, u api.BatchUpdate) error {
	return s.client.Check(ctx, abacus.Update{
		Namespace: u.Namespace, Counter: u.Counter, Delta: u.Delta, Item: u.Item, RequestID: u.RequestID,
		Time: timeOrZero(u.Time),
	})
}

// stalenessForm is the max_staleness the API documents (api/openapi.yaml):
// Go's duration syntax without a sign and without bare fractions, which
// ParseDuration would also take.
var stalenessForm = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$|^0$`)

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	var within time.Duration
	if query := r.URL.Query(); query.Has("max_staleness") {
		q := query.Get("max_staleness")
		d, err := time.ParseDuration(q)
		if !stalenessForm.MatchString(q) || err != nil {
			writeError(w, r, fmt.Errorf("%w: max_staleness %q is not a duration such as 500ms or 2s", abacus.ErrInvalid, q))
			return
		}
		within = d
	}
	v, err := s.client.GetWithin(r.Context(), r.PathValue("ns"), r.PathValue("counter"), within)
	writeResult(w, r, v, err, valueJSON)
}

func (s *Server) gc(w http.ResponseWriter, r *http.Request) {
	ns, counter := r.PathValue("ns"), r.PathValue("counter")
	res, err := s.client.GC(r.Context(), ns, counter)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := api.GCResult{Namespace: nsOrDefault(ns), Counter: counter, Folded: res.Folded, Skipped: res.Skipped}
	if res.Err != nil {
		out.Error = res.Err.Error()
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) gcAll(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeRequest(s, w, r, decodeGCAll)
	if !ok {
		return
	}
	results, err := s.client.GCAll(r.Context(), req.Namespace)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := api.GCAllResult{Counters: len(results)}
	for _, res := range results {
		out.Folded += res.Folded
		if res.Skipped {
			out.Skipped++
		}
	}
	writeJSON(w, http.StatusOK, out)
}
