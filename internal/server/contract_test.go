package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/abacusdb/abacus/api"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// contract holds the parsed OpenAPI file and a router over it.
type contract struct {
	doc    *openapi3.T
	router routers.Router
}

func loadContract(t *testing.T) *contract {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.OpenAPI)
	if err != nil {
		t.Fatalf("load api/openapi.yaml: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("api/openapi.yaml is not a valid OpenAPI document: %v", err)
	}
	doc.Servers = nil // match the test server's random port
	r, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &contract{doc: doc, router: r}
}

// exchange sends one request to the server and checks both sides against
// the contract. It returns the response and the spec's verdict on the
// request (nil: valid).
func (c *contract) exchange(t *testing.T, e *testEnv, method, path, body string) (r response, specErr error) {
	t.Helper()
	req, err := http.NewRequest(method, e.ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		t.Fatalf("%s %s: no route in the spec: %v", method, path, err)
	}
	in := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, SkipSettingDefaults: true},
	}
	specErr = openapi3filter.ValidateRequest(context.Background(), in)
	// ValidateRequest consumed the body; send it again.
	req.Body = io.NopCloser(strings.NewReader(body))
	r = e.do(method, path, body)
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: r.status, Header: r.header,
		Body:    io.NopCloser(bytes.NewReader(r.body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("%s %s %s: the response %d %s does not match the spec: %v", method, path, body, r.status, r.body, err)
	}
	if r.status >= 400 {
		if phrase := repeated(r.apiError().Message); phrase != "" {
			t.Errorf("%s %s %s: the message %q says %q twice", method, path, body, r.apiError().Message, phrase)
		}
	}
	return r, specErr
}

// repeated returns the first three-word phrase that occurs twice in msg
// (ignoring case and punctuation), or "".
func repeated(msg string) string {
	words := strings.FieldsFunc(strings.ToLower(msg), func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '_')
	})
	seen := map[string]bool{}
	for i := 0; i+3 <= len(words); i++ {
		p := strings.Join(words[i:i+3], " ")
		if seen[p] {
			return p
		}
		seen[p] = true
	}
	return ""
}

// operation is one write endpoint with a body the spec and the server both
// accept. path and body get a fresh suffix per request, so a mutation that
// is (wrongly) accepted cannot collide with the next one.
type operation struct {
	method string
	path   func(n string) string
	body   func(n string) map[string]any
	// semantic lists error codes the server may answer to a body the spec
	// accepts: refusals that depend on stored state, not on the body's form.
	semantic []string
}

// TestServerEnforcesTheContract derives invalid and boundary-valid bodies
// for every write endpoint from the schemas of api/openapi.yaml (required
// fields left out, numbers one past each minimum and maximum, strings one
// past each length limit, unknown enum values and fields, wrong types) and
// checks that the server refuses (4xx, with a spec-conformant error body)
// exactly the requests the spec refuses: a request the spec accepts must not
// be answered invalid_argument or invalid_json, and every response must
// match its documented schema.
func TestServerEnforcesTheContract(t *testing.T) {
	t.Parallel()
	c := loadContract(t)
	e := newEnv(t)
	for _, ns := range []string{
		`{"name":"ev","model":"events"}`, `{"name":"ac","model":"actor"}`, `{"name":"led","model":"ledger"}`,
	} {
		e.mustJSON("POST", "/v1/namespaces", ns, 201, nil)
	}
	var seq atomic.Int64
	fresh := func() string { return fmt.Sprintf("x%d", seq.Add(1)) }
	counter := func(ns, tail string) func(string) string {
		return func(n string) string { return "/v1/namespaces/" + ns + "/counters/c" + n + tail }
	}
	ledger := func(tail string) func(string) string {
		return func(n string) string { return "/v1/namespaces/led/ledgers/l" + n + tail }
	}
	fixed := func(p string) func(string) string { return func(string) string { return p } }
	// Four levels: every priority the spec allows is one of q's.
	e.mustJSON("POST", "/v1/queues", `{"name":"q","priorities":4}`, 201, nil)
	ops := []operation{
		{method: "POST", path: fixed("/v1/namespaces"), body: func(n string) map[string]any {
			return map[string]any{"name": "ns" + n, "model": "ledger", "ledger": map[string]any{"history_length": 5, "retry_count": 3, "claim_ttl_seconds": 60}}
		}, semantic: []string{api.CodeNamespaceExists}},
		{method: "POST", path: fixed("/v1/namespaces"), body: func(n string) map[string]any {
			// The longest accept window, so that every seal the spec allows
			// fits inside it (seal_seconds is at most accept_window_seconds).
			return map[string]any{"name": "ne" + n, "model": "events", "events": map[string]any{"bucket_seconds": 3600, "accept_window_seconds": 86400}}
		}, semantic: []string{api.CodeNamespaceExists}},
		{method: "POST", path: counter("default", "/updates"), body: func(string) map[string]any {
			return map[string]any{"delta": 1, "request_id": "r", "return_value": true}
		}},
		{method: "POST", path: counter("ac", "/actors/P1"), body: func(string) map[string]any {
			return map[string]any{"version": 2, "value": 1500}
		}},
		{method: "POST", path: counter("ev", "/clear"), body: func(string) map[string]any {
			return map[string]any{"request_id": "r"}
		}},
		{method: "POST", path: fixed("/v1/updates"), body: func(n string) map[string]any {
			return map[string]any{"updates": []any{map[string]any{"counter": "b" + n, "delta": 2}}}
		}},
		{method: "POST", path: fixed("/v1/ledger-updates"), body: func(n string) map[string]any {
			return map[string]any{"updates": []any{map[string]any{"namespace": "led", "ledger": "b" + n, "amount": 2}}}
		}},
		{method: "POST", path: fixed("/v1/gc"), body: func(string) map[string]any { return map[string]any{"namespace": "default"} }},
		{method: "POST", path: ledger("/credits"), body: func(string) map[string]any { return map[string]any{"amount": 5, "request_id": "r"} }},
		{method: "POST", path: ledger("/debits"), body: func(string) map[string]any { return map[string]any{"amount": 5} }},
		{method: "POST", path: ledger("/updates"), body: func(string) map[string]any { return map[string]any{"amount": -5} }},
		// 256 shards: the spread must divide the shards and leave 4 groups,
		// a rule between two fields that a schema cannot state (the spec
		// says it in words); 256 fits both bounds the test probes (1, 64).
		{method: "POST", path: fixed("/v1/queues"), body: func(n string) map[string]any {
			return map[string]any{"name": "q" + n, "shards": 256, "shard_duration": "1m", "max_deliveries": 5, "visibility_timeout": "30s"}
		}, semantic: []string{api.CodeQueueExists}},
		{method: "POST", path: fixed("/v1/queues/q/messages"), body: func(string) map[string]any {
			return map[string]any{"messages": []any{map[string]any{"body": "hi", "delay": "1s"}}}
		}},
		{method: "POST", path: fixed("/v1/queues/q/receive"), body: func(string) map[string]any {
			return map[string]any{"max": 1, "wait": "0s"}
		}},
		{method: "POST", path: fixed("/v1/queues/q/purge"), body: func(string) map[string]any {
			return map[string]any{"dead_letters": true}
		}},
	}
	for _, op := range ops {
		n := fresh()
		base := op.body(n)
		route, _, err := c.router.FindRoute(mustRequest(t, op.method, op.path(n)))
		if err != nil {
			t.Fatalf("%s %s: %v", op.method, op.path(n), err)
		}
		schema := route.Operation.RequestBody.Value.Content.Get("application/json").Schema.Value
		r, specErr := c.exchange(t, e, op.method, op.path(n), mustMarshal(t, base))
		if specErr != nil || r.status >= 300 {
			t.Fatalf("%s %s: the base request is not valid: spec %v, server %d %s", op.method, op.path(n), specErr, r.status, r.body)
		}
		for _, m := range mutations(schema, base) {
			n := fresh()
			body := op.body(n)
			m.apply(body)
			raw := mustMarshal(t, body)
			r, specErr := c.exchange(t, e, op.method, op.path(n), raw)
			var code struct{ Code string }
			_ = json.Unmarshal(r.body, &code)
			switch {
			case specErr != nil && r.status < 400:
				t.Errorf("%s %s %s (%s): the spec refuses it (%v) but the server answered %d %s", op.method, op.path(n), raw, m.name, firstLine(specErr), r.status, r.body)
			case specErr != nil && r.status >= 500:
				t.Errorf("%s %s %s (%s): answered %d %s, want a 4xx", op.method, op.path(n), raw, m.name, r.status, r.body)
			case specErr == nil && r.status >= 400 && !contains(op.semantic, code.Code):
				t.Errorf("%s %s %s (%s): the spec accepts it but the server answered %d %s: the spec does not state this constraint", op.method, op.path(n), raw, m.name, r.status, r.body)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func mustRequest(t *testing.T, method, path string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(method, "http://test"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mutation changes one field of a request body.
type mutation struct {
	name  string
	apply func(body map[string]any)
}

// mutations derives, from an object schema and a valid body, one change per
// constraint the schema states, recursing into object-valued fields the
// body carries and into the first item of array fields.
func mutations(s *openapi3.Schema, base map[string]any) []mutation {
	var out []mutation
	at := func(prefix string, get func(map[string]any) map[string]any, ms []mutation) {
		for _, m := range ms {
			out = append(out, mutation{prefix + "." + m.name, func(b map[string]any) {
				if inner := get(b); inner != nil {
					m.apply(inner)
				}
			}})
		}
	}
	out = append(out, mutation{"unknown field", func(b map[string]any) { b["zz_unknown"] = 1 }})
	for _, req := range s.Required {
		out = append(out, mutation{"without " + req, func(b map[string]any) { delete(b, req) }})
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := flatten(s.Properties[name].Value)
		set := func(label string, v any) {
			out = append(out, mutation{name + " " + label, func(b map[string]any) { b[name] = v }})
		}
		if !p.Nullable {
			set("null", nil)
		}
		switch {
		case p.Type.Is("integer"):
			set("as string", "1")
			// Without a stated bound the spec accepts any int64, so the
			// server must too: probing the extremes finds unstated limits.
			// Bounds are float64 in the validator; beyond 2^53 it cannot
			// tell a bound from its neighbour, so those are not probed.
			exact := func(b *float64) bool { return b != nil && math.Abs(*b) <= 1<<53 }
			if p.Min != nil && !exact(p.Min) || p.Max != nil && !exact(p.Max) {
				break
			}
			if p.Min != nil {
				set("at minimum", int64(*p.Min))
				set("below minimum", int64(*p.Min)-1)
			} else {
				set("negative", -1)
				set("lowest", math.MinInt64)
			}
			if p.Max != nil {
				set("at maximum", int64(*p.Max))
				set("above maximum", int64(*p.Max)+1)
			} else {
				set("highest", math.MaxInt64)
			}
		case p.Type.Is("string"):
			set("as number", 1)
			if len(p.Enum) > 0 {
				set("outside the enum", "no-such-value")
			}
			if p.MinLength > 0 {
				set("too short", strings.Repeat("a", int(p.MinLength)-1))
			}
			if p.MaxLength != nil {
				set("at max length", strings.Repeat("a", int(*p.MaxLength)))
				set("too long", strings.Repeat("a", int(*p.MaxLength)+1))
			}
		case p.Type.Is("boolean"):
			set("as string", "true")
		case p.Type.Is("object"):
			set("as string", "x")
			if _, ok := base[name].(map[string]any); ok {
				at(name, func(b map[string]any) map[string]any { m, _ := b[name].(map[string]any); return m }, mutations(p, base[name].(map[string]any)))
			}
		case p.Type.Is("array"):
			set("as object", map[string]any{})
			if p.MinItems > 0 {
				set("empty", []any{})
			}
			if items, ok := base[name].([]any); ok && len(items) > 0 && p.Items != nil {
				if first, ok := items[0].(map[string]any); ok {
					at(name+"[0]", func(b map[string]any) map[string]any {
						a, _ := b[name].([]any)
						if len(a) == 0 {
							return nil
						}
						m, _ := a[0].(map[string]any)
						return m
					}, mutations(flatten(p.Items.Value), first))
				}
			}
		}
	}
	return out
}

// flatten merges a schema's allOf parts into one, as the API's schemas use
// allOf only to attach a description to a shared type.
func flatten(s *openapi3.Schema) *openapi3.Schema {
	if len(s.AllOf) == 0 {
		return s
	}
	out := *s
	for _, part := range s.AllOf {
		p := flatten(part.Value)
		if out.Type == nil {
			out.Type = p.Type
		}
		if out.MaxLength == nil {
			out.MaxLength = p.MaxLength
		}
		out.MinLength = max(out.MinLength, p.MinLength)
		if len(out.Enum) == 0 {
			out.Enum = p.Enum
		}
		if out.Properties == nil {
			out.Properties = p.Properties
		}
	}
	return &out
}

// Every read endpoint's answer matches its documented schema, including a
// saturated value and the error bodies of missing resources.
func TestReadResponsesMatchTheContract(t *testing.T) {
	t.Parallel()
	c := loadContract(t)
	e := newEnv(t)
	e.mustJSON("POST", "/v1/namespaces", `{"name":"ev","model":"events"}`, 201, nil)
	e.mustJSON("POST", "/v1/namespaces", `{"name":"led","model":"ledger"}`, 201, nil)
	// Four levels: every priority the spec allows is one of q's.
	e.mustJSON("POST", "/v1/queues", `{"name":"q","priorities":4}`, 201, nil)
	for _, body := range []string{`{"delta":9223372036854775807}`, `{"delta":9223372036854775807}`} {
		e.mustJSON("POST", "/v1/namespaces/ev/counters/c/updates", body, 200, nil)
	}
	r, _ := c.exchange(t, e, "POST", "/v1/namespaces/ev/counters/c/updates", `{"delta":1,"return_value":true}`)
	if r.status != 200 || !strings.Contains(string(r.body), `"saturated":true`) {
		t.Fatalf("saturated add-and-get: %d %s", r.status, r.body)
	}
	e.mustJSON("POST", "/v1/namespaces/led/ledgers/l/credits", `{"amount":5}`, 200, nil)
	for _, path := range []string{
		"/healthz", "/v1/namespaces", "/v1/namespaces/ev", "/v1/namespaces/nope",
		"/v1/namespaces/ev/counters/c", "/v1/namespaces/default/counters/never", "/v1/namespaces/nope/counters/c",
		"/v1/namespaces/led/ledgers/l", "/v1/namespaces/led/ledgers/l/requests/r",
		"/v1/queues", "/v1/queues/q", "/v1/queues/q/stats", "/v1/queues/q/dead", "/v1/queues/nope",
		"/v1/queues/q/pause", "/v1/queues/nope/pause",
	} {
		if r, err := c.exchange(t, e, "GET", path, ""); err != nil {
			t.Errorf("GET %s: the spec refuses the request: %v (server %d)", path, err, r.status)
		}
	}
	// Pause and resume take no body; their answers, and the paused queue's
	// description, match the contract too.
	for _, path := range []string{"/v1/queues/q/pause", "/v1/queues/nope/pause", "/v1/queues/q/resume", "/v1/queues/q/pause"} {
		if r, err := c.exchange(t, e, "POST", path, ""); err != nil {
			t.Errorf("POST %s: the spec refuses the request: %v (server %d)", path, err, r.status)
		}
	}
	if r, err := c.exchange(t, e, "GET", "/v1/queues/q", ""); err != nil || !strings.Contains(string(r.body), `"paused":true`) {
		t.Errorf("GET /v1/queues/q of a paused queue: %v, %d %s", err, r.status, r.body)
	}
}

// Path parameters are part of the contract too: names are 1 to 256 bytes.
func TestServerEnforcesPathContract(t *testing.T) {
	t.Parallel()
	c := loadContract(t)
	e := newEnv(t)
	long := url.PathEscape(strings.Repeat("a", 257))
	for _, path := range []string{
		"/v1/namespaces/default/counters/" + long + "/updates",
		"/v1/namespaces/" + long + "/counters/c/updates",
	} {
		r, specErr := c.exchange(t, e, "POST", path, `{"delta":1}`)
		if specErr == nil || r.status != 400 {
			t.Errorf("POST %s: spec %v, server %d %s; want both to refuse", path, specErr, r.status, r.body)
		}
	}
}

// The routes that take the Idempotency-Key header are the ones the contract
// says take it: a route that took it without saying so would surprise no
// one, but one the contract promises it for and that refused it (or the
// reverse, a route that silently ignored it) would break clients.
func TestIdempotencyKeyRoutesMatchTheContract(t *testing.T) {
	t.Parallel()
	c := loadContract(t)
	e := newEnv(t)
	placeholder := regexp.MustCompile(`\{[a-z_]+\}`)
	checked := 0
	for path, item := range c.doc.Paths.Map() {
		op := item.Post
		if op == nil {
			continue
		}
		promised := false
		for _, p := range append(item.Parameters, op.Parameters...) {
			if p.Value != nil && p.Value.In == "header" && p.Value.Name == "Idempotency-Key" {
				promised = true
			}
		}
		r := e.do("POST", placeholder.ReplaceAllString(path, "x"), `{`, "Idempotency-Key", "k")
		refused := r.status == 400 && strings.Contains(r.apiError().Message, "is not taken")
		if refused == promised {
			t.Errorf("POST %s: the contract promises Idempotency-Key: %v; the server refuses it: %v (%d %s)", path, promised, refused, r.status, r.body)
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("checked %d POST routes; the contract has more", checked)
	}
}
