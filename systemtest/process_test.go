package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// abacusBinary builds cmd/abacus once per test binary run.
func abacusBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "abacus-systemtest")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "abacus")
		out, err := exec.Command("go", "build", "-o", binPath, "../cmd/abacus").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/abacus: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// server is one running `abacus serve` process.
type server struct {
	name string
	cmd  *exec.Cmd
	base string
	log  *lockedBuffer
	done chan struct{}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startServer runs `abacus serve --addr <free port> args...` and waits until
// it is ready. The process is killed when the test ends; its log is printed
// if the test failed.
func startServer(t *testing.T, name string, args ...string) *server {
	t.Helper()
	return startServerWaiting(t, name, "/readyz", args...)
}

// startServerWaiting is startServer waiting for a 200 from path instead of
// /readyz: "/healthz" for a server that is expected never to be ready (one
// whose clock is skewed beyond the limit answers 503 on /readyz for good).
func startServerWaiting(t *testing.T, name, path string, args ...string) *server {
	t.Helper()
	addr := freeAddr(t)
	s := &server{name: name, base: "http://" + addr, log: &lockedBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(abacusBinary(t), append([]string{"serve", "--addr", addr}, args...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			t.Logf("log of %s:\n%s", name, tail(s.log.String(), 40))
		}
	})
	// A server on a fresh keyspace creates some twenty tables, each awaited
	// on every node: on a 3-node 5.0 cluster just after the node-loss tests
	// restarted nodes that took more than 90 s. serve itself allows three
	// minutes (openTimeout in cmd/abacus).
	deadline := time.Now().Add(startTimeout)
	for {
		resp, err := http.Get(s.base + path)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case <-s.done:
			t.Fatalf("%s exited before it was ready:\n%s", name, tail(s.log.String(), 40))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after %v (last error %v):\n%s", name, startTimeout, err, tail(s.log.String(), 40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startTimeout is how long a server may take to become ready.
const startTimeout = 3 * time.Minute

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// kill sends SIGKILL: no shutdown hook, no flush.
func (s *server) kill() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.done
	}
}

// outcome classifies one update as the load generator saw it.
type outcome int

const (
	acked   outcome = iota // 200: the server says it is counted
	failed                 // definitely not counted: the request never reached a server, or a 4xx
	unknown                // the request may have been applied: a 503 unknown_outcome or a broken connection
)

var httpClient = &http.Client{Timeout: 30 * time.Second}

// add sends one update and classifies the result.
func (s *server) add(ns, counter string, delta int64, requestID string) (outcome, error) {
	body, _ := json.Marshal(map[string]any{"delta": delta, "request_id": requestID})
	u := fmt.Sprintf("%s/v1/namespaces/%s/counters/%s/updates", s.base, url.PathEscape(ns), url.PathEscape(counter))
	resp, err := httpClient.Post(u, "application/json", bytes.NewReader(body))
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return failed, err
		}
		return unknown, err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	switch {
	case resp.StatusCode == http.StatusOK:
		return acked, nil
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return failed, fmt.Errorf("HTTP %d: %s", resp.StatusCode, msg)
	case strings.Contains(string(msg), `"not_applied"`):
		return failed, fmt.Errorf("HTTP %d: %s", resp.StatusCode, msg)
	default:
		return unknown, fmt.Errorf("HTTP %d: %s", resp.StatusCode, msg)
	}
}

// get reads a counter's value.
func (s *server) get(ctx context.Context, ns, counter string) (int64, error) {
	u := fmt.Sprintf("%s/v1/namespaces/%s/counters/%s", s.base, url.PathEscape(ns), url.PathEscape(counter))
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var v struct {
		Value int64 `json:"value"`
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return 0, fmt.Errorf("HTTP %d: %s", resp.StatusCode, msg)
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return 0, err
	}
	return v.Value, nil
}
