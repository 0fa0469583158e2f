package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver/cassandra"
	"github.com/abacusdb/abacus/internal/servertest"
)

// listenAddr finds the address in a JSON "listening" log line.
func listenAddr(logs string) string {
	for _, line := range strings.Split(logs, "\n") {
		var rec struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" {
			return rec.Addr
		}
	}
	return ""
}

func waitHealthy(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never became healthy", base)
}

// inProcessServer is `abacus serve` run through run() in the test's own
// process.
type inProcessServer struct {
	base   string             // its URL
	logs   *servertest.Buffer // its log, in JSON
	cancel context.CancelFunc
	exit   chan int // run's exit code
}

// serveInProcess runs `abacus serve args... --log-format json` through
// run(), env being its whole environment, and waits until it answers
// /healthz. It must listen on 127.0.0.1:0 (by --addr or ABACUS_ADDR): its
// address is read from its "listening" log line.
func serveInProcess(t *testing.T, env map[string]string, args ...string) *inProcessServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := &inProcessServer{logs: &servertest.Buffer{}, cancel: cancel, exit: make(chan int, 1)}
	args = append(append([]string{"serve"}, args...), "--log-format", "json")
	go func() { s.exit <- run(ctx, args, func(k string) string { return env[k] }, io.Discard, s.logs) }()
	var addr string
	for deadline := time.Now().Add(2 * time.Minute); addr == "" && time.Now().Before(deadline); {
		select {
		case code := <-s.exit:
			t.Fatalf("serve exited with %d:\n%s", code, s.logs.String())
		case <-time.After(20 * time.Millisecond):
		}
		addr = listenAddr(s.logs.String())
	}
	if addr == "" {
		t.Fatalf("no listening line in:\n%s", s.logs.String())
	}
	s.base = "http://" + addr
	if strings.Contains(s.logs.String(), `"scheme":"https"`) {
		s.base = "https://" + addr // its caller checks it with its own certificates
		return s
	}
	waitHealthy(t, s.base)
	return s
}

// stop cancels serve's context, the way SIGTERM does, and fails the test
// unless serve exits with status 0 within a minute.
func (s *inProcessServer) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	select {
	case code := <-s.exit:
		if code != 0 {
			t.Fatalf("serve exited with %d after shutdown:\n%s", code, s.logs.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("serve did not stop")
	}
}

// TestServeInProcess runs serve through run() and stops it by cancelling its
// context, the way SIGTERM does.
func TestServeInProcess(t *testing.T) {
	t.Parallel()
	s := serveInProcess(t, map[string]string{"ABACUS_ADDR": "127.0.0.1:0"},
		"--data", filepath.Join(t.TempDir(), "d"), "--gc-interval", "0")
	env := map[string]string{"ABACUS_SERVER": s.base}
	if r := cli(env, "counter", "add", "likes", "7"); r.code != 0 {
		t.Fatal(r)
	}
	if r := cli(env, "counter", "get", "likes"); r.stdout != "7\n" {
		t.Fatal(r)
	}
	s.stop(t)
	if !strings.Contains(s.logs.String(), `"msg":"stopped"`) {
		t.Errorf("no clean stop in the logs:\n%s", s.logs.String())
	}
}

// TestServeSurvivesKill9 builds the real binary, counts through it, kills it
// with SIGKILL and checks that a restart on the same directory still has
// every acknowledged update.
func TestServeSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the abacus binary and runs it as a subprocess, which takes seconds; skipped with -short")
	}
	t.Parallel()
	data := filepath.Join(t.TempDir(), "d")
	start := func() *servertest.Process {
		t.Helper()
		return servertest.Start(t, "abacus serve", "/healthz", "--data", data, "--log-format", "json")
	}

	srv := start()
	env := map[string]string{"ABACUS_SERVER": srv.Base}
	for i := 0; i < 2; i++ {
		if r := cli(env, "counter", "add", "likes", "5"); r.code != 0 {
			t.Fatalf("add: %+v", r)
		}
	}
	if err := srv.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := srv.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("server did not die of SIGKILL: %v", err)
	}

	srv = start()
	r := cli(map[string]string{"ABACUS_SERVER": srv.Base}, "counter", "get", "likes")
	if r.code != 0 || r.stdout != "10\n" {
		t.Fatalf("after kill -9 and restart: %+v, want \"10\\n\"", r)
	}

	// SIGTERM is a graceful shutdown with exit status 0.
	if err := srv.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.Exited():
		if err := srv.Wait(); err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, srv.Log.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit within 30s of SIGTERM")
	}
	sc := bufio.NewScanner(strings.NewReader(srv.Log.String()))
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"level":"ERROR"`) {
			t.Errorf("error logged: %s", sc.Text())
		}
	}
}

func TestDeleteDelayCoversTheClocks(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		f    serveFlags
		want time.Duration // 0: refused
	}{
		{serveFlags{}, 30 * time.Second},
		{serveFlags{cassandra: "h", maxClockSkew: time.Minute}, 3 * time.Minute},
		{serveFlags{cassandra: "h", maxClockSkew: 2 * time.Minute}, 4*time.Minute + 40*time.Second},
		{serveFlags{cassandra: "h", maxClockSkew: time.Minute, deleteDelay: 2*time.Minute + 26*time.Second}, 2*time.Minute + 26*time.Second},
		{serveFlags{cassandra: "h", maxClockSkew: time.Minute, deleteDelay: 2*time.Minute + 25*time.Second}, 0},
		{serveFlags{deleteDelay: 25 * time.Second}, 0},
		{serveFlags{deleteDelay: -time.Second}, 0},
		{serveFlags{cassandra: "h", maxClockSkew: -1, deleteDelay: 26 * time.Second}, 26 * time.Second},
	} {
		got, err := deleteDelay(c.f)
		if c.want == 0 && err == nil || c.want != 0 && (err != nil || got != c.want) {
			t.Errorf("deleteDelay(cassandra %q, max skew %v, --delete-delay %v) = %v, %v; want %v", c.f.cassandra, c.f.maxClockSkew, c.f.deleteDelay, got, err, c.want)
		}
	}
}

// --replication and --replication-factor say where the keyspace's replicas
// go when it is created; what they produce is what the driver gets.
func TestReplicationFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rf    int
		given bool
		perDC string
		want  cassandra.Replication
	}{
		{0, false, "", cassandra.Replication{Strategy: cassandra.SimpleStrategy, ReplicationFactor: 1}},
		{3, true, "", cassandra.Replication{Strategy: cassandra.SimpleStrategy, ReplicationFactor: 3}},
		{0, false, "dc1:3, dc2:2", cassandra.Replication{Strategy: cassandra.NetworkTopologyStrategy, DataCenters: map[string]int{"dc1": 3, "dc2": 2}}},
		{0, false, "dc1:3,analytics:0", cassandra.Replication{Strategy: cassandra.NetworkTopologyStrategy, DataCenters: map[string]int{"dc1": 3, "analytics": 0}}},
	} {
		got, err := replicationOf(tc.rf, tc.given, tc.perDC)
		if err != nil {
			t.Errorf("replicationOf(%d, %q): %v", tc.rf, tc.perDC, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("replicationOf(%d, %q) = %+v, want %+v", tc.rf, tc.perDC, got, tc.want)
		}
	}
}
