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
	"strings"
	"syscall"
	"testing"
	"time"

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

// TestServeInProcess runs serve through run() and stops it by cancelling its
// context, the way SIGTERM does.
func TestServeInProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var logs servertest.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"serve", "--data", filepath.Join(dir, "d"), "--log-format", "json", "--gc-interval", "0"},
			func(k string) string { return map[string]string{"ABACUS_ADDR": "127.0.0.1:0"}[k] }, io.Discard, &logs)
	}()
	var addr string
	for deadline := time.Now().Add(30 * time.Second); addr == "" && time.Now().Before(deadline); {
		select {
		case code := <-exit:
			t.Fatalf("serve exited with %d:\n%s", code, logs.String())
		default:
		}
		time.Sleep(10 * time.Millisecond)
		addr = listenAddr(logs.String())
	}
	if addr == "" {
		t.Fatalf("no listening line in:\n%s", logs.String())
	}
	base := "http://" + addr
	waitHealthy(t, base)
	env := map[string]string{"ABACUS_SERVER": base}
	if r := cli(env, "counter", "add", "likes", "7"); r.code != 0 {
		t.Fatal(r)
	}
	if r := cli(env, "counter", "get", "likes"); r.stdout != "7\n" {
		t.Fatal(r)
	}
	cancel()
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("serve exited with %d after shutdown:\n%s", code, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	if !strings.Contains(logs.String(), `"msg":"stopped"`) {
		t.Errorf("no clean stop in the logs:\n%s", logs.String())
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
