package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/internal/queue/shard"
)

// queueEnv is a server whose client runs on a manual clock.
func queueEnv(t *testing.T) (*testEnv, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC))
	e := newEnv(t, func(ac *abacus.Config, _ *Config) { ac.Clock = clk })
	return e, clk
}

func (e *testEnv) wantError(method, path, body string, status int, code, msgPart string) {
	e.t.Helper()
	r := e.do(method, path, body)
	got := r.apiError()
	if r.status != status || got.Code != code || !strings.Contains(got.Message, msgPart) {
		e.t.Errorf("%s %s %s: %d %s %q; want %d %s containing %q", method, path, body, r.status, got.Code, got.Message, status, code, msgPart)
	}
}

func (e *testEnv) stats(queue string) api.QueueStats {
	e.t.Helper()
	var st api.QueueStats
	e.mustJSON("GET", "/v1/queues/"+queue+"/stats", "", 200, &st)
	return st
}

func TestQueueCreateAndDescribe(t *testing.T) {
	t.Parallel()
	e, _ := queueEnv(t)
	r := e.do("POST", "/v1/queues", `{"name":"jobs","shards":8,"shard_duration":"30s","visibility_timeout":"1m"}`)
	if r.status != 201 || r.header.Get("Location") != "/v1/queues/jobs" {
		t.Fatalf("create: %d %s (Location %q)", r.status, r.body, r.header.Get("Location"))
	}
	var q api.Queue
	e.mustJSON("GET", "/v1/queues/jobs", "", 200, &q)
	if q.Shards != 8 || q.Spread != 1 || q.ShardDuration != "30s" || q.MaxDeliveries != 5 || q.VisibilityTimeout != "1m0s" {
		t.Errorf("queue = %+v", q)
	}
	e.wantError("POST", "/v1/queues", `{"name":"odd","shards":16,"spread":3}`, 400, api.CodeInvalidArgument, "do not divide")
	e.wantError("POST", "/v1/queues", `{"name":"narrow","shards":16,"spread":8}`, 400, api.CodeInvalidArgument, "at least 32 shards")
	e.wantError("POST", "/v1/queues", `{"name":"zero","spread":0}`, 400, api.CodeInvalidArgument, `"spread": 0`)
	e.wantError("POST", "/v1/queues", `{"name":"neg","spread":-2}`, 400, api.CodeInvalidArgument, "negative")
	var list api.QueueList
	e.mustJSON("GET", "/v1/queues", "", 200, &list)
	if len(list.Queues) != 1 || list.Queues[0].Name != "jobs" || list.Queues[0].Spread != 1 {
		t.Errorf("list = %+v", list)
	}
	e.mustJSON("POST", "/v1/queues", `{"name":"wide","shards":32,"spread":8}`, 201, &q)
	if q.Shards != 32 || q.Spread != 8 {
		t.Errorf("spread queue = %+v", q)
	}
	e.wantError("POST", "/v1/queues", `{"name":"few","shards":3}`, 400, api.CodeInvalidArgument, "at least 4 shards, got 3")
	e.wantError("POST", "/v1/queues", `{"name":"jobs"}`, 409, api.CodeQueueExists, "jobs")
	e.wantError("POST", "/v1/queues", `{"name":"x","shard_duration":"soon"}`, 400, api.CodeInvalidArgument, "shard_duration")
	e.wantError("POST", "/v1/queues", `{"name":"x","max_deliveries":-1}`, 400, api.CodeInvalidArgument, "negative")
	e.wantError("POST", "/v1/queues", `{"name":""}`, 400, api.CodeInvalidArgument, "empty")
	e.wantError("POST", "/v1/queues", `{"name":"x","visibility_timeout":""}`, 400, api.CodeInvalidArgument, `field "visibility_timeout" is empty`)
	e.wantError("POST", "/v1/queues", `{"name":"x","shard_duration":""}`, 400, api.CodeInvalidArgument, `field "shard_duration" is empty`)
	e.wantError("POST", "/v1/queues", `{"name":"x","shard":4}`, 400, api.CodeInvalidJSON, "unknown field")
	e.wantError("GET", "/v1/queues/nope", "", 404, api.CodeQueueNotFound, "nope")
	e.mustJSON("GET", "/v1/queues", "", 200, &list)
	if len(list.Queues) != 2 {
		t.Errorf("refused creates made queues: %+v", list.Queues)
	}
}

func TestQueuePutRefusesBadInput(t *testing.T) {
	t.Parallel()
	e, _ := queueEnv(t)
	e.mustJSON("POST", "/v1/queues", `{"name":"q","shards":4}`, 201, nil)
	big := strings.Repeat("x", 64<<10+1)
	for _, tc := range []struct {
		body   string
		status int
		code   string
		part   string
	}{
		{`{"messages":[{"body":"a","delay":"-1s"}]}`, 400, api.CodeInvalidArgument, "messages[0].delay: -1s is negative"},
		{`{"messages":[{"body":"a"},{"body":"","due":""}]}`, 400, api.CodeInvalidArgument, `field "messages[1].due" is empty`},
		{`{"messages":[{"body":"a","Delay":""}]}`, 400, api.CodeInvalidArgument, `field "messages[0].delay" is empty`},
		{`{"messages":[{"body":"a"},{"body":"b","delay":"-5m"}]}`, 400, api.CodeInvalidArgument, "messages[1].delay"},
		{`{"messages":[{"body":"` + big + `"}]}`, 413, api.CodeBodyTooLarge, "65537 bytes, the limit is 65536"},
		{`{"messages":[{"body":"a","delay":"1s","due":"2030-01-01T00:00:00Z"}]}`, 400, api.CodeInvalidArgument, "not both"},
		{`{"messages":[{"body":"a","body_base64":"YQ=="}]}`, 400, api.CodeInvalidArgument, "not both"},
		{`{"messages":[{"body_base64":"!!"}]}`, 400, api.CodeInvalidArgument, "base64"},
		{`{"messages":[{"body":"a","delay":"later"}]}`, 400, api.CodeInvalidArgument, "messages[0].delay"},
		{`{"messages":[]}`, 400, api.CodeInvalidArgument, "at least one"},
		{`{"messages":[{"bdy":"a"}]}`, 400, api.CodeInvalidJSON, "messages[0] has an unknown field"},
		{`{"messages":[{"body":"a","due":"tomorrow"}]}`, 400, api.CodeInvalidArgument, "messages[0].due"},
		{`{"messages":[{"body":"a","dedup_id":""}]}`, 400, api.CodeInvalidArgument, `field "messages[0].dedup_id" is empty`},
		{`{"messages":[{"body":"a","dedup_id":"` + strings.Repeat("d", 129) + `"}]}`, 400, api.CodeInvalidArgument, "dedup id is at most 128 bytes"},
	} {
		e.wantError("POST", "/v1/queues/q/messages", tc.body, tc.status, tc.code, tc.part)
	}
	e.wantError("POST", "/v1/queues/missing/messages", `{"messages":[{"body":"a"}]}`, 404, api.CodeQueueNotFound, "missing")
	if st := e.stats("q"); st.Messages != 0 {
		t.Fatalf("refused puts wrote %d messages", st.Messages)
	}
	var put api.PutResponse
	e.mustJSON("POST", "/v1/queues/q/messages", `{"messages":[{"body":"hello"},{"body_base64":"/wA="},{"delay":"1h"}]}`, 201, &put)
	if len(put.IDs) != 3 {
		t.Fatalf("put = %+v", put)
	}
	if st := e.stats("q"); st.Messages != 3 {
		t.Fatalf("%d messages stored, want 3", st.Messages)
	}
}

// A put repeated with its dedup_id answers the first id and stores nothing;
// another body under the id is a 409.
func TestQueuePutDedup(t *testing.T) {
	t.Parallel()
	e, _ := queueEnv(t)
	e.mustJSON("POST", "/v1/queues", `{"name":"q","shards":4}`, 201, nil)
	var first, again api.PutResponse
	e.mustJSON("POST", "/v1/queues/q/messages", `{"messages":[{"body":"a"},{"body":"charge 17","dedup_id":"order-17"}]}`, 201, &first)
	if len(first.IDs) != 2 || len(first.Duplicates) != 0 {
		t.Fatalf("first put = %+v", first)
	}
	e.mustJSON("POST", "/v1/queues/q/messages", `{"messages":[{"body":"b"},{"body":"charge 17","dedup_id":"order-17"}]}`, 201, &again)
	if len(again.IDs) != 2 || again.IDs[1] != first.IDs[1] || len(again.Duplicates) != 1 || again.Duplicates[0] != 1 {
		t.Fatalf("repeat = %+v, want message 1 a duplicate of %s", again, first.IDs[1])
	}
	e.wantError("POST", "/v1/queues/q/messages", `{"messages":[{"body":"charge 18","dedup_id":"order-17"}]}`, 409, api.CodeDedupConflict, "order-17")
	if st := e.stats("q"); st.Messages != 3 {
		t.Fatalf("%d messages stored, want 3 (a, b and one charge)", st.Messages)
	}
	if text := string(e.do("GET", "/metrics", "").body); !strings.Contains(text, "abacus_queue_deduplicated_total 1") {
		t.Errorf("metrics lack abacus_queue_deduplicated_total 1")
	}
}

func TestQueueReceiveSettle(t *testing.T) {
	t.Parallel()
	e, clk := queueEnv(t)
	e.mustJSON("POST", "/v1/queues", `{"name":"q","shards":4,"visibility_timeout":"10s","max_deliveries":2}`, 201, nil)
	var put api.PutResponse
	e.mustJSON("POST", "/v1/queues/q/messages", `{"messages":[{"body":"a"},{"body_base64":"/wA="},{"body":"c"}]}`, 201, &put)

	var rcv api.ReceiveResponse
	clk.Advance(2 * time.Minute)
	e.mustJSON("POST", "/v1/queues/q/receive", `{"max":10}`, 200, &rcv)
	if len(rcv.Messages) != 3 {
		t.Fatalf("received %d, want 3", len(rcv.Messages))
	}
	a, bin, c := rcv.Messages[0], rcv.Messages[1], rcv.Messages[2]
	if a.ID != put.IDs[0] || a.Body != "a" || a.Attempt != 1 || a.Receipt == "" ||
		!a.VisibleUntil.Equal(clk.Now().Add(10*time.Second)) {
		t.Errorf("first delivery = %+v", a)
	}
	if bin.Body != "" || bin.BodyBase64 != "/wA=" {
		t.Errorf("binary body came back as %q / %q", bin.Body, bin.BodyBase64)
	}

	var ack api.AckResponse
	e.mustJSON("POST", "/v1/queues/q/ack", `{"receipts":["`+a.Receipt+`"]}`, 200, &ack)
	if ack.Acknowledged != 1 {
		t.Errorf("ack = %+v", ack)
	}
	var rel api.ReleaseResponse
	e.mustJSON("POST", "/v1/queues/q/release", `{"receipts":["`+bin.Receipt+`","`+bin.Receipt+`"]}`, 200, &rel)
	if rel.Released != 1 || rel.Stale != 1 {
		t.Errorf("release = %+v", rel)
	}
	var nack api.NackResponse
	e.mustJSON("POST", "/v1/queues/q/nack", `{"receipt":"`+c.Receipt+`","error":"downstream 502"}`, 200, &nack)
	if nack.Dead {
		t.Errorf("first failure moved the message to the dead letters")
	}
	e.wantError("POST", "/v1/queues/q/nack", `{"receipt":"1.2.3"}`, 400, api.CodeInvalidArgument, "receipt")
	e.wantError("POST", "/v1/queues/q/nack", `{}`, 400, api.CodeInvalidArgument, "receipt")
	e.wantError("POST", "/v1/queues/q/ack", `{"receipts":[]}`, 400, api.CodeInvalidArgument, "at least one")

	// The released message comes back at once; the failed one after its
	// visibility timeout, and its second failure is its last.
	e.mustJSON("POST", "/v1/queues/q/receive", `{"max":10}`, 200, &rcv)
	if len(rcv.Messages) != 1 || rcv.Messages[0].ID != put.IDs[1] || rcv.Messages[0].Attempt != 1 {
		t.Fatalf("after release: %+v", rcv.Messages)
	}
	// A bad receipt anywhere refuses the whole request.
	e.wantError("POST", "/v1/queues/q/ack", `{"receipts":["`+rcv.Messages[0].Receipt+`","1.2.3"]}`, 400,
		api.CodeInvalidArgument, "receipts[1]")
	e.mustJSON("POST", "/v1/queues/q/ack", `{"receipts":["`+rcv.Messages[0].Receipt+`"]}`, 200, nil)
	clk.Advance(10 * time.Second)
	e.mustJSON("POST", "/v1/queues/q/receive", `{"max":10}`, 200, &rcv)
	if len(rcv.Messages) != 1 || rcv.Messages[0].ID != put.IDs[2] || rcv.Messages[0].Attempt != 2 {
		t.Fatalf("after the timeout: %+v", rcv.Messages)
	}
	e.wantError("POST", "/v1/queues/q/nack", `{"receipt":"`+c.Receipt+`"}`, 409, api.CodeStaleReceipt, "delivered again")
	e.mustJSON("POST", "/v1/queues/q/nack", `{"receipt":"`+rcv.Messages[0].Receipt+`","error":"still 502"}`, 200, &nack)
	if !nack.Dead {
		t.Errorf("last failure did not move the message to the dead letters")
	}
	var dead api.DeadLetterList
	e.mustJSON("GET", "/v1/queues/q/dead", "", 200, &dead)
	if len(dead.DeadLetters) != 1 || dead.DeadLetters[0].ID != put.IDs[2] || dead.DeadLetters[0].Body != "c" ||
		dead.DeadLetters[0].LastError != "delivery 2: still 502" || dead.DeadLetters[0].Deliveries != 2 {
		t.Fatalf("dead letters = %+v", dead)
	}
	e.wantError("GET", "/v1/queues/q/dead?limit=0", "", 400, api.CodeInvalidArgument, "limit")
	e.wantError("POST", "/v1/queues/q/dead/requeue", `{"ids":["nope"]}`, 400, api.CodeInvalidArgument, "ids[0]")
	var req api.RequeueResponse
	e.mustJSON("POST", "/v1/queues/q/dead/requeue", ``, 200, &req)
	if len(req.Requeued) != 1 || req.Requeued[0] != put.IDs[2] {
		t.Fatalf("requeue = %+v", req)
	}
	clk.Advance(2 * time.Minute)
	e.mustJSON("POST", "/v1/queues/q/receive", ``, 200, &rcv)
	if len(rcv.Messages) != 1 || rcv.Messages[0].ID != put.IDs[2] || rcv.Messages[0].Attempt != 1 {
		t.Fatalf("after requeue: %+v", rcv.Messages)
	}
}

func TestQueueReceiveValidationAndWait(t *testing.T) {
	t.Parallel()
	e, _ := queueEnv(t)
	e.mustJSON("POST", "/v1/queues", `{"name":"q","shards":4}`, 201, nil)
	e.wantError("POST", "/v1/queues/q/receive", `{"max":101}`, 400, api.CodeInvalidArgument, "max")
	e.wantError("POST", "/v1/queues/q/receive", `{"max":-1}`, 400, api.CodeInvalidArgument, "max")
	e.wantError("POST", "/v1/queues/q/receive", `{"wait":"21s"}`, 400, api.CodeInvalidArgument, "wait")
	e.wantError("POST", "/v1/queues/q/receive", `{"wait":"-1s"}`, 400, api.CodeInvalidArgument, "wait")
	e.wantError("POST", "/v1/queues/q/receive", `{"wait":""}`, 400, api.CodeInvalidArgument, `field "wait" is empty`)
	e.wantError("POST", "/v1/queues/nope/receive", ``, 404, api.CodeQueueNotFound, "nope")
	start := time.Now()
	var rcv api.ReceiveResponse
	e.mustJSON("POST", "/v1/queues/q/receive", `{"wait":"300ms"}`, 200, &rcv)
	if el := time.Since(start); len(rcv.Messages) != 0 || el < 300*time.Millisecond || el > 5*time.Second {
		t.Fatalf("waiting receive: %d messages after %v", len(rcv.Messages), el)
	}
	if rcv.Messages == nil {
		t.Error("an empty receive must answer [] rather than null")
	}
}

func TestQueueStatsAndMetrics(t *testing.T) {
	t.Parallel()
	e, clk := queueEnv(t)
	e.mustJSON("POST", "/v1/queues", `{"name":"q","shards":4}`, 201, nil)
	e.mustJSON("POST", "/v1/queues/q/messages", `{"messages":[{"body":"a"},{"body":"b"},{"body":"later","delay":"1h"}]}`, 201, nil)
	clk.Advance(2 * time.Minute)
	var rcv api.ReceiveResponse
	e.mustJSON("POST", "/v1/queues/q/receive", ``, 200, &rcv) // one in flight; the lease kept for the other
	clk.Advance(3 * time.Second)
	st := e.stats("q")
	// "a" or "b" waits, due when it was put, 2 min 3 s ago.
	if st.Messages != 3 || st.Due != 2 || st.InFlight != 1 || len(st.Shards) != 4 || st.DeliveryLagSeconds != 123 {
		t.Fatalf("stats = %+v", st)
	}
	var held *api.ShardStats
	for i := range st.Shards {
		if st.Shards[i].Holder != "" {
			held = &st.Shards[i]
		}
	}
	if held == nil || held.Messages != 3 || held.Behind != 2 || held.LeaseAgeSeconds != 3 {
		t.Fatalf("leased shard = %+v", held)
	}
	r := e.do("GET", "/metrics", "")
	text := string(r.body)
	for _, want := range []string{
		`abacus_queue_messages{queue="q"} 3`,
		`abacus_queue_due_messages{queue="q"} 2`,
		`abacus_queue_in_flight_messages{queue="q"} 1`,
		`abacus_queue_delivery_lag_seconds{queue="q"} 123`,
		fmt.Sprintf(`abacus_queue_lease_age_seconds{holder=%q,queue="q",shard="%d"} 3`, held.Holder, held.Shard),
		"abacus_queue_put_total 3",
		`abacus_build_info{commit="",go_version="` + runtime.Version() + `",version="dev"} 1`,
		"abacus_queue_delivered_total 1",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// A queue's shard count does not multiply its series: a queue of the
// most shards there may be adds a handful, not thousands.
func TestQueueMetricsStayFewWithManyShards(t *testing.T) {
	t.Parallel()
	e, _ := queueEnv(t)
	e.mustJSON("POST", "/v1/queues", fmt.Sprintf(`{"name":"wide","shards":%d}`, shard.MaxShards), 201, nil)
	r := e.do("GET", "/metrics", "")
	series := 0
	for line := range strings.SplitSeq(string(r.body), "\n") {
		if strings.HasPrefix(line, "abacus_queue_") && strings.Contains(line, `queue="wide"`) {
			series++
		}
	}
	if series != 4 {
		t.Fatalf("a %d-shard queue has %d series, want 4 (messages, due, in flight, delivery lag)", shard.MaxShards, series)
	}
}

func TestQueueConsumersStopOnShutdown(t *testing.T) {
	t.Parallel()
	e, clk := queueEnv(t)
	e.mustJSON("POST", "/v1/queues", `{"name":"q","shards":4}`, 201, nil)
	e.mustJSON("POST", "/v1/queues/q/messages", `{"messages":[{"body":"a"},{"body":"b"}]}`, 201, nil)
	clk.Advance(2 * time.Minute)
	e.mustJSON("POST", "/v1/queues/q/receive", ``, 200, nil)
	if err := e.srv.queues.stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, sh := range e.stats("q").Shards {
		if sh.Holder != "" {
			t.Fatalf("shard %d still leased after the consumers stopped", sh.Shard)
		}
	}
	e.wantError("POST", "/v1/queues/q/receive", ``, 503, api.CodeUnavailable, "shutting down")
}

func TestQueueWireNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    any
		want string
	}{
		{api.CreateQueueRequest{Name: "q", Shards: 4}, `{"name":"q","shards":4}`},
		{api.PutMessage{Body: "b", Delay: "1s"}, `{"body":"b","delay":"1s"}`},
		{api.AckResponse{Acknowledged: 2}, `{"acknowledged":2}`},
		{api.ReleaseResponse{Released: 1}, `{"released":1,"stale":0}`},
		{api.NackRequest{Receipt: "r", Error: "e"}, `{"receipt":"r","error":"e"}`},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil || string(b) != tc.want {
			t.Errorf("%T encodes as %s, want %s", tc.v, b, tc.want)
		}
	}
}

func TestQueuePauseAndResume(t *testing.T) {
	t.Parallel()
	e, _ := queueEnv(t)
	e.mustJSON("POST", "/v1/queues", `{"name":"q","shards":4}`, 201, nil)
	var pause api.QueuePause
	e.mustJSON("GET", "/v1/queues/q/pause", "", 200, &pause)
	if pause.Queue != "q" || pause.Paused || pause.Since != nil {
		t.Fatalf("a new queue: %+v; want not paused, no since", pause)
	}
	e.mustJSON("POST", "/v1/queues/q/messages", `{"messages":[{"body":"a"},{"body":"b"}]}`, 201, nil)
	e.mustJSON("POST", "/v1/queues/q/pause", "", 200, &pause)
	if !pause.Paused || pause.Since == nil {
		t.Fatalf("pause: %+v", pause)
	}
	var q api.Queue
	e.mustJSON("GET", "/v1/queues/q", "", 200, &q)
	var list api.QueueList
	e.mustJSON("GET", "/v1/queues", "", 200, &list)
	if !q.Paused || len(list.Queues) != 1 || !list.Queues[0].Paused {
		t.Fatalf("while paused: GET %+v, list %+v; want paused", q, list)
	}
	var rcv api.ReceiveResponse
	e.mustJSON("POST", "/v1/queues/q/receive", `{"max":10}`, 200, &rcv)
	if len(rcv.Messages) != 0 {
		t.Fatalf("a paused queue handed out %d messages", len(rcv.Messages))
	}
	e.mustJSON("POST", "/v1/queues/q/messages", `{"messages":[{"body":"c"}]}`, 201, nil)
	e.mustJSON("POST", "/v1/queues/q/resume", "", 200, &pause)
	if pause.Paused || pause.Since == nil {
		t.Fatalf("resume: %+v", pause)
	}
	var after api.Queue
	e.mustJSON("GET", "/v1/queues/q", "", 200, &after)
	if after.Paused {
		t.Fatalf("after resume: %+v", after)
	}
	e.mustJSON("POST", "/v1/queues/q/receive", `{"max":10}`, 200, &rcv)
	if len(rcv.Messages) != 3 {
		t.Fatalf("after resume %d messages were handed out, want 3", len(rcv.Messages))
	}
	e.wantError("POST", "/v1/queues/nope/pause", "", 404, api.CodeQueueNotFound, "nope")
	e.wantError("POST", "/v1/queues/nope/resume", "", 404, api.CodeQueueNotFound, "nope")
	e.wantError("GET", "/v1/queues/nope/pause", "", 404, api.CodeQueueNotFound, "nope")
}

func TestQueuePurge(t *testing.T) {
	t.Parallel()
	e, clk := queueEnv(t)
	e.mustJSON("POST", "/v1/queues", `{"name":"q","shards":4,"max_deliveries":1}`, 201, nil)
	e.mustJSON("POST", "/v1/queues/q/messages", `{"messages":[{"body":"dead"}]}`, 201, nil)
	var rcv api.ReceiveResponse
	e.mustJSON("POST", "/v1/queues/q/receive", `{"max":1}`, 200, &rcv)
	e.mustJSON("POST", "/v1/queues/q/nack", `{"receipt":"`+rcv.Messages[0].Receipt+`"}`, 200, nil)
	e.mustJSON("POST", "/v1/queues/q/messages", `{"messages":[{"body":"a"},{"body":"b","delay":"1h"}]}`, 201, nil)
	e.wantError("POST", "/v1/queues/q/purge", `{"dead_letters":"yes"}`, 400, api.CodeInvalidArgument, "dead_letters")
	e.wantError("POST", "/v1/queues/q/purge", `{"dead":true}`, 400, api.CodeInvalidJSON, "dead")
	var res api.PurgeResponse
	e.mustJSON("POST", "/v1/queues/q/purge", "", 200, &res)
	if res.Messages != 2 || res.DeadLetters != 0 {
		t.Fatalf("purge: %+v; want 2 messages, dead letters kept", res)
	}
	if st := e.stats("q"); st.Messages != 0 {
		t.Fatalf("%d messages after the purge", st.Messages)
	}
	e.mustJSON("POST", "/v1/queues/q/purge", `{"dead_letters":true}`, 200, &res)
	if res.Messages != 0 || res.DeadLetters != 1 {
		t.Fatalf("purge with dead letters: %+v", res)
	}
	clk.Advance(2 * time.Hour)
	e.mustJSON("POST", "/v1/queues/q/receive", `{"max":10}`, 200, &rcv)
	if len(rcv.Messages) != 0 {
		t.Fatalf("%d messages delivered after the purge", len(rcv.Messages))
	}
	e.wantError("POST", "/v1/queues/nope/purge", "", 404, api.CodeQueueNotFound, "nope")
}

// DELETE takes the queue away (404 for everything), keeps the name for the
// recreate wait, and a queue made again starts empty, its receives served
// by a new consumer of this server.
func TestQueueDelete(t *testing.T) {
	t.Parallel()
	e, clk := queueEnv(t)
	e.mustJSON("POST", "/v1/queues", `{"name":"q","shards":4}`, 201, nil)
	e.mustJSON("POST", "/v1/queues/q/messages", `{"messages":[{"body":"a"},{"body":"b","delay":"1h"}]}`, 201, nil)
	var rcv api.ReceiveResponse
	e.mustJSON("POST", "/v1/queues/q/receive", `{"max":1}`, 200, &rcv)
	if len(rcv.Messages) != 1 {
		t.Fatalf("received %d before the delete, want 1", len(rcv.Messages))
	}
	var res api.QueueDeleteResponse
	e.mustJSON("DELETE", "/v1/queues/q", "", 200, &res)
	if res.Queue != "q" || res.Messages != 2 || res.DeletedAt.IsZero() || !res.RecreatableAt.After(res.DeletedAt) || res.Leftover != "" {
		t.Fatalf("delete: %+v; want 2 messages removed and a later recreatable_at", res)
	}
	e.wantError("GET", "/v1/queues/q", "", 404, api.CodeQueueNotFound, "q")
	e.wantError("POST", "/v1/queues/q/receive", `{"max":1}`, 404, api.CodeQueueNotFound, "q")
	e.wantError("POST", "/v1/queues/q/messages", `{"messages":[{"body":"c"}]}`, 404, api.CodeQueueNotFound, "q")
	e.wantError("POST", "/v1/queues/q/ack", `{"receipts":["`+rcv.Messages[0].Receipt+`"]}`, 404, api.CodeQueueNotFound, "q")
	var again api.QueueDeleteResponse
	e.mustJSON("DELETE", "/v1/queues/q", "", 200, &again) // a repeat: the first delete's answer, nothing left to remove
	if !again.DeletedAt.Equal(res.DeletedAt) || again.Messages != 0 || !again.RecreatableAt.Equal(res.RecreatableAt) {
		t.Fatalf("a repeated delete: %+v; want the first one's times and nothing removed", again)
	}
	e.wantError("DELETE", "/v1/queues/nope", "", 404, api.CodeQueueNotFound, "nope")
	e.wantError("POST", "/v1/queues", `{"name":"q","shards":4}`, 409, api.CodeQueueExists, "created again from")
	var list api.QueueList
	e.mustJSON("GET", "/v1/queues", "", 200, &list)
	for _, q := range list.Queues {
		if q.Name == "q" {
			t.Fatalf("the deleted queue is listed: %+v", list)
		}
	}
	clk.Advance(res.RecreatableAt.Sub(res.DeletedAt))
	e.mustJSON("POST", "/v1/queues", `{"name":"q","shards":4}`, 201, nil)
	e.mustJSON("POST", "/v1/queues/q/messages", `{"messages":[{"body":"new"}]}`, 201, nil)
	clk.Advance(2 * time.Hour) // the deleted queue's delayed message would be due
	e.mustJSON("POST", "/v1/queues/q/receive", `{"max":10}`, 200, &rcv)
	if len(rcv.Messages) != 1 || rcv.Messages[0].Body != "new" {
		t.Fatalf("the queue made again handed out %+v; want only its own message", rcv.Messages)
	}
}

func TestDeadLettersCanBeDeletedOneByOne(t *testing.T) {
	t.Parallel()
	e, _ := queueEnv(t)
	e.mustJSON("POST", "/v1/queues", `{"name":"q","shards":4,"max_deliveries":1}`, 201, nil)
	e.mustJSON("POST", "/v1/queues/q/messages", `{"messages":[{"body":"a"},{"body":"b"}]}`, 201, nil)
	var rcv api.ReceiveResponse
	e.mustJSON("POST", "/v1/queues/q/receive", `{"max":2}`, 200, &rcv)
	if len(rcv.Messages) != 2 {
		t.Fatalf("received %d messages, want 2", len(rcv.Messages))
	}
	for _, m := range rcv.Messages {
		e.mustJSON("POST", "/v1/queues/q/nack", `{"receipt":"`+m.Receipt+`"}`, 200, nil)
	}
	gone, kept := rcv.Messages[0].ID, rcv.Messages[1].ID

	e.wantError("POST", "/v1/queues/q/dead/delete", `{}`, 400, api.CodeInvalidArgument, "ids")
	e.wantError("POST", "/v1/queues/q/dead/delete", `{"ids":[]}`, 400, api.CodeInvalidArgument, "purge")
	e.wantError("POST", "/v1/queues/q/dead/delete", `{"ids":["nope"]}`, 400, api.CodeInvalidArgument, "ids[0]")
	e.wantError("POST", "/v1/queues/nope/dead/delete", `{"ids":["`+gone+`"]}`, 404, api.CodeQueueNotFound, "nope")
	var dead api.DeadLetterList
	e.mustJSON("GET", "/v1/queues/q/dead", "", 200, &dead)
	if len(dead.DeadLetters) != 2 {
		t.Fatalf("a refused delete changed the dead letters: %+v", dead)
	}

	var del api.DeleteDeadResponse
	e.mustJSON("POST", "/v1/queues/q/dead/delete", `{"ids":["`+gone+`"]}`, 200, &del)
	if len(del.Deleted) != 1 || del.Deleted[0] != gone {
		t.Fatalf("delete = %+v, want [%s]", del, gone)
	}
	e.mustJSON("POST", "/v1/queues/q/dead/delete", `{"ids":["`+gone+`"]}`, 200, &del)
	if len(del.Deleted) != 0 {
		t.Fatalf("deleting again = %+v, want nothing", del)
	}
	e.mustJSON("GET", "/v1/queues/q/dead", "", 200, &dead)
	if len(dead.DeadLetters) != 1 || dead.DeadLetters[0].ID != kept {
		t.Fatalf("dead letters after the delete = %+v, want only %s", dead, kept)
	}
	var req api.RequeueResponse
	e.mustJSON("POST", "/v1/queues/q/dead/requeue", `{"ids":["`+gone+`"]}`, 200, &req)
	if len(req.Requeued) != 0 {
		t.Fatalf("a deleted dead letter was requeued: %+v", req)
	}
}

func TestMessageAttributesOverHTTP(t *testing.T) {
	t.Parallel()
	e, _ := queueEnv(t)
	e.mustJSON("POST", "/v1/queues", `{"name":"q","shards":4,"max_deliveries":1}`, 201, nil)
	e.wantError("POST", "/v1/queues/q/messages", `{"messages":[{"body":"a"},{"body":"b","attributes":{"bad name":"x"}}]}`, 400, api.CodeInvalidArgument, `attribute name "bad name"`)
	e.wantError("POST", "/v1/queues/q/messages", `{"messages":[{"body":"a","attributes":{"a":null}}]}`, 400, api.CodeInvalidArgument, "null")
	e.wantError("POST", "/v1/queues/q/messages", `{"messages":[{"body":"a","attributes":{"a":1}}]}`, 400, api.CodeInvalidArgument, "attributes")
	if st := e.stats("q"); st.Messages != 0 {
		t.Fatalf("refused puts stored %d messages", st.Messages)
	}
	var put api.PutResponse
	e.mustJSON("POST", "/v1/queues/q/messages", `{"messages":[{"body":"a","attributes":{"tenant":"acme","trace":""}},{"body":"b"}]}`, 201, &put)
	r := e.do("POST", "/v1/queues/q/receive", `{"max":2}`)
	var rcv api.ReceiveResponse
	if err := json.Unmarshal(r.body, &rcv); err != nil || len(rcv.Messages) != 2 {
		t.Fatalf("receive: %s (%v)", r.body, err)
	}
	for _, m := range rcv.Messages {
		switch m.ID {
		case put.IDs[0]:
			if !maps.Equal(m.Attributes, map[string]string{"tenant": "acme", "trace": ""}) {
				t.Errorf("delivered attributes %v", m.Attributes)
			}
		case put.IDs[1]:
			if m.Attributes != nil {
				t.Errorf("a message without attributes delivered with %v", m.Attributes)
			}
		}
		e.mustJSON("POST", "/v1/queues/q/nack", `{"receipt":"`+m.Receipt+`"}`, 200, nil)
	}
	if bytes.Count(r.body, []byte(`"attributes"`)) != 1 {
		t.Errorf("attributes appear %d times in %s, want once (left out when none)", bytes.Count(r.body, []byte(`"attributes"`)), r.body)
	}
	var dead api.DeadLetterList
	e.mustJSON("GET", "/v1/queues/q/dead", "", 200, &dead)
	if len(dead.DeadLetters) != 2 {
		t.Fatalf("%d dead letters, want 2", len(dead.DeadLetters))
	}
	for _, l := range dead.DeadLetters {
		if want := map[string]string(nil); l.ID == put.IDs[0] && l.Attributes["tenant"] != "acme" || l.ID == put.IDs[1] && !maps.Equal(l.Attributes, want) {
			t.Errorf("dead letter %s has attributes %v", l.ID, l.Attributes)
		}
	}
	e.mustJSON("POST", "/v1/queues/q/messages", `{"messages":[{"body":"x","dedup_id":"d","attributes":{"v":"1"}}]}`, 201, nil)
	e.wantError("POST", "/v1/queues/q/messages", `{"messages":[{"body":"x","dedup_id":"d","attributes":{"v":"2"}}]}`, 409, api.CodeDedupConflict, "d")
}

func TestQueuePrioritiesOverHTTP(t *testing.T) {
	t.Parallel()
	e, _ := queueEnv(t)
	e.wantError("POST", "/v1/queues", `{"name":"z","priorities":0}`, 400, api.CodeInvalidArgument, "priorities")
	e.wantError("POST", "/v1/queues", `{"name":"z","priorities":5}`, 400, api.CodeInvalidArgument, "priority levels")
	e.wantError("POST", "/v1/queues", `{"name":"z","shards":2048,"priorities":3}`, 400, api.CodeInvalidArgument, "4096")
	var q api.Queue
	e.mustJSON("POST", "/v1/queues", `{"name":"q","shards":4,"priorities":3,"max_deliveries":1}`, 201, &q)
	if q.Priorities != 3 {
		t.Fatalf("created %+v, want 3 levels", q)
	}
	e.mustJSON("GET", "/v1/queues/q", "", 200, &q)
	if q.Priorities != 3 {
		t.Fatalf("described %+v, want 3 levels", q)
	}
	e.wantError("POST", "/v1/queues/q/messages", `{"messages":[{"body":"a"},{"body":"b","priority":3}]}`, 400, api.CodeInvalidArgument, "priority 3")
	if st := e.stats("q"); st.Messages != 0 || len(st.Shards) != 12 {
		t.Fatalf("after a refused put: %d messages in %d shards, want 0 in 12", st.Messages, len(st.Shards))
	}
	var put api.PutResponse
	e.mustJSON("POST", "/v1/queues/q/messages", `{"messages":[{"body":"low"},{"body":"high","priority":2},{"body":"mid","priority":1}]}`, 201, &put)
	byLevel := map[int]int{}
	for _, sh := range e.stats("q").Shards {
		if sh.Priority != sh.Shard/4 {
			t.Errorf("shard %d shows level %d", sh.Shard, sh.Priority)
		}
		byLevel[sh.Priority] += sh.Messages
	}
	if byLevel[0] != 1 || byLevel[1] != 1 || byLevel[2] != 1 {
		t.Errorf("stats hold %v messages by level, want one at each", byLevel)
	}
	var rcv api.ReceiveResponse
	e.mustJSON("POST", "/v1/queues/q/receive", `{"max":3}`, 200, &rcv)
	var bodies []string
	for _, m := range rcv.Messages {
		bodies = append(bodies, fmt.Sprintf("%s:%d", m.Body, m.Priority))
	}
	if want := "high:2 mid:1 low:0"; strings.Join(bodies, " ") != want {
		t.Fatalf("received %v, want %s", bodies, want)
	}
	e.mustJSON("POST", "/v1/queues/q/nack", `{"receipt":"`+rcv.Messages[0].Receipt+`"}`, 200, nil)
	var dead api.DeadLetterList
	e.mustJSON("GET", "/v1/queues/q/dead", "", 200, &dead)
	if len(dead.DeadLetters) != 1 || dead.DeadLetters[0].ID != put.IDs[1] || dead.DeadLetters[0].Priority != 2 {
		t.Fatalf("dead letters %+v, want %s at level 2", dead.DeadLetters, put.IDs[1])
	}
}
