package server

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
)

func (e *testEnv) createModelNS(name string, model abacus.Model) {
	e.t.Helper()
	if _, err := e.client.CreateNamespace(context.Background(), abacus.NamespaceConfig{Name: name, Model: model}); err != nil {
		e.t.Fatalf("create namespace %s: %v", name, err)
	}
}

func TestEveryModelOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustJSON("POST", "/v1/namespaces", `{"name":"ev","model":"EVENTS","events":{"accept_window_seconds":7200}}`, 201, nil)
	var ns api.Namespace
	e.mustJSON("GET", "/v1/namespaces/ev", "", 200, &ns)
	if ns.Model != "events" || ns.Type != "sum" || ns.Events == nil || *ns.Events != (api.EventsOptions{BucketSeconds: 600, AcceptWindowSeconds: 7200, SealSeconds: 4, RollupDelaySeconds: 2, FutureLimitSeconds: 60}) {
		t.Fatalf("events namespace = %+v (%+v)", ns, ns.Events)
	}
	for _, m := range []abacus.Model{abacus.ModelActor, abacus.ModelNative, abacus.ModelCAS} {
		e.createModelNS(string(m), m)
	}

	// Events: the server's id is a v7 UUID, so the same body retried counts once.
	var up api.UpdateResponse
	e.mustJSON("POST", "/v1/namespaces/ev/counters/c/updates", `{"delta":5}`, 200, &up)
	body := `{"delta":5,"request_id":"` + up.RequestID + `"}`
	e.mustJSON("POST", "/v1/namespaces/ev/counters/c/updates", body, 200, nil)
	e.mustJSON("POST", "/v1/namespaces/ev/counters/c/updates", `{"delta":2,"return_value":true}`, 200, &up)
	if up.Value == nil || up.Value.Value != 7 || up.Value.Model != "events" || up.Value.Events != 2 {
		t.Fatalf("add-and-get = %+v", up.Value)
	}
	var clr api.ClearResponse
	e.mustJSON("POST", "/v1/namespaces/ev/counters/c/clear", "", 200, &clr)
	if clr.RequestID == "" || e.value("ev", "c").Value != 0 {
		t.Fatalf("clear = %+v, value %d", clr, e.value("ev", "c").Value)
	}

	// Actor: sets in any order; the highest version wins.
	for _, s := range []string{`{"version":2,"value":1500}`, `{"version":1,"value":500}`} {
		e.mustJSON("POST", "/v1/namespaces/actor/counters/q/actors/P2", `{"version":1,"value":500}`, 200, nil)
		e.mustJSON("POST", "/v1/namespaces/actor/counters/q/actors/P1", s, 200, nil)
	}
	var v api.Value
	e.mustJSON("GET", "/v1/namespaces/actor/counters/q", "", 200, &v)
	if v.Value != 2000 || v.Actors != 2 || v.Model != "actor" {
		t.Fatalf("actor value = %+v", v)
	}

	// The baselines add; cas clears.
	for _, m := range []string{"native", "cas"} {
		e.mustJSON("POST", "/v1/namespaces/"+m+"/counters/c/updates", `{"delta":4}`, 200, nil)
		e.mustJSON("POST", "/v1/namespaces/"+m+"/counters/c/updates", `{"delta":-1,"return_value":true}`, 200, &up)
		if up.Value == nil || up.Value.Value != 3 {
			t.Fatalf("%s add-and-get = %+v", m, up.Value)
		}
	}
	e.mustJSON("POST", "/v1/namespaces/cas/counters/c/clear", `{}`, 200, nil)
	if got := e.value("cas", "c").Value; got != 0 {
		t.Fatalf("cleared cas counter = %d", got)
	}
}

func TestModelBadRequestsChangeNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createModelNS("ev", abacus.ModelEvents)
	e.createModelNS("actor", abacus.ModelActor)
	e.createModelNS("native", abacus.ModelNative)
	e.mustJSON("POST", "/v1/namespaces/ev/counters/c/updates", `{"delta":1}`, 200, nil)
	e.mustJSON("POST", "/v1/namespaces/actor/counters/c/actors/a", `{"version":3,"value":10}`, 200, nil)
	e.mustJSON("POST", "/v1/namespaces/native/counters/c/updates", `{"delta":2}`, 200, nil)
	for _, c := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", "/v1/namespaces/ev/counters/c/actors/a", `{"version":1,"value":1}`, 400, api.CodeWrongModel},
		{"POST", "/v1/namespaces/actor/counters/c/updates", `{"delta":1}`, 400, api.CodeWrongModel},
		{"POST", "/v1/namespaces/actor/counters/c/actors/a", `{"value":99}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces/actor/counters/c/actors/a", `{"version":-4,"value":99}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces/actor/counters/c/actors/a", `{"version":4,"value":99,"x":1}`, 400, api.CodeInvalidJSON},
		{"POST", "/v1/namespaces/actor/counters/c/actors/a", `{"version":4,"value":1.5}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces/native/counters/c/updates", `{"delta":1,"time":"2026-11-22T09:30:00Z"}`, 400, api.CodeWrongModel},
		{"POST", "/v1/namespaces/ev/counters/c/updates", `{"delta":1,"request_id":"plain"}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces/ev/counters/c/updates", `{"delta":1,"request_id":"p","time":"2001-01-01T00:00:00Z"}`, 409, api.CodeTooLate},
		{"POST", "/v1/namespaces/ev/counters/c/updates", `{"delta":1,"request_id":"p","time":"2999-01-01T00:00:00Z"}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces/ev/counters/c/updates", `{"delta":1,"time":"yesterday"}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces/ev/counters/c/updates", `{"item":"x"}`, 400, api.CodeWrongType},
		{"POST", "/v1/namespaces/ev/counters/c/clear", `{"request_id":"` + strings.Repeat("x", 257) + `"}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces/ev/counters/c/clear", `{"request_id":1}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/updates", `{"updates":[{"namespace":"ev","counter":"c","delta":1},{"namespace":"actor","counter":"c","delta":1}]}`, 400, api.CodeWrongModel},
		{"POST", "/v1/namespaces", `{"name":"x","model":"events","type":"max"}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces", `{"name":"x","model":"events","events":{"bucket_seconds":-1}}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces", `{"name":"x","model":"cas","events":{}}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces", `{"name":"x","model":"counter"}`, 400, api.CodeInvalidArgument},
		// Found by the API fuzzer: "" read as DEFAULT, outside the contract's enum.
		{"POST", "/v1/namespaces", `{"name":"x","read_consistency":""}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces", `{"name":"x","write_consistency":""}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces", `{"name":"x","model":""}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces", `{"name":"x","type":""}`, 400, api.CodeInvalidArgument},
		{"POST", "/v1/namespaces", `{"name":"x","model":"ledger","ledger":{"mode":""}}`, 400, api.CodeInvalidArgument},
	} {
		r := e.do(c.method, c.path, c.body)
		if r.status != c.status || r.apiError().Code != c.code {
			t.Errorf("%s %s %s: %d %s, want %d %s", c.method, c.path, c.body, r.status, r.body, c.status, c.code)
		}
	}
	for ns, want := range map[string]int64{"ev": 1, "actor": 10, "native": 2} {
		if got := e.value(ns, "c").Value; got != want {
			t.Errorf("%s/c = %d after refused requests, want %d", ns, got, want)
		}
	}
	if _, err := e.client.Namespace(context.Background(), "x"); err == nil {
		t.Error("a refused namespace was created")
	}
}

// Both fields of a set are required: whatever the decoder accepts carried
// a value (a missing one decoded as 0 would zero the actor's part).
func FuzzDecodeSet(f *testing.F) {
	fuzzDecode(f, []string{
		`{"version":1,"value":2}`, `{"version":-1}`, `{}`, `{"version":1.5}`, `{"value":"1"}`,
		`{"version":9223372036854775808}`, `{"version":1}{}`, `null`, ``, `{"Version":1}`,
		`{"version":2}`, `{"value":0}`, `{"version":1,"value":null}`, `{"version":1,"value":0}`,
	}, decodeSet, func(t *testing.T, body []byte, v api.SetRequest) {
		if low := bytes.ToLower(body); !bytes.Contains(low, []byte(`value"`)) && !bytes.Contains(low, []byte(`\u`)) {
			t.Fatalf("accepted %q, which has no value", body)
		}
		roundTrip(t, v, decodeSet)
	})
}

func FuzzDecodeClear(f *testing.F) {
	fuzzDecode(f, []string{
		`{"request_id":"r"}`, `{}`, ``, `  `, `{"request_id":1}`, `null`, `{"request_id":"\ud800"}`, `{"x":1}`,
	}, decodeClear, func(t *testing.T, _ []byte, v api.ClearRequest) {
		if v.RequestID == "" {
			return // an empty body and {} are the same request
		}
		roundTrip(t, v, decodeClear)
	})
}
