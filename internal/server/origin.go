package server

import (
	"net"
	"net/http"
	"strings"

	"github.com/abacusdb/abacus/api"
)

// The API has no authentication of its own yet, so a server on loopback
// trusts whatever reaches it there. Two kinds of request reach it that the
// machine's user never sent: a web page's cross-origin write (any page the
// user opens may POST to 127.0.0.1:7070) and DNS rebinding (a page whose
// name resolves to 127.0.0.1 after it loaded, so the browser thinks the
// server is the page's own origin). guardBrowsers refuses both:
//
//   - a state-changing request a browser marks as cross-site
//     (Sec-Fetch-Site) or whose Origin is not the Host it was sent to, by
//     net/http's CrossOriginProtection; safe methods (GET, HEAD) pass, as
//     a browser does not let the other page read the answer;
//   - when listening on loopback, any Host header other than a loopback
//     name or address (or one of Config.AllowedHosts): a rebinding page
//     sends its own name as Host. "Listening on loopback" is what Serve's
//     listener is bound to, or, for Handler() mounted elsewhere, a
//     loopback Config.Addr given explicitly; a handler whose listener it
//     cannot know checks no Host.
//
// Programs (the Go client, the CLI, curl) send neither Origin nor
// Sec-Fetch-Site and name the address they dial, so they are unaffected.
func (s *Server) guardBrowsers(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, errorf(api.CodeForbidden, "cross-origin request refused: a web page of another origin (%q) may not change anything here", r.Header.Get("Origin")))
	}))
	allowed := make(map[string]bool, len(s.cfg.AllowedHosts))
	for _, h := range s.cfg.AllowedHosts {
		allowed[hostName(h)] = true
	}
	return cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.loopbackOnly.Load() {
			if host := hostName(r.Host); !loopbackName(host) && !allowed[host] {
				writeError(w, r, errorf(api.CodeForbidden, "Host %q is not a name this server answers to: it listens on loopback and answers to loopback names and addresses only (add names with --allow-host)", r.Host))
				return
			}
		}
		next.ServeHTTP(w, r)
	}))
}

// hostName is the lower-case host of a Host header, without port or
// brackets.
func hostName(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
}

// loopbackName reports whether host can only mean this machine: localhost
// (and names under .localhost, which resolvers must keep on loopback, RFC
// 6761) or a loopback address.
func loopbackName(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// listensOnLoopback reports whether addr (host:port) binds loopback only.
// An empty host (all interfaces) or a name other than localhost is not.
func listensOnLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	return loopbackName(strings.ToLower(host))
}
