package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/clock"
)

// newQueueTestServer is newTestServer with the library on a manual clock,
// so that shard windows pass without waiting.
func newQueueTestServer(t *testing.T) (*testServer, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC))
	return newTestServerOnClock(t, clk), clk
}

func (s *testServer) queueMessages(t *testing.T, queue string) int {
	t.Helper()
	o, err := s.lib.Queues().Observe(context.Background(), queue)
	if err != nil {
		t.Fatal(err)
	}
	return o.Messages
}

func TestQueueCLI(t *testing.T) {
	t.Parallel()
	s, clk := newQueueTestServer(t)
	if r := s.cli("queue", "create", "jobs", "--shards", "4", "--visibility-timeout", "10s", "--max-deliveries", "2"); r.code != 0 ||
		!strings.Contains(r.stdout, "created queue jobs (4 shards of 1m0s, 2 deliveries, visibility timeout 10s)") {
		t.Fatalf("create: %+v", r)
	}
	if r := s.cli("queue", "list"); r.code != 0 || !strings.Contains(r.stdout, "jobs") || !strings.Contains(r.stdout, "SPREAD") {
		t.Fatalf("list: %+v", r)
	}
	if r := s.cli("queue", "create", "bursts", "--shards", "32", "--spread", "8"); r.code != 0 ||
		!strings.Contains(r.stdout, "created queue bursts (32 shards of 1m0s, 8 per window, 5 deliveries") {
		t.Fatalf("create --spread: %+v", r)
	}
	for _, args := range [][]string{{"--spread", "3"}, {"--spread", "8"}, {"--spread", "0"}} {
		if r := s.cli(append([]string{"queue", "create", "nope", "--shards", "16"}, args...)...); r.code == 0 || !strings.Contains(r.stderr, "--spread") {
			t.Fatalf("create %v: %+v, want a usage error naming --spread", args, r)
		}
	}
	var ids []string
	for _, body := range []string{"first", "second"} {
		r := s.cli("queue", "put", "jobs", body)
		if r.code != 0 || len(strings.TrimSpace(r.stdout)) != 36 {
			t.Fatalf("put: %+v", r)
		}
		ids = append(ids, strings.TrimSpace(r.stdout))
	}
	if r := s.cli("queue", "put", "jobs", "later", "--delay", "1h", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"ids"`) {
		t.Fatalf("put --delay: %+v", r)
	}
	if r := s.cli("queue", "put", "jobs", "dated", "--due", "2026-03-14T12:00:00Z"); r.code != 0 {
		t.Fatalf("put --due: %+v", r)
	}

	clk.Advance(2 * time.Minute)
	r := s.cli("queue", "observe", "jobs", "--once")
	for _, want := range []string{"queue jobs: 4 messages, 2 due, 0 in flight, delivery lag 2m0s", "producing", "consuming", "SHARD", "IN FLIGHT"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("observe lacks %q: %+v", want, r)
		}
	}
	var st api.QueueStats
	if r := s.cli("queue", "observe", "jobs", "--once", "--json"); r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil || st.Due != 2 {
		t.Fatalf("observe --json: %+v", r)
	}

	r = s.cli("queue", "consume", "jobs", "--once", "--batch", "10", "--json")
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	for i, want := range []string{"first", "second"} {
		var d api.Delivery
		if err := dec.Decode(&d); err != nil || d.ID != ids[i] || d.Body != want || d.Attempt != 1 {
			t.Fatalf("consume --json delivery %d: %+v, %v (output %q)", i, d, err, r.stdout)
		}
	}
	if r.code != 0 || dec.More() {
		t.Fatalf("consume: %+v", r)
	}
	if n := s.queueMessages(t, "jobs"); n != 2 {
		t.Fatalf("%d messages left, want the two not yet due", n)
	}
}

func TestQueueCLIExec(t *testing.T) {
	t.Parallel()
	s, clk := newQueueTestServer(t)
	if r := s.cli("queue", "create", "jobs", "--shards", "4", "--max-deliveries", "2", "--visibility-timeout", "5s"); r.code != 0 {
		t.Fatalf("create: %+v", r)
	}
	for _, body := range []string{"alpha", "beta"} {
		if r := s.cli("queue", "put", "jobs", body); r.code != 0 {
			t.Fatalf("put: %+v", r)
		}
	}
	clk.Advance(2 * time.Minute)
	out := filepath.Join(t.TempDir(), "handled")
	// The handler sees the body on stdin and the message in its environment.
	handler := `cat >> ` + out + `; echo " $ABACUS_QUEUE $ABACUS_MESSAGE_ATTEMPT" >> ` + out
	r := s.cli("queue", "consume", "jobs", "--once", "--exec", handler)
	if r.code != 0 {
		t.Fatalf("consume --exec: %+v", r)
	}
	got, _ := os.ReadFile(out)
	if string(got) != "alpha jobs 1\nbeta jobs 1\n" {
		t.Fatalf("handler saw %q", got)
	}
	if n := s.queueMessages(t, "jobs"); n != 0 {
		t.Fatalf("%d messages left after successful handling", n)
	}

	// A failing handler: the message comes back, then goes to the dead
	// letters with the handler's complaint.
	if r := s.cli("queue", "put", "jobs", "poison"); r.code != 0 {
		t.Fatalf("put: %+v", r)
	}
	clk.Advance(2 * time.Minute)
	fail := `echo "cannot parse $(cat)" >&2; exit 3`
	r = s.cli("queue", "consume", "jobs", "--once", "--exec", fail)
	if r.code != 0 || !strings.Contains(r.stderr, "exit status 3: cannot parse poison") || !strings.Contains(r.stderr, "delivered again") {
		t.Fatalf("failing handler: %+v", r)
	}
	clk.Advance(5 * time.Second)
	r = s.cli("queue", "consume", "jobs", "--once", "--exec", fail)
	if r.code != 0 || !strings.Contains(r.stderr, "(attempt 2)") || !strings.Contains(r.stderr, "dead letters") {
		t.Fatalf("last failure: %+v", r)
	}
	r = s.cli("queue", "dead", "jobs")
	if r.code != 0 || !strings.Contains(r.stdout, "delivery 2: exit status 3: cannot parse poison") || !strings.Contains(r.stdout, "poison") {
		t.Fatalf("dead: %+v", r)
	}
	if r := s.cli("queue", "dead", "jobs", "--requeue-all"); r.code != 0 || r.stdout != "requeued 1 message(s)\n" {
		t.Fatalf("requeue: %+v", r)
	}
	clk.Advance(2 * time.Minute)
	if r := s.cli("queue", "consume", "jobs", "--once"); r.code != 0 || r.stdout != "poison\n" {
		t.Fatalf("after requeue: %+v", r)
	}

	// A dead letter deleted is gone for good.
	if r := s.cli("queue", "put", "jobs", "poison"); r.code != 0 {
		t.Fatalf("put: %+v", r)
	}
	clk.Advance(2 * time.Minute)
	for range 2 {
		clk.Advance(5 * time.Second)
		if r := s.cli("queue", "consume", "jobs", "--once", "--exec", fail); r.code != 0 {
			t.Fatalf("failing handler: %+v", r)
		}
	}
	r = s.cli("queue", "dead", "jobs", "--json")
	var letters api.DeadLetterList
	if err := json.Unmarshal([]byte(r.stdout), &letters); r.code != 0 || err != nil || len(letters.DeadLetters) != 1 {
		t.Fatalf("dead --json: %+v (%v)", r, err)
	}
	if r := s.cli("queue", "dead", "jobs", "--delete", letters.DeadLetters[0].ID); r.code != 0 || r.stdout != "deleted 1 dead letter(s)\n" {
		t.Fatalf("delete: %+v", r)
	}
	if r := s.cli("queue", "dead", "jobs", "--requeue-all"); r.code != 0 || r.stdout != "requeued 0 message(s)\n" {
		t.Fatalf("requeue after the delete: %+v", r)
	}
}

// Bad input is refused before anything is sent (exit 2), or by the
// server (exit 1) with nothing written.
func TestQueueCLIBadInput(t *testing.T) {
	t.Parallel()
	s, _ := newQueueTestServer(t)
	for _, args := range [][]string{
		{"queue", "create", "q", "--shards", "3"},
		{"queue", "create", ""},
		{"queue", "put", "q", "x", "--delay", "-5s"},
		{"queue", "put", "q", "x", "--delay", "1s", "--due", "2030-01-01T00:00:00Z"},
		{"queue", "put", "q", "x", "--due", "tomorrow"},
		{"queue", "put", "q"},
		{"queue", "consume", "q", "--batch", "0"},
		{"queue", "observe", "q", "--interval", "1ms"},
		{"queue", "dead", "q", "--requeue", "x", "--requeue-all"},
		{"queue", "dead", "q", "--delete", "x", "--requeue-all"},
		{"queue", "put", "q", "x", "--attr", "novalue"},
		{"queue", "put", "q", "x", "--attr", "=v"},
		{"queue", "put", "q", "x", "--attr", "a=1", "--attr", "a=2"},
	} {
		before := s.requests.Load()
		r := s.cli(args...)
		if r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, r.code, exitUsage, r.stderr)
		}
		r.oneLineError(t)
		if s.requests.Load() != before {
			t.Errorf("%v sent a request", args)
		}
	}
	if r := s.cli("queue", "create", "q", "--shards", "4"); r.code != 0 {
		t.Fatalf("create: %+v", r)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"queue", "put", "nope", "x"}, exitNotFound, "queue not found"},
		{[]string{"queue", "consume", "nope"}, exitNotFound, "queue not found"},
		{[]string{"queue", "put", "q", strings.Repeat("x", 70_000)}, exitRefused, "the limit is 65536"},
		{[]string{"queue", "create", "q"}, exitConflict, "already exists"},
		{[]string{"queue", "dead", "q", "--requeue", "not-an-id"}, exitRefused, "ids[0]"},
	} {
		r := s.cli(tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%.60v: %+v, want exit %d mentioning %q", tc.args, r, tc.code, tc.want)
		}
	}
	if n := s.queueMessages(t, "q"); n != 0 {
		t.Fatalf("refused puts wrote %d messages", n)
	}
}

// A command that runs longer than the visibility timeout keeps its message
// when --handler-timeout allows it: the consumer extends the visibility
// while it runs, and the ack at the end is of the current delivery.
func TestConsumeExtendsVisibilityWhileTheCommandRuns(t *testing.T) {
	t.Parallel()
	s, clk := newQueueTestServer(t)
	if r := s.cli("queue", "create", "jobs", "--shards", "4", "--visibility-timeout", "1s"); r.code != 0 {
		t.Fatalf("create: %+v", r)
	}
	if r := s.cli("queue", "put", "jobs", "slow"); r.code != 0 {
		t.Fatalf("put: %+v", r)
	}
	clk.Advance(2 * time.Minute)
	if r := s.cli("queue", "consume", "jobs", "--handler-timeout", "1s"); r.code != exitUsage {
		t.Fatalf("--handler-timeout without --exec: %+v", r)
	}
	r := s.cli("queue", "consume", "jobs", "--max", "1", "--wait", "0s", "--exec", "sleep 1.6", "--handler-timeout", "10s")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("consume: %+v", r)
	}
	if n := s.queueMessages(t, "jobs"); n != 0 {
		t.Fatalf("%d messages left; the slow command's ack should have removed it", n)
	}
	if got := s.lib.Queues().Stats().Extended.Load(); got < 2 {
		t.Fatalf("%d visibility extensions while a 1.6 s command ran with a 1 s timeout, want 2 or more", got)
	}
}

// --retry-backoff brings a failed message back after its backoff, not
// when the visibility timeout ends.
func TestConsumeRetryBackoff(t *testing.T) {
	t.Parallel()
	s, clk := newQueueTestServer(t)
	if r := s.cli("queue", "create", "jobs", "--shards", "4", "--visibility-timeout", "10m"); r.code != 0 {
		t.Fatalf("create: %+v", r)
	}
	if r := s.cli("queue", "put", "jobs", "flaky"); r.code != 0 {
		t.Fatalf("put: %+v", r)
	}
	clk.Advance(2 * time.Minute)
	if r := s.cli("queue", "consume", "jobs", "--retry-backoff", "1m"); r.code != exitUsage {
		t.Fatalf("--retry-backoff without --exec: %+v", r)
	}
	r := s.cli("queue", "consume", "jobs", "--max", "1", "--wait", "0s", "--exec", "exit 3", "--retry-backoff", "1m")
	if r.code != 0 || !strings.Contains(r.stderr, "it will be delivered again in") {
		t.Fatalf("consume: %+v", r)
	}
	clk.Advance(25 * time.Second) // under the first backoff's 30 s floor
	if r := s.cli("queue", "consume", "jobs", "--once"); r.code != 0 || r.stdout != "" {
		t.Fatalf("back before its backoff: %+v", r)
	}
	clk.Advance(40 * time.Second) // past the backoff's 60 s ceiling, far before the 10 m timeout
	if r := s.cli("queue", "consume", "jobs", "--once"); r.code != 0 || r.stdout != "flaky\n" {
		t.Fatalf("after its backoff: %+v", r)
	}
}

func TestHandlerTimeoutTakesOneMessageAtATime(t *testing.T) {
	t.Parallel()
	s, _ := newQueueTestServer(t)
	if r := s.cli("queue", "consume", "jobs", "--exec", "true", "--handler-timeout", "1h", "--batch", "2"); r.code != exitUsage {
		t.Fatalf("--handler-timeout with --batch 2: %+v", r)
	}
}

// A put with a dedup id, repeated: the same id, nothing new stored; another
// body under it is a conflict.
func TestQueuePutDedupCLI(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	if r := s.cli("queue", "create", "bills"); r.code != 0 {
		t.Fatalf("create: %+v", r)
	}
	once := s.cli("queue", "put", "bills", "charge 17", "--dedup-id", "order-17")
	twice := s.cli("queue", "put", "bills", "charge 17", "--dedup-id", "order-17")
	if once.code != 0 || twice.code != 0 || !strings.HasPrefix(twice.stdout, strings.TrimSpace(once.stdout)+" (already put") {
		t.Fatalf("put --dedup-id twice: %+v then %+v", once, twice)
	}
	if r := s.cli("queue", "put", "bills", "charge 18", "--dedup-id", "order-17"); r.code != exitConflict {
		t.Fatalf("another body under the dedup id: %+v, want exit %d", r, exitConflict)
	}
	if r := s.cli("queue", "put", "bills", "x", "--dedup-id", strings.Repeat("d", 129)); r.code != exitUsage {
		t.Fatalf("a 129-byte dedup id: %+v, want exit %d", r, exitUsage)
	}
	var st api.QueueStats
	if r := s.cli("queue", "observe", "bills", "--once", "--json"); r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil || st.Messages != 1 {
		t.Fatalf("observe: %+v (%+v), want 1 message stored", r, st)
	}
}

func TestQueuePauseAndPurgeCLI(t *testing.T) {
	t.Parallel()
	s, clk := newQueueTestServer(t)
	if r := s.cli("queue", "create", "jobs", "--shards", "4"); r.code != 0 {
		t.Fatalf("create: %+v", r)
	}
	if r := s.cli("queue", "put", "jobs", "held"); r.code != 0 {
		t.Fatalf("put: %+v", r)
	}
	clk.Advance(time.Minute)
	if r := s.cli("queue", "pause", "jobs"); r.code != 0 || !strings.Contains(r.stdout, "queue jobs paused: not delivering since 2026-03-14T10:01:00Z") {
		t.Fatalf("pause: %+v", r)
	}
	if r := s.cli("queue", "list"); r.code != 0 || !strings.Contains(r.stdout, "STATE") || !strings.Contains(r.stdout, "paused") {
		t.Fatalf("list of a paused queue: %+v", r)
	}
	if r := s.cli("queue", "consume", "jobs", "--once", "--json"); r.code != 0 || strings.TrimSpace(r.stdout) != "" {
		t.Fatalf("consume of a paused queue: %+v", r)
	}
	var p api.QueuePause
	if r := s.cli("queue", "resume", "jobs", "--json"); r.code != 0 || json.Unmarshal([]byte(r.stdout), &p) != nil || p.Paused || p.Queue != "jobs" {
		t.Fatalf("resume --json: %+v (%+v)", r, p)
	}
	if r := s.cli("queue", "consume", "jobs", "--once", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"body": "held"`) {
		t.Fatalf("consume after the resume: %+v", r)
	}
	for range 2 {
		if r := s.cli("queue", "put", "jobs", "gone"); r.code != 0 {
			t.Fatalf("put: %+v", r)
		}
	}
	if r := s.cli("queue", "purge", "jobs", "--dead-letters"); r.code != 0 || !strings.Contains(r.stdout, "purged queue jobs: deleted 2 message(s) and 0 dead letter(s)") {
		t.Fatalf("purge: %+v", r)
	}
	if r := s.cli("queue", "purge", "nope"); r.code == 0 || !strings.Contains(r.stderr, "queue not found") {
		t.Fatalf("purge of an unknown queue: %+v", r)
	}
	if r := s.cli("queue", "pause", "nope"); r.code == 0 || !strings.Contains(r.stderr, "queue not found") {
		t.Fatalf("pause of an unknown queue: %+v", r)
	}
	if r := s.cli("queue", "resume"); r.code == 0 || !strings.Contains(r.stderr, "NAME") {
		t.Fatalf("resume without NAME: %+v", r)
	}
}

// "queue delete" deletes, and again harmlessly; the name comes back empty
// after the wait it names; a delete of an unknown queue, and one without
// NAME, fail with a reason.
func TestQueueCLIDelete(t *testing.T) {
	s, clk := newQueueTestServer(t)
	if r := s.cli("queue", "create", "jobs", "--shards", "4"); r.code != 0 {
		t.Fatalf("create: %+v", r)
	}
	if r := s.cli("queue", "put", "jobs", "old"); r.code != 0 {
		t.Fatalf("put: %+v", r)
	}
	var res api.QueueDeleteResponse
	r := s.cli("queue", "delete", "jobs", "--json")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || res.Messages != 1 || res.Queue != "jobs" {
		t.Fatalf("delete --json: %+v (%+v)", r, res)
	}
	if r := s.cli("queue", "delete", "jobs"); r.code != 0 || !strings.Contains(r.stdout, "deleted queue jobs: removed 0 message(s)") {
		t.Fatalf("a second delete: %+v", r)
	}
	if r := s.cli("queue", "delete", "nope"); r.code == 0 || !strings.Contains(r.stderr, "queue not found") {
		t.Fatalf("delete of an unknown queue: %+v", r)
	}
	if r := s.cli("queue", "delete"); r.code == 0 || !strings.Contains(r.stderr, "NAME") {
		t.Fatalf("delete without NAME: %+v", r)
	}
	if r := s.cli("queue", "put", "jobs", "x"); r.code == 0 || !strings.Contains(r.stderr, "queue not found") {
		t.Fatalf("put to the deleted queue: %+v", r)
	}
	if r := s.cli("queue", "create", "jobs", "--shards", "4"); r.code == 0 || !strings.Contains(r.stderr, "created again from") {
		t.Fatalf("create right after the delete: %+v", r)
	}
	clk.Advance(res.RecreatableAt.Sub(res.DeletedAt))
	if r := s.cli("queue", "create", "jobs", "--shards", "4"); r.code != 0 {
		t.Fatalf("create after the wait: %+v", r)
	}
	if r := s.cli("queue", "put", "jobs", "new"); r.code != 0 {
		t.Fatalf("put: %+v", r)
	}
	clk.Advance(2 * time.Minute)
	if r := s.cli("queue", "consume", "jobs", "--once", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"body": "new"`) || strings.Contains(r.stdout, "old") {
		t.Fatalf("consume of the queue made again: %+v", r)
	}
	r = s.cli("queue", "delete", "jobs")
	if r.code != 0 || !strings.Contains(r.stdout, "deleted queue jobs: removed 0 message(s) and 0 dead letter(s); the name can be created again from") {
		t.Fatalf("delete: %+v", r)
	}
}

// Attributes put with --attr reach a command run by consume --exec.
func TestQueueCLIAttributes(t *testing.T) {
	s, clk := newQueueTestServer(t)
	if r := s.cli("queue", "create", "mail", "--shards", "4"); r.code != 0 {
		t.Fatalf("create: %+v", r)
	}
	if r := s.cli("queue", "put", "mail", "welcome", "--attr", "tenant=acme", "--attr", "note=a=b c"); r.code != 0 {
		t.Fatalf("put: %+v", r)
	}
	if r := s.cli("queue", "put", "mail", "x", "--attr", "bad name=1"); r.code != exitRefused || !strings.Contains(r.stderr, "attribute name") {
		t.Fatalf("put with a bad name: %+v", r)
	}
	clk.Advance(2 * time.Minute)
	r := s.cli("queue", "consume", "mail", "--once", "--exec", `printf '%s' "$ABACUS_MESSAGE_ATTRIBUTES"`)
	var got map[string]string
	if err := json.Unmarshal([]byte(r.stdout), &got); r.code != 0 || err != nil || got["tenant"] != "acme" || got["note"] != "a=b c" || len(got) != 2 {
		t.Fatalf("consume --exec saw attributes %q (%v): %+v", r.stdout, err, r)
	}
	// A message without attributes gets {}, not what the consumer's own
	// environment held.
	if r := s.cli("queue", "put", "mail", "plain"); r.code != 0 {
		t.Fatalf("put: %+v", r)
	}
	clk.Advance(2 * time.Minute)
	t.Setenv("ABACUS_MESSAGE_ATTRIBUTES", `{"outer":"message"}`)
	if r := s.cli("queue", "consume", "mail", "--once", "--exec", `printf '%s' "$ABACUS_MESSAGE_ATTRIBUTES"`); r.code != 0 || r.stdout != "{}" {
		t.Fatalf("consume --exec of a message without attributes saw %q: %+v", r.stdout, r)
	}
}

func TestQueueCLIPriorities(t *testing.T) {
	s, clk := newQueueTestServer(t)
	if r := s.cli("queue", "create", "alerts", "--shards", "4", "--priorities", "5"); r.code != exitUsage || !strings.Contains(r.stderr, "1 to 4") {
		t.Fatalf("create with 5 levels: %+v", r)
	}
	if r := s.cli("queue", "create", "alerts", "--shards", "4", "--priorities", "3"); r.code != 0 || !strings.Contains(r.stdout, "3 priority levels") {
		t.Fatalf("create: %+v", r)
	}
	if r := s.cli("queue", "list"); r.code != 0 || !strings.Contains(r.stdout, "LEVELS") {
		t.Fatalf("list: %+v", r)
	}
	for _, put := range [][]string{{"low"}, {"high", "--priority", "2"}, {"mid", "--priority", "1"}} {
		if r := s.cli(append([]string{"queue", "put", "alerts"}, put...)...); r.code != 0 {
			t.Fatalf("put %v: %+v", put, r)
		}
	}
	if r := s.cli("queue", "put", "alerts", "x", "--priority", "3"); r.code != exitRefused || !strings.Contains(r.stderr, "priority 3") {
		t.Fatalf("put at a level the queue lacks: %+v", r)
	}
	if r := s.cli("queue", "put", "alerts", "x", "--priority", "-1"); r.code != exitUsage {
		t.Fatalf("put at level -1: %+v", r)
	}
	clk.Advance(time.Second)
	r := s.cli("queue", "consume", "alerts", "--once", "--max", "3", "--exec", `printf '%s:%s ' "$(cat)" "$ABACUS_MESSAGE_PRIORITY"`)
	if r.code != 0 || r.stdout != "high:2 mid:1 low:0 " {
		t.Fatalf("consume ran the messages as %q, want highest level first: %+v", r.stdout, r)
	}
}
