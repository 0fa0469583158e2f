package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/clock"
)

// Over HTTP: a retry older than the seal answers 200 with "replayed", a
// request never counted answers 409 too_late, and GET takes max_staleness.
func TestEventsLateRetriesAndStaleReadsOverHTTP(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Now())
	e := newEnv(t, func(c *abacus.Config, _ *Config) { c.Clock = clk })
	e.mustJSON("POST", "/v1/namespaces", `{"name":"ev","model":"events"}`, 201, nil)
	id := api.NewRequestID(clk.Now())
	body := fmt.Sprintf(`{"delta":5,"request_id":%q}`, id)
	var up api.UpdateResponse
	e.mustJSON("POST", "/v1/namespaces/ev/counters/c/updates", body, 200, &up)
	if up.Replayed {
		t.Fatalf("first copy answered replayed: %+v", up)
	}
	clk.Advance(50 * time.Minute)
	e.mustJSON("POST", "/v1/namespaces/ev/counters/c/updates", body, 200, &up)
	if !up.Replayed || !up.Acknowledged {
		t.Fatalf("retry after 50 min: %+v, want acknowledged and replayed", up)
	}
	old := fmt.Sprintf(`{"delta":7,"request_id":%q}`, api.NewRequestID(clk.Now().Add(-10*time.Minute)))
	if r := e.do("POST", "/v1/namespaces/ev/counters/c/updates", old); r.status != 409 || !strings.Contains(string(r.body), api.CodeTooLate) {
		t.Fatalf("late request never counted: %d %s, want 409 too_late", r.status, r.body)
	}

	var v api.Value
	e.mustJSON("GET", "/v1/namespaces/ev/counters/c", "", 200, &v)
	if v.Value != 5 || v.Cached || v.AsOf == nil || v.RolledUpTo == nil {
		t.Fatalf("read: %+v", v)
	}
	// The id at the test's clock: the server would make one from the real one.
	e.mustJSON("POST", "/v1/namespaces/ev/counters/c/updates", fmt.Sprintf(`{"delta":1,"request_id":%q}`, api.NewRequestID(clk.Now())), 200, nil)
	e.mustJSON("GET", "/v1/namespaces/ev/counters/c?max_staleness=2s", "", 200, &v)
	if v.Value != 5 || !v.Cached {
		t.Fatalf("bounded-staleness read: %+v, want the cached 5", v)
	}
	v = api.Value{} // omitted fields must not carry over
	e.mustJSON("GET", "/v1/namespaces/ev/counters/c", "", 200, &v)
	if v.Value != 6 || v.Cached {
		t.Fatalf("plain read after it: %+v", v)
	}
	for _, bad := range []string{"soon", "-1s", "2", "", "%2B1s", ".5s", "-0s"} {
		if r := e.do("GET", "/v1/namespaces/ev/counters/c?max_staleness="+bad, ""); r.status != 400 || !strings.Contains(string(r.body), api.CodeInvalidArgument) {
			t.Errorf("max_staleness=%s: %d %s, want 400 invalid_argument", bad, r.status, r.body)
		}
	}
}
