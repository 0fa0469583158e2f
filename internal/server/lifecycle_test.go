package server

import (
	"testing"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/clock"
)

// The deletes over HTTP: 202 with the time they take effect, which is the
// client's delete delay ahead; the counter, ledger and namespace behave as
// deleted from then on; bad deletes are refused and change nothing.
func TestDeletesOverHTTP(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Now())
	e := newEnv(t, func(c *abacus.Config, _ *Config) { c.Clock = clk })
	e.createModelNS("nat", abacus.ModelNative)
	e.createModelNS("wallets", abacus.ModelLedger)
	e.mustJSON("POST", "/v1/namespaces/nat/counters/c/updates", `{"delta":5}`, 200, nil)
	e.mustJSON("POST", "/v1/namespaces/wallets/ledgers/w/credits", `{"amount":7}`, 200, nil)
	e.mustJSON("POST", "/v1/namespaces/default/counters/s/updates", `{"delta":3}`, 200, nil)

	var del api.DeleteResponse
	e.mustJSON("DELETE", "/v1/namespaces/nat/counters/c", "", 202, &del)
	if want := clk.Now().Add(3 * time.Minute); del.Namespace != "nat" || del.Counter != "c" || !del.EffectiveAt.Equal(want.Truncate(time.Microsecond)) {
		t.Fatalf("delete answered %+v, want nat/c effective at %v", del, want)
	}
	var led api.DeleteResponse
	e.mustJSON("DELETE", "/v1/namespaces/wallets/ledgers/w", "", 202, &led)
	if led.Ledger != "w" || led.Counter != "" {
		t.Fatalf("ledger delete answered %+v", led)
	}
	var cl api.ClearResponse
	e.mustJSON("POST", "/v1/namespaces/default/counters/s/clear", "", 200, &cl)
	if !cl.EffectiveAt.After(clk.Now()) {
		t.Fatalf("a sharded clear takes effect at %v, not after now %v", cl.EffectiveAt, clk.Now())
	}
	for _, c := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"DELETE", "/v1/namespaces/default", 400, api.CodeInvalidArgument},
		{"DELETE", "/v1/namespaces/ledgers", 400, api.CodeInvalidArgument},
		{"DELETE", "/v1/namespaces/nope", 404, api.CodeNamespaceNotFound},
		{"DELETE", "/v1/namespaces/nope/counters/c", 404, api.CodeNamespaceNotFound},
		{"DELETE", "/v1/namespaces/wallets/counters/w", 400, api.CodeWrongModel},
		{"DELETE", "/v1/namespaces/nat/ledgers/c", 400, api.CodeInvalidArgument},
		{"DELETE", "/v1/namespaces/nat/counters/a%EF%BF%BFb", 400, api.CodeInvalidArgument},
	} {
		e.wantError(c.method, c.path, "", c.status, c.code, "")
	}
	if got := e.value("nat", "c").Value; got != 5 {
		t.Fatalf("before the delete takes effect nat/c = %d, want 5", got)
	}
	clk.Advance(3 * time.Minute)
	if got := e.value("nat", "c"); got.Value != 0 || !got.Empty {
		t.Fatalf("once the delete took effect nat/c = %+v, want empty", got)
	}
	var lv api.LedgerValue
	e.mustJSON("GET", "/v1/namespaces/wallets/ledgers/w", "", 200, &lv)
	if lv.Value != 0 {
		t.Fatalf("a deleted ledger reads %d", lv.Value)
	}
	if got := e.value("default", "s").Value; got != 0 {
		t.Fatalf("a cleared sharded counter reads %d", got)
	}

	var ns api.DeleteResponse
	e.mustJSON("DELETE", "/v1/namespaces/nat", "", 202, &ns)
	clk.Advance(3 * time.Minute)
	e.wantError("GET", "/v1/namespaces/nat", "", 404, api.CodeNamespaceNotFound, "deleted")
	e.wantError("POST", "/v1/namespaces/nat/counters/c/updates", `{"delta":1}`, 404, api.CodeNamespaceNotFound, "")
}

func TestNamespaceTTLOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var ns api.Namespace
	e.mustJSON("POST", "/v1/namespaces", `{"name":"hourly","ttl_seconds":3600}`, 201, &ns)
	if ns.TTLSeconds != 3600 {
		t.Fatalf("created %+v, want ttl_seconds 3600", ns)
	}
	e.mustJSON("GET", "/v1/namespaces/hourly", "", 200, &ns)
	if ns.TTLSeconds != 3600 {
		t.Fatalf("read back %+v, want ttl_seconds 3600", ns)
	}
	for _, body := range []string{`{"name":"x","ttl_seconds":59}`, `{"name":"x","ttl_seconds":-1}`, `{"name":"x","ttl_seconds":60.5}`, `{"name":"x","ttl_seconds":3162240001}`} {
		e.wantError("POST", "/v1/namespaces", body, 400, api.CodeInvalidArgument, "")
	}
	e.wantError("GET", "/v1/namespaces/x", "", 404, api.CodeNamespaceNotFound, "")
}

// Deleting a namespace or a ledger needs the admin role on it; a counter,
// like a clear, the write role.
func TestDeletesNeedTheirRoles(t *testing.T) {
	t.Parallel()
	e := newEnv(t, beyondLoopback)
	e.createModelNS("wallets", abacus.ModelLedger)
	e.createModelNS("nat", abacus.ModelNative)
	write := "Bearer " + e.key("ns:wallets:write", "ns:nat:write")
	for _, path := range []string{"/v1/namespaces/nat", "/v1/namespaces/wallets/ledgers/w"} {
		if r := e.do("DELETE", path, "", "Authorization", write); r.status != 403 {
			t.Errorf("DELETE %s with a write key: %d %s, want 403", path, r.status, r.body)
		}
	}
	e.mustJSON("DELETE", "/v1/namespaces/nat/counters/c", "", 202, nil, "Authorization", write)
	admin := "Bearer " + e.key("ns:nat:admin")
	e.mustJSON("DELETE", "/v1/namespaces/nat", "", 202, nil, "Authorization", admin)
}
