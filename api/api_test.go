package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestCodesHaveErrorStatuses(t *testing.T) {
	t.Parallel()
	codes := Codes()
	if len(codes) != 30 {
		t.Fatalf("%d codes, want 30", len(codes))
	}
	for _, c := range codes {
		if s := Status(c); s < 400 || s > 599 {
			t.Errorf("code %s has status %d", c, s)
		}
		if Retryable(c) != (Status(c) == http.StatusServiceUnavailable) {
			t.Errorf("code %s: Retryable disagrees with its status", c)
		}
	}
	if Status("no_such_code") != http.StatusInternalServerError {
		t.Error("unknown codes must map to 500")
	}
	for _, c := range []string{CodeUnknownOutcome, CodeNotApplied, CodeUnavailable} {
		if !Retryable(c) {
			t.Errorf("%s is not retryable", c)
		}
	}
}

func TestOpenAPIDocumentsEveryCode(t *testing.T) {
	t.Parallel()
	doc := string(OpenAPI)
	if !strings.HasPrefix(doc, "openapi: 3.0.") {
		t.Fatalf("openapi.yaml does not start with an OpenAPI 3.0 version line")
	}
	for _, c := range Codes() {
		if !strings.Contains(doc, "            - "+c+"\n") {
			t.Errorf("code %s is missing from the Error.code enum", c)
		}
	}
	if strings.Contains(doc, "\t") {
		t.Error("openapi.yaml contains a tab, which YAML forbids for indentation")
	}
}

// The wire names are the contract; a renamed Go field must not change them.
var wireTime = time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)

func TestWireNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    any
		want string
	}{
		{UpdateRequest{Delta: 1, Item: "i", RequestID: "r"}, `{"delta":1,"item":"i","request_id":"r"}`},
		{UpdateRequest{}, `{}`},
		{UpdateResponse{"n", "c", "r", true, false, nil, nil}, `{"namespace":"n","counter":"c","request_id":"r","acknowledged":true}`},
		{UpdateResponse{"n", "c", "r", true, true, nil, nil}, `{"namespace":"n","counter":"c","request_id":"r","acknowledged":true,"replayed":true}`},
		{UpdateResponse{"n", "c", "r", true, false, nil, &Error{"unavailable", "m"}}, `{"namespace":"n","counter":"c","request_id":"r","acknowledged":true,"value_error":{"code":"unavailable","message":"m"}}`},
		{Value{Namespace: "n", Counter: "c", Type: "sum", Value: 9223372036854775807, Saturated: true, Exact: "9223372036854775808", Model: "events"}, `{"namespace":"n","counter":"c","type":"sum","value":9223372036854775807,"saturated":true,"exact":"9223372036854775808","empty":false,"model":"events","shards":0}`},
		{UpdateRequest{Time: &wireTime, ReturnValue: true}, `{"time":"2026-11-22T09:30:00Z","return_value":true}`},
		{SetRequest{Version: 2, Value: -3}, `{"version":2,"value":-3}`},
		{ClearRequest{}, `{}`},
		{ClearResponse{"n", "c", "r", true, time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)}, `{"namespace":"n","counter":"c","request_id":"r","acknowledged":true,"effective_at":"2026-11-25T08:00:00Z"}`},
		{DeleteResponse{Namespace: "n", Counter: "c", EffectiveAt: time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)}, `{"namespace":"n","counter":"c","effective_at":"2026-11-25T08:00:00Z"}`},
		{EventsOptions{1, 2, 5, 3, 4}, `{"bucket_seconds":1,"accept_window_seconds":2,"seal_seconds":5,"rollup_delay_seconds":3,"future_limit_seconds":4}`},
		{Value{Namespace: "n", Counter: "c", Type: "sum", Value: 3, Model: "events", AsOf: &wireTime, Cached: true, RolledUpTo: &wireTime}, `{"namespace":"n","counter":"c","type":"sum","value":3,"empty":false,"model":"events","shards":0,"as_of":"2026-11-22T09:30:00Z","cached":true,"rolled_up_to":"2026-11-22T09:30:00Z"}`},
		{Value{Namespace: "n", Counter: "c", Type: "sum", Value: 3, Model: "events", Events: 4}, `{"namespace":"n","counter":"c","type":"sum","value":3,"empty":false,"model":"events","shards":0,"events":4}`},
		{BatchResult{RequestID: "r", Error: &Error{"overflow", "m"}}, `{"request_id":"r","acknowledged":false,"error":{"code":"overflow","message":"m"}}`},
		{Value{Namespace: "n", Counter: "c", Type: "sum", Value: 3, Model: "sharded", Shards: 1}, `{"namespace":"n","counter":"c","type":"sum","value":3,"empty":false,"model":"sharded","shards":1}`},
		{GCResult{Namespace: "n", Counter: "c", Folded: 2}, `{"namespace":"n","counter":"c","folded":2,"skipped":false}`},
		{GCAllResult{1, 2, 3}, `{"counters":1,"folded":2,"skipped":3}`},
		{CreateNamespaceRequest{Name: "n"}, `{"name":"n"}`},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil || string(b) != tc.want {
			t.Errorf("%T encodes as %s, want %s", tc.v, b, tc.want)
		}
	}
}
