package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/abacusdb/abacus/api"
)

func TestEveryModelFromTheCommandLine(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	for _, args := range [][]string{
		{"namespace", "create", "ev", "--model", "events", "--accept-window", "2h", "--bucket", "30m"},
		{"namespace", "create", "orders", "--model", "actor"},
		{"namespace", "create", "nat", "--model", "native"},
		{"namespace", "create", "lwt", "--model", "cas"},
	} {
		if r := s.cli(args...); r.code != 0 || !strings.HasPrefix(r.stdout, "created namespace") {
			t.Fatalf("%v: %+v", args, r)
		}
	}
	r := s.cli("namespace", "get", "ev", "--json")
	var ns api.Namespace
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &ns) != nil || ns.Events == nil ||
		ns.Events.AcceptWindowSeconds != 7200 || ns.Events.BucketSeconds != 1800 || ns.Events.SealSeconds != 4 || ns.Events.RollupDelaySeconds != 2 {
		t.Fatalf("events namespace: %+v (%+v)", r, ns.Events)
	}

	// Events: the same request id from the command line counts once.
	r = s.cli("--ns", "ev", "counter", "add", "likes", "5", "--json")
	var ur api.UpdateResponse
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &ur) != nil {
		t.Fatalf("add: %+v", r)
	}
	if r := s.cli("--ns", "ev", "counter", "add", "likes", "5", "--request-id", ur.RequestID); r.code != 0 {
		t.Fatalf("retry: %+v", r)
	}
	if r := s.cli("--ns", "ev", "counter", "add", "likes", "-2", "--get"); r.code != 0 || r.stdout != "3\n" {
		t.Fatalf("add --get: %+v, want 3", r)
	}
	var v api.Value
	if r := s.cli("--ns", "ev", "counter", "get", "likes", "--max-staleness", "1m", "--json"); r.code != 0 || json.Unmarshal([]byte(r.stdout), &v) != nil || v.Value != 3 || v.AsOf == nil {
		t.Fatalf("get --max-staleness: %+v (%+v)", r, v)
	}
	if r := s.cli("--ns", "ev", "counter", "get", "likes", "--max-staleness", "-1s"); r.code != exitUsage {
		t.Fatalf("a negative --max-staleness: %+v", r)
	}
	if r := s.cli("--ns", "ev", "counter", "add", "likes", "1", "--request-id", "batch-1", "--time", "2001-01-01T00:00:00Z"); r.code != exitConflict || !strings.Contains(r.stderr, "too late") {
		t.Fatalf("a stale event time: %+v", r)
	}
	if r := s.cli("--ns", "ev", "counter", "clear", "likes"); r.code != 0 {
		t.Fatalf("clear: %+v", r)
	}
	if r := s.cli("--ns", "ev", "counter", "get", "likes"); r.stdout != "0\n" {
		t.Fatalf("after clear: %+v", r)
	}

	// Actor: the order quantities of “Highly Available Counters Using Cassandra”.
	for _, set := range [][]string{{"P1", "2", "1500"}, {"P2", "1", "500"}, {"P1", "1", "1000"}} {
		if r := s.cli(append([]string{"--ns", "orders", "counter", "set", "open-qty"}, set...)...); r.code != 0 || r.stdout != "" {
			t.Fatalf("set %v: %+v", set, r)
		}
	}
	if r := s.cli("--ns", "orders", "counter", "get", "open-qty"); r.stdout != "2000\n" {
		t.Fatalf("actor sum: %+v", r)
	}
	if r := s.cli("--ns", "orders", "counter", "set", "open-qty", "P3", "1", "-40"); r.code != 0 {
		t.Fatalf("negative value: %+v", r)
	}

	for _, ns := range []string{"nat", "lwt"} {
		if r := s.cli("--ns", ns, "counter", "add", "c", "7", "--get"); r.code != 0 || r.stdout != "7\n" {
			t.Fatalf("%s add --get: %+v", ns, r)
		}
	}
	if r := s.cli("--ns", "lwt", "counter", "clear", "c"); r.code != 0 {
		t.Fatalf("cas clear: %+v", r)
	}
}

func TestModelMistakesFromTheCommandLine(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.cli("namespace", "create", "orders", "--model", "actor")
	s.cli("namespace", "create", "nat", "--model", "native")
	for _, c := range []struct {
		args []string
		code int
		msg  string
		sent bool // whether the mistake is only found by the server
	}{
		{[]string{"--ns", "orders", "counter", "set", "q", "a", "0", "1"}, 2, "VERSION", false},
		{[]string{"--ns", "orders", "counter", "set", "q", "a", "x", "1"}, 2, "VERSION", false},
		{[]string{"--ns", "orders", "counter", "set", "q", "a", "1"}, 2, "VALUE", false},
		{[]string{"--ns", "orders", "counter", "set", "q", "a", "1", "1e3"}, 2, "VALUE", false},
		{[]string{"--ns", "orders", "counter", "add", "q", "1"}, exitRefused, "actor", true},
		{[]string{"counter", "set", "q", "a", "1", "1"}, exitRefused, "model", true},
		{[]string{"counter", "add", "c", "1", "--time", "yesterday"}, 2, "RFC 3339", false},
		{[]string{"namespace", "create", "x", "--model", "cas", "--bucket", "1m"}, 2, "--model events", false},
		{[]string{"namespace", "create", "x", "--model", "events", "--bucket", "1500ms"}, 2, "whole number of seconds", false},
		{[]string{"namespace", "create", "x", "--model", "events", "--type", "max"}, exitRefused, "sums", true},
	} {
		before := s.requests.Load()
		r := s.cli(c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) {
			t.Errorf("%v: %+v, want exit %d mentioning %q", c.args, r, c.code, c.msg)
			continue
		}
		r.oneLineError(t)
		if sent := s.requests.Load() > before; sent != c.sent {
			t.Errorf("%v: sent a request: %v, want %v", c.args, sent, c.sent)
		}
	}
	if r := s.cli("--ns", "orders", "counter", "get", "q"); r.stdout != "0\n" {
		t.Fatalf("refused commands changed the counter: %+v", r)
	}
}

// The finding: a second value at a used version exited 0 and printed
// nothing, though the help says a version must not be reused with another
// value. It must fail with a one-line reason and leave the value as it was.
func TestActorVersionReuseFromTheCommandLine(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.cli("namespace", "create", "orders", "--model", "actor")
	if r := s.cli("--ns", "orders", "counter", "set", "c", "P1", "2", "1500"); r.code != 0 {
		t.Fatalf("first set: %+v", r)
	}
	r := s.cli("--ns", "orders", "counter", "set", "c", "P1", "2", "999")
	if r.code != exitConflict || !strings.Contains(r.stderr, "higher version") || !strings.Contains(r.stderr, "1500") {
		t.Fatalf("reused version: %+v, want exit %d naming the stored 1500 and a higher version", r, exitConflict)
	}
	r.oneLineError(t)
	if r := s.cli("--ns", "orders", "counter", "set", "c", "P1", "2", "1500"); r.code != 0 {
		t.Fatalf("repeating the set: %+v", r)
	}
	if r := s.cli("--ns", "orders", "counter", "get", "c"); r.stdout != "1500\n" {
		t.Fatalf("after the refused set: %+v", r)
	}
}

// An events counter past the int64 edge prints its exact sum, not the
// saturated bound, and add --get succeeds after storing.
func TestSaturatedCounterPrintsExactSum(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.cli("namespace", "create", "ev", "--model", "events")
	if r := s.cli("--ns", "ev", "counter", "add", "c", "9223372036854775807"); r.code != 0 {
		t.Fatalf("first add: %+v", r)
	}
	if r := s.cli("--ns", "ev", "counter", "add", "c", "2", "--get"); r.code != 0 || r.stdout != "9223372036854775809\n" {
		t.Fatalf("add --get past the edge: %+v", r)
	}
	if r := s.cli("--ns", "ev", "counter", "get", "c"); r.code != 0 || r.stdout != "9223372036854775809\n" {
		t.Fatalf("get past the edge: %+v", r)
	}
}

// The delete commands print when the delete takes effect, as text and as
// JSON; refusals exit with their class.
func TestDeletesFromTheCommandLine(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.cli("namespace", "create", "nat", "--model", "native")
	s.cli("namespace", "create", "wallets", "--model", "ledger")
	for _, args := range [][]string{
		{"--ns", "nat", "counter", "delete", "c"},
		{"--ns", "wallets", "ledger", "delete", "w"},
		{"namespace", "delete", "nat"},
	} {
		r := s.cli(args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "deleted ") || !strings.Contains(r.stdout, ", from 20") {
			t.Errorf("%v: %+v, want a line saying from when", args, r)
		}
		var res api.DeleteResponse
		if r := s.cli(append([]string{"-o", "json"}, args...)...); r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || res.EffectiveAt.IsZero() {
			t.Errorf("%v -o json: %+v", args, r)
		}
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"namespace", "delete", "default"}, exitRefused},
		{[]string{"namespace", "delete", "nope"}, exitNotFound},
		{[]string{"counter", "delete"}, exitUsage},
	} {
		if r := s.cli(c.args...); r.code != c.code {
			t.Errorf("%v: %+v, want exit %d", c.args, r, c.code)
		}
	}
}
