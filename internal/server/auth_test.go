package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/apikey"
)

// key makes an API key with scopes in the server's store and returns its token.
func (e *testEnv) key(scopes ...string) string {
	e.t.Helper()
	tok, _, err := e.srv.cfg.Keys.Create(context.Background(), apikey.Spec{Scopes: scopes})
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

func beyondLoopback(_ *abacus.Config, c *Config) { c.Addr = "0.0.0.0:7070" }

// Every route has an access rule, and the map names no route that does
// not exist: a rule for a removed route would hide a typo in a new one.
func TestEveryRouteHasAnAccessRule(t *testing.T) {
	e := newEnv(t)
	routes := map[string]bool{}
	for _, r := range e.srv.Routes() {
		routes[r] = true
	}
	for pattern := range routeAccess {
		if !routes[pattern] {
			t.Errorf("routeAccess has a rule for %q, which is not a route", pattern)
		}
	}
}

func TestAServerBeyondLoopbackRefusesRequestsWithoutAKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, beyondLoopback)
	good := e.key("*:admin")
	parsed, _ := apikey.ParseToken(good)
	wrongSecret := apikey.Token{ID: parsed.ID, Secret: make([]byte, len(parsed.Secret))}.String()
	revoked := e.key("*:admin")
	rp, _ := apikey.ParseToken(revoked)
	if r := e.do("DELETE", "/v1/keys/"+rp.ID, "", "Authorization", "Bearer "+good); r.status != 204 {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	for _, c := range []struct{ name, auth string }{
		{"no Authorization", ""},
		{"Basic", "Basic YWRtaW46YWRtaW4="},
		{"empty bearer", "Bearer "},
		{"not a token", "Bearer hunter2"},
		{"wrong secret", "Bearer " + wrongSecret},
		{"revoked", "Bearer " + revoked},
	} {
		for _, req := range [][2]string{
			{"POST", "/v1/namespaces/default/counters/c/updates"},
			{"GET", "/v1/namespaces/default/counters/c"},
			{"GET", "/v1/namespaces"},
			{"GET", "/metrics"},
			{"POST", "/v1/keys"},
			{"GET", "/v1/namespaces/default/counters"},
		} {
			body := ""
			if req[0] == "POST" {
				body = `{"delta":1}`
				if req[1] == "/v1/keys" {
					body = `{"scopes":["*:admin"]}`
				}
			}
			r := e.do(req[0], req[1], body, "Authorization", c.auth)
			if r.status != 401 || r.apiError().Code != api.CodeUnauthenticated || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s, %s %s: %d %s %q; want 401 unauthenticated with WWW-Authenticate", c.name, req[0], req[1], r.status, r.body, r.header.Get("WWW-Authenticate"))
			}
		}
	}
	if v := e.value("default", "c"); v.Value != 0 {
		t.Fatalf("refused writes counted: %d", v.Value)
	}
	// Health probes and the API description stay open.
	for _, p := range []string{"/healthz", "/readyz", "/v1/openapi.yaml"} {
		if r := e.do("GET", p, ""); r.status != 200 {
			t.Errorf("GET %s without a key: %d", p, r.status)
		}
	}
	// Two Authorization headers are refused, not guessed between.
	req, _ := http.NewRequest("GET", e.ts.URL+"/v1/namespaces", nil)
	req.Header.Add("Authorization", "Bearer "+good)
	req.Header.Add("Authorization", "Bearer "+good)
	if resp, err := e.ts.Client().Do(req); err != nil || resp.StatusCode != 401 {
		t.Errorf("two Authorization headers: %v %v, want 401", resp.StatusCode, err)
	}
	if r := e.do("POST", "/v1/namespaces/default/counters/c/updates", `{"delta":1}`, "Authorization", "Bearer "+good); r.status != 200 {
		t.Fatalf("with a good key: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/v1/namespaces/default/counters/c/updates", `{"delta":1}`, "Authorization", "bearer "+good); r.status != 200 {
		t.Fatalf("the scheme is case-insensitive (RFC 9110): %d %s", r.status, r.body)
	}
}

func TestScopesDecideWhatAKeyMayDo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, beyondLoopback)
	admin := "Bearer " + e.key("*:admin")
	for _, ns := range []string{"likes", "shares"} {
		if r := e.do("POST", "/v1/namespaces", `{"name":"`+ns+`"}`, "Authorization", admin); r.status != 201 {
			t.Fatalf("create %s: %d %s", ns, r.status, r.body)
		}
	}
	if r := e.do("POST", "/v1/queues", `{"name":"jobs"}`, "Authorization", admin); r.status != 201 {
		t.Fatalf("create queue: %d %s", r.status, r.body)
	}
	writer := "Bearer " + e.key("ns:likes:write")
	reader := "Bearer " + e.key("ns:*:read")
	nsAdmin := "Bearer " + e.key("ns:fresh:admin")
	consumer := "Bearer " + e.key("queue:jobs:write")
	scraper := "Bearer " + e.key("metrics:read")
	defaultWriter := "Bearer " + e.key("ns:default:write")

	for _, c := range []struct {
		who, auth, method, path, body string
		want                          int
	}{
		{"writer", writer, "POST", "/v1/namespaces/likes/counters/c/updates", `{"delta":1}`, 200},
		{"writer", writer, "GET", "/v1/namespaces/likes/counters/c", "", 200},
		{"writer", writer, "POST", "/v1/namespaces/shares/counters/c/updates", `{"delta":1}`, 403},
		{"writer", writer, "GET", "/v1/namespaces/shares/counters/c", "", 403},
		{"writer", writer, "POST", "/v1/namespaces/likes/counters/c/gc", "", 403},
		{"writer", writer, "POST", "/v1/namespaces", `{"name":"likes2"}`, 403},
		{"writer", writer, "POST", "/v1/updates", `{"updates":[{"namespace":"likes","counter":"c","delta":1},{"namespace":"shares","counter":"c","delta":1}]}`, 403},
		{"writer", writer, "POST", "/v1/updates", `{"updates":[{"namespace":"likes","counter":"c","delta":1}]}`, 200},
		{"writer", writer, "GET", "/v1/keys", "", 403},
		{"writer", writer, "GET", "/metrics", "", 403},
		{"scraper", scraper, "GET", "/metrics", "", 200},
		{"scraper", scraper, "GET", "/v1/namespaces/likes/counters/c", "", 403},
		{"reader", reader, "GET", "/metrics", "", 403},
		{"writer", writer, "POST", "/v1/updates", `{"updates":[{"counter":"c","delta":1}]}`, 403},
		{"default writer", defaultWriter, "POST", "/v1/updates", `{"updates":[{"counter":"c","delta":1}]}`, 200},
		{"reader", reader, "GET", "/v1/namespaces/shares/counters/c", "", 200},
		{"reader", reader, "POST", "/v1/namespaces/shares/counters/c/updates", `{"delta":1}`, 403},
		{"reader", reader, "GET", "/v1/queues/jobs/stats", "", 403},
		{"namespace admin", nsAdmin, "POST", "/v1/namespaces", `{"name":"fresh"}`, 201},
		{"namespace admin", nsAdmin, "POST", "/v1/namespaces/fresh/counters/c/updates", `{"delta":1}`, 200},
		{"namespace admin", nsAdmin, "POST", "/v1/namespaces", `{"name":"other"}`, 403},
		{"namespace admin", nsAdmin, "POST", "/v1/gc", "", 403},
		{"consumer", consumer, "POST", "/v1/queues/jobs/messages", `{"messages":[{"body":"aGk="}]}`, 201},
		{"consumer", consumer, "POST", "/v1/queues/jobs/dead/requeue", `{}`, 403},
		{"consumer", consumer, "POST", "/v1/queues/jobs/pause", "", 403},
		{"consumer", consumer, "POST", "/v1/queues/jobs/purge", "", 403},
		{"consumer", consumer, "DELETE", "/v1/queues/jobs", "", 403},
		{"consumer", consumer, "GET", "/v1/queues/jobs/pause", "", 200},
		{"consumer", consumer, "POST", "/v1/queues", `{"name":"jobs2"}`, 403},
		{"admin", admin, "POST", "/v1/gc", "", 200},
	} {
		r := e.do(c.method, c.path, c.body, "Authorization", c.auth)
		if r.status != c.want {
			t.Errorf("%s: %s %s: %d %s, want %d", c.who, c.method, c.path, r.status, r.body, c.want)
		}
		if r.status == 403 && r.apiError().Code != api.CodeInsufficientScope {
			t.Errorf("%s: %s %s: code %s, want insufficient_scope", c.who, c.method, c.path, r.apiError().Code)
		}
	}
	// Refused writes wrote nothing: likes got the writer's 1 + batch 1.
	if v := e.value("likes", "c"); v.Value != 2 {
		t.Errorf("likes/c = %d, want 2", v.Value)
	}
	if v := e.value("shares", "c"); v.Value != 0 {
		t.Errorf("shares/c = %d, want 0 (every write to it was refused)", v.Value)
	}
	// Lists show what the key may read, and only that.
	var nl api.NamespaceList
	e.mustJSON("GET", "/v1/namespaces", "", 200, &nl, "Authorization", writer)
	if len(nl.Namespaces) != 1 || nl.Namespaces[0].Name != "likes" {
		t.Errorf("the writer of likes lists %+v", nl.Namespaces)
	}
	var ql api.QueueList
	e.mustJSON("GET", "/v1/queues", "", 200, &ql, "Authorization", writer)
	if len(ql.Queues) != 0 {
		t.Errorf("the writer of likes lists queues %+v", ql.Queues)
	}
	e.mustJSON("GET", "/v1/queues", "", 200, &ql, "Authorization", consumer)
	if len(ql.Queues) != 1 || ql.Queues[0].Name != "jobs" {
		t.Errorf("the consumer of jobs lists %+v", ql.Queues)
	}
}

func TestKeysAreManagedOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, beyondLoopback)
	admin := "Bearer " + e.key("*:admin")
	var made api.CreatedKey
	e.mustJSON("POST", "/v1/keys", `{"name":"ci","scopes":["ns:default:write"],"rate_limit":1,"burst":2}`, 201, &made, "Authorization", admin)
	if made.Token == "" || made.ID == "" || made.Burst != 2 || made.RateLimit != 1 {
		t.Fatalf("created %+v", made)
	}
	var list api.KeyList
	e.mustJSON("GET", "/v1/keys", "", 200, &list, "Authorization", admin)
	found := false
	for _, k := range list.Keys {
		found = found || k.ID == made.ID
	}
	if !found {
		t.Fatalf("list %+v lacks %s", list.Keys, made.ID)
	}
	var first api.KeyList
	e.mustJSON("GET", "/v1/keys?limit=1", "", 200, &first, "Authorization", admin)
	if len(first.Keys) != 1 || first.Next != first.Keys[0].ID || len(list.Keys) < 2 {
		t.Fatalf("a page of one key: %+v (of %d)", first, len(list.Keys))
	}
	if r := e.do("GET", "/v1/keys", "", "Authorization", admin); r.status != 200 || strings.Contains(string(r.body), made.Token) {
		t.Fatal("a list shows a token")
	}
	// The key's rate: a burst of 2, then 429 with Retry-After, nothing done.
	auth := "Bearer " + made.Token
	statuses := []int{}
	for range 4 {
		r := e.do("POST", "/v1/namespaces/default/counters/rl/updates", `{"delta":1}`, "Authorization", auth)
		statuses = append(statuses, r.status)
		if r.status == 429 && (r.header.Get("Retry-After") == "" || r.apiError().Code != api.CodeRateLimited) {
			t.Errorf("429 without Retry-After or code: %q %s", r.header.Get("Retry-After"), r.body)
		}
	}
	if fmt.Sprint(statuses[:2]) != "[200 200]" || statuses[3] != 429 {
		t.Errorf("statuses of 4 quick requests at rate 1, burst 2: %v", statuses)
	}
	ok := 0
	for _, s := range statuses {
		if s == 200 {
			ok++
		}
	}
	if v := e.value("default", "rl"); v.Value != int64(ok) {
		t.Errorf("counter %d after %d accepted requests", v.Value, ok)
	}
	// Bad specs are 400; revoking twice is 404 key_not_found.
	for _, body := range []string{`{}`, `{"scopes":[]}`, `{"scopes":["likes:write"]}`, `{"scopes":["*:root"]}`, `{"scopes":["*:read"],"burst":3}`} {
		if r := e.do("POST", "/v1/keys", body, "Authorization", admin); r.status != 400 {
			t.Errorf("POST /v1/keys %s: %d %s, want 400", body, r.status, r.body)
		}
	}
	if r := e.do("DELETE", "/v1/keys/"+made.ID, "", "Authorization", admin); r.status != 204 {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	if r := e.do("DELETE", "/v1/keys/"+made.ID, "", "Authorization", admin); r.status != 404 || r.apiError().Code != api.CodeKeyNotFound {
		t.Fatalf("second revoke: %d %s", r.status, r.body)
	}
	if r := e.do("DELETE", "/v1/keys/Not_An_Id", "", "Authorization", admin); r.status != 400 {
		t.Fatalf("revoke of a malformed id: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/v1/namespaces/default/counters/rl", "", "Authorization", auth); r.status != 401 {
		t.Fatalf("a revoked key on the server that revoked it: %d %s", r.status, r.body)
	}
}

// A loopback server with auth auto asks for no key, and one with auth on does.
func TestAuthModes(t *testing.T) {
	t.Parallel()
	open := newEnv(t) // no Addr: loopback default
	if r := open.do("POST", "/v1/namespaces/default/counters/c/updates", `{"delta":1}`); r.status != 200 {
		t.Fatalf("loopback, auth auto: %d %s", r.status, r.body)
	}
	on := newEnv(t, func(_ *abacus.Config, c *Config) { c.Auth = AuthOn })
	if r := on.do("POST", "/v1/namespaces/default/counters/c/updates", `{"delta":1}`); r.status != 401 {
		t.Fatalf("loopback, auth on: %d %s", r.status, r.body)
	}
	off := newEnv(t, beyondLoopback, func(_ *abacus.Config, c *Config) { c.Auth = AuthOff })
	if r := off.do("POST", "/v1/namespaces/default/counters/c/updates", `{"delta":1}`); r.status != 200 {
		t.Fatalf("beyond loopback, auth off: %d %s", r.status, r.body)
	}
	if _, err := ParseAuthMode("sometimes"); err == nil {
		t.Fatal("ParseAuthMode accepted sometimes")
	}
}

// failingKeyStore is a key store that cannot be reached: a test double for
// the mapping of store errors, not for a backend.
type failingKeyStore struct{ driver.APIKeys }

func (failingKeyStore) GetAPIKey(context.Context, *driver.GetAPIKeyParams) (*driver.APIKey, error) {
	return nil, fmt.Errorf("store down: %w", driver.ErrUnavailable)
}

// When the store cannot say whether a key is good, the request is neither
// served nor told its key is bad: 503, nothing done.
func TestAKeyThatCannotBeCheckedIs503(t *testing.T) {
	t.Parallel()
	var keys *apikey.Keys
	e := newEnv(t, beyondLoopback, func(a *abacus.Config, c *Config) {
		keys = apikey.New(failingKeyStore{a.Driver}, 0)
		c.Keys = keys
	})
	tok, _, err := keys.Create(context.Background(), apikey.Spec{Scopes: []string{"*:admin"}})
	if err != nil {
		t.Fatal(err)
	}
	r := e.do("POST", "/v1/namespaces/default/counters/c/updates", `{"delta":1}`, "Authorization", "Bearer "+tok)
	if r.status != 503 || r.apiError().Code != api.CodeUnavailable {
		t.Fatalf("a key the store cannot check: %d %s, want 503 unavailable", r.status, r.body)
	}
	if v := e.value("default", "c"); v.Value != 0 {
		t.Fatalf("the refused write counted: %d", v.Value)
	}
}
