package main

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loopbackURL is the URL of a server listening on every interface
// (0.0.0.0:PORT or [::]:PORT), reached over loopback.
func loopbackURL(t *testing.T, base string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	return "http://127.0.0.1:" + port
}

// The "done when": a server told to listen on every interface
// asks for API keys, makes the first one at first start, and refuses
// unauthenticated and cross-site writes; the CLI makes, uses and revokes keys.
func TestServeBeyondLoopbackRequiresKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data, keyFile := filepath.Join(dir, "d"), filepath.Join(dir, "first-key")
	s := serveInProcess(t, nil, "--addr", "0.0.0.0:0", "--data", data, "--gc-interval", "0", "--first-key-file", keyFile)
	base := loopbackURL(t, s.base)
	b, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(keyFile); fi.Mode().Perm() != 0o600 {
		t.Errorf("--first-key-file has mode %v, want 0600", fi.Mode().Perm())
	}
	admin := strings.TrimSpace(string(b))
	if !strings.HasPrefix(admin, "abk_first-admin_") || strings.Contains(s.logs.String(), admin) {
		t.Fatalf("first key %q (in the logs: %v)", admin, strings.Contains(s.logs.String(), admin))
	}

	anon := map[string]string{"ABACUS_SERVER": base}
	if r := cli(anon, "counter", "add", "likes", "1"); r.code != exitAuth {
		t.Fatalf("a write without a key: %+v, want exit %d", r, exitAuth)
	}
	adminEnv := map[string]string{"ABACUS_SERVER": base, "ABACUS_API_KEY": admin}
	req, _ := http.NewRequest("POST", base+"/v1/namespaces/default/counters/likes/updates", strings.NewReader(`{"delta":1}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Origin", "https://evil.example")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 403 {
		t.Fatalf("a cross-site write with the admin key: %v %v, want 403", resp.StatusCode, err)
	}

	made := cli(adminEnv, "key", "create", "--scope", "ns:default:write", "--name", "web")
	if made.code != 0 || !strings.HasPrefix(made.stdout, "abk_") || strings.Count(made.stdout, "\n") != 1 {
		t.Fatalf("key create: %+v", made)
	}
	writer := strings.TrimSpace(made.stdout)
	id := strings.SplitN(strings.TrimPrefix(writer, "abk_"), "_", 2)[0]
	writerFile := filepath.Join(dir, "writer-key")
	if err := os.WriteFile(writerFile, []byte(writer+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	writerEnv := map[string]string{"ABACUS_SERVER": base, "ABACUS_API_KEY_FILE": writerFile}
	if r := cli(writerEnv, "counter", "add", "likes", "5"); r.code != 0 {
		t.Fatalf("a write with the writer's key: %+v", r)
	}
	if r := cli(writerEnv, "namespace", "create", "other"); r.code != exitAuth {
		t.Fatalf("a namespace create with a write key: %+v, want exit %d", r, exitAuth)
	}
	if r := cli(writerEnv, "key", "list"); r.code != exitAuth {
		t.Fatalf("key list with a write key: %+v", r)
	}
	if r := cli(map[string]string{"ABACUS_SERVER": base, "ABACUS_API_KEY": admin, "ABACUS_API_KEY_FILE": writerFile}, "counter", "get", "likes"); r.code != exitUsage {
		t.Fatalf("a key from both the environment and a file: %+v, want a usage error", r)
	}
	if r := cli(adminEnv, "key", "list"); r.code != 0 || !strings.Contains(r.stdout, id) || strings.Contains(r.stdout, writer) {
		t.Fatalf("key list: %+v", r)
	}
	if r := cli(adminEnv, "key", "revoke", id); r.code != 0 {
		t.Fatalf("key revoke: %+v", r)
	}
	if r := cli(writerEnv, "counter", "add", "likes", "5"); r.code != exitAuth {
		t.Fatalf("a write with a revoked key: %+v", r)
	}
	if r := cli(adminEnv, "counter", "get", "likes"); r.code != 0 || r.stdout != "5\n" {
		t.Fatalf("counter: %+v, want 5 (one write with a key, none without)", r)
	}
	// queue consume makes a client of its own (a longer time limit): it
	// must send the key too. (Nothing is due: an answer at all is the test.)
	if r := cli(adminEnv, "queue", "create", "jobs"); r.code != 0 {
		t.Fatalf("queue create: %+v", r)
	}
	if r := cli(adminEnv, "queue", "consume", "jobs", "--once"); r.code != 0 {
		t.Fatalf("queue consume with a key: %+v", r)
	}
	if r := cli(anon, "queue", "consume", "jobs", "--once"); r.code != exitAuth {
		t.Fatalf("queue consume without a key: %+v, want exit %d", r, exitAuth)
	}
	s.stop(t)

	// A restart with the same --first-key-file: the store has keys, so
	// nothing is made and the existing file is no obstacle.
	s = serveInProcess(t, nil, "--addr", "0.0.0.0:0", "--data", data, "--gc-interval", "0", "--first-key-file", keyFile)
	if b2, _ := os.ReadFile(keyFile); string(b2) != string(b) {
		t.Error("a restart rewrote --first-key-file")
	}
	s.stop(t)
}

// Without --first-key-file the first key goes to stderr, outside any log
// record, once.
func TestFirstKeyIsPrintedOnce(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "d")
	s := serveInProcess(t, nil, "--addr", "127.0.0.1:0", "--auth", "on", "--data", data, "--gc-interval", "0")
	out := s.logs.String()
	if strings.Count(out, "abk_first-admin_") != 1 {
		t.Fatalf("stderr holds the first key %d times:\n%s", strings.Count(out, "abk_first-admin_"), out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "{") && strings.Contains(line, "abk_") {
			t.Fatalf("a log record holds a key: %s", line)
		}
	}
	if r := cli(map[string]string{"ABACUS_SERVER": s.base}, "counter", "get", "likes"); r.code != exitAuth {
		t.Fatalf("--auth on, loopback, no key: %+v", r)
	}
	s.stop(t)
	s = serveInProcess(t, nil, "--addr", "127.0.0.1:0", "--auth", "on", "--data", data, "--gc-interval", "0")
	if strings.Contains(s.logs.String(), "abk_") {
		t.Fatal("a restart printed a key again")
	}
	s.stop(t)
}
