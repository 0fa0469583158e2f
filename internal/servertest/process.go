package servertest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// StartTimeout is how long Start waits for a server to become ready. A
// server on a fresh keyspace creates some twenty tables, each awaited on
// every node: on a 3-node 5.0 cluster just after the node-loss tests
// restarted nodes that took more than 90 s. serve itself allows three
// minutes (openTimeout in cmd/abacus).
const StartTimeout = 3 * time.Minute

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	underMain bool // set by Main before the package's tests run
)

// Binary returns the path of the abacus command of this module, built on
// first use, once per test binary, into a temporary directory of its own.
// That directory outlives every test of the package, so t.TempDir cannot
// hold it: the package's TestMain removes it with Main, and Binary fails
// a test whose package does not run through Main rather than leave it.
func Binary(t testing.TB) string {
	t.Helper()
	if !underMain {
		t.Fatal("servertest.Binary: run this package's tests through servertest.Main, so the binary it builds is removed: func TestMain(m *testing.M) { os.Exit(servertest.Main(m)) }")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "abacus-servertest")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "abacus")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/abacusdb/abacus/cmd/abacus").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/abacus: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// Main runs a package's tests and then removes the binary Binary built (a
// 44 MB file each test run would otherwise leave in the temporary
// directory). A package that calls Binary runs its tests through it:
//
//	func TestMain(m *testing.M) { os.Exit(servertest.Main(m)) }
func Main(m *testing.M) int {
	underMain = true
	code := m.Run()
	if binPath != "" {
		if err := os.RemoveAll(filepath.Dir(binPath)); err != nil {
			fmt.Fprintf(os.Stderr, "servertest: removing the built abacus: %v\n", err)
		}
	}
	return code
}

// Process is one running `abacus serve` process.
type Process struct {
	Name string  // what messages call it
	Base string  // its URL, "http://127.0.0.1:port"
	Log  *Buffer // its stdout and stderr

	cmd  *exec.Cmd
	done chan struct{} // closed when it has exited
	err  error         // how it exited, once done is closed
}

// withoutAbacusVariables drops ABACUS_* from env: a developer's
// ABACUS_CASSANDRA or ABACUS_LOG_FORMAT must not change a test's server,
// which takes its settings from the test's flags alone.
func withoutAbacusVariables(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "ABACUS_") {
			out = append(out, kv)
		}
	}
	return out
}

// Start runs `abacus serve --addr <free port> args...` (with no config file) and waits until GET
// readyPath answers 200: "/readyz", or "/healthz" for a server that is
// expected never to be ready (one whose clock is skewed beyond the limit
// answers 503 on /readyz for good). The process is killed when the test
// ends; its log is printed if the test failed.
func Start(t testing.TB, name, readyPath string, args ...string) *Process {
	t.Helper()
	return StartUnder(t, name, readyPath, nil, args...)
}

// StartUnder is Start with the server run by a wrapper command: wrapper
// followed by the server's command line, such as
// {"scripts/netsplit", "run", "s1", "--"}, which runs the server as a
// member of a network partition test. The wrapper must exec the server,
// so that signals reach it. A nil wrapper is Start.
func StartUnder(t testing.TB, name, readyPath string, wrapper []string, args ...string) *Process {
	t.Helper()
	addr := freeAddr(t)
	p := &Process{Name: name, Base: "http://" + addr, Log: &Buffer{}, done: make(chan struct{})}
	// No config file: a developer's ~/.config/abacus/config.yaml (say, with
	// a cassandra: line) must not redirect a test's server.
	argv := append([]string{Binary(t), "serve", "--config", os.DevNull, "--addr", addr}, args...)
	if len(wrapper) > 0 {
		argv = append(append([]string(nil), wrapper...), argv...)
	}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	dieWithTest(p.cmd)
	p.cmd.Env = withoutAbacusVariables(os.Environ())
	p.cmd.Stdout, p.cmd.Stderr = p.Log, p.Log
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("log of %s:\n%s", name, tail(p.Log.String(), 40))
		}
	})
	deadline := time.Now().Add(StartTimeout)
	for {
		resp, err := http.Get(p.Base + readyPath)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited before it was ready:\n%s", name, tail(p.Log.String(), 40))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after %v (last error %v):\n%s", name, StartTimeout, err, tail(p.Log.String(), 40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Kill sends SIGKILL (no shutdown hook, no flush) and waits for the
// process to exit.
func (p *Process) Kill() {
	_ = p.Signal(syscall.SIGKILL)
	<-p.done
}

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.done }

// Wait waits for the process to exit and returns what exec.Cmd.Wait did:
// nil for exit status 0.
func (p *Process) Wait() error {
	<-p.done
	return p.err
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
