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
	"strings"
	"testing"
	"time"

	"github.com/abacusdb/abacus/internal/servertest"
)

// server is one running `abacus serve` process, with the requests the
// tests send it.
type server struct {
	*servertest.Process
}

// startServer runs `abacus serve --addr <free port> args...` and waits until
// it is ready (servertest.Start).
func startServer(t *testing.T, name string, args ...string) *server {
	t.Helper()
	return startServerWaiting(t, name, "/readyz", args...)
}

// startServerWaiting is startServer waiting for a 200 from path instead of
// /readyz: "/healthz" for a server that is expected never to be ready.
func startServerWaiting(t *testing.T, name, path string, args ...string) *server {
	t.Helper()
	return &server{servertest.Start(t, name, path, args...)}
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
	u := fmt.Sprintf("%s/v1/namespaces/%s/counters/%s/updates", s.Base, url.PathEscape(ns), url.PathEscape(counter))
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
	u := fmt.Sprintf("%s/v1/namespaces/%s/counters/%s", s.Base, url.PathEscape(ns), url.PathEscape(counter))
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
