package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/abacusdb/abacus/api"
)

// DefaultTimeout bounds one HTTP attempt unless WithTimeout says otherwise.
const DefaultTimeout = 30 * time.Second

// maxResponseBytes guards against a misbehaving server or proxy; the largest
// legitimate response (a 1000-item batch result) is far smaller.
const maxResponseBytes = 32 << 20

// Client talks to one Abacus server. It is safe for concurrent use.
type Client struct {
	base       string // scheme://host[/prefix], no trailing slash
	hc         *http.Client
	timeout    time.Duration
	retries    int
	minBackoff time.Duration
	maxBackoff time.Duration
	apiKey     string
	headers    func(context.Context, http.Header)
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the client send requests with hc (for custom
// transports, TLS or proxies). Default: a dedicated http.Client.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithTLSConfig makes the client verify the server, and present a client
// certificate, as cfg says: for an https:// server whose certificate is
// signed by a private CA, or that asks for client certificates. It gives
// the client an http.Client of its own, replacing one set by an earlier
// WithHTTPClient (set TLS on that client's transport instead).
func WithTLSConfig(cfg *tls.Config) Option {
	return func(c *Client) {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = cfg
		c.hc = &http.Client{Transport: t}
	}
}

// WithAPIKey makes the client send key as "Authorization: Bearer key" on
// every request, as a server that requires API keys asks. Send it only
// over https:// beyond one machine: anyone who reads it can use it.
func WithAPIKey(key string) Option { return func(c *Client) { c.apiKey = key } }

// WithHeaders makes the client call set before it sends each request,
// with the request's context: for headers this package does not know,
// such as a trace's traceparent. With OpenTelemetry:
//
//	client.WithHeaders(func(ctx context.Context, h http.Header) {
//		otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(h))
//	})
//
// The client keeps to the standard library, so tracing stays the caller's
// choice of library.
func WithHeaders(set func(ctx context.Context, h http.Header)) Option {
	return func(c *Client) { c.headers = set }
}

// WithTimeout bounds each HTTP attempt (a retry gets a fresh timeout).
// Default 30s; zero or negative means no bound beyond the context's.
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithRetries makes updates retry up to n times after a transport error or a
// 502/503/504 answer, reusing the request id. Default 0: never retry.
func WithRetries(n int) Option { return func(c *Client) { c.retries = max(n, 0) } }

// WithBackoff sets the wait before the first retry and its upper bound; the
// wait doubles per attempt, with jitter. Default 100ms up to 5s.
func WithBackoff(first, limit time.Duration) Option {
	return func(c *Client) { c.minBackoff, c.maxBackoff = first, max(first, limit) }
}

// New returns a client for the server at baseURL, such as
// "http://127.0.0.1:7070". A path prefix (for a server behind a proxy) is kept.
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("client: server URL %q: %w", baseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("client: server URL %q: scheme must be http or https", baseURL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("client: server URL %q has no host", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("client: server URL %q must not have a query, fragment or user info", baseURL)
	}
	c := &Client{
		base:       strings.TrimRight(u.String(), "/"),
		hc:         &http.Client{},
		timeout:    DefaultTimeout,
		minBackoff: 100 * time.Millisecond,
		maxBackoff: 5 * time.Second,
	}
	for _, o := range opts {
		o(c)
	}
	if c.hc == nil {
		c.hc = &http.Client{}
	}
	return c, nil
}

// Error is an error answered by the server (Status > 0) or a request the
// client refused to send because the server would refuse it (Status 0).
type Error struct {
	// Status is the HTTP status, 0 when the request was not sent.
	Status int
	// Code is the API error code (see package api), or "" when the answer
	// did not come from an Abacus server (for example a proxy's 502).
	Code string
	// Message explains the error for humans.
	Message string
}

func (e *Error) Error() string {
	switch {
	case e.Status == 0:
		return fmt.Sprintf("abacus: %s (%s, not sent)", e.Message, e.Code)
	case e.Code == "":
		return fmt.Sprintf("abacus: HTTP %d: %s", e.Status, e.Message)
	}
	return fmt.Sprintf("abacus: %s (%s, HTTP %d)", e.Message, e.Code, e.Status)
}

// IsCode reports whether err is (or wraps) an *Error with the given API code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// Retryable reports whether an update that failed with err may be sent again
// with the same request id: a transport failure, or an answer saying the
// update may not have been (or was not) applied.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	var e *Error
	if errors.As(err, &e) {
		if e.Code != "" {
			return api.Retryable(e.Code)
		}
		switch e.Status {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	var de *decodeError
	// A 2xx whose body we could not read still means the update was applied;
	// a certificate the other side refused will be refused again.
	return !errors.As(err, &de) && !errors.Is(err, errLocal) && !RefusedByTLS(err)
}

// mayHaveApplied reports whether a failed attempt may have been applied:
// an unknown outcome, a gateway's 502 or 504, or a connection lost after
// the request went out. A refused connection, a failed TLS handshake and
// an Abacus refusal were not.
func mayHaveApplied(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		if e.Code != "" {
			return e.Code == api.CodeUnknownOutcome
		}
		return e.Status == http.StatusBadGateway || e.Status == http.StatusGatewayTimeout
	}
	var oe *net.OpError
	var de *decodeError
	return !(errors.As(err, &oe) && oe.Op == "dial") && !RefusedByTLS(err) &&
		!errors.Is(err, errLocal) && !errors.As(err, &de)
}

// RefusedByTLS reports whether err is a TLS handshake that failed: this
// side did not trust the server's certificate, or the server refused ours
// (or its absence) with an alert. The server handled no request, and a
// retry fails the same way.
func RefusedByTLS(err error) bool {
	var cve *tls.CertificateVerificationError
	var oe *net.OpError
	return errors.As(err, &cve) || errors.As(err, &oe) && oe.Op == "remote error"
}

// decodeError wraps a failure to decode a successful response.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return "abacus: decode response: " + e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }

// errLocal marks failures that happened before anything was sent.
var errLocal = errors.New("request not sent")

// NewRequestID returns a fresh request id: a version 7 UUID (74 random
// bits per millisecond). Its time part is what lets an events counter
// recognise a retry from any server: the id fixes the event's time.
func NewRequestID() string { return api.NewRequestID(time.Now()) }

// escape percent-encodes a name as one path segment. Everything outside the
// unreserved set is escaped, '.' included: the server cleans paths, and a
// literal "." or ".." segment would be resolved away instead of naming a
// counter.
func escape(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		const hexDigits = "0123456789ABCDEF"
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

func nsOrDefault(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

func requireName(kind, name string) error {
	if name == "" {
		return &Error{Code: api.CodeInvalidArgument, Message: kind + " name is empty"}
	}
	return nil
}

func counterPath(ns, counter string) string {
	return "/v1/namespaces/" + escape(nsOrDefault(ns)) + "/counters/" + escape(counter)
}

// call is do for the requests whose answer is one JSON value: it decodes
// the answer into a new T.
func call[T any](ctx context.Context, c *Client, method, path string, in any) (*T, error) {
	return callPick(ctx, c, method, path, in, answer[T])
}

// callNamed is call for a request about one named thing (kind says which):
// an empty name is refused before anything is sent.
func callNamed[T any](ctx context.Context, c *Client, kind, name, method, path string, in any) (*T, error) {
	return callNamedPick(ctx, c, kind, name, method, path, in, answer[T])
}

// answer is the pick of call and callNamed: the whole answer.
func answer[T any](out *T) *T { return out }

// callPick decodes the answer into a new T and returns the part of it that
// pick takes out (the list inside a list body, say); on error, the zero R.
func callPick[T, R any](ctx context.Context, c *Client, method, path string, in any, pick func(*T) R) (R, error) {
	var out T
	if err := c.do(ctx, method, path, in, &out); err != nil {
		var zero R
		return zero, err
	}
	return pick(&out), nil
}

// callNamedPick is callPick for a request about one named thing: an empty
// name is refused before anything is sent.
func callNamedPick[T, R any](ctx context.Context, c *Client, kind, name, method, path string, in any, pick func(*T) R) (R, error) {
	if err := requireName(kind, name); err != nil {
		var zero R
		return zero, err
	}
	return callPick(ctx, c, method, path, in, pick)
}

// do sends one request and decodes a 2xx body into out (if not nil).
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("abacus: encode request: %w: %w", errLocal, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("abacus: %w: %w", errLocal, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.headers != nil {
		c.headers(ctx, req.Header)
	}
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return responseError(resp, data)
	}
	if err != nil {
		return &decodeError{err}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return &decodeError{err}
		}
	}
	return nil
}

func responseError(resp *http.Response, data []byte) *Error {
	e := &Error{Status: resp.StatusCode}
	var body api.Error
	if json.Unmarshal(data, &body) == nil && body.Code != "" {
		e.Code, e.Message = body.Code, body.Message
		return e
	}
	// Not from an Abacus server (a proxy, a load balancer): keep a short
	// excerpt so the caller can tell what answered.
	msg := strings.TrimSpace(string(data))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	e.Message = msg
	return e
}

// retrying runs attempt until it succeeds, fails for good or the retries
// are used up.
//
// An attempt that may have been applied (an unknown outcome, a connection
// lost after sending) is not forgotten when a later one fails in a way
// that says nothing was applied (a refused connection, not_applied): the
// error returned then is the doubtful one, with the last failure in its
// text, so a caller does not take "nothing happened" for the truth.
func (c *Client) retrying(ctx context.Context, attempt func() error) error {
	var doubt error
	for n := 0; ; n++ {
		err := attempt()
		if err != nil && doubt == nil && mayHaveApplied(err) {
			doubt = err
		}
		if err == nil || n >= c.retries || !Retryable(err) || ctx.Err() != nil {
			if err != nil && doubt != nil && !mayHaveApplied(err) {
				return fmt.Errorf("%w (the last retry: %v)", doubt, err)
			}
			return err
		}
		if err := c.sleep(ctx, n); err != nil {
			return err
		}
	}
}

func (c *Client) sleep(ctx context.Context, n int) error {
	d := c.minBackoff << min(n, 20)
	if d > c.maxBackoff || d <= 0 {
		d = c.maxBackoff
	}
	// Full jitter in [d/2, d): retries from many callers spread out.
	if d > 1 {
		d = d/2 + mrand.N(d/2+1)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Healthz checks that the server process answers.
func (c *Client) Healthz(ctx context.Context) error {
	return c.do(ctx, "GET", "/healthz", nil, nil)
}

// Ready checks that the server can reach its store.
func (c *Client) Ready(ctx context.Context) error {
	return c.do(ctx, "GET", "/readyz", nil, nil)
}

// Namespaces lists every namespace, sorted by name.
func (c *Client) Namespaces(ctx context.Context) ([]api.Namespace, error) {
	return allPages(ctx, c, "/v1/namespaces", func(out *api.NamespaceList) ([]api.Namespace, string) { return out.Namespaces, out.Next })
}

// allPages reads every page of the list at path, following each page's
// next cursor.
func allPages[L any, T any](ctx context.Context, c *Client, path string, items func(*L) ([]T, string)) ([]T, error) {
	var all []T
	after := ""
	for {
		p := path
		if after != "" {
			p += "?after=" + url.QueryEscape(after)
		}
		out, err := call[L](ctx, c, "GET", p, nil)
		if err != nil {
			return nil, err
		}
		page, next := items(out)
		all = append(all, page...)
		if next == "" || next == after {
			if all == nil {
				all = []T{}
			}
			return all, nil
		}
		after = next
	}
}

// Namespace describes one namespace ("" means "default").
func (c *Client) Namespace(ctx context.Context, name string) (*api.Namespace, error) {
	return call[api.Namespace](ctx, c, "GET", "/v1/namespaces/"+escape(nsOrDefault(name)), nil)
}

// CreateNamespace creates a namespace.
func (c *Client) CreateNamespace(ctx context.Context, req api.CreateNamespaceRequest) (*api.Namespace, error) {
	return call[api.Namespace](ctx, c, "POST", "/v1/namespaces", req)
}

// Update applies one update to a counter ("" namespace means "default") and
// returns the request id it was sent with — req.RequestID, or a fresh one
// when that is empty — also when it fails, so an unknown outcome can be
// retried later with the same id.
func (c *Client) Update(ctx context.Context, namespace, counter string, req api.UpdateRequest) (string, error) {
	if req.RequestID == "" {
		req.RequestID = NewRequestID()
	}
	if err := requireName("counter", counter); err != nil {
		return req.RequestID, err
	}
	path := counterPath(namespace, counter) + "/updates"
	err := c.retrying(ctx, func() error {
		return c.do(ctx, "POST", path, req, nil)
	})
	return req.RequestID, err
}

// UpdateWithResult applies an update like Update and returns the server's
// answer, whose Replayed says the update was a recognised retry that added
// nothing (events counters, for a retry older than the namespace's seal).
// The response's RequestID is set also when it fails.
func (c *Client) UpdateWithResult(ctx context.Context, namespace, counter string, req api.UpdateRequest) (*api.UpdateResponse, error) {
	if req.RequestID == "" {
		req.RequestID = NewRequestID()
	}
	out := &api.UpdateResponse{RequestID: req.RequestID}
	if err := requireName("counter", counter); err != nil {
		return out, err
	}
	path := counterPath(namespace, counter) + "/updates"
	err := c.retrying(ctx, func() error {
		return c.do(ctx, "POST", path, req, out)
	})
	out.RequestID = req.RequestID
	return out, err
}

// Add adds delta to a sum counter (or observes it, for max and min).
func (c *Client) Add(ctx context.Context, namespace, counter string, delta int64) (string, error) {
	return c.Update(ctx, namespace, counter, api.UpdateRequest{Delta: delta})
}

// UpdateAndGet applies an update like Update and returns the counter's
// value read right after it (add-and-get). The response's RequestID is
// set also when it fails.
func (c *Client) UpdateAndGet(ctx context.Context, namespace, counter string, req api.UpdateRequest) (*api.UpdateResponse, error) {
	req.ReturnValue = true
	return c.UpdateWithResult(ctx, namespace, counter, req)
}

// Set stores an actor's value of a counter of model actor. Sets are
// idempotent, so retries need no request id.
func (c *Client) Set(ctx context.Context, namespace, counter, actor string, version, value int64) error {
	if err := requireName("counter", counter); err != nil {
		return err
	}
	if err := requireName("actor", actor); err != nil {
		return err
	}
	path := counterPath(namespace, counter) + "/actors/" + escape(actor)
	return c.retrying(ctx, func() error {
		return c.do(ctx, "POST", path, api.SetRequest{Version: version, Value: value}, nil)
	})
}

// Clear resets a counter to zero and returns the request id it was sent
// with (a fresh one when requestID is empty); repeating the clear of an
// events counter with that id is the same clear. Sharded, actor and native
// counters' clears are deletes, taking effect a moment later (ClearAt
// says when); ledgers have none.
func (c *Client) Clear(ctx context.Context, namespace, counter, requestID string) (string, error) {
	res, err := c.ClearAt(ctx, namespace, counter, requestID)
	return res.RequestID, err
}

// ClearAt is Clear that returns the whole answer, with the time the reset
// takes effect (a moment ahead for the models whose clear is a delete).
// The answer is never nil; on error it holds the request id sent.
func (c *Client) ClearAt(ctx context.Context, namespace, counter, requestID string) (*api.ClearResponse, error) {
	if requestID == "" {
		requestID = NewRequestID()
	}
	res := &api.ClearResponse{RequestID: requestID}
	if err := requireName("counter", counter); err != nil {
		return res, err
	}
	path := counterPath(namespace, counter) + "/clear"
	err := c.retrying(ctx, func() error {
		return c.do(ctx, "POST", path, api.ClearRequest{RequestID: requestID}, res)
	})
	res.RequestID = requestID
	return res, err
}

// UpdateBatch applies up to api.MaxBatchItems updates and returns one result
// per update, in order. If any update is invalid the server refuses the whole
// batch and UpdateBatch returns its error. Updates without a request id get
// one here, before the first attempt.
//
// With retries, updates whose result is retryable (and the whole batch after
// a transport error) are sent again with their ids, and the results hold each
// update's last outcome; an update whose last attempt got no answer at all is
// reported as unknown_outcome.
func (c *Client) UpdateBatch(ctx context.Context, updates []api.BatchUpdate) ([]api.BatchResult, error) {
	return sendBatch(ctx, c, counterBatch, updates)
}

var counterBatch = batchKind[api.BatchUpdate, api.BatchResult]{
	path:      "/v1/updates",
	requestID: func(u *api.BatchUpdate) *string { return &u.RequestID },
	unanswered: func(u api.BatchUpdate) api.BatchResult {
		return api.BatchResult{RequestID: u.RequestID}
	},
	fields: func(r *api.BatchResult) (*string, **api.Error) { return &r.RequestID, &r.Error },
}

// batchKind tells sendBatch where a kind of batch goes and where its
// updates and results keep the fields it handles.
type batchKind[U, R any] struct {
	path string
	// requestID points at an update's request id.
	requestID func(*U) *string
	// unanswered is the result of an update before any answer: it echoes
	// the update and has no error yet.
	unanswered func(U) R
	// fields points at a result's request id and error.
	fields func(*R) (requestID *string, err **api.Error)
}

// The bodies of every batch endpoint, whatever their items.
type (
	batchRequest[U any] struct {
		Updates []U `json:"updates"`
	}
	batchResponse[R any] struct {
		Results []R `json:"results"`
	}
)

// sendBatch does UpdateBatch (see there) for any kind of batch: the ids are
// fixed before the first attempt, so that a retry of an update whose
// outcome is unknown carries the id that settles it.
func sendBatch[U, R any](ctx context.Context, c *Client, kind batchKind[U, R], updates []U) ([]R, error) {
	items := append([]U(nil), updates...)
	results := make([]R, len(items))
	pending := make([]int, len(items))
	for i := range items {
		if id := kind.requestID(&items[i]); *id == "" {
			*id = NewRequestID()
		}
		results[i] = kind.unanswered(items[i])
		pending[i] = i
	}
	answered := false
	err := c.retrying(ctx, func() error {
		req := batchRequest[U]{Updates: make([]U, len(pending))}
		for j, i := range pending {
			req.Updates[j] = items[i]
		}
		var resp batchResponse[R]
		if err := c.do(ctx, "POST", kind.path, req, &resp); err != nil {
			return err
		}
		if len(resp.Results) != len(pending) {
			return &decodeError{fmt.Errorf("server returned %d results for %d updates", len(resp.Results), len(pending))}
		}
		answered = true
		var again []int
		var itemErr error
		for j, i := range pending {
			results[i] = resp.Results[j]
			id, errp := kind.fields(&results[i])
			*id = *kind.requestID(&items[i])
			if e := *errp; e != nil && api.Retryable(e.Code) {
				again = append(again, i)
				itemErr = &itemsError{&Error{Status: api.Status(e.Code), Code: e.Code, Message: e.Message}}
			}
		}
		pending = again
		return itemErr
	})
	var ie *itemsError
	switch {
	case err == nil, errors.As(err, &ie):
		// Per-update failures are in the results.
		return results, nil
	case answered:
		// An earlier attempt was answered, so some results are final; the
		// updates still pending got no answer to their last attempt.
		for _, i := range pending {
			results[i] = kind.unanswered(items[i])
			_, errp := kind.fields(&results[i])
			*errp = asAPIError(err)
		}
		return results, nil
	}
	return nil, err
}

// itemsError says that some updates of a batch failed retryably.
type itemsError struct{ last *Error }

func (e *itemsError) Error() string { return e.last.Error() }
func (e *itemsError) Unwrap() error { return e.last }

func asAPIError(err error) *api.Error {
	var e *Error
	if errors.As(err, &e) && e.Code != "" {
		return &api.Error{Code: e.Code, Message: e.Message}
	}
	return &api.Error{Code: api.CodeUnknownOutcome, Message: err.Error()}
}

// Get reads a counter ("" namespace means "default").
func (c *Client) Get(ctx context.Context, namespace, counter string) (*api.Value, error) {
	return callNamed[api.Value](ctx, c, "counter", counter, "GET", counterPath(namespace, counter), nil)
}

// GetWithin reads a counter, letting the server answer an events counter
// from its memory when what it holds is complete as of maxStaleness ago
// or later (Value.Cached, Value.AsOf). 0 reads the store, as Get does.
func (c *Client) GetWithin(ctx context.Context, namespace, counter string, maxStaleness time.Duration) (*api.Value, error) {
	if maxStaleness < 0 {
		return nil, fmt.Errorf("abacus client: max staleness %v is negative", maxStaleness)
	}
	path := counterPath(namespace, counter)
	if maxStaleness > 0 {
		path += "?max_staleness=" + url.QueryEscape(maxStaleness.String())
	}
	return callNamed[api.Value](ctx, c, "counter", counter, "GET", path, nil)
}

// GC folds one counter's final shards into its tally.
func (c *Client) GC(ctx context.Context, namespace, counter string) (*api.GCResult, error) {
	return callNamed[api.GCResult](ctx, c, "counter", counter, "POST", counterPath(namespace, counter)+"/gc", nil)
}

// GCAll collects every counter, or those of one namespace when namespace is
// not empty.
func (c *Client) GCAll(ctx context.Context, namespace string) (*api.GCAllResult, error) {
	return call[api.GCAllResult](ctx, c, "POST", "/v1/gc", api.GCAllRequest{Namespace: namespace})
}

// Counters returns the names of the counters in namespace ("" means
// "default"), or of its ledgers in a ledger namespace, sorted; it reads
// every page.
func (c *Client) Counters(ctx context.Context, namespace string) ([]string, error) {
	return allPages(ctx, c, "/v1/namespaces/"+escape(nsOrDefault(namespace))+"/counters",
		func(out *api.CounterList) ([]string, string) { return out.Counters, out.Next })
}
