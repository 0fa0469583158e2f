package server

import (
	"net"
	"net/http"
	"net/url"
	"testing"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
)

// What a web page can send to a server on loopback is refused, and
// changes nothing; what programs send is served. Each case is sent to the
// same counter; only the accepted ones may count.
func TestBrowsersCannotWriteToALoopbackServer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(_ *abacus.Config, c *Config) {
		c.Addr, c.AllowedHosts = "127.0.0.1:7070", []string{"Abacus.Internal:8443"} // a port in the list is ignored
	})
	port := mustPort(t, e.ts.URL)
	const upd = "/v1/namespaces/default/counters/c/updates"
	body := `{"delta":1}`
	want := int64(0)
	for _, tc := range []struct {
		name    string
		method  string
		body    string
		headers []string
		status  int
	}{
		{"a program (no Origin, no Sec-Fetch-Site)", "POST", body, nil, 200},
		{"the same origin", "POST", body, []string{"Origin", "http://127.0.0.1:" + port, "Sec-Fetch-Site", "same-origin"}, 200},
		{"localhost as Host", "POST", body, []string{"Host", "localhost:" + port}, 200},
		{"an allowed name as Host (any case)", "POST", body, []string{"Host", "abacus.internal:" + port}, 200},
		{"a cross-site page (Sec-Fetch-Site)", "POST", body, []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}, 403},
		{"another origin (Origin only, an older browser)", "POST", body, []string{"Origin", "https://evil.example"}, 403},
		{"a form post without a Content-Type from another origin", "POST", body, []string{"Content-Type", "", "Origin", "https://evil.example", "Host", "evil.example:" + port}, 403},
		{"DNS rebinding (the page's own name as Host and Origin)", "POST", body, []string{"Host", "evil.example:" + port, "Origin", "http://evil.example:" + port}, 403},
		{"DNS rebinding, a read", "GET", "", []string{"Host", "evil.example:" + port}, 403},
		{"a body without a Content-Type", "POST", body, []string{"Content-Type", ""}, 415},
		{"a body as text/plain", "POST", body, []string{"Content-Type", "text/plain"}, 415},
	} {
		path := upd
		if tc.method == "GET" {
			path = "/v1/namespaces/default/counters/c"
		}
		r := e.do(tc.method, path, tc.body, tc.headers...)
		if r.status != tc.status {
			t.Errorf("%s: status %d, want %d; body %s", tc.name, r.status, tc.status, r.body)
			continue
		}
		switch {
		case tc.status == 403 && r.apiError().Code != api.CodeForbidden:
			t.Errorf("%s: %s, want code %s", tc.name, r.body, api.CodeForbidden)
		case tc.status == 415 && r.apiError().Code != api.CodeUnsupportedMediaType:
			t.Errorf("%s: %s, want code %s", tc.name, r.body, api.CodeUnsupportedMediaType)
		case tc.status == 200 && tc.method == "POST":
			want++
		}
		if v := e.value("default", "c"); v.Value != want {
			t.Fatalf("after %s: counter %d, want %d", tc.name, v.Value, want)
		}
	}
}

// A server told to listen beyond loopback answers to any Host (an operator
// chose that; its guard is API keys and the network), but still refuses
// cross-origin writes, even with a key.
func TestAServerBeyondLoopbackAnswersAnyHost(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(_ *abacus.Config, c *Config) { c.Addr = "0.0.0.0:7070" })
	auth := "Bearer " + e.key("*:admin")
	if r := e.do("POST", "/v1/namespaces/default/counters/c/updates", `{"delta":1}`, "Host", "abacus.example.com", "Authorization", auth); r.status != 200 {
		t.Fatalf("a Host name on a server listening on every interface: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/v1/namespaces/default/counters/c/updates", `{"delta":1}`, "Origin", "https://evil.example", "Authorization", auth); r.status != 403 {
		t.Fatalf("a cross-origin write on a server listening on every interface: %d %s", r.status, r.body)
	}
}

// Whether Host is checked follows what the server listens on: Serve's
// listener on loopback checks it whatever Config.Addr says, and a Handler
// mounted elsewhere without a loopback Addr cannot know and checks none.
func TestHostCheckFollowsTheListener(t *testing.T) {
	t.Parallel()
	embedded := newEnv(t) // Handler() mounted by the test's own server, no Addr
	if r := embedded.do("GET", "/healthz", "", "Host", "abacus.example.com"); r.status != 200 {
		t.Fatalf("an embedded handler without Addr refused a Host: %d %s", r.status, r.body)
	}
	_, _, scfg := openClient(t, vfs.NewMem(), prometheus.NewRegistry())
	srv, err := New(scfg)
	if err != nil {
		t.Fatal(err)
	}
	base, stop := serveOnLoopback(t, srv)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	req, err := http.NewRequest("GET", base+"/healthz", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "evil.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Fatalf("Serve on a loopback listener answered Host evil.example with %d, want 403", resp.StatusCode)
	}
}

func TestLoopbackNames(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1:7070": true, "127.9.9.9:1": true, "[::1]:7070": true, "localhost:7070": true, "LOCALHOST:1": true,
		"0.0.0.0:7070": false, ":7070": false, "[::]:7070": false, "10.0.0.1:7070": false, "example.com:7070": false, "127.0.0.1": false,
	} {
		if got := listensOnLoopback(addr); got != want {
			t.Errorf("listensOnLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
	for host, want := range map[string]string{
		"localhost:7070": "localhost", "[::1]:7070": "::1", "Example.COM": "example.com", "[::1]": "::1", "127.0.0.1": "127.0.0.1",
	} {
		if got := hostName(host); got != want {
			t.Errorf("hostName(%q) = %q, want %q", host, got, want)
		}
	}
}

func mustPort(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	_, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	return port
}
