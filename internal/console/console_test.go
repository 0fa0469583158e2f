package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/driver/embedded"
	"github.com/abacusdb/abacus/internal/apikey"
	"github.com/abacusdb/abacus/internal/console"
	"github.com/abacusdb/abacus/internal/server"
	"github.com/abacusdb/abacus/internal/servertest"
)

// site is a whole server (API and console) on the embedded store in
// memory, reached over real HTTP on loopback.
type site struct {
	t    *testing.T
	url  string
	keys *apikey.Keys
	// admin is a *:admin key for the API calls that set a test up.
	admin string
}

// library is a library client on an embedded store in memory, stopped
// when the test ends.
func library(t *testing.T) (*abacus.Client, *embedded.Driver) {
	t.Helper()
	store := servertest.OpenStore(t)
	return libraryOn(t, store), store
}

// libraryOn is a library client on drv, stopped when the test ends.
func libraryOn(t *testing.T, drv driver.Driver) *abacus.Client {
	t.Helper()
	lib, err := abacus.NewClient(context.Background(), abacus.Config{Driver: drv, Logger: quiet, GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lib.Stop(context.Background()) })
	return lib
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newSite(t *testing.T, auth server.AuthMode) *site {
	t.Helper()
	return newSiteOn(t, auth, servertest.OpenStore(t))
}

// newSiteOn is newSite on a store of the test's choosing.
func newSiteOn(t *testing.T, auth server.AuthMode, drv driver.Driver) *site {
	t.Helper()
	lib := libraryOn(t, drv)
	keys := apikey.New(drv, 0)
	srv, err := server.New(server.Config{Client: lib, Logger: quiet, Auth: auth, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	s := &site{t: t, url: ts.URL, keys: keys}
	s.admin = s.key("*:admin")
	return s
}

func (s *site) key(scopes ...string) string {
	s.t.Helper()
	tok, _, err := s.keys.Create(context.Background(), apikey.Spec{Scopes: scopes})
	if err != nil {
		s.t.Fatal(err)
	}
	return tok
}

// api calls the JSON API as the admin key and decodes the answer.
func (s *site) api(method, path, body string, out any) {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.admin)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		s.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			s.t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
}

// deadLetters makes a queue whose messages die at their first failure and
// returns the ids of the dead letters, one per body, failed with reason.
func (s *site) deadLetters(queue, reason string, bodies ...string) []string {
	s.t.Helper()
	s.api("POST", "/v1/queues", `{"name":"`+queue+`","shards":4,"max_deliveries":1}`, nil)
	msgs := make([]map[string]any, len(bodies))
	for i, b := range bodies {
		msgs[i] = map[string]any{"body": b, "attributes": map[string]string{"tenant": "<i>acme</i>"}}
	}
	body, _ := json.Marshal(map[string]any{"messages": msgs})
	s.api("POST", "/v1/queues/"+queue+"/messages", string(body), nil)
	var ids []string
	for len(ids) < len(bodies) {
		var rcv api.ReceiveResponse
		s.api("POST", "/v1/queues/"+queue+"/receive", `{"max":100,"wait":"5s"}`, &rcv)
		for _, m := range rcv.Messages {
			nack, _ := json.Marshal(api.NackRequest{Receipt: m.Receipt, Error: reason})
			s.api("POST", "/v1/queues/"+queue+"/nack", string(nack), nil)
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// browser is a user agent with a cookie jar that does not follow
// redirects, so that tests see them.
type browser struct {
	t *testing.T
	s *site
	c *http.Client
}

func (s *site) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: s.t, s: s, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(method, path string, form url.Values, header ...string) page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, b.s.url+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return page{resp.StatusCode, resp.Header, buf.String()}
}

func (b *browser) get(path string) page { return b.do("GET", path, nil) }

// post submits a form and follows its redirect, as a browser does.
func (b *browser) post(path string, form url.Values) page {
	b.t.Helper()
	p := b.do("POST", path, form)
	if p.status != http.StatusSeeOther {
		return p
	}
	return b.get(p.header.Get("Location"))
}

func (s *site) deadIDs(queue string) []string {
	var list api.DeadLetterList
	s.api("GET", "/v1/queues/"+queue+"/dead", "", &list)
	ids := []string{}
	for _, l := range list.DeadLetters {
		ids = append(ids, l.ID)
	}
	return ids
}

func mustContain(t *testing.T, what string, p page, parts ...string) {
	t.Helper()
	for _, part := range parts {
		if !strings.Contains(p.body, part) {
			t.Errorf("%s (%d): no %q in\n%s", what, p.status, part, p.body)
		}
	}
}

func TestTheConsoleShowsQueuesAndActsOnDeadLetters(t *testing.T) {
	t.Parallel()
	s := newSite(t, server.AuthOff)
	ids := s.deadLetters("jobs", "smtp <b>550</b>", "one", "<script>alert(1)</script>", "three")
	s.api("POST", "/v1/queues/jobs/messages", `{"messages":[{"body":"later","delay":"1h"},{"body":"later too","delay":"1h"}]}`, nil)
	b := s.browser()

	home := b.get("/ui")
	if home.status != 200 || !strings.HasPrefix(home.header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /ui: %d %s", home.status, home.header.Get("Content-Type"))
	}
	mustContain(t, "overview", home, `data-queue="jobs"`, `<td class="n messages">2</td>`, `<td class="n due">0</td>`, `href="/ui/queues/jobs"`)
	if csp := home.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	if h := home.header; h.Get("X-Frame-Options") != "DENY" || h.Get("Cache-Control") != "no-store" || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("headers: X-Frame-Options %q, Cache-Control %q, X-Content-Type-Options %q", h.Get("X-Frame-Options"), h.Get("Cache-Control"), h.Get("X-Content-Type-Options"))
	}
	if !strings.Contains(home.body, "asks for no API key") {
		t.Errorf("a server that asks for no key does not say so")
	}

	q := b.get("/ui/queues/jobs")
	mustContain(t, "queue page", q, ids[0], ids[1], ids[2], "smtp &lt;b&gt;550&lt;/b&gt;", "&lt;script&gt;alert(1)&lt;/script&gt;", `id="messages">2<`,
		"<code>tenant=&lt;i&gt;acme&lt;/i&gt;</code>")
	if strings.Contains(q.body, "<script>") || strings.Contains(q.body, "<b>550") {
		t.Fatalf("a dead letter's body or error reached the page unescaped:\n%s", q.body)
	}

	after := b.post("/ui/queues/jobs/requeue", url.Values{"id": {ids[0]}})
	mustContain(t, "after a requeue", after, "Requeued 1 dead letter(s)")
	if got := s.deadIDs("jobs"); len(got) != 2 || slices.Contains(got, ids[0]) {
		t.Fatalf("dead letters after requeueing %s: %v", ids[0], got)
	}
	if p := b.get("/ui/queues/jobs"); strings.Contains(p.body, "Requeued") {
		t.Errorf("the notice of a change shows again on a reload:\n%s", p.body)
	}
	after = b.post("/ui/queues/jobs/delete", url.Values{"id": {ids[1]}})
	mustContain(t, "after a delete", after, "Deleted 1 dead letter(s)")
	if got := s.deadIDs("jobs"); len(got) != 1 || got[0] != ids[2] {
		t.Fatalf("dead letters after deleting %s: %v, want only %s", ids[1], got, ids[2])
	}
	mustContain(t, "after a delete", after, `id="messages">3<`) // the requeued one is back on the queue

	after = b.post("/ui/queues/jobs/pause", url.Values{})
	mustContain(t, "after a pause", after, `id="state">paused<`, `id="resume"`)
	var pause api.QueuePause
	s.api("GET", "/v1/queues/jobs/pause", "", &pause)
	if !pause.Paused {
		t.Fatalf("the console paused the queue but the API says %+v", pause)
	}
	mustContain(t, "overview while paused", b.get("/ui"), `<span class="paused">paused</span>`)
	after = b.post("/ui/queues/jobs/resume", url.Values{})
	mustContain(t, "after a resume", after, `id="state">running<`)

	after = b.post("/ui/queues/jobs/requeue", url.Values{"all": {"yes"}})
	mustContain(t, "after requeueing all", after, "Requeued 1 dead letter(s)", `id="no-dead"`)
}

func TestTheConsoleRefusesBadFormsAndWritesNothing(t *testing.T) {
	t.Parallel()
	s := newSite(t, server.AuthOff)
	ids := s.deadLetters("jobs", "boom", "a")
	b := s.browser()
	for _, c := range []struct {
		path   string
		form   url.Values
		status int
		want   string
	}{
		{"/ui/queues/jobs/requeue", url.Values{}, 400, "Choose a dead letter, or all"},
		{"/ui/queues/jobs/requeue", url.Values{"id": {"nope"}}, 400, "is not a message id"},
		{"/ui/queues/jobs/delete", url.Values{"id": {ids[0], "x"}}, 400, "is not a message id"},
		{"/ui/queues/jobs/delete", url.Values{}, 400, "no dead letter ids"},
		{"/ui/queues/nope/delete", url.Values{"id": {ids[0]}}, 404, "nope"},
		{"/ui/queues/nope/pause", url.Values{}, 404, "nope"},
	} {
		p := b.do("POST", c.path, c.form)
		if p.status != c.status || !strings.Contains(p.body, c.want) {
			t.Errorf("POST %s %v: %d, want %d with %q:\n%s", c.path, c.form, p.status, c.status, c.want, p.body)
		}
	}
	if got := s.deadIDs("jobs"); len(got) != 1 {
		t.Fatalf("refused forms changed the dead letters: %v", got)
	}
	// Another site's page may not post a form here, even to a server that
	// asks no key.
	p := b.do("POST", "/ui/queues/jobs/delete", url.Values{"id": {ids[0]}}, "Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site")
	if p.status != 403 {
		t.Fatalf("cross-site form: %d %s", p.status, p.body)
	}
	if got := s.deadIDs("jobs"); len(got) != 1 {
		t.Fatalf("a cross-site form deleted a dead letter: %v", got)
	}
	// A link cannot make the page claim a change.
	if p := b.get("/ui/queues/jobs?done=deleted&n=1000"); strings.Contains(p.body, "Deleted") || strings.Contains(p.body, `class="notice"`) {
		t.Errorf("a crafted link shows a notice:\n%s", p.body)
	}
	if p := b.get("/ui/queues/nope"); p.status != 404 {
		t.Errorf("GET of a missing queue: %d", p.status)
	}
	if p := b.get("/ui/nothing/here"); p.status != 404 || !strings.HasPrefix(p.header.Get("Content-Type"), "text/html") {
		t.Errorf("GET of no page: %d %s", p.status, p.header.Get("Content-Type"))
	}
	if p := b.get("/ui/"); p.status != http.StatusMovedPermanently || p.header.Get("Location") != "/ui" {
		t.Errorf("GET /ui/: %d to %q", p.status, p.header.Get("Location"))
	}
}

// Deleting a queue from its page takes its name typed again; the answer
// is the overview, saying how many rows went, and the queue is gone.
func TestTheConsoleDeletesAQueueWhoseNameIsTyped(t *testing.T) {
	t.Parallel()
	s := newSite(t, server.AuthOff)
	s.deadLetters("jobs", "boom", "a", "b", "c")
	s.api("POST", "/v1/queues/jobs/messages", `{"messages":[{"body":"later","delay":"1h"},{"body":"later too","delay":"1h"}]}`, nil)
	s.api("POST", "/v1/queues", `{"name":"other","shards":4}`, nil)
	b := s.browser()

	mustContain(t, "queue page", b.get("/ui/queues/jobs"), `id="delete-queue"`, `action="/ui/queues/jobs/delete-queue"`, "1m11s later")
	for _, form := range []url.Values{{}, {"confirm": {""}}, {"confirm": {"job"}}, {"confirm": {"other"}}, {"confirm": {"jobs "}}} {
		p := b.do("POST", "/ui/queues/jobs/delete-queue", form)
		if p.status != 400 || !strings.Contains(p.body, "type its name") {
			t.Errorf("delete with %v: %d, want 400 asking for the name:\n%s", form, p.status, p.body)
		}
	}
	var st api.QueueStats
	s.api("GET", "/v1/queues/jobs/stats", "", &st)
	if st.Messages != 2 || len(s.deadIDs("jobs")) != 3 {
		t.Fatalf("refused deletes changed the queue: %d messages, dead letters %v", st.Messages, s.deadIDs("jobs"))
	}

	after := b.post("/ui/queues/jobs/delete-queue", url.Values{"confirm": {"jobs"}})
	mustContain(t, "after the delete", after, "Deleted a queue and the 5 message(s) and dead letter(s) it held.", `data-queue="other"`)
	if strings.Contains(after.body, `data-queue="jobs"`) {
		t.Errorf("the overview still lists the deleted queue:\n%s", after.body)
	}
	if p := b.get("/ui/queues/jobs"); p.status != 404 {
		t.Errorf("the deleted queue's page: %d, want 404", p.status)
	}
	if p := b.get("/ui"); strings.Contains(p.body, "Deleted a queue") {
		t.Errorf("the notice of the delete shows again on a reload")
	}
	// A repeat (the form sent again) is harmless, as the API's is: it
	// removes what is left, here nothing, and says the queue was gone.
	time.Sleep(1100 * time.Millisecond) // past the second a delete's own time may trail its start
	mustContain(t, "a repeated delete", b.post("/ui/queues/jobs/delete-queue", url.Values{"confirm": {"jobs"}}),
		"That queue had been deleted already; 0 leftover message(s)")
	s.api("GET", "/v1/queues/other/stats", "", nil) // the other queue is untouched
}

// deletesFail is an embedded store whose message deletes fail while fail
// is set, as a store that goes down in the middle of a queue's delete.
type deletesFail struct {
	*embedded.Driver
	fail atomic.Bool
}

func (d *deletesFail) DeleteMessages(ctx context.Context, p *driver.DeleteMessagesParams) error {
	if d.fail.Load() {
		return errors.New("store down")
	}
	return d.Driver.DeleteMessages(ctx, p)
}

// A delete that cannot remove every row still deletes the queue, and the
// console says rows were left and how to remove them; the repeat it names
// does.
func TestTheConsoleSaysWhatADeleteLeftBehind(t *testing.T) {
	t.Parallel()
	store := &deletesFail{Driver: servertest.OpenStore(t)}
	s := newSiteOn(t, server.AuthOff, store)
	s.api("POST", "/v1/queues", `{"name":"jobs","shards":4}`, nil)
	s.api("POST", "/v1/queues/jobs/messages", `{"messages":[{"body":"later","delay":"1h"},{"body":"later too","delay":"1h"}]}`, nil)
	b := s.browser()

	store.fail.Store(true)
	after := b.post("/ui/queues/jobs/delete-queue", url.Values{"confirm": {"jobs"}})
	mustContain(t, "a delete that left rows", after, "some could not be removed", "deleting the queue again")
	if p := b.get("/ui/queues/jobs"); p.status != 404 {
		t.Errorf("the queue's page after a delete that left rows: %d, want 404 (the queue is deleted)", p.status)
	}
	store.fail.Store(false)
	time.Sleep(1100 * time.Millisecond) // past the second a delete's own time may trail its start
	mustContain(t, "the repeat", b.post("/ui/queues/jobs/delete-queue", url.Values{"confirm": {"jobs"}}),
		"That queue had been deleted already; 2 leftover message(s)")
}

func TestTheConsoleNeedsAKeyWhenTheServerDoes(t *testing.T) {
	t.Parallel()
	s := newSite(t, server.AuthOn)
	ids := s.deadLetters("jobs", "boom", "a")
	s.api("POST", "/v1/queues", `{"name":"secret","shards":4}`, nil)
	b := s.browser()

	if p := b.get("/ui"); p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/login" {
		t.Fatalf("GET /ui without a key: %d to %q", p.status, p.header.Get("Location"))
	}
	if p := b.get("/ui/login"); p.status != 200 || strings.Contains(p.body, "asks for no API key") {
		t.Fatalf("the sign-in page of a server that requires keys: %d\n%s", p.status, p.body)
	}
	if p := b.do("POST", "/ui/queues/jobs/delete", url.Values{"id": {ids[0]}}); p.status != 401 {
		t.Fatalf("POST without a key: %d", p.status)
	}
	if p := b.do("POST", "/ui/login", url.Values{"key": {"abk_nope"}}); p.status != 401 || !strings.Contains(p.body, "role=\"alert\"") {
		t.Fatalf("sign-in with a bad key: %d\n%s", p.status, p.body)
	}

	// A key that may read one queue sees that queue only, and no buttons.
	reader := s.key("queue:jobs:read")
	login := b.do("POST", "/ui/login", url.Values{"key": {reader}})
	if login.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", login.status, login.body)
	}
	var ck *http.Cookie
	for _, c := range (&http.Response{Header: login.header}).Cookies() {
		if c.Name == console.KeyCookie {
			ck = c
		}
	}
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/ui" {
		t.Fatalf("key cookie = %+v; want HttpOnly, SameSite=Strict, Path=/ui", ck)
	}
	home := b.get("/ui")
	mustContain(t, "reader's overview", home, `data-queue="jobs"`)
	if strings.Contains(home.body, "secret") {
		t.Errorf("the overview shows a queue the key may not read:\n%s", home.body)
	}
	q := b.get("/ui/queues/jobs")
	mustContain(t, "reader's queue page", q, ids[0])
	if strings.Contains(q.body, `class="delete"`) || strings.Contains(q.body, `id="pause"`) || strings.Contains(q.body, `id="delete-queue"`) {
		t.Errorf("a read-only key is offered changes:\n%s", q.body)
	}
	if p := b.get("/ui/queues/secret"); p.status != 403 {
		t.Errorf("a queue the key may not read: %d", p.status)
	}
	for _, path := range []string{"/ui/queues/jobs/delete", "/ui/queues/jobs/requeue", "/ui/queues/jobs/pause", "/ui/queues/jobs/delete-queue"} {
		if p := b.do("POST", path, url.Values{"id": {ids[0]}, "confirm": {"jobs"}}); p.status != 403 {
			t.Errorf("POST %s with a read-only key: %d", path, p.status)
		}
	}
	if got := s.deadIDs("jobs"); len(got) != 1 {
		t.Fatalf("a read-only key changed the dead letters: %v", got)
	}

	// The key reads no namespace: the overview lists none, and a
	// namespace's page is refused.
	s.api("POST", "/v1/namespaces", `{"name":"likes"}`, nil)
	if p := b.get("/ui"); strings.Contains(p.body, "/ui/namespaces/likes") {
		t.Errorf("the overview lists a namespace the key may not read")
	}
	if p := b.get("/ui/namespaces/likes"); p.status != 403 {
		t.Errorf("a namespace the key may not read: %d", p.status)
	}

	// An admin key acts; once revoked, it is sent back to sign in.
	admin := s.key("queue:jobs:admin")
	b.do("POST", "/ui/logout", url.Values{})
	if p := b.get("/ui"); p.status != http.StatusSeeOther {
		t.Fatalf("after signing out: %d", p.status)
	}
	b.do("POST", "/ui/login", url.Values{"key": {admin}})
	mustContain(t, "admin's delete", b.post("/ui/queues/jobs/delete", url.Values{"id": {ids[0]}}), "Deleted 1 dead letter(s)")
	s.api("DELETE", "/v1/keys/"+keyID(t, s, admin), "", nil)
	if p := b.get("/ui"); p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/ui/login") {
		t.Fatalf("a revoked key: %d to %q", p.status, p.header.Get("Location"))
	}
}

// keyID finds the id of the key a token names.
func keyID(t *testing.T, s *site, token string) string {
	t.Helper()
	k, err := s.keys.Authenticate(context.Background(), token)
	if err != nil {
		t.Fatal(err)
	}
	return k.ID
}

func TestTheConsoleShowsNamespacesAndValues(t *testing.T) {
	t.Parallel()
	s := newSite(t, server.AuthOff)
	s.api("POST", "/v1/namespaces", `{"name":"likes"}`, nil)
	s.api("POST", "/v1/namespaces/likes/counters/post%2F1/updates", `{"delta":5}`, nil)
	s.api("POST", "/v1/namespaces", `{"name":"wallets","model":"ledger"}`, nil)
	s.api("POST", "/v1/namespaces/wallets/ledgers/alice/credits", `{"amount":50,"request_id":"r1"}`, nil)
	s.api("POST", "/v1/namespaces/wallets/ledgers/alice/debits", `{"amount":8,"request_id":"r2"}`, nil)
	b := s.browser()
	mustContain(t, "overview", b.get("/ui"), `href="/ui/namespaces/likes"`, `href="/ui/namespaces/wallets"`)
	mustContain(t, "counters", b.get("/ui/namespaces/likes"), `data-counter="post/1"`, `<td class="n value">5</td>`)
	mustContain(t, "ledgers", b.get("/ui/namespaces/wallets"), "Ledgers", `data-counter="alice"`, `<td class="n value">42</td>`)
	if p := b.get("/ui/namespaces/nope"); p.status != 404 {
		t.Errorf("a missing namespace: %d", p.status)
	}
}

// A ledger's page shows its value and its history, newest first, page by
// page; a namespace without a history says so; markup in a request id
// stays text.
func TestTheConsoleShowsALedgersHistory(t *testing.T) {
	t.Parallel()
	s := newSite(t, server.AuthOff)
	s.api("POST", "/v1/namespaces", `{"name":"wallets","model":"ledger"}`, nil)
	base := "/v1/namespaces/wallets/ledgers/al%2Fice"
	for i := range 60 {
		s.api("POST", base+"/credits", fmt.Sprintf(`{"amount":%d,"request_id":"r%02d"}`, i+1, i), nil)
	}
	s.api("POST", base+"/debits", `{"amount":30,"request_id":"<b>refund</b>"}`, nil)
	b := s.browser()
	mustContain(t, "namespace links to the ledger", b.get("/ui/namespaces/wallets"), `href="/ui/namespaces/wallets/ledgers/al%2Fice"`)
	first := b.get("/ui/namespaces/wallets/ledgers/al%2Fice")
	mustContain(t, "ledger page", first, `<td class="n value">1800</td>`, "for 30 days",
		`data-request="&lt;b&gt;refund&lt;/b&gt;"`, `<td class="n amount">-30</td>`, "Older entries")
	if strings.Contains(first.body, "<b>refund</b>") {
		t.Error("a request id's markup reached the page")
	}
	// Every entry once, over the pages, newest first.
	var seen []string
	path := "/ui/namespaces/wallets/ledgers/al%2Fice"
	for range 5 {
		p := b.get(path)
		for _, m := range regexp.MustCompile(`data-request="([^"]*)"`).FindAllStringSubmatch(p.body, -1) {
			seen = append(seen, html.UnescapeString(m[1]))
		}
		m := regexp.MustCompile(`<a href="([^"]*)">Older entries`).FindStringSubmatch(p.body)
		if m == nil {
			break
		}
		path = html.UnescapeString(m[1])
	}
	if len(seen) != 61 || seen[0] != "<b>refund</b>" || seen[1] != "r59" || seen[60] != "r00" {
		t.Errorf("entries over the pages: %d, first %q, last %q", len(seen), seen[:min(2, len(seen))], seen[len(seen)-1])
	}

	s.api("POST", "/v1/namespaces", `{"name":"plain","model":"ledger","ledger":{"entry_retention_seconds":-1}}`, nil)
	s.api("POST", "/v1/namespaces/plain/ledgers/bob/credits", `{"amount":5}`, nil)
	mustContain(t, "no history", b.get("/ui/namespaces/plain/ledgers/bob"), `<td class="n value">5</td>`, `id="no-history"`)
	if strings.Contains(b.get("/ui/namespaces/plain/ledgers/bob").body, "<th>floor</th>") {
		t.Error("a ledger without a floor shows one")
	}
	s.api("POST", "/v1/namespaces", `{"name":"overdraft","model":"ledger","ledger":{"floor":-100}}`, nil)
	s.api("POST", "/v1/namespaces/overdraft/ledgers/carol/debits", `{"amount":40}`, nil)
	mustContain(t, "floor", b.get("/ui/namespaces/overdraft/ledgers/carol"), `<td class="n value">-40</td>`, `<th>floor</th><td class="n">-100</td>`)
	s.api("POST", "/v1/namespaces", `{"name":"likes"}`, nil)
	if p := b.get("/ui/namespaces/likes/ledgers/x"); p.status != 404 {
		t.Errorf("a ledger page in a counter namespace: %d", p.status)
	}
	if p := b.get("/ui/namespaces/wallets/ledgers/al%2Fice?after=nonsense"); p.status != 400 {
		t.Errorf("a bad cursor: %d", p.status)
	}
}

// Pages of names that need escaping in a link (":" is allowed in queue and
// namespace names, anything in counter names) follow on, and end.
func TestTheConsolePagesThroughManyNames(t *testing.T) {
	t.Parallel()
	s := newSite(t, server.AuthOff)
	s.api("POST", "/v1/namespaces", `{"name":"likes"}`, nil)
	var want []string
	for i := range 60 {
		name := fmt.Sprintf("user:%02d &?/", i)
		want = append(want, name)
		s.api("POST", "/v1/namespaces/likes/counters/"+url.PathEscape(name)+"/updates", `{"delta":1}`, nil)
	}
	for i := range 25 {
		s.api("POST", "/v1/queues", fmt.Sprintf(`{"name":"mail:%02d","shards":4}`, i), nil)
	}
	b := s.browser()
	follow := func(first, item, next string) []string {
		var seen []string
		path := first
		for range 10 {
			p := b.get(path)
			if p.status != 200 {
				t.Fatalf("GET %s: %d", path, p.status)
			}
			for _, m := range regexp.MustCompile(item).FindAllStringSubmatch(p.body, -1) {
				seen = append(seen, html.UnescapeString(m[1]))
			}
			m := regexp.MustCompile(next).FindStringSubmatch(p.body)
			if m == nil {
				return seen
			}
			path = html.UnescapeString(m[1])
		}
		t.Fatalf("more than 10 pages from %s: the links go round", first)
		return nil
	}
	got := follow("/ui/namespaces/likes", `data-counter="([^"]*)"`, `<a href="(/ui/namespaces/likes\?after=[^"]*)">Next page`)
	if !slices.Equal(got, want) {
		t.Errorf("counters over the pages = %q, want %q", got, want)
	}
	queues := follow("/ui", `data-queue="([^"]*)"`, `<a href="(/ui\?after=[^"]*)">Next page`)
	if len(queues) != 25 || queues[0] != "mail:00" || queues[24] != "mail:24" {
		t.Errorf("queues over the pages = %q", queues)
	}
}

func TestAServerWithoutTheConsoleServesNone(t *testing.T) {
	t.Parallel()
	lib, _ := library(t)
	srv, err := server.New(server.Config{Client: lib, Logger: quiet, NoConsole: true})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/ui", nil))
	if rec.Code != 404 || !strings.Contains(rec.Body.String(), `"code"`) {
		t.Fatalf("GET /ui with NoConsole: %d %s", rec.Code, rec.Body)
	}
}

// A queue with priority levels says so, and its shard table shows each
// shard's level; a queue of one level shows no level column.
func TestTheConsoleShowsPriorityLevels(t *testing.T) {
	t.Parallel()
	s := newSite(t, server.AuthOff)
	s.api("POST", "/v1/queues", `{"name":"alerts","shards":4,"priorities":2}`, nil)
	s.api("POST", "/v1/queues", `{"name":"plain","shards":4}`, nil)
	b := s.browser()
	p := b.get("/ui/queues/alerts")
	mustContain(t, "queue page", p, "at each of 2 priority levels", `<th class="n">level</th>`, `<td class="n">7</td><td class="n">1</td>`)
	if plain := b.get("/ui/queues/plain"); strings.Contains(plain.body, "priority levels") || strings.Contains(plain.body, `<th class="n">level</th>`) {
		t.Errorf("a queue of one level shows levels:\n%s", plain.body)
	}
}
