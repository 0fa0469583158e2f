package server

import (
	"context"
	"testing"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
)

// Creates stop at the server's limits, and a refused create makes nothing;
// creating what exists still answers "exists".
func TestQuotas(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(_ *abacus.Config, c *Config) { c.MaxNamespaces, c.MaxQueues = 3, 1 })
	for _, name := range []string{"a", "b"} { // with "default", three
		e.mustJSON("POST", "/v1/namespaces", `{"name":"`+name+`"}`, 201, nil)
	}
	if r := e.do("POST", "/v1/namespaces", `{"name":"c"}`); r.status != 403 || r.apiError().Code != api.CodeQuotaExceeded {
		t.Fatalf("a namespace past the limit: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/v1/namespaces", `{"name":"a"}`); r.status != 409 || r.apiError().Code != api.CodeNamespaceExists {
		t.Fatalf("an existing namespace at the limit: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/v1/namespaces/c", ""); r.status != 404 {
		t.Fatalf("the refused namespace exists: %d %s", r.status, r.body)
	}
	e.mustJSON("POST", "/v1/queues", `{"name":"q1"}`, 201, nil)
	if r := e.do("POST", "/v1/queues", `{"name":"q2"}`); r.status != 403 || r.apiError().Code != api.CodeQuotaExceeded {
		t.Fatalf("a queue past the limit: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/v1/queues/q2", ""); r.status != 404 {
		t.Fatalf("the refused queue exists: %d %s", r.status, r.body)
	}
}

func TestNegativeQuotaIsNoLimit(t *testing.T) {
	t.Parallel()
	list := func(context.Context) ([]string, error) {
		t.Fatal("a create without a limit listed what exists")
		return nil, nil
	}
	if err := withinQuota(context.Background(), "queues", -1, list, nameIsItself, "q"); err != nil {
		t.Fatal(err)
	}
	full := func(context.Context) ([]string, error) { return []string{"a", "b"}, nil }
	if err := withinQuota(context.Background(), "queues", 2, full, nameIsItself, "c"); err == nil {
		t.Fatal("a create past the limit passed")
	}
}

func nameIsItself(s string) string { return s }
