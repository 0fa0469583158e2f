package server

import (
	"strings"
	"testing"

	"github.com/abacusdb/abacus"
)

// Requests about a namespace are counted per namespace up to the limit,
// then as _other; a namespace that does not exist takes no label.
func TestNamespaceSeriesAreBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(_ *abacus.Config, c *Config) { c.MetricsMaxNamespaces = 2 })
	for _, body := range []string{`{"name":"a"}`, `{"name":"b"}`, `{"name":"c"}`, `{"name":"w","model":"ledger"}`} {
		if r := e.do("POST", "/v1/namespaces", body); r.status != 201 {
			t.Fatalf("create %s: %d %s", body, r.status, r.body)
		}
	}
	for _, ns := range []string{"a", "b", "c", "a"} {
		if r := e.do("POST", "/v1/namespaces/"+ns+"/counters/x/updates", `{"delta":1}`); r.status != 200 {
			t.Fatalf("update in %s: %d %s", ns, r.status, r.body)
		}
	}
	if r := e.do("GET", "/v1/namespaces/a/counters/x", ""); r.status != 200 {
		t.Fatal(r.status)
	}
	if r := e.do("POST", "/v1/namespaces/w/ledgers/l/credits", `{"amount":5}`); r.status != 200 {
		t.Fatalf("credit: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/v1/namespaces/a/counters/x/updates", `{"item":"x"}`); r.status != 400 {
		t.Fatalf("a wrong-type update: %d", r.status)
	}
	if r := e.do("POST", "/v1/namespaces/nope/counters/x/updates", `{"delta":1}`); r.status != 404 {
		t.Fatalf("an update in a missing namespace: %d", r.status)
	}
	m := string(e.do("GET", "/metrics", "").body)
	for _, want := range []string{
		`abacus_namespace_requests_total{access="write",model="sharded",namespace="a",result="ok"} 2`,
		`abacus_namespace_requests_total{access="read",model="sharded",namespace="a",result="ok"} 1`,
		`abacus_namespace_requests_total{access="write",model="sharded",namespace="a",result="refused"} 1`,
		`abacus_namespace_requests_total{access="write",model="sharded",namespace="b",result="ok"} 1`,
		`abacus_namespace_requests_total{access="write",model="sharded",namespace="_other",result="ok"} 1`,
		`abacus_namespace_requests_total{access="write",model="ledger",namespace="_other",result="ok"} 1`,
		`abacus_model_request_seconds_count{access="write",model="sharded"} 5`,
		`abacus_model_request_seconds_count{access="write",model="ledger"} 1`,
	} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, bad := range []string{`namespace="c"`, `namespace="w"`, `namespace="nope"`} {
		if strings.Contains(m, bad) {
			t.Errorf("/metrics has a series with %s past the limit of 2", bad)
		}
	}
}
