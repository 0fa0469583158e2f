package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/clock"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
)

func TestHealthAndReady(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		var h api.Health
		e.mustJSON("GET", path, "", 200, &h)
		if h.Status != "ok" {
			t.Errorf("%s: status %q, want ok", path, h.Status)
		}
	}
}

func TestReadyzFailsWhenStoreIsClosed(t *testing.T) {
	t.Parallel()
	c, drv, scfg := openClient(t, vfs.NewMem(), prometheus.NewRegistry())
	srv, err := New(scfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := drv.Close(); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "http://localhost/readyz", nil))
	if rec.Code != 503 {
		t.Fatalf("readyz with a closed store: status %d, want 503; body %s", rec.Code, rec.Body)
	}
	var e api.Error
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Code != api.CodeUnavailable {
		t.Fatalf("readyz body %s: want code unavailable", rec.Body)
	}
	rec = httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "http://localhost/healthz", nil))
	if rec.Code != 200 {
		t.Fatalf("healthz with a closed store: status %d, want 200 (liveness does not depend on the store)", rec.Code)
	}
}

func TestNamespaces(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	var created api.Namespace
	r := e.do("POST", "/v1/namespaces", `{"name":"visitors","type":"DISTINCT","read_consistency":"quorum","write_consistency":"ONE"}`)
	if r.status != 201 {
		t.Fatalf("create: status %d, body %s", r.status, r.body)
	}
	if err := json.Unmarshal(r.body, &created); err != nil {
		t.Fatal(err)
	}
	want := api.Namespace{Name: "visitors", Model: "sharded", Type: "distinct", ReadConsistency: "QUORUM", WriteConsistency: "ONE", CreatedAt: created.CreatedAt}
	if created != want {
		t.Errorf("created %+v, want %+v", created, want)
	}
	if created.CreatedAt.IsZero() {
		t.Error("created_at is zero")
	}
	if loc := r.header.Get("Location"); loc != "/v1/namespaces/visitors" {
		t.Errorf("Location %q", loc)
	}

	var got api.Namespace
	e.mustJSON("GET", "/v1/namespaces/visitors", "", 200, &got)
	if !got.CreatedAt.Equal(created.CreatedAt) {
		t.Errorf("get created_at %v, want %v", got.CreatedAt, created.CreatedAt)
	}
	got.CreatedAt = created.CreatedAt
	if got != created {
		t.Errorf("get %+v, want %+v", got, created)
	}

	e.mustJSON("POST", "/v1/namespaces", `{"name":"peak","type":"max"}`, 201, nil)

	var list api.NamespaceList
	e.mustJSON("GET", "/v1/namespaces", "", 200, &list)
	var names []string
	for _, ns := range list.Namespaces {
		names = append(names, ns.Name+":"+ns.Type+":"+ns.ReadConsistency)
	}
	if got, want := strings.Join(names, ","), "default:sum:DEFAULT,peak:max:DEFAULT,visitors:distinct:QUORUM"; got != want {
		t.Errorf("list = %s, want %s", got, want)
	}

	r = e.do("POST", "/v1/namespaces", `{"name":"visitors"}`)
	if r.status != 409 || r.apiError().Code != api.CodeNamespaceExists {
		t.Errorf("duplicate create: %d %s", r.status, r.body)
	}
	r = e.do("GET", "/v1/namespaces/nope", "")
	if r.status != 404 || r.apiError().Code != api.CodeNamespaceNotFound {
		t.Errorf("get unknown: %d %s", r.status, r.body)
	}
}

func TestUpdateAndGetEveryType(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createNS("hi", "max")
	e.createNS("lo", "min")
	e.createNS("uniq", "distinct")

	post := func(ns, counter, body string) api.UpdateResponse {
		t.Helper()
		var ur api.UpdateResponse
		e.mustJSON("POST", "/v1/namespaces/"+ns+"/counters/"+counter+"/updates", body, 200, &ur)
		return ur
	}
	ur := post("default", "likes", `{"delta":5,"request_id":"r1"}`)
	if ur != (api.UpdateResponse{Namespace: "default", Counter: "likes", RequestID: "r1", Acknowledged: true}) {
		t.Errorf("update response %+v", ur)
	}
	post("default", "likes", `{"delta":-2}`)
	post("hi", "temp", `{"delta":7}`)
	post("hi", "temp", `{"delta":3}`)
	post("lo", "temp", `{"delta":7}`)
	post("lo", "temp", `{"delta":-3}`)
	for _, item := range []string{"alice", "bob", "alice"} {
		post("uniq", "users", `{"item":"`+item+`"}`)
	}

	for _, tc := range []struct {
		ns, counter, typ string
		value            int64
	}{
		{"default", "likes", "sum", 3},
		{"hi", "temp", "max", 7},
		{"lo", "temp", "min", -3},
		{"uniq", "users", "distinct", 2},
	} {
		var v api.Value
		e.mustJSON("GET", "/v1/namespaces/"+tc.ns+"/counters/"+tc.counter, "", 200, &v)
		want := api.Value{Namespace: tc.ns, Counter: tc.counter, Type: tc.typ, Model: "sharded", Value: tc.value, Shards: 1}
		if v != want {
			t.Errorf("get %s/%s = %+v, want %+v", tc.ns, tc.counter, v, want)
		}
	}

	var v api.Value
	e.mustJSON("GET", "/v1/namespaces/default/counters/never", "", 200, &v)
	if !v.Empty || v.Value != 0 || v.Shards != 0 {
		t.Errorf("never-written counter: %+v", v)
	}
}

func TestServerGeneratesRequestID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seen := map[string]bool{}
	for i := 0; i < 3; i++ {
		r := e.do("POST", "/v1/namespaces/default/counters/c/updates", `{"delta":1}`, "Content-Type", "application/json; charset=utf-8")
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		var ur api.UpdateResponse
		if err := json.Unmarshal(r.body, &ur); err != nil {
			t.Fatal(err)
		}
		if _, ok := api.RequestIDTime(ur.RequestID); !ok {
			t.Errorf("generated request id %q is not a version 7 UUID", ur.RequestID)
		}
		if h := r.header.Get("Abacus-Request-Id"); h != ur.RequestID {
			t.Errorf("header id %q, body id %q", h, ur.RequestID)
		}
		if seen[ur.RequestID] {
			t.Errorf("request id %q generated twice", ur.RequestID)
		}
		seen[ur.RequestID] = true
	}
	if got := e.value("default", "c").Value; got != 3 {
		t.Errorf("value %d, want 3: generated ids must not de-duplicate distinct updates", got)
	}
}

func TestRetryWithSameRequestIDCountsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := 0; i < 4; i++ {
		e.mustJSON("POST", "/v1/namespaces/default/counters/likes/updates", `{"delta":5,"request_id":"same"}`, 200, nil)
	}
	if got := e.value("default", "likes").Value; got != 5 {
		t.Fatalf("value after 4 retries = %d, want 5", got)
	}
	// Reusing the id for a different update is a caller bug, not a retry.
	r := e.do("POST", "/v1/namespaces/default/counters/likes/updates", `{"delta":6,"request_id":"same"}`)
	if r.status != 409 || r.apiError().Code != api.CodeRequestConflict {
		t.Fatalf("conflicting reuse: %d %s", r.status, r.body)
	}
	if got := e.value("default", "likes").Value; got != 5 {
		t.Fatalf("value after conflict = %d, want 5", got)
	}
	// The same id on another counter is a different update.
	e.mustJSON("POST", "/v1/namespaces/default/counters/other/updates", `{"delta":1,"request_id":"same"}`, 200, nil)
	if got := e.value("default", "other").Value; got != 1 {
		t.Fatalf("other counter = %d, want 1", got)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createNS("uniq", "distinct")
	const upd = "/v1/namespaces/default/counters/c/updates"
	long := strings.Repeat("n", 257)
	big := `{"delta":1,"item":"` + strings.Repeat("x", api.DefaultMaxBodyBytes) + `"}`

	for _, tc := range []struct {
		name, method, path, body string
		headers                  []string
		status                   int
		code                     string
		msg                      string // substring of the message
		// check counter (namespace/counter) must still read empty.
		checkNS, checkCounter string
	}{
		{name: "malformed JSON", method: "POST", path: upd, body: `{"delta":`, status: 400, code: api.CodeInvalidJSON, msg: "malformed"},
		{name: "syntax error", method: "POST", path: upd, body: `{"delta" 1}`, status: 400, code: api.CodeInvalidJSON, msg: "byte"},
		{name: "empty body", method: "POST", path: upd, body: ``, status: 400, code: api.CodeInvalidJSON, msg: "empty"},
		{name: "null body", method: "POST", path: upd, body: `null`, status: 400, code: api.CodeInvalidJSON, msg: "object"},
		{name: "array body", method: "POST", path: upd, body: `[1]`, status: 400, code: api.CodeInvalidJSON, msg: "object"},
		{name: "unknown field", method: "POST", path: upd, body: `{"delta":1,"detla":2}`, status: 400, code: api.CodeInvalidJSON, msg: `"detla"`},
		{name: "trailing data", method: "POST", path: upd, body: `{"delta":1} {"delta":1}`, status: 400, code: api.CodeInvalidJSON, msg: "trailing"},
		{name: "a field twice", method: "POST", path: upd, body: `{"delta":1,"delta":2}`, status: 400, code: api.CodeInvalidJSON, msg: `"delta" appears more than once`},
		{name: "a field twice in another case", method: "POST", path: upd, body: `{"delta":1,"Delta":2}`, status: 400, code: api.CodeInvalidJSON, msg: `"Delta" appears more than once`},
		{name: "a batch item's field twice", method: "POST", path: "/v1/updates", body: `{"updates":[{"counter":"c","delta":1},{"counter":"c","counter":"d","delta":1}]}`, status: 400, code: api.CodeInvalidJSON, msg: `"updates[1].counter"`},
		{name: "an empty request id", method: "POST", path: upd, body: `{"delta":1, "request_id" : ""}`, status: 400, code: api.CodeInvalidArgument, msg: "empty request id"},
		{name: "an empty request id in a batch", method: "POST", path: "/v1/updates", body: `{"updates":[{"counter":"c","delta":1,"request_id":""}]}`, status: 400, code: api.CodeInvalidArgument, msg: `"updates[0].request_id"`},
		{name: "no Content-Type", method: "POST", path: upd, body: `{"delta":1}`, headers: []string{"Content-Type", ""}, status: 415, code: api.CodeUnsupportedMediaType, msg: "Content-Type"},
		{name: "wrong type", method: "POST", path: upd, body: `{"delta":"5"}`, status: 400, code: api.CodeInvalidArgument, msg: `"delta"`},
		{name: "delta over int64", method: "POST", path: upd, body: `{"delta":9223372036854775808}`, status: 400, code: api.CodeInvalidArgument, msg: `"delta"`},
		{name: "delta under int64", method: "POST", path: upd, body: `{"delta":-9223372036854775809}`, status: 400, code: api.CodeInvalidArgument, msg: `"delta"`},
		{name: "fractional delta", method: "POST", path: upd, body: `{"delta":1.5}`, status: 400, code: api.CodeInvalidArgument, msg: `"delta"`},
		{name: "exponent delta", method: "POST", path: upd, body: `{"delta":1e3}`, status: 400, code: api.CodeInvalidArgument, msg: `"delta"`},
		{name: "invalid UTF-8 item", method: "POST", path: upd, body: "{\"delta\":1,\"request_id\":\"a\xffb\"}", status: 400, code: api.CodeInvalidArgument, msg: `"request_id"`},
		{name: "unpaired surrogate escape", method: "POST", path: upd, body: `{"delta":1,"request_id":"a\ud800b"}`, status: 400, code: api.CodeInvalidArgument, msg: `"request_id"`},
		{name: "lone low surrogate escape", method: "POST", path: upd, body: `{"delta":1,"request_id":"\udc00"}`, status: 400, code: api.CodeInvalidArgument, msg: `"request_id"`},
		{name: "long request id", method: "POST", path: upd, body: `{"delta":1,"request_id":"` + long + `"}`, status: 400, code: api.CodeInvalidArgument, msg: "request id"},
		{name: "257-byte counter", method: "POST", path: "/v1/namespaces/default/counters/" + long + "/updates", body: `{"delta":1}`, status: 400, code: api.CodeInvalidArgument, msg: "257"},
		{name: "invalid UTF-8 counter", method: "POST", path: "/v1/namespaces/default/counters/a%FFb/updates", body: `{"delta":1}`, status: 400, code: api.CodeInvalidArgument, msg: "UTF-8"},
		{name: "item on a sum namespace", method: "POST", path: upd, body: `{"item":"x"}`, status: 400, code: api.CodeWrongType, msg: "item"},
		{name: "delta on a distinct namespace", method: "POST", path: "/v1/namespaces/uniq/counters/c/updates", body: `{"delta":1}`, status: 400, code: api.CodeWrongType, checkNS: "uniq"},
		{name: "distinct without item", method: "POST", path: "/v1/namespaces/uniq/counters/c/updates", body: `{}`, status: 400, code: api.CodeWrongType, checkNS: "uniq"},
		{name: "unknown namespace", method: "POST", path: "/v1/namespaces/nope/counters/c/updates", body: `{"delta":1}`, status: 404, code: api.CodeNamespaceNotFound},
		{name: "body over the limit", method: "POST", path: upd, body: big, status: 413, code: api.CodeBodyTooLarge},
		{name: "text/plain", method: "POST", path: upd, body: `{"delta":1}`, headers: []string{"Content-Type", "text/plain"}, status: 415, code: api.CodeUnsupportedMediaType},
		{name: "latin-1 charset", method: "POST", path: upd, body: `{"delta":1}`, headers: []string{"Content-Type", "application/json; charset=latin1"}, status: 415, code: api.CodeUnsupportedMediaType},
		{name: "unknown route", method: "GET", path: "/v2/things", status: 404, code: api.CodeNotFound},
		{name: "wrong method", method: "PUT", path: "/v1/namespaces/default", status: 405, code: api.CodeMethodNotAllowed},
		{name: "GET on updates", method: "GET", path: upd, status: 405, code: api.CodeMethodNotAllowed},
		{name: "get unknown namespace", method: "GET", path: "/v1/namespaces/nope/counters/c", status: 404, code: api.CodeNamespaceNotFound},
		{name: "gc unknown namespace", method: "POST", path: "/v1/namespaces/nope/counters/c/gc", status: 404, code: api.CodeNamespaceNotFound},
		{name: "gc all unknown namespace", method: "POST", path: "/v1/gc", body: `{"namespace":"nope"}`, status: 404, code: api.CodeNamespaceNotFound},
		{name: "gc all unknown field", method: "POST", path: "/v1/gc", body: `{"ns":"default"}`, status: 400, code: api.CodeInvalidJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tc.body, tc.headers...)
			got := r.apiError()
			if r.status != tc.status || got.Code != tc.code {
				t.Fatalf("status %d code %q, want %d %q; body %s", r.status, got.Code, tc.status, tc.code, r.body)
			}
			if got.Message == "" || !strings.Contains(got.Message, tc.msg) {
				t.Errorf("message %q does not mention %q", got.Message, tc.msg)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if tc.status == 405 && r.header.Get("Allow") == "" {
				t.Error("405 without an Allow header")
			}
			ns := tc.checkNS
			if ns == "" {
				ns = "default"
			}
			if v := e.value(ns, "c"); !v.Empty {
				t.Errorf("counter %s/c changed to %d by a refused request", ns, v.Value)
			}
		})
	}
}

func TestBadNamespaceCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		name, body, code, msg string
	}{
		{"empty name", `{"name":""}`, api.CodeInvalidArgument, "empty"},
		{"missing name", `{}`, api.CodeInvalidArgument, "empty"},
		{"257-byte name", `{"name":"` + strings.Repeat("n", 257) + `"}`, api.CodeInvalidArgument, "257"},
		{"invalid UTF-8 name", "{\"name\":\"\xc3\x28\"}", api.CodeInvalidArgument, `"name"`},
		{"unknown type", `{"name":"x","type":"avg"}`, api.CodeInvalidArgument, "avg"},
		{"type for a sum-only model", `{"name":"x","model":"events","type":"max"}`, api.CodeInvalidArgument, "sums"},
		{"unknown model", `{"name":"x","model":"magic"}`, api.CodeInvalidArgument, "magic"},
		{"bad read consistency", `{"name":"x","read_consistency":"MOST"}`, api.CodeInvalidArgument, "read_consistency"},
		{"bad write consistency", `{"name":"x","write_consistency":"MOST"}`, api.CodeInvalidArgument, "write_consistency"},
		{"wrong type", `{"name":5}`, api.CodeInvalidArgument, `"name"`},
		{"unknown field", `{"name":"x","retention":"1d"}`, api.CodeInvalidJSON, "retention"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", "/v1/namespaces", tc.body)
			if r.status != 400 || r.apiError().Code != tc.code {
				t.Fatalf("status %d body %s, want 400 %s", r.status, r.body, tc.code)
			}
			if !strings.Contains(r.apiError().Message, tc.msg) {
				t.Errorf("message %q does not mention %q", r.apiError().Message, tc.msg)
			}
		})
	}
	var list api.NamespaceList
	e.mustJSON("GET", "/v1/namespaces", "", 200, &list)
	if len(list.Namespaces) != 1 {
		t.Errorf("refused creates left namespaces behind: %+v", list.Namespaces)
	}
}

func TestBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createNS("uniq", "distinct")
	body := `{"updates":[
		{"counter":"likes","delta":2,"request_id":"b1"},
		{"namespace":"default","counter":"likes","delta":3},
		{"namespace":"uniq","counter":"users","item":"alice"},
		{"counter":"likes","delta":2,"request_id":"b1"}
	]}`
	var br api.BatchResponse
	e.mustJSON("POST", "/v1/updates", body, 200, &br)
	if len(br.Results) != 4 {
		t.Fatalf("results: %+v", br.Results)
	}
	for i, r := range br.Results {
		if !r.Acknowledged || r.Error != nil || r.RequestID == "" {
			t.Errorf("result %d: %+v", i, r)
		}
	}
	if br.Results[0].RequestID != "b1" || br.Results[3].RequestID != "b1" {
		t.Errorf("request ids not echoed in order: %+v", br.Results)
	}
	// Items 0 and 3 share a request id: one is a retry of the other.
	if got := e.value("default", "likes").Value; got != 5 {
		t.Errorf("likes = %d, want 5", got)
	}
	if got := e.value("uniq", "users").Value; got != 1 {
		t.Errorf("users = %d, want 1", got)
	}

	// An update that fails while being applied gets its own error; the
	// others still succeed.
	e.mustJSON("POST", "/v1/updates", `{"updates":[{"counter":"big","delta":9223372036854775807},{"counter":"big","delta":1,"request_id":"over"}]}`, 200, &br)
	var acked, overflow int
	for _, r := range br.Results {
		switch {
		case r.Acknowledged:
			acked++
		case r.Error != nil && r.Error.Code == api.CodeOverflow:
			overflow++
		}
	}
	if acked != 1 || overflow != 1 {
		t.Errorf("overflowing batch: %+v", br.Results)
	}

	var empty api.BatchResponse
	e.mustJSON("POST", "/v1/updates", `{"updates":[]}`, 200, &empty)
	if empty.Results == nil || len(empty.Results) != 0 {
		t.Errorf("empty batch: %+v", empty)
	}
}

func TestBatchRefusedAsAWhole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createNS("uniq", "distinct")
	good := `{"counter":"c","delta":1}`
	items := func(bad string) string { return `{"updates":[` + good + `,` + bad + `,` + good + `]}` }
	tooMany := `{"updates":[` + strings.TrimSuffix(strings.Repeat(good+",", api.MaxBatchItems+1), ",") + `]}`

	for _, tc := range []struct {
		name, body string
		status     int
		code, msg  string
	}{
		{"empty counter", items(`{"counter":""}`), 400, api.CodeInvalidArgument, "updates[1]"},
		{"long counter", items(`{"counter":"` + strings.Repeat("x", 257) + `"}`), 400, api.CodeInvalidArgument, "updates[1]"},
		{"invalid UTF-8 namespace", items("{\"namespace\":\"d\xe9fault\",\"counter\":\"c\"}"), 400, api.CodeInvalidArgument, `updates[1].namespace`},
		{"invalid UTF-8 counter", items("{\"counter\":\"\xff\"}"), 400, api.CodeInvalidArgument, `updates[1].counter`},
		{"item on sum", items(`{"counter":"c","item":"x"}`), 400, api.CodeWrongType, "updates[1]"},
		{"delta on distinct", items(`{"namespace":"uniq","counter":"c","delta":1}`), 400, api.CodeWrongType, "updates[1]"},
		{"long request id", items(`{"counter":"c","request_id":"` + strings.Repeat("r", 257) + `"}`), 400, api.CodeInvalidArgument, "updates[1]"},
		{"unknown namespace", items(`{"namespace":"nope","counter":"c"}`), 404, api.CodeNamespaceNotFound, "updates[1]"},
		{"wrong type", items(`{"counter":"c","delta":"1"}`), 400, api.CodeInvalidArgument, `updates[1].delta`},
		{"fractional", items(`{"counter":"c","delta":0.5}`), 400, api.CodeInvalidArgument, `updates[1].delta`},
		{"overflowing number", items(`{"counter":"c","delta":9223372036854775808}`), 400, api.CodeInvalidArgument, `updates[1].delta`},
		{"unknown item field", items(`{"counter":"c","dleta":1}`), 400, api.CodeInvalidJSON, "updates[1]"},
		{"null item", items(`null`), 400, api.CodeInvalidJSON, "updates[1]"},
		{"unknown envelope field", `{"updates":[],"atomic":true}`, 400, api.CodeInvalidJSON, "atomic"},
		{"updates not an array", `{"updates":{}}`, 400, api.CodeInvalidArgument, "updates"},
		{"too many", tooMany, 400, api.CodeInvalidArgument, "1001"},
		{"two bad items", `{"updates":[{"counter":""},` + good + `,{"counter":"c","item":"x"}]}`, 400, api.CodeInvalidArgument, "updates[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", "/v1/updates", tc.body)
			got := r.apiError()
			if r.status != tc.status || got.Code != tc.code {
				t.Fatalf("status %d code %q, want %d %q; body %s", r.status, got.Code, tc.status, tc.code, r.body)
			}
			if !strings.Contains(got.Message, tc.msg) {
				t.Errorf("message %q does not mention %q", got.Message, tc.msg)
			}
			if v := e.value("default", "c"); !v.Empty {
				t.Errorf("refused batch applied updates: c = %d", v.Value)
			}
		})
	}
}

func TestNamesRoundTripThroughPaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, name := range []string{"a/b", "with space", "ünïcödé ✓", "100%", "?q=1#f", ".", "..", "a//b", strings.Repeat("é", 128)} {
		esc := escapeSegment(name)
		var ur api.UpdateResponse
		e.mustJSON("POST", "/v1/namespaces/default/counters/"+esc+"/updates", `{"delta":1}`, 200, &ur)
		if ur.Counter != name {
			t.Errorf("%q: update answered for counter %q", name, ur.Counter)
		}
		var v api.Value
		e.mustJSON("GET", "/v1/namespaces/default/counters/"+esc, "", 200, &v)
		if v.Counter != name || v.Value != 1 {
			t.Errorf("%q: read %+v", name, v)
		}
		if got := e.value("default", name).Value; got != 1 {
			t.Errorf("%q: library reads %d", name, got)
		}
	}
}

// escapeSegment escapes everything outside the unreserved set, including
// '.', so "." and ".." survive ServeMux's path cleaning.
func escapeSegment(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func TestGC(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	e := newEnv(t, func(c *abacus.Config, _ *Config) {
		c.Clock = clk
		c.MutatorLifetime = 2 * time.Hour
		c.RefusalMargin = time.Hour
		c.GCGrace = time.Hour
	})
	e.createNS("peak", "max")
	e.mustJSON("POST", "/v1/namespaces/default/counters/likes/updates", `{"delta":4}`, 200, nil)
	e.mustJSON("POST", "/v1/namespaces/peak/counters/t/updates", `{"delta":9}`, 200, nil)

	var res api.GCResult
	e.mustJSON("POST", "/v1/namespaces/default/counters/likes/gc", "", 200, &res)
	if res != (api.GCResult{Namespace: "default", Counter: "likes"}) {
		t.Errorf("gc of a live shard: %+v", res)
	}

	// Past the mutators' death plus the grace period, their shards are final.
	clk.Advance(3*time.Hour + time.Second)
	e.mustJSON("POST", "/v1/namespaces/default/counters/likes/gc", "", 200, &res)
	if res != (api.GCResult{Namespace: "default", Counter: "likes", Folded: 1}) {
		t.Errorf("gc of a final shard: %+v", res)
	}
	var v api.Value
	e.mustJSON("GET", "/v1/namespaces/default/counters/likes", "", 200, &v)
	if v.Value != 4 || v.Shards != 0 {
		t.Errorf("after gc: %+v, want value 4 from the tally and no shards", v)
	}

	// A new shard for likes, then collect everything.
	e.mustJSON("POST", "/v1/namespaces/default/counters/likes/updates", `{"delta":1}`, 200, nil)
	var all api.GCAllResult
	e.mustJSON("POST", "/v1/gc", "", 200, &all)
	if all != (api.GCAllResult{Counters: 2, Folded: 1}) {
		t.Errorf("gc all: %+v, want 2 counters, 1 folded (peak/t)", all)
	}
	e.mustJSON("POST", "/v1/gc", `{"namespace":"peak"}`, 200, &all)
	if all != (api.GCAllResult{Counters: 1}) {
		t.Errorf("gc of namespace peak: %+v", all)
	}
	e.mustJSON("GET", "/v1/namespaces/peak/counters/t", "", 200, &v)
	if v.Value != 9 {
		t.Errorf("peak/t after gc = %d, want 9", v.Value)
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	start := time.Now()
	e := newEnv(t)
	e.mustJSON("POST", "/v1/namespaces/default/counters/c/updates", `{"delta":1}`, 200, nil)
	e.do("POST", "/v1/namespaces/default/counters/c/updates", `{"item":"x"}`)
	e.mustJSON("GET", "/v1/namespaces/default/counters/c", "", 200, nil)
	e.mustJSON("POST", "/v1/gc", "", 200, nil)
	if _, err := e.client.PurgeAll(context.Background(), ""); err != nil { // what the purge sweep runs
		t.Fatal(err)
	}

	r := e.do("GET", "/metrics", "")
	if r.status != 200 {
		t.Fatalf("metrics: %d", r.status)
	}
	text := string(r.body)
	for _, want := range []string{
		`abacus_updates_total{result="acknowledged"} 1`,
		`abacus_updates_total{result="wrong_type"} 1`,
		`abacus_group_commit_updates_count 1`,
		`abacus_shard_write_seconds_count 1`,
		`abacus_read_shards_count 1`,
		`abacus_live_mutators 1`,
		`abacus_gc_runs_total 1`,
		`abacus_gc_skips_total 0`,
		// The read and the GC above each read c's whole partition: no
		// tally was known yet. Nothing the tally holds was found.
		`abacus_sharded_unbounded_reads_total 2`,
		`abacus_sharded_stale_shards_total 0`,
		`abacus_http_requests_total{code="200",route="POST /v1/namespaces/{ns}/counters/{counter}/updates"} 1`,
		`abacus_http_requests_total{code="400",route="POST /v1/namespaces/{ns}/counters/{counter}/updates"} 1`,
		`abacus_http_request_seconds_count{route="GET /v1/namespaces/{ns}/counters/{counter}"} 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	// The GC and the purge of every namespace above were complete sweeps:
	// their times are set (the env's clock is real, so just after this test started).
	for _, name := range []string{"abacus_gc_last_complete_sweep_timestamp_seconds", "abacus_rollup_last_complete_sweep_timestamp_seconds", "abacus_purge_last_complete_sweep_timestamp_seconds"} {
		_, rest, _ := strings.Cut(text, "\n"+name+" ")
		line, _, _ := strings.Cut(rest, "\n")
		v, err := strconv.ParseFloat(line, 64)
		if err != nil || v < float64(start.Unix()) || v > float64(time.Now().Unix()+1) {
			t.Errorf("%s = %q, want the time of the GC above", name, line)
		}
	}
}

func TestOpenAPIDocumentsEveryRouteAndCode(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	doc := string(api.OpenAPI)
	ops := openAPIOperations(doc)
	if len(e.srv.Routes()) < 10 {
		t.Fatalf("only %d routes registered", len(e.srv.Routes()))
	}
	for _, route := range e.srv.Routes() {
		method, path, _ := strings.Cut(route, " ")
		if !ops[strings.ToLower(method)+" "+path] {
			t.Errorf("route %s is not documented in api/openapi.yaml", route)
		}
	}
	for _, code := range api.Codes() {
		if !strings.Contains(doc, "- "+code+"\n") || !strings.Contains(doc, "| "+code+" | "+fmt.Sprint(api.Status(code))+" |") {
			t.Errorf("error code %s is not documented (enum entry and status table row) in api/openapi.yaml", code)
		}
	}
	r := e.do("GET", "/v1/openapi.yaml", "")
	if r.status != 200 || string(r.body) != doc {
		t.Errorf("GET /v1/openapi.yaml: status %d", r.status)
	}
}

// openAPIOperations reads "method path" pairs from the paths section by
// indentation alone: paths are two spaces in, methods four.
func openAPIOperations(doc string) map[string]bool {
	ops := map[string]bool{}
	inPaths, path := false, ""
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case line == "paths:":
			inPaths = true
		case inPaths && line != "" && line[0] != ' ':
			inPaths = false
		case inPaths && strings.HasPrefix(line, "  /") && strings.HasSuffix(line, ":"):
			path = strings.TrimSuffix(strings.TrimSpace(line), ":")
		case inPaths && path != "" && strings.HasPrefix(line, "    ") && !strings.HasPrefix(line, "     "):
			m := strings.TrimSuffix(strings.TrimSpace(line), ":")
			switch m {
			case "get", "post", "put", "delete", "patch":
				ops[m+" "+path] = true
			}
		}
	}
	return ops
}

func TestErrorCodeMapping(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		code string
	}{
		{fmt.Errorf("x: %w", abacus.ErrInvalid), api.CodeInvalidArgument},
		{fmt.Errorf("x: %w", abacus.ErrWrongType), api.CodeWrongType},
		{fmt.Errorf("x: %w", abacus.ErrOverflow), api.CodeOverflow},
		{fmt.Errorf("x: %w", abacus.ErrNamespaceNotFound), api.CodeNamespaceNotFound},
		{fmt.Errorf("x: %w", abacus.ErrNamespaceExists), api.CodeNamespaceExists},
		{fmt.Errorf("x: %w", abacus.ErrRequestConflict), api.CodeRequestConflict},
		{fmt.Errorf("x: %w: %w", abacus.ErrUnknownOutcome, context.Canceled), api.CodeUnknownOutcome},
		{fmt.Errorf("x: %w", abacus.ErrNotApplied), api.CodeNotApplied},
		{fmt.Errorf("x: %w", abacus.ErrUnavailable), api.CodeUnavailable},
		{context.DeadlineExceeded, api.CodeUnavailable},
		{fmt.Errorf("disk on fire"), api.CodeInternal},
	} {
		if code, _ := errorCode(tc.err); code != tc.code {
			t.Errorf("errorCode(%v) = %s, want %s", tc.err, code, tc.code)
		}
	}
	for _, code := range api.Codes() {
		if s := api.Status(code); s < 400 || s == http.StatusOK {
			t.Errorf("code %s has status %d", code, s)
		}
	}
}

// The Idempotency-Key header is the request id where the API has one: a
// client that knows nothing of request_id gets its retries recognised.
func TestIdempotencyKeyIsTheRequestID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := e.client.CreateNamespace(context.Background(), abacus.NamespaceConfig{Name: "ev", Model: abacus.ModelEvents}); err != nil {
		t.Fatal(err)
	}
	// An events increment's id must fix its time: a version 7 UUID.
	for ns, id := range map[string]string{"default": "k-1", "ev": api.NewRequestID(time.Now())} {
		path := "/v1/namespaces/" + ns + "/counters/c/updates"
		for i, key := range []string{id, `"` + id + `"`, " " + id + " "} {
			r := e.do("POST", path, `{"delta":5}`, "Idempotency-Key", key)
			if r.status != 200 || r.header.Get("Abacus-Request-Id") != id || !strings.Contains(string(r.body), `"request_id":"`+id+`"`) {
				t.Fatalf("%s, send %d with key %s: %d %s %v", ns, i+1, key, r.status, r.body, r.header)
			}
		}
		if r := e.do("POST", path, `{"delta":5,"request_id":"`+id+`"}`, "Idempotency-Key", id); r.status != 200 {
			t.Fatalf("%s: the same id in body and header: %d %s", ns, r.status, r.body)
		}
		if v := e.value(ns, "c"); v.Value != 5 {
			t.Fatalf("%s: four sends of one key counted %d, want 5", ns, v.Value)
		}
	}

	// A ledger: the retry is recognised, and the key reused for another
	// amount is a conflict.
	led := "/v1/namespaces/ledgers/ledgers/alice/credits"
	var first, again api.LedgerUpdateResponse
	e.mustJSON("POST", led, `{"amount":50}`, 200, &first, "Idempotency-Key", "order-7")
	e.mustJSON("POST", led, `{"amount":50}`, 200, &again, "Idempotency-Key", "order-7")
	if !first.Applied || first.Replayed || !again.Applied || !again.Replayed || again.RequestID != "order-7" {
		t.Fatalf("ledger credit and its retry: %+v, %+v", first, again)
	}
	if r := e.do("POST", led, `{"amount":60}`, "Idempotency-Key", "order-7"); r.status != 409 || r.apiError().Code != api.CodeRequestConflict {
		t.Fatalf("the key reused for another amount: %d %s", r.status, r.body)
	}
	if v, err := e.client.LedgerValue(context.Background(), "ledgers", "alice"); err != nil || v.Value != 50 {
		t.Fatalf("ledger after a credit, its retry and a conflicting reuse: %+v, %v", v, err)
	}
}

// A header the server cannot honour is refused, and nothing changes.
func TestIdempotencyKeyRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	upd := "/v1/namespaces/default/counters/c/updates"
	for _, tc := range []struct {
		name, path, body string
		headers          []string
	}{
		{"differs from the body's request_id", upd, `{"delta":1,"request_id":"a"}`, []string{"Idempotency-Key", "b"}},
		{"empty", upd, `{"delta":1}`, []string{"Idempotency-Key", `""`}},
		{"a broken quoted string", upd, `{"delta":1}`, []string{"Idempotency-Key", `"open`}},
		{"on a batch", "/v1/updates", `{"updates":[{"counter":"c","delta":1}]}`, []string{"Idempotency-Key", "k"}},
		{"on a route without a request id", "/v1/namespaces", `{"name":"made"}`, []string{"Idempotency-Key", "k"}},
	} {
		r := e.do("POST", tc.path, tc.body, tc.headers...)
		if r.status != 400 || r.apiError().Code != api.CodeInvalidArgument || !strings.Contains(r.apiError().Message, "Idempotency-Key") {
			t.Errorf("%s: %d %s, want 400 invalid_argument naming the header", tc.name, r.status, r.body)
		}
	}
	req, _ := http.NewRequest("POST", e.ts.URL+upd, strings.NewReader(`{"delta":1}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Add("Idempotency-Key", "a")
	req.Header.Add("Idempotency-Key", "b")
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("two Idempotency-Key headers: %d, want 400", resp.StatusCode)
	}
	if v := e.value("default", "c"); !v.Empty {
		t.Errorf("refused requests changed the counter to %d", v.Value)
	}
	if _, err := e.client.Namespace(context.Background(), "made"); err == nil {
		t.Error("a refused namespace create made the namespace")
	}
}

// Pages follow each other without a gap or a repeat, "next" is absent on
// the last, and a bad limit is refused.
func TestListsComeInPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	want := []string{"default"}
	for i := range 7 {
		name := fmt.Sprintf("ns%d", i)
		e.mustJSON("POST", "/v1/namespaces", `{"name":"`+name+`"}`, 201, nil)
		e.mustJSON("POST", "/v1/queues", `{"name":"q`+name+`"}`, 201, nil)
		want = append(want, name)
	}
	slices.Sort(want)

	var got []string
	after := ""
	for pages := 0; ; pages++ {
		var list api.NamespaceList
		e.mustJSON("GET", "/v1/namespaces?limit=3&after="+after, "", 200, &list)
		if len(list.Namespaces) > 3 || pages > 5 {
			t.Fatalf("page %d: %d namespaces (limit 3), next %q", pages, len(list.Namespaces), list.Next)
		}
		for _, ns := range list.Namespaces {
			got = append(got, ns.Name)
		}
		if list.Next == "" {
			break
		}
		after = list.Next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages of 3 gave %v, want %v", got, want)
	}
	var all api.NamespaceList
	e.mustJSON("GET", "/v1/namespaces", "", 200, &all)
	if len(all.Namespaces) != len(want) || all.Next != "" {
		t.Fatalf("one default page: %d namespaces, next %q", len(all.Namespaces), all.Next)
	}
	// A cursor that names no namespace starts after where it would be.
	var from api.NamespaceList
	e.mustJSON("GET", "/v1/namespaces?after=ns3x", "", 200, &from)
	if len(from.Namespaces) != 3 || from.Namespaces[0].Name != "ns4" {
		t.Fatalf("after ns3x: %+v", from.Namespaces)
	}
	var queues api.QueueList
	e.mustJSON("GET", "/v1/queues?limit=5", "", 200, &queues)
	if len(queues.Queues) != 5 || queues.Next != "qns4" {
		t.Fatalf("queues page of 5: %d, next %q", len(queues.Queues), queues.Next)
	}
	for _, bad := range []string{"0", "-1", "1001", "x", ""} {
		e.wantError("GET", "/v1/namespaces?limit="+bad, "", 400, api.CodeInvalidArgument, "limit")
		e.wantError("GET", "/v1/queues?limit="+bad, "", 400, api.CodeInvalidArgument, "limit")
	}
}
