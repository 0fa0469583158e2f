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
	// A well-formed receipt of a message that does not exist: a duration
	// that got past the checks would be answered stale_receipt (409), not 400.
	const rc = "1.0.1700000000000.fe75d550-e857-11f1-89c7-a739c1019ae2.1"
	if r := e.do("POST", "/v1/queues/jobs/nack", `{"receipt":"`+rc+`","retry_after":"1s"}`); r.status != 409 || r.apiError().Code != api.CodeStaleReceipt {
		t.Fatalf("a good nack of a missing message: %d %s, want 409 stale_receipt", r.status, r.body)
	}
	for _, c := range []struct{ path, body string }{
		{"/v1/queues/jobs/extend", `{"receipt":"r"}`},
		{"/v1/queues/jobs/extend", `{"visibility_timeout":"1m"}`},
		{"/v1/queues/jobs/extend", `{"receipt":"` + rc + `","visibility_timeout":""}`},
		{"/v1/queues/jobs/extend", `{"receipt":"` + rc + `","visibility_timeout":"soon"}`},
		{"/v1/queues/jobs/extend", `{"receipt":"` + rc + `","visibility_timeout":"0s"}`},
		{"/v1/queues/jobs/extend", `{"receipt":"` + rc + `","visibility_timeout":"13h"}`},
		{"/v1/queues/jobs/nack", `{"receipt":"` + rc + `","retry_after":""}`},
		{"/v1/queues/jobs/nack", `{"receipt":"` + rc + `","retry_after":"0s"}`},
		{"/v1/queues/jobs/nack", `{"receipt":"` + rc + `","retry_after":"-1s"}`},
		{"/v1/queues/jobs/nack", `{"receipt":"` + rc + `","retry_after":"13h"}`},
		{"/v1/queues/jobs/nack", `{"receipt":"` + rc + `","retry_after":"soon"}`},
	} {
		if r := e.do("POST", c.path, c.body); r.status != 400 || r.apiError().Code != api.CodeInvalidArgument {
			t.Errorf("POST %s %s: %d %s, want 400 invalid_argument", c.path, c.body, r.status, r.body)
		}
	}
}
