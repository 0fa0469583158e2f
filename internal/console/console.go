package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/internal/apikey"
)

// Gate is the server's authentication, as the console needs it.
type Gate interface {
	// Required reports whether every request must carry an API key.
	Required() bool
	// Authenticate returns the key a token names and takes one request
	// from its rate. On refusal it returns the HTTP status to answer
	// (401 for a token that is not a valid key, 429 past the key's rate,
	// 503 when the store cannot tell) and why.
	Authenticate(ctx context.Context, token string) (*apikey.Key, int, error)
	// RefuseChange returns why the server takes no change now (its clock
	// is too far off the store's), or nil.
	RefuseChange() error
}

// Config configures a Console.
type Config struct {
	// Client is the library the pages read and act through. Required.
	Client *abacus.Client
	// Gate decides who may see and do what. Required.
	Gate Gate
	// Logger receives failures the pages show as "unavailable".
	// Default: slog.Default().
	Logger *slog.Logger
	// QueuesPerPage caps the queues the overview observes at once
	// (observing a queue reads every shard): default 20.
	QueuesPerPage int
	// CountersPerPage caps the counters a namespace page reads: default 50.
	CountersPerPage int
}

// Console serves the pages under /ui.
type Console struct {
	cfg   Config
	mux   *http.ServeMux
	pages map[string]*template.Template
}

// KeyCookie is the cookie that carries the signed-in API key.
const KeyCookie = "abacus_console_key"

//go:embed templates
var files embed.FS

// New returns the console. It panics on nothing: a template that does not
// parse is an error.
func New(cfg Config) (*Console, error) {
	if cfg.Client == nil || cfg.Gate == nil {
		return nil, errors.New("console: Config.Client and Config.Gate are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.QueuesPerPage <= 0 {
		cfg.QueuesPerPage = 20
	}
	if cfg.CountersPerPage <= 0 {
		cfg.CountersPerPage = 50
	}
	c := &Console{cfg: cfg, mux: http.NewServeMux(), pages: map[string]*template.Template{}}
	funcs := template.FuncMap{
		"path": url.PathEscape,
		"when": when,
		"ago":  ago,
		"clip": clip,
	}
	for _, page := range []string{"overview", "queue", "namespace", "ledger", "login", "error"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/"+page+".html")
		if err != nil {
			return nil, fmt.Errorf("console: page %s: %w", page, err)
		}
		c.pages[page] = t
	}
	c.routes()
	return c, nil
}

func (c *Console) routes() {
	css, err := fs.ReadFile(files, "templates/console.css")
	if err != nil {
		panic(err) // embedded at build time
	}
	c.mux.HandleFunc("GET /ui/console.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Header().Set("Cache-Control", "max-age=300")
		_, _ = w.Write(css)
	})
	c.mux.HandleFunc("GET /ui/login", c.loginPage)
	c.mux.HandleFunc("POST /ui/login", c.login)
	c.mux.HandleFunc("POST /ui/logout", c.logout)
	c.mux.HandleFunc("GET /ui", c.signedIn(c.overview))
	c.mux.HandleFunc("GET /ui/queues/{queue}", c.signedIn(c.queuePage))
	qs := c.cfg.Client.Queues()
	c.mux.HandleFunc("POST /ui/queues/{queue}/requeue", c.signedIn(c.change(c.deadLetters("requeued", qs.Requeue, true))))
	c.mux.HandleFunc("POST /ui/queues/{queue}/delete", c.signedIn(c.change(c.deadLetters("deleted", qs.DeleteDead, false))))
	c.mux.HandleFunc("POST /ui/queues/{queue}/pause", c.signedIn(c.change(c.setPause(true))))
	c.mux.HandleFunc("POST /ui/queues/{queue}/resume", c.signedIn(c.change(c.setPause(false))))
	c.mux.HandleFunc("POST /ui/queues/{queue}/delete-queue", c.signedIn(c.change(c.deleteQueue)))
	c.mux.HandleFunc("GET /ui/namespaces/{ns}", c.signedIn(c.namespacePage))
	c.mux.HandleFunc("GET /ui/namespaces/{ns}/ledgers/{ledger}", c.signedIn(c.ledgerPage))
	c.mux.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ui/" {
			http.Redirect(w, r, "/ui", http.StatusMovedPermanently)
			return
		}
		c.fail(w, r, nil, http.StatusNotFound, "There is no page here.")
	})
}

// ServeHTTP serves the console's pages, with headers that keep them out of
// frames, caches and other origins' reach.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	if r.URL.Path != "/ui/console.css" {
		h.Set("Cache-Control", "no-store")
	}
	c.mux.ServeHTTP(w, r)
}

// viewer is who is looking: the key (nil when the server asks for none).
type viewer struct {
	key      *apikey.Key
	required bool
}

func (v viewer) may(kind, name string, role apikey.Role) bool {
	return !v.required || (v.key != nil && v.key.Allows(kind, name, role))
}

// keyID names the signed-in key on every page ("" when none is needed).
func (v viewer) keyID() string {
	if v.key == nil {
		return ""
	}
	return v.key.ID
}

type handler func(w http.ResponseWriter, r *http.Request, v viewer)

// signedIn finds the viewer: with keys required, the cookie's key,
// checked on every request; without one, a page asks to sign in.
func (c *Console) signedIn(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !c.cfg.Gate.Required() {
			h(w, r, viewer{})
			return
		}
		ck, err := r.Cookie(KeyCookie)
		if err != nil || ck.Value == "" {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
				return
			}
			c.fail(w, r, nil, http.StatusUnauthorized, "Sign in first: this server requires an API key.")
			return
		}
		key, status, err := c.cfg.Gate.Authenticate(r.Context(), ck.Value)
		if err != nil {
			if status == http.StatusUnauthorized {
				clearKey(w, r)
				if r.Method == http.MethodGet {
					http.Redirect(w, r, "/ui/login?expired=1", http.StatusSeeOther)
					return
				}
			}
			if status == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "1")
			}
			c.fail(w, r, nil, status, err.Error())
			return
		}
		h(w, r, viewer{key: key, required: true})
	}
}

// change guards a form that changes something: the server must take
// changes now.
func (c *Console) change(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request, v viewer) {
		if err := c.cfg.Gate.RefuseChange(); err != nil {
			c.fail(w, r, &v, http.StatusServiceUnavailable, err.Error())
			return
		}
		h(w, r, v)
	}
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if !c.cfg.Gate.Required() {
		http.Redirect(w, r, "/ui", http.StatusSeeOther)
		return
	}
	msg := ""
	if r.URL.Query().Get("expired") != "" {
		msg = "That key is no longer valid. Sign in again."
	}
	c.render(w, http.StatusOK, "login", map[string]any{"Title": "Sign in", "Message": msg})
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if !c.cfg.Gate.Required() {
		http.Redirect(w, r, "/ui", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	token := strings.TrimSpace(r.PostFormValue("key"))
	if token == "" {
		c.render(w, http.StatusBadRequest, "login", map[string]any{"Title": "Sign in", "Message": "Enter an API key."})
		return
	}
	if _, status, err := c.cfg.Gate.Authenticate(r.Context(), token); err != nil {
		c.render(w, status, "login", map[string]any{"Title": "Sign in", "Message": err.Error()})
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: KeyCookie, Value: token, Path: "/ui",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	http.Redirect(w, r, "/ui", http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	clearKey(w, r)
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

func clearKey(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: KeyCookie, Value: "", Path: "/ui", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
}

// render writes a page. A template error after the first byte cannot
// change the status, so pages are rendered into memory first.
func (c *Console) render(w http.ResponseWriter, status int, page string, data map[string]any) {
	if _, ok := data["Auth"]; !ok {
		data["Auth"] = c.cfg.Gate.Required()
	}
	var b strings.Builder
	if err := c.pages[page].Execute(&b, data); err != nil {
		c.cfg.Logger.Error("console: render", "page", page, "err", err)
		http.Error(w, "the console could not render this page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// fail renders the error page.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, v *viewer, status int, msg string) {
	data := map[string]any{"Title": http.StatusText(status), "Status": status, "Message": msg, "Path": r.URL.Path}
	if v != nil {
		data["Key"] = v.keyID()
		data["Auth"] = v.required
	}
	c.render(w, status, "error", data)
}

// failWith renders the error page for a library error.
func (c *Console) failWith(w http.ResponseWriter, r *http.Request, v viewer, err error) {
	status := http.StatusServiceUnavailable
	switch {
	case errors.Is(err, abacus.ErrQueueNotFound), errors.Is(err, abacus.ErrNamespaceNotFound):
		status = http.StatusNotFound
	case errors.Is(err, abacus.ErrInvalid):
		status = http.StatusBadRequest
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		status = http.StatusGatewayTimeout
	default:
		c.cfg.Logger.Warn("console: request failed", "path", r.URL.Path, "err", err)
	}
	c.fail(w, r, &v, status, err.Error())
}

func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func ago(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// clip shortens s to at most n runes for a table cell.
func clip(n int, s string) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
