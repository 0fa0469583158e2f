package server

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/abacusdb/abacus/api"
)

// actorEnvWithP1 is a server with namespace "ac" of the actor model, on
// whose counter c actor P1 has been set by body.
func actorEnvWithP1(t *testing.T, body string) *testEnv {
	t.Helper()
	e := newEnv(t)
	e.mustJSON("POST", "/v1/namespaces", `{"name":"ac","model":"actor"}`, 201, nil)
	e.mustJSON("POST", "/v1/namespaces/ac/counters/c/actors/P1", body, 200, nil)
	return e
}

// An actor set without a value used to be taken as value 0 and zero the
// actor's part; the spec marks value required.
func TestActorSetWithoutValueIsRefused(t *testing.T) {
	t.Parallel()
	e := actorEnvWithP1(t, `{"version":1,"value":100}`)
	for _, body := range []string{`{"version":2}`, `{"version":2,"value":null}`, `{"value":5}`} {
		r := e.do("POST", "/v1/namespaces/ac/counters/c/actors/P1", body)
		if r.status != 400 || r.apiError().Code != api.CodeInvalidArgument {
			t.Errorf("%s: %d %s, want 400 invalid_argument", body, r.status, r.body)
		}
	}
	if v := e.value("ac", "c"); v.Value != 100 {
		t.Fatalf("refused sets changed the counter to %d", v.Value)
	}
}

// A second value at a used version was acknowledged and dropped.
func TestActorVersionReuseAnswers409(t *testing.T) {
	t.Parallel()
	e := actorEnvWithP1(t, `{"version":2,"value":1500}`)
	r := e.do("POST", "/v1/namespaces/ac/counters/c/actors/P1", `{"version":2,"value":999}`)
	if r.status != http.StatusConflict || r.apiError().Code != api.CodeVersionConflict {
		t.Fatalf("reused version: %d %s, want 409 version_conflict", r.status, r.body)
	}
	e.mustJSON("POST", "/v1/namespaces/ac/counters/c/actors/P1", `{"version":2,"value":1500}`, 200, nil)
	if v := e.value("ac", "c"); v.Value != 1500 {
		t.Fatalf("counter %d, want 1500", v.Value)
	}
}

// Both events adds were acknowledged and every read then answered 400
// overflow, return_value included: a 4xx for a write that was stored.
func TestEventsAddPastInt64StaysReadable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustJSON("POST", "/v1/namespaces", `{"name":"ev","model":"events"}`, 201, nil)
	e.mustJSON("POST", "/v1/namespaces/ev/counters/c/updates", `{"delta":9223372036854775807}`, 200, nil)
	var ur api.UpdateResponse
	e.mustJSON("POST", "/v1/namespaces/ev/counters/c/updates", `{"delta":1,"return_value":true}`, 200, &ur)
	if !ur.Acknowledged || ur.Value == nil || !ur.Value.Saturated || ur.Value.Value != math.MaxInt64 || ur.Value.Exact != "9223372036854775808" {
		t.Fatalf("add past the edge with return_value: %+v (value %+v)", ur, ur.Value)
	}
	e.mustJSON("POST", "/v1/namespaces/ev/counters/c/updates", `{"delta":-5}`, 200, nil)
	var v api.Value
	e.mustJSON("GET", "/v1/namespaces/ev/counters/c", "", 200, &v)
	if v.Value != math.MaxInt64-4 || v.Saturated || v.Exact != "" {
		t.Fatalf("back in range: %+v", v)
	}
	e.mustJSON("POST", "/v1/gc", "", 200, nil)
	e.mustJSON("GET", "/v1/namespaces/ev/counters/c", "", 200, &v)
	if v.Value != math.MaxInt64-4 {
		t.Fatalf("after gc: %+v", v)
	}
}

// Out-of-range options were silently replaced by the defaults.
func TestExplicitZeroOptionsAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct{ path, body string }{
		{"/v1/queues", `{"name":"q1","max_deliveries":0}`},
		{"/v1/queues", `{"name":"q2","shards":0}`},
		{"/v1/queues", `{"name":"q3","max_deliveries":null}`},
		{"/v1/namespaces", `{"name":"l","model":"ledger","ledger":{"retry_count":-2}}`},
	} {
		r := e.do("POST", c.path, c.body)
		if r.status != 400 || r.apiError().Code != api.CodeInvalidArgument {
			t.Errorf("POST %s %s: %d %s, want 400 invalid_argument", c.path, c.body, r.status, r.body)
		}
	}
	if r := e.do("GET", "/v1/queues/q1", ""); r.status != 404 {
		t.Errorf("a refused queue exists: %d %s", r.status, r.body)
	}
	e.mustJSON("POST", "/v1/queues", `{"name":"q"}`, 201, nil)
	r := e.do("POST", "/v1/queues/q/receive", `{"max":0}`)
	if r.status != 400 || !strings.Contains(r.apiError().Message, `"max"`) {
		t.Errorf("receive max 0: %d %s, want 400 naming max", r.status, r.body)
	}
}

// Empty segments and dot segments were redirected (307, empty body) to a
// different resource; a client following the redirect got a 405.
func TestUncleanPathsGetJSONErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	noFollow := *e.ts.Client()
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, c := range []struct{ method, path string }{
		{"POST", "/v1/namespaces/default/counters//updates"},
		{"GET", "/v1/namespaces//counters/c"},
		{"GET", "/v1/namespaces/default/counters/c/"},
		{"POST", "/v1/namespaces/default/counters/./updates"},
		{"POST", "/v1/namespaces/default/counters/c/../x/updates"},
		{"GET", "//v1/namespaces"},
		{"POST", "/v1/queues//receive"},
	} {
		req, err := http.NewRequest(c.method, e.ts.URL+c.path, strings.NewReader(`{"delta":1}`))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body api.Error
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != 400 || err != nil || body.Code != api.CodeInvalidArgument || body.Message == "" || resp.Header.Get("Location") != "" {
			t.Errorf("%s %s: %d %+v (decode: %v, Location %q), want 400 invalid_argument with a message", c.method, c.path, resp.StatusCode, body, err, resp.Header.Get("Location"))
		}
	}
	if v := e.value("default", "updates"); !v.Empty {
		t.Fatalf("an unclean path was applied: %+v", v)
	}
}

// Messages said the same thing up to three times ("request id already
// used for a different update: request id already used for a different
// amount: request id "req6" is recorded with amount 10, not 11").
func TestErrorMessagesSayItOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, ns := range []string{`{"name":"ac","model":"actor"}`, `{"name":"led","model":"ledger"}`, `{"name":"ev","model":"events"}`} {
		e.mustJSON("POST", "/v1/namespaces", ns, 201, nil)
	}
	e.mustJSON("POST", "/v1/namespaces/led/ledgers/l/credits", `{"amount":10,"request_id":"req6"}`, 200, nil)
	e.mustJSON("POST", "/v1/namespaces/ac/counters/c/actors/P1", `{"version":2,"value":9223372036854775807}`, 200, nil)
	e.mustJSON("POST", "/v1/namespaces/default/counters/s/updates", `{"delta":9223372036854775807,"request_id":"r1"}`, 200, nil)
	for _, c := range []struct {
		path, body string
		want       string // the whole message, where it is fixed
	}{
		{"/v1/namespaces/led/ledgers/l/credits", `{"amount":11,"request_id":"req6"}`, `request id "req6" is recorded with amount 10, not 11`},
		{"/v1/namespaces/ac/counters/c/actors/P1", `{"version":2,"value":999}`, `actor "P1" has value 9223372036854775807 at version 2, not 999; set a new value at a higher version`},
		{"/v1/namespaces/ac/counters/c/actors/P2", `{"version":1,"value":1}`, ""},
		{"/v1/namespaces/ac/counters/c/actors/P2", `{"version":0,"value":1}`, ""},
		{"/v1/namespaces/default/counters/s/updates", `{"delta":1}`, ""},
		{"/v1/namespaces/default/counters/s/updates", `{"delta":2,"request_id":"r1"}`, ""},
		{"/v1/namespaces/ev/counters/c/updates", `{"delta":1,"request_id":"not-a-uuid"}`, ""},
		{"/v1/namespaces/ev/counters/c/updates", `{"delta":1,"time":"2001-01-01T00:00:00Z","request_id":"x"}`, ""},
		{"/v1/namespaces/ac/counters/c/updates", `{"delta":1}`, ""},
		{"/v1/namespaces/nope/counters/c/updates", `{"delta":1}`, ""},
		{"/v1/namespaces/led/ledgers/l/debits", `{"amount":-1}`, ""},
	} {
		r := e.do("POST", c.path, c.body)
		msg := r.apiError().Message
		if r.status < 400 || msg == "" {
			t.Errorf("POST %s %s: %d %s, want an error", c.path, c.body, r.status, r.body)
			continue
		}
		if phrase := repeated(msg); phrase != "" {
			t.Errorf("POST %s %s: %q says %q twice", c.path, c.body, msg, phrase)
		}
		if c.want != "" && msg != c.want {
			t.Errorf("POST %s %s: message %q, want %q", c.path, c.body, msg, c.want)
		}
		if strings.Count(msg, ": ") > 2 {
			t.Errorf("POST %s %s: %q stacks %d prefixes", c.path, c.body, msg, strings.Count(msg, ": "))
		}
	}
}

// The API fuzzer sent POST /v1/gc a body of one carriage return, as
// application/json, and it was taken for no body: a sweep of every
// namespace, answered 200. A body of only whitespace is not JSON; the
// requests whose body is optional take no body, not a blank one.
func TestABlankOptionalBodyIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustJSON("POST", "/v1/namespaces", `{"name":"ac","model":"actor"}`, 201, nil)
	e.mustJSON("POST", "/v1/queues", `{"name":"q"}`, 201, nil)
	for _, path := range []string{"/v1/gc", "/v1/namespaces/ac/counters/c/clear", "/v1/queues/q/receive"} {
		for _, body := range []string{"\r", " ", "\n\t"} {
			e.wantError("POST", path, body, 400, api.CodeInvalidJSON, "only whitespace")
		}
		if r := e.do("POST", path, ""); r.status != 200 {
			t.Errorf("%s with no body: %d %s, want 200", path, r.status, r.body)
		}
	}
}
