package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/internal/servertest"
	"github.com/spf13/cobra"
)

// testServer is the real server on the embedded store in memory; it counts
// the requests it gets so tests can prove that bad input sent nothing.
type testServer struct {
	url      string
	requests atomic.Int64
	lib      *abacus.Client
}

func newTestServer(t *testing.T) *testServer {
	t.Helper()
	return newTestServerOnClock(t, nil)
}

// newTestServerOnClock is newTestServer with the library telling time by clk
// (nil: the system clock).
func newTestServerOnClock(t *testing.T, clk clock.Clock) *testServer {
	t.Helper()
	b := servertest.NewBackend(t, clk)
	s := &testServer{lib: b.Lib}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		b.Handler.ServeHTTP(w, r)
	}))
	s.url = ts.URL
	t.Cleanup(ts.Close)
	return s
}

type result struct {
	code           int
	stdout, stderr string
}

// cli runs the command line with the given environment (nothing from the
// real one, so tests stay parallel-safe).
func cli(env map[string]string, args ...string) result {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, func(k string) string { return env[k] }, &out, &errb)
	return result{code, out.String(), errb.String()}
}

// on runs the command line against s.
func (s *testServer) cli(args ...string) result {
	return cli(map[string]string{"ABACUS_SERVER": s.url}, args...)
}

func (r result) oneLineError(t *testing.T) {
	t.Helper()
	if !strings.HasPrefix(r.stderr, "abacus: ") || strings.Count(r.stderr, "\n") != 1 || !strings.HasSuffix(r.stderr, "\n") {
		t.Errorf("stderr is not one 'abacus: ...' line: %q", r.stderr)
	}
}

func TestAddTwiceThenGet(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	for i := 0; i < 2; i++ {
		if r := s.cli("counter", "add", "likes", "5"); r.code != 0 || r.stderr != "" || r.stdout != "" {
			t.Fatalf("add: %+v", r)
		}
	}
	r := s.cli("counter", "get", "likes")
	if r.code != 0 || r.stdout != "10\n" || r.stderr != "" {
		t.Fatalf("get: %+v, want exactly \"10\\n\"", r)
	}
	// Negative deltas are numbers, not flags, wherever the flags go.
	for _, args := range [][]string{
		{"counter", "add", "likes", "-3"},
		{"counter", "add", "--json", "likes", "-3"},
		{"counter", "add", "likes", "-3", "--timeout", "5s"},
		{"counter", "add", "likes", "--", "-3"},
	} {
		if r := s.cli(args...); r.code != 0 {
			t.Fatalf("%v: %+v", args, r)
		}
	}
	if r := s.cli("counter", "get", "likes"); r.stdout != "-2\n" {
		t.Fatalf("after negative deltas: %+v", r)
	}
}

func TestRequestIDMakesRetriesCountOnce(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	for i := 0; i < 3; i++ {
		r := s.cli("counter", "add", "likes", "4", "--request-id", "once", "--json")
		var ur api.UpdateResponse
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &ur) != nil || ur.RequestID != "once" || !ur.Acknowledged {
			t.Fatalf("add: %+v", r)
		}
	}
	if r := s.cli("counter", "get", "likes"); r.stdout != "4\n" {
		t.Fatalf("get: %+v", r)
	}
	// Reusing the id for something else is refused.
	r := s.cli("counter", "add", "likes", "5", "--request-id", "once")
	if r.code != exitConflict || !strings.Contains(r.stderr, "request id") {
		t.Fatalf("conflicting reuse: %+v", r)
	}
	r.oneLineError(t)
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	for _, args := range [][]string{
		{"bogus"},
		{"counter"},
		{"counter", "bogus"},
		{"counter", "add"},
		{"counter", "add", "likes"},
		{"counter", "add", "likes", "1", "2"},
		{"counter", "add", "likes", "--item", "x", "1"},
		{"counter", "add", "", "1"},
		{"counter", "get"},
		{"counter", "get", "a", "b"},
		{"namespace"},
		{"namespace", "create"},
		{"namespace", "list", "extra"},
		{"gc", "a", "b"},
		{"version", "extra"},
		{"serve", "extra"},
		{"serve", "--log-format", "xml"},
		{"serve", "--log-level", "loud"},
		{"serve", "--queue-pause-refresh", "0s"},
		{"serve", "--queue-pause-refresh", "2m"},
		{"serve", "--cassandra", "127.0.0.1", "--replication", "dc1"},
		{"serve", "--cassandra", "127.0.0.1", "--replication", "dc1:x"},
		{"serve", "--cassandra", "127.0.0.1", "--replication", "dc1:-1"},
		{"serve", "--cassandra", "127.0.0.1", "--replication", "dc1:2,dc1:3"},
		{"serve", "--cassandra", "127.0.0.1", "--replication", "dc1:0"},
		{"serve", "--cassandra", "127.0.0.1", "--replication", "dc1:3", "--replication-factor", "3"},
		{"serve", "--cassandra", "127.0.0.1", "--replication-factor", "-1"},
		{"serve", "--cassandra", "127.0.0.1", "--replication-factor", "0"},
		{"migrate", "--cassandra", "127.0.0.1", "--replication", "dc1:3", "--replication-factor", "1"},
		{"queue", "resume"},
		{"queue", "purge"},
		{"queue", "pause", "a", "b"},
		{"--nope"},
		{"counter", "get", "likes", "--timeout", "soon"},
		{"--server", "ftp://x", "counter", "get", "likes"},
		{"--server", "127.0.0.1:7070", "counter", "get", "likes"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := s.cli(args...)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2; %+v", r.code, r)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q", r.stdout)
			}
			r.oneLineError(t)
		})
	}
	if n := s.requests.Load(); n != 0 {
		t.Errorf("usage errors sent %d requests", n)
	}
}

func TestBadDeltaIsCaughtBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	for _, delta := range []string{"1.5", "abc", "5x", "0x10", "9223372036854775808", "-9223372036854775809", "1e3", ""} {
		r := s.cli("counter", "add", "likes", delta)
		if r.code == 0 {
			t.Errorf("DELTA %q accepted", delta)
			continue
		}
		r.oneLineError(t)
		if !strings.Contains(r.stderr, "DELTA") {
			t.Errorf("DELTA %q: reason %q does not name DELTA", delta, r.stderr)
		}
	}
	if n := s.requests.Load(); n != 0 {
		t.Errorf("bad deltas sent %d requests", n)
	}
	// The extremes of int64 are fine.
	for _, delta := range []string{"9223372036854775807", "-9223372036854775808"} {
		if r := s.cli("counter", "add", "edge"+delta, delta); r.code != 0 {
			t.Errorf("DELTA %s: %+v", delta, r)
		}
	}
}

func TestServerErrorsExitByClass(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--ns", "nope", "counter", "get", "likes"}, exitNotFound, "namespace not found"},
		{[]string{"--ns", "nope", "counter", "add", "likes", "1"}, exitNotFound, "namespace not found"},
		{[]string{"namespace", "create", "default"}, exitConflict, "already exists"},
		{[]string{"namespace", "create", "x", "--type", "avg"}, exitRefused, "avg"},
		{[]string{"counter", "add", "likes", "--item", "x"}, exitRefused, "item"},
		{[]string{"counter", "add", "big", "9223372036854775807", "--request-id", "a"}, exitOK, ""},
		{[]string{"counter", "add", "big", "1"}, exitRefused, "overflow"},
	} {
		r := s.cli(tc.args...)
		if tc.want == "" {
			if r.code != 0 {
				t.Fatalf("%v: %+v", tc.args, r)
			}
			continue
		}
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d stderr %q, want %d and %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
		r.oneLineError(t)
	}

	down := cli(map[string]string{"ABACUS_SERVER": "http://127.0.0.1:1"}, "counter", "get", "likes")
	if down.code != exitUnavailable || !strings.Contains(down.stderr, "cannot reach the server at http://127.0.0.1:1") {
		t.Errorf("unreachable server: %+v", down)
	}
	down.oneLineError(t)
}

// unknownOutcomeServer answers every request with a 503 unknown_outcome
// error carrying message, as a server does when a write's fate is unknown;
// it returns the server's URL.
func unknownOutcomeServer(t *testing.T, message string) string {
	t.Helper()
	lost := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(503)
		_ = json.NewEncoder(w).Encode(api.Error{Code: api.CodeUnknownOutcome, Message: message})
	}))
	t.Cleanup(lost.Close)
	return lost.URL
}

func TestUnknownOutcomeTellsHowToRetry(t *testing.T) {
	t.Parallel()
	r := cli(nil, "--server", unknownOutcomeServer(t, "outcome unknown: shard write timed out"), "counter", "add", "likes", "1", "--request-id", "r-42")
	if r.code != exitUnknown || !strings.Contains(r.stderr, "--request-id r-42") || !strings.Contains(r.stderr, "shard write timed out") {
		t.Fatalf("%+v", r)
	}
	r.oneLineError(t)
}

func TestNamespaceAndDistinctCounters(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	r := s.cli("namespace", "create", "visitors", "--type", "distinct", "--read-consistency", "quorum")
	if r.code != 0 || !strings.Contains(r.stdout, "created namespace visitors") || !strings.Contains(r.stdout, "read QUORUM") {
		t.Fatalf("create: %+v", r)
	}
	for _, args := range [][]string{
		{"--ns", "visitors", "counter", "add", "daily", "alice"},
		{"--ns", "visitors", "counter", "add", "daily", "42"}, // an item, not a delta, in a distinct namespace
		{"--ns", "visitors", "counter", "add", "daily", "--item", "bob"},
		{"--ns", "visitors", "counter", "add", "daily", "alice"},
	} {
		if r := s.cli(args...); r.code != 0 {
			t.Fatalf("%v: %+v", args, r)
		}
	}
	if r := s.cli("--ns", "visitors", "counter", "get", "daily"); r.stdout != "3\n" {
		t.Fatalf("distinct get: %+v", r)
	}

	r = s.cli("namespace", "list")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME") ||
		!strings.HasPrefix(lines[1], "default ") || !strings.Contains(lines[2], "distinct") || !strings.Contains(lines[2], "QUORUM") {
		t.Fatalf("list table:\n%s", r.stdout)
	}
	r = s.cli("namespace", "list", "--json")
	var list api.NamespaceList
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &list) != nil || len(list.Namespaces) != 2 || list.Namespaces[1].Type != "distinct" {
		t.Fatalf("list --json: %+v", r)
	}
	for _, args := range [][]string{{"-o", "json"}, {"--output=json"}, {"--json", "-o", "json"}} {
		r = s.cli(append([]string{"namespace", "list"}, args...)...)
		var again api.NamespaceList
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &again) != nil || len(again.Namespaces) != 2 {
			t.Fatalf("list %v: %+v", args, r)
		}
	}
	// The higher level wins between -o and --json: the command line over
	// the environment over the config file; the same level must agree.
	conf := filepath.Join(t.TempDir(), "c.yaml")
	for _, tc := range []struct {
		env  map[string]string
		file string
		args []string
		json bool
	}{
		{map[string]string{"ABACUS_OUTPUT": "text"}, "", []string{"--json"}, true},
		{map[string]string{"ABACUS_JSON": "true"}, "", []string{"-o", "text"}, false},
		{nil, "output: text\n", []string{"--json"}, true},
		{nil, "json: true\n", []string{"-o", "text"}, false},
		{map[string]string{"ABACUS_JSON": "true"}, "output: text\n", nil, true},
		{map[string]string{"ABACUS_OUTPUT": "text"}, "json: true\n", nil, false},
	} {
		env := map[string]string{"ABACUS_SERVER": s.url}
		for k, v := range tc.env {
			env[k] = v
		}
		args := []string{"namespace", "list"}
		if tc.file != "" {
			if err := os.WriteFile(conf, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			args = append(args, "--config", conf)
		}
		r = cli(env, append(args, tc.args...)...)
		if isJSON := strings.HasPrefix(r.stdout, "{"); r.code != 0 || isJSON != tc.json {
			t.Errorf("env %v, file %q, args %v: %+v; want JSON %v", tc.env, tc.file, tc.args, r, tc.json)
		}
	}
	for _, args := range [][]string{{"-o", "yaml"}, {"--json", "-o", "text"}} {
		if r = s.cli(append([]string{"namespace", "list"}, args...)...); r.code != exitUsage || r.stdout != "" {
			t.Fatalf("list %v: %+v, want a usage error", args, r)
		}
	}
	r = s.cli("ns", "get", "visitors", "--json")
	var ns api.Namespace
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &ns) != nil || ns.Name != "visitors" {
		t.Fatalf("namespace get: %+v", r)
	}
	r = s.cli("--ns", "visitors", "counter", "get", "daily", "--json")
	var v api.Value
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &v) != nil || v.Value != 3 || v.Type != "distinct" {
		t.Fatalf("get --json: %+v", r)
	}
}

func TestGC(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.cli("counter", "add", "likes", "1")
	s.cli("namespace", "create", "other")
	s.cli("--ns", "other", "counter", "add", "x", "1")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"gc", "likes"}, "folded 0 shards\n"},
		{[]string{"gc"}, "collected 2 counters: folded 0 shards, skipped 0 counters\n"},
		{[]string{"--ns", "other", "gc"}, "collected 1 counters: folded 0 shards, skipped 0 counters\n"},
		{[]string{"gc", "--json"}, "{\n  \"counters\": 2,\n  \"folded\": 0,\n  \"skipped\": 0\n}\n"},
	} {
		if r := s.cli(tc.args...); r.code != 0 || r.stdout != tc.want {
			t.Errorf("%v: %+v, want stdout %q", tc.args, r, tc.want)
		}
	}
	if r := s.cli("--ns", "nope", "gc"); r.code != exitNotFound {
		t.Errorf("gc of an unknown namespace: %+v", r)
	}
}

func TestEnvironmentAndFlagPrecedence(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	env := map[string]string{"ABACUS_SERVER": s.url, "ABACUS_NS": "other", "ABACUS_REQUEST_ID": "must-be-ignored"}
	if r := cli(env, "namespace", "create", "other"); r.code != 0 {
		t.Fatal(r)
	}
	// ABACUS_NS applies; a stray ABACUS_REQUEST_ID must not turn the second
	// add into a retry of the first.
	for i := 0; i < 2; i++ {
		if r := cli(env, "counter", "add", "c", "1"); r.code != 0 {
			t.Fatal(r)
		}
	}
	if r := cli(env, "counter", "get", "c"); r.stdout != "2\n" {
		t.Fatalf("get with ABACUS_NS: %+v", r)
	}
	// Nor may a stray ABACUS_DEDUP_ID make the second put a duplicate of
	// the first.
	qenv := map[string]string{"ABACUS_SERVER": s.url, "ABACUS_DEDUP_ID": "must-be-ignored"}
	if r := cli(qenv, "queue", "create", "env-q"); r.code != 0 {
		t.Fatal(r)
	}
	first, second := cli(qenv, "queue", "put", "env-q", "one"), cli(qenv, "queue", "put", "env-q", "two")
	if first.code != 0 || second.code != 0 || first.stdout == second.stdout || strings.Contains(second.stdout, "already put") {
		t.Fatalf("two puts with ABACUS_DEDUP_ID set: %+v then %+v", first, second)
	}
	// Flags win over the environment.
	if r := cli(env, "--ns", "default", "counter", "get", "c"); r.stdout != "0\n" {
		t.Fatalf("--ns over ABACUS_NS: %+v", r)
	}
	bad := map[string]string{"ABACUS_SERVER": "http://127.0.0.1:1"}
	if r := cli(bad, "--server", s.url, "counter", "get", "c"); r.code != 0 {
		t.Fatalf("--server over ABACUS_SERVER: %+v", r)
	}
	if r := cli(map[string]string{"ABACUS_SERVER": s.url, "ABACUS_TIMEOUT": "soon"}, "counter", "get", "c"); r.code != 2 || !strings.Contains(r.stderr, "ABACUS_TIMEOUT") {
		t.Fatalf("bad ABACUS_TIMEOUT: %+v", r)
	}
}

// A config file sets flags below the environment and the command line; a
// name no command takes, or a value its flag refuses, is a usage error.
func TestConfigFile(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	conf := write("config.yaml", "server: "+s.url+"\nns: fromfile\ntimeout: 5s\n# serve's flags may sit beside the client's\ndata: /nowhere\n")
	if r := cli(nil, "--config", conf, "namespace", "create", "fromfile"); r.code != 0 {
		t.Fatalf("create through the file's server: %+v", r)
	}
	if r := cli(nil, "--config", conf, "counter", "add", "c", "2"); r.code != 0 {
		t.Fatal(r)
	}
	if r := cli(nil, "--config", conf, "--ns", "fromfile", "counter", "get", "c"); r.stdout != "2\n" {
		t.Fatalf("the file's ns: %+v", r)
	}
	// The environment wins over the file, the command line over both.
	if r := cli(map[string]string{"ABACUS_NS": "default"}, "--config", conf, "counter", "get", "c"); r.stdout != "0\n" {
		t.Fatalf("ABACUS_NS over the file: %+v", r)
	}
	if r := cli(map[string]string{"ABACUS_NS": "default"}, "--config", conf, "--ns", "fromfile", "counter", "get", "c"); r.stdout != "2\n" {
		t.Fatalf("--ns over ABACUS_NS and the file: %+v", r)
	}
	// Found by $ABACUS_CONFIG, and at the default place.
	if r := cli(map[string]string{"ABACUS_CONFIG": conf}, "counter", "get", "c"); r.stdout != "2\n" {
		t.Fatalf("$ABACUS_CONFIG: %+v", r)
	}
	if err := os.MkdirAll(filepath.Join(dir, "xdg", "abacus"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(conf, filepath.Join(dir, "xdg", "abacus", "config.yaml")); err != nil {
		t.Fatal(err)
	}
	if r := cli(map[string]string{"XDG_CONFIG_HOME": filepath.Join(dir, "xdg")}, "counter", "get", "c"); r.stdout != "2\n" {
		t.Fatalf("the default config file: %+v", r)
	}
	for _, tc := range []struct{ text, want string }{
		{"servr: x\n", `"servr" is not a flag`},
		{"request-id: fixed\n", `"request-id" is not a flag`},
		{"timeout: soon\n", `invalid value "soon" for "timeout"`},
		{"server: [a, b]\n", "must be a single value"},
		{"- server\n", "not a YAML mapping"},
	} {
		p := write("bad.yaml", tc.text)
		if r := cli(nil, "--config", p, "counter", "get", "c"); r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("config %q: %+v, want a usage error saying %s", tc.text, r, tc.want)
		}
	}
	if r := cli(nil, "--config", filepath.Join(dir, "missing.yaml"), "version"); r.code != exitUsage {
		t.Errorf("a named config file that does not exist: %+v", r)
	}
}

// The example config file in docs/operations.md is one the CLI takes.
func TestConfigFileExampleInDocs(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```yaml\n")
	example, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		t.Fatal("docs/operations.md has no yaml example")
	}
	var lines []string
	for _, l := range strings.Split(example, "\n") {
		lines = append(lines, strings.TrimPrefix(l, "   ")) // the list item's indent
	}
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := cli(nil, "--config", p, "version"); r.code != 0 {
		t.Fatalf("the documented config file is refused: %+v\n%s", r, example)
	}
}

func TestHelpForEveryCommand(t *testing.T) {
	t.Parallel()
	a := &app{getenv: func(string) string { return "" }, stdout: io.Discard, stderr: io.Discard}
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			if sub.Name() == "help" {
				continue
			}
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk(a.rootCmd(), nil)
	if len(paths) < 10 {
		t.Fatalf("only %d commands: %v", len(paths), paths)
	}
	for _, path := range paths {
		for _, help := range []string{"--help", "-h"} {
			r := cli(nil, append(append([]string(nil), path...), help)...)
			name := strings.Join(append([]string{"abacus"}, path...), " ")
			if r.code != 0 || r.stderr != "" {
				t.Errorf("%s %s: %+v", name, help, r)
			}
			if !strings.Contains(r.stdout, "Usage:") || !strings.Contains(r.stdout, "Examples:") {
				t.Errorf("%s %s lacks usage or examples:\n%s", name, help, r.stdout)
			}
		}
	}
	if r := cli(nil, "help", "counter", "add"); r.code != 0 || !strings.Contains(r.stdout, "DELTA") {
		t.Errorf("abacus help counter add: %+v", r)
	}
	if r := cli(nil); r.code != 0 || !strings.Contains(r.stdout, "Available Commands:") {
		t.Errorf("bare abacus: %+v", r)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	r := cli(nil, "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "abacus ") {
		t.Fatalf("%+v", r)
	}
	r = cli(nil, "version", "--json")
	var v versionInfo
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &v) != nil || v.Version == "" || !strings.HasPrefix(v.Go, "go") {
		t.Fatalf("%+v", r)
	}
}

func TestProtectNegativeNumbers(t *testing.T) {
	t.Parallel()
	a := &app{getenv: func(string) string { return "" }, stdout: io.Discard, stderr: io.Discard}
	root := a.rootCmd()
	for _, tc := range []struct{ in, want string }{
		{"counter add likes 5", "counter add likes 5"},
		{"counter add likes -5", "counter add likes -- -5"},
		{"counter add --json likes -5", "counter add --json likes -- -5"},
		{"counter add likes -5 --json", "counter add likes --json -- -5"},
		{"counter add --request-id -7 likes 5", "counter add --request-id -7 likes 5"},
		{"counter add --request-id=-7 likes -5", "counter add --request-id=-7 likes -- -5"},
		{"counter add likes -- -5", "counter add likes -- -5"},
		{"--ns x counter add -5 likes", "--ns x counter add -- -5 likes"},
		{"counter add likes -x", "counter add likes -x"},
	} {
		got := strings.Join(protectNegativeNumbers(root, strings.Fields(tc.in)), " ")
		if got != tc.want {
			t.Errorf("%q -> %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCounterList(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	for _, name := range []string{"b", "a"} {
		if r := s.cli("counter", "add", name, "1"); r.code != 0 {
			t.Fatal(r)
		}
	}
	if r := s.cli("counter", "list"); r.code != 0 || r.stdout != "a\nb\n" {
		t.Fatalf("counter list: %+v", r)
	}
	if r := s.cli("counter", "list", "-o", "json"); r.code != 0 || strings.Join(strings.Fields(r.stdout), "") != `["a","b"]` {
		t.Fatalf("counter list -o json: %+v", r)
	}
	if r := s.cli("--ns", "nope", "counter", "list"); r.code != exitNotFound {
		t.Fatalf("a missing namespace: %+v", r)
	}
}
