package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/internal/apikey"
	"github.com/abacusdb/abacus/internal/queue"
)

// observeTimeout bounds the overview's reading of its queues: a slow store
// shows as errors in the rows of the queues not read by then, not as a
// page that never comes. observeAtOnce is how many queues it reads at once.
const (
	observeTimeout = 10 * time.Second
	observeAtOnce  = 4
)

// deadPerPage is how many dead letters a queue page lists.
const deadPerPage = 100

// queueRow is a queue as the overview shows it.
type queueRow struct {
	Name     string
	Shards   int
	Paused   bool
	PauseErr string
	Obs      *queue.Observation
	Lag      time.Duration
	Holders  []string
	Err      string
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request, v viewer) {
	ctx := r.Context()
	namespaces, err := c.cfg.Client.Namespaces(ctx)
	if err != nil {
		c.failWith(w, r, v, err)
		return
	}
	nsList := readable(v, apikey.KindNamespace, namespaces, func(ns *abacus.Namespace) string { return ns.Name })
	all, err := c.cfg.Client.Queues().List(ctx)
	if err != nil {
		c.failWith(w, r, v, err)
		return
	}
	queues := readable(v, apikey.KindQueue, all, func(q *queue.Queue) string { return q.Name })
	after := r.URL.Query().Get("after")
	page, next := pageAfter(queues, func(q *queue.Queue) string { return q.Name }, after, c.cfg.QueuesPerPage)
	rows := make([]queueRow, len(page))
	for i, q := range page {
		rows[i] = queueRow{Name: q.Name, Shards: q.Shards}
	}
	octx, cancel := context.WithTimeout(ctx, observeTimeout)
	defer cancel()
	paused, err := c.cfg.Client.Queues().PauseStates(octx, page)
	for i := range rows {
		if err != nil {
			rows[i].PauseErr = err.Error()
		} else {
			rows[i].Paused = paused[i].Paused
		}
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, observeAtOnce)
	for i := range rows {
		wg.Add(1)
		slots <- struct{}{}
		go func(row *queueRow) {
			defer func() { <-slots; wg.Done() }()
			o, err := c.cfg.Client.Queues().Observe(octx, row.Name)
			if err != nil {
				row.Err = err.Error()
				return
			}
			row.Obs, row.Lag, row.Holders = o, o.DeliveryLag(), holders(o)
		}(&rows[i])
	}
	wg.Wait()
	c.render(w, http.StatusOK, "overview", map[string]any{
		"Title": "Overview", "Key": v.keyID(), "Auth": v.required, "Notice": takeNotice(w, r),
		"Queues": rows, "QueueCount": len(queues), "Next": next, "After": after,
		"Namespaces": nsList,
	})
}

// readable returns the items of list (of kind) the viewer may read.
func readable[T any](v viewer, kind string, list []T, name func(T) string) []T {
	var out []T
	for _, item := range list {
		if v.may(kind, name(item), apikey.Read) {
			out = append(out, item)
		}
	}
	return out
}

// holders lists the consumers holding a lease on the queue's shards.
func holders(o *queue.Observation) []string {
	var out []string
	for _, s := range o.Shards {
		if s.Holder != "" && !slices.Contains(out, s.Holder) {
			out = append(out, s.Holder)
		}
	}
	slices.Sort(out)
	return out
}

// notices are what a queue page says after a change: a fixed text per
// kind, with a count for some. The change's answer carries which in a
// cookie of this site, read once by the next page: a link, which anyone
// can craft, cannot make the page claim a change that did not happen.
var notices = map[string]struct {
	text    string
	counted bool
}{
	"requeued": {"Requeued %d dead letter(s): they are due now.", true},
	"deleted":  {"Deleted %d dead letter(s).", true},
	"paused":   {"Paused: consumers stop receiving within a second or so.", false},
	"resumed":  {"Resumed: consumers receive again.", false},
	// A deleted queue's page is gone: these show on the overview.
	"queue-deleted":          {"Deleted a queue and the %d message(s) and dead letter(s) it held.", true},
	"queue-deleted-leftover": {"Deleted a queue and %d of its messages and dead letters; some could not be removed (the server's log says why). They are never delivered; deleting the queue again (abacus queue delete, or DELETE /v1/queues/{queue}) removes them.", true},
	"queue-deleted-before":   {"That queue had been deleted already; %d leftover message(s) and dead letter(s) removed now.", true},
}

// noticeCookie carries a change's notice to the page the change redirects
// to.
const noticeCookie = "abacus_console_notice"

// takeNotice returns the notice a change left for this page, and clears it.
func takeNotice(w http.ResponseWriter, r *http.Request) string {
	ck, err := r.Cookie(noticeCookie)
	if err != nil {
		return ""
	}
	http.SetCookie(w, &http.Cookie{Name: noticeCookie, Path: "/ui", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	kind, count, _ := strings.Cut(ck.Value, ".")
	n, ok := notices[kind]
	switch {
	case !ok:
		return ""
	case !n.counted:
		return n.text
	}
	k, err := strconv.Atoi(count)
	if err != nil || k < 0 {
		return ""
	}
	return fmt.Sprintf(n.text, k)
}

// pageAfter sorts list by name and returns up to n items named after
// after, and the name to ask for the next page with ("" at the end).
func pageAfter[T any](list []T, name func(T) string, after string, n int) (page []T, next string) {
	list = slices.Clone(list)
	slices.SortFunc(list, func(a, b T) int { return strings.Compare(name(a), name(b)) })
	start := 0
	if after != "" {
		start = sort.Search(len(list), func(i int) bool { return name(list[i]) > after })
	}
	page = list[start:min(start+n, len(list))]
	if start+len(page) < len(list) && len(page) > 0 {
		next = name(page[len(page)-1])
	}
	return page, next
}

func (c *Console) queuePage(w http.ResponseWriter, r *http.Request, v viewer) {
	name := r.PathValue("queue")
	if !c.allow(w, r, v, apikey.KindQueue, name, apikey.Read) {
		return
	}
	ctx := r.Context()
	qs := c.cfg.Client.Queues()
	q, err := qs.Queue(ctx, name)
	if err != nil {
		c.failWith(w, r, v, err)
		return
	}
	pause, err := qs.PauseState(ctx, name)
	if err != nil {
		c.failWith(w, r, v, err)
		return
	}
	o, err := qs.Observe(ctx, name)
	if err != nil {
		c.failWith(w, r, v, err)
		return
	}
	dead, err := qs.DeadLetters(ctx, name, deadPerPage+1)
	if err != nil {
		c.failWith(w, r, v, err)
		return
	}
	more := len(dead) > deadPerPage
	dead = dead[:min(len(dead), deadPerPage)]
	notice := takeNotice(w, r)
	c.render(w, http.StatusOK, "queue", map[string]any{
		"Title": "Queue " + name, "Key": v.keyID(), "Auth": v.required,
		"Queue": q, "Pause": pause, "Obs": o, "Lag": o.DeliveryLag(), "Holders": holders(o),
		"Dead": dead, "MoreDead": more, "Notice": notice,
		"Admin": v.may(apikey.KindQueue, name, apikey.Admin), "RecreateWait": qs.RecreateWait(),
	})
}

// admin checks the admin role a queue change needs.
func (c *Console) admin(w http.ResponseWriter, r *http.Request, v viewer) bool {
	return c.allow(w, r, v, apikey.KindQueue, r.PathValue("queue"), apikey.Admin)
}

// allow checks that the viewer may act with role on the named namespace or
// queue, and answers 403 if not.
func (c *Console) allow(w http.ResponseWriter, r *http.Request, v viewer, kind, name string, role apikey.Role) bool {
	if v.may(kind, name, role) {
		return true
	}
	what := map[string]string{apikey.KindQueue: "queue", apikey.KindNamespace: "namespace"}[kind]
	c.fail(w, r, &v, http.StatusForbidden, fmt.Sprintf("API key %q may not %s %s %q; nothing was done.", v.keyID(), role, what, name))
	return false
}

// readForm reads a posted form of at most 64 KiB, or answers why not.
func (c *Console) readForm(w http.ResponseWriter, r *http.Request, v viewer) bool {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		status := http.StatusBadRequest
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			status = http.StatusRequestEntityTooLarge
		}
		c.fail(w, r, &v, status, "The form could not be read: "+err.Error()+". Nothing was done.")
		return false
	}
	return true
}

// formIDs reads the dead letter ids a form names.
func (c *Console) formIDs(w http.ResponseWriter, r *http.Request, v viewer) ([]queue.ID, bool) {
	if !c.readForm(w, r, v) {
		return nil, false
	}
	list := r.PostForm["id"]
	if len(list) > queue.MaxBatch {
		c.fail(w, r, &v, http.StatusBadRequest, "Too many ids in one form; the limit is "+strconv.Itoa(queue.MaxBatch)+". Nothing was done.")
		return nil, false
	}
	ids := make([]queue.ID, len(list))
	for i, s := range list {
		id, err := queue.ParseID(s)
		if err != nil {
			c.fail(w, r, &v, http.StatusBadRequest, "Dead letter id "+strconv.Quote(s)+" is not a message id. Nothing was done.")
			return nil, false
		}
		ids[i] = id
	}
	return ids, true
}

// deadLetters answers a form that acts on dead letters by id: requeue
// (which, with the form's "all", takes every one) or delete. It needs the
// admin role, as the API's routes do, and answers with the queue's page.
func (c *Console) deadLetters(what string, act func(ctx context.Context, queue string, ids []queue.ID) ([]queue.ID, error), orAll bool) handler {
	return func(w http.ResponseWriter, r *http.Request, v viewer) {
		if !c.admin(w, r, v) {
			return
		}
		ids, ok := c.formIDs(w, r, v)
		if !ok {
			return
		}
		if orAll && len(ids) == 0 && r.PostFormValue("all") != "yes" {
			c.fail(w, r, &v, http.StatusBadRequest, "Choose a dead letter, or all of them. Nothing was done.")
			return
		}
		got, err := act(r.Context(), r.PathValue("queue"), ids)
		if err != nil {
			c.failWith(w, r, v, err)
			return
		}
		c.back(w, r, what, len(got))
	}
}

func (c *Console) setPause(paused bool) handler {
	return func(w http.ResponseWriter, r *http.Request, v viewer) {
		if !c.admin(w, r, v) {
			return
		}
		qs := c.cfg.Client.Queues()
		set, what := qs.Resume, "resumed"
		if paused {
			set, what = qs.Pause, "paused"
		}
		if _, err := set(r.Context(), r.PathValue("queue")); err != nil {
			c.failWith(w, r, v, err)
			return
		}
		c.back(w, r, what, 0)
	}
}

// deleteQueue answers the form that deletes a queue. The form must name
// the queue again, typed by the operator: a stray click, or a page opened
// on the wrong queue, deletes nothing. The answer goes to the overview,
// since the queue's own page is gone.
func (c *Console) deleteQueue(w http.ResponseWriter, r *http.Request, v viewer) {
	if !c.admin(w, r, v) || !c.readForm(w, r, v) {
		return
	}
	name := r.PathValue("queue")
	if r.PostFormValue("confirm") != name {
		c.fail(w, r, &v, http.StatusBadRequest, "To delete the queue, type its name, "+strconv.Quote(name)+", in the box. Nothing was done.")
		return
	}
	began := time.Now()
	res, err := c.cfg.Client.Queues().Delete(r.Context(), name)
	if err != nil {
		c.failWith(w, r, v, err)
		return
	}
	// The queue's Delete logs rows it could not remove; the notice says so.
	what := "queue-deleted"
	switch {
	case res.Leftover != nil:
		what = "queue-deleted-leftover"
	case res.DeletedAt.Before(began.Add(-time.Second)):
		// A repeat answers the first delete's time: the form was sent
		// again, or another operator deleted the queue first.
		what = "queue-deleted-before"
	}
	c.redirect(w, r, "/ui", what, res.Messages+res.DeadLetters)
}

// back answers a change with a redirect to the queue page (post, redirect,
// get: reloading the page repeats nothing).
func (c *Console) back(w http.ResponseWriter, r *http.Request, what string, n int) {
	c.redirect(w, r, "/ui/queues/"+url.PathEscape(r.PathValue("queue")), what, n)
}

// redirect answers a change with a redirect to location, whose page shows
// the change's notice.
func (c *Console) redirect(w http.ResponseWriter, r *http.Request, location, what string, n int) {
	http.SetCookie(w, &http.Cookie{
		Name: noticeCookie, Value: what + "." + strconv.Itoa(n), Path: "/ui", MaxAge: 60,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	http.Redirect(w, r, location, http.StatusSeeOther)
}

// counterRow is a counter (or ledger) as a namespace page shows it.
type counterRow struct {
	Name  string
	Value string
	Err   string
}

// readableNamespace returns the namespace a page shows, after checking
// that the viewer may read it; otherwise it has answered with the error
// page and returns false.
func (c *Console) readableNamespace(w http.ResponseWriter, r *http.Request, v viewer, name string) (*abacus.Namespace, bool) {
	if !c.allow(w, r, v, apikey.KindNamespace, name, apikey.Read) {
		return nil, false
	}
	ns, err := c.cfg.Client.Namespace(r.Context(), name)
	if err != nil {
		c.failWith(w, r, v, err)
		return nil, false
	}
	return ns, true
}

func (c *Console) namespacePage(w http.ResponseWriter, r *http.Request, v viewer) {
	name := r.PathValue("ns")
	ns, ok := c.readableNamespace(w, r, v, name)
	if !ok {
		return
	}
	ctx := r.Context()
	names, err := c.cfg.Client.Counters(ctx, name)
	if err != nil {
		c.failWith(w, r, v, err)
		return
	}
	after := r.URL.Query().Get("after")
	page, next := pageAfter(names, func(n string) string { return n }, after, c.cfg.CountersPerPage)
	rows := make([]counterRow, len(page))
	for i, counter := range page {
		rows[i] = counterRow{Name: counter}
		rows[i].Value, err = c.value(ctx, ns, counter)
		if err != nil {
			rows[i].Err = err.Error()
		}
	}
	c.render(w, http.StatusOK, "namespace", map[string]any{
		"Title": "Namespace " + name, "Key": v.keyID(), "Auth": v.required,
		"NS": ns, "Counters": rows, "Count": len(names), "Next": next, "After": after,
		"Ledgers": ns.Model == abacus.ModelLedger,
	})
}

// entriesPerPage is how many history entries a ledger page shows.
const entriesPerPage = 50

// ledgerPage shows a ledger's value and a page of its history, newest
// first, with a link to the older entries.
func (c *Console) ledgerPage(w http.ResponseWriter, r *http.Request, v viewer) {
	name, ledger := r.PathValue("ns"), r.PathValue("ledger")
	ns, ok := c.readableNamespace(w, r, v, name)
	if !ok {
		return
	}
	ctx := r.Context()
	if ns.Model != abacus.ModelLedger || ns.Ledger == nil {
		c.fail(w, r, &v, http.StatusNotFound, fmt.Sprintf("namespace %s holds %s counters, not ledgers", name, ns.Model))
		return
	}
	value, err := c.cfg.Client.LedgerValue(ctx, name, ledger)
	if err != nil {
		c.failWith(w, r, v, err)
		return
	}
	data := map[string]any{
		"Title": "Ledger " + ledger, "Key": v.keyID(), "Auth": v.required,
		"NS": ns, "Ledger": ledger, "Value": value, "NoHistory": ns.Ledger.EntryRetention <= 0,
		"Retention": days(ns.Ledger.EntryRetention), "After": r.URL.Query().Get("after"),
	}
	if ns.Ledger.EntryRetention > 0 {
		h, err := c.cfg.Client.LedgerHistory(ctx, name, ledger, r.URL.Query().Get("after"), entriesPerPage)
		if err != nil {
			c.failWith(w, r, v, err)
			return
		}
		data["Entries"], data["Next"] = h.Entries, h.Next
	}
	c.render(w, http.StatusOK, "ledger", data)
}

// days writes a retention in days when it is whole days ("30 days"), as
// a duration otherwise.
func days(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d == day:
		return "1 day"
	case d > 0 && d%day == 0:
		return strconv.FormatInt(int64(d/day), 10) + " days"
	}
	return d.String()
}

// value reads one counter's value as text.
func (c *Console) value(ctx context.Context, ns *abacus.Namespace, counter string) (string, error) {
	if ns.Model == abacus.ModelLedger {
		lv, err := c.cfg.Client.LedgerValue(ctx, ns.Name, counter)
		if err != nil {
			return "", err
		}
		return strconv.FormatInt(lv.Value, 10), nil
	}
	val, err := c.cfg.Client.Get(ctx, ns.Name, counter)
	switch {
	case err != nil:
		return "", err
	case val == nil:
		return "", errors.New("no value")
	case val.Saturated:
		return val.Exact, nil
	}
	return strconv.FormatInt(val.Value, 10), nil
}
