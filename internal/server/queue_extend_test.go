package server

import (
	"testing"

	"github.com/abacusdb/abacus/api"
)

// What the extend and nack bodies must hold is checked before anything is
// read or written: a receipt, and durations that are there, positive and
// at most 12h.
func TestExtendAndNackRefuseBadDurations(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if r := e.do("POST", "/v1/queues", `{"name":"jobs"}`); r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	for _, c := range []struct{ path, body string }{
		{"/v1/queues/jobs/extend", `{"receipt":"r"}`},
		{"/v1/queues/jobs/extend", `{"visibility_timeout":"1m"}`},
		{"/v1/queues/jobs/extend", `{"receipt":"r","visibility_timeout":""}`},
		{"/v1/queues/jobs/extend", `{"receipt":"r","visibility_timeout":"soon"}`},
		{"/v1/queues/jobs/nack", `{"receipt":"r","retry_after":""}`},
		{"/v1/queues/jobs/nack", `{"receipt":"r","retry_after":"0s"}`},
		{"/v1/queues/jobs/nack", `{"receipt":"r","retry_after":"-1s"}`},
		{"/v1/queues/jobs/nack", `{"receipt":"r","retry_after":"soon"}`},
	} {
		if r := e.do("POST", c.path, c.body); r.status != 400 || r.apiError().Code != api.CodeInvalidArgument {
			t.Errorf("POST %s %s: %d %s, want 400 invalid_argument", c.path, c.body, r.status, r.body)
		}
	}
}
