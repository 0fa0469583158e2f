package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestCodesHaveErrorStatuses(t *testing.T) {
	t.Parallel()
	codes := Codes()
	if len(codes) != 18 {
		t.Fatalf("%d codes, want 18", len(codes))
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
func TestWireNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    any
		want string
	}{
		{UpdateRequest{Delta: 1, Item: "i", RequestID: "r"}, `{"delta":1,"item":"i","request_id":"r"}`},
		{UpdateRequest{}, `{}`},
		{UpdateResponse{"n", "c", "r", true}, `{"namespace":"n","counter":"c","request_id":"r","acknowledged":true}`},
		{BatchResult{RequestID: "r", Error: &Error{"overflow", "m"}}, `{"request_id":"r","acknowledged":false,"error":{"code":"overflow","message":"m"}}`},
		{Value{"n", "c", "sum", 3, false, 1}, `{"namespace":"n","counter":"c","type":"sum","value":3,"empty":false,"shards":1}`},
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
