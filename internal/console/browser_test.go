package console_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/abacusdb/abacus/internal/server"
	"github.com/chromedp/chromedp"
)

// chromium starts a headless Chromium for one test, or skips the test when
// none is configured. `make test` installs Debian's chromium
// (scripts/chromium) and sets ABACUS_TEST_CHROMIUM to its path.
func chromium(t *testing.T) context.Context {
	t.Helper()
	bin := os.Getenv("ABACUS_TEST_CHROMIUM")
	if bin == "" {
		t.Skip("no Chromium configured: set ABACUS_TEST_CHROMIUM to a chromium binary (make test installs one with scripts/chromium)")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless,
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		// This machine's network is closed: without these Chromium keeps
		// trying to reach Google's hosts.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first run starts the browser, which lives as long as the
	// context of that run: it must not carry the test's time limit, so a
	// watchdog bounds the start instead.
	watchdog := time.AfterFunc(time.Minute, cancel)
	err := chromedp.Do(browser)
	if !watchdog.Stop() {
		t.Fatalf("starting %s: no answer within a minute (%v)", bin, err)
	}
	if err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	ctx, cancelTimeout := context.WithTimeout(browser, 2*time.Minute)
	t.Cleanup(cancelTimeout)
	return ctx
}

// An operator signs in, finds the queue's dead letters, requeues one and
// deletes another, all by clicking, in a real browser.
func TestAnOperatorRequeuesAndDeletesDeadLettersInChromium(t *testing.T) {
	ctx := chromium(t)
	s := newSite(t, server.AuthOn)
	ids := s.deadLetters("jobs", "smtp 550", "first", "second")
	operator := s.key("queue:*:admin", "ns:*:read")

	err := chromedp.Do(ctx,
		chromedp.Navigate(s.url+"/ui"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="key"]`)),
	)
	if err != nil {
		t.Fatalf("opening the console: %v", err)
	}
	if title, err := chromedp.Run(ctx, chromedp.Title()); err != nil || !strings.Contains(title, "Sign in") {
		t.Fatalf("the console without a key showed %q (%v), not the sign-in page", title, err)
	}
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`input[name="key"]`), operator),
		chromedp.Click(chromedp.ID("sign-in")),
		chromedp.WaitVisible(chromedp.ID("queues")),
	)
	if err != nil {
		t.Fatalf("signing in: %v", err)
	}
	if cookies, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.cookie`)); err != nil || cookies != "" {
		t.Errorf("page scripts can read the key's cookie: %q (%v)", cookies, err)
	}
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`a[href="/ui/queues/jobs"]`)),
		chromedp.WaitVisible(chromedp.ID("dead")),
	)
	if err != nil {
		t.Fatalf("opening the queue: %v", err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`#dead tbody tr`)))
	if err != nil || len(rows) != 2 {
		t.Fatalf("%d dead letters listed (%v), want 2", len(rows), err)
	}

	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`tr[data-id="`+ids[0]+`"] button.requeue`)),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)),
	)
	if err != nil {
		t.Fatalf("requeueing: %v", err)
	}
	notice, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.notice`)))
	messages, _ := chromedp.Run(ctx, chromedp.Text(chromedp.ID("messages")))
	if !strings.Contains(notice, "Requeued 1") || messages != "1" {
		t.Errorf("after requeueing: notice %q, messages %q; want Requeued 1 and 1 message", notice, messages)
	}
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`tr[data-id="`+ids[1]+`"] button.delete`)),
		chromedp.WaitVisible(chromedp.ID("no-dead")),
	)
	if err != nil {
		t.Fatalf("deleting: %v", err)
	}
	if notice, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.notice`))); !strings.Contains(notice, "Deleted 1") {
		t.Errorf("after deleting: notice %q", notice)
	}
	if got := s.deadIDs("jobs"); len(got) != 0 {
		t.Errorf("dead letters left after the clicks: %v", got)
	}
	var st struct{ Messages int }
	s.api("GET", "/v1/queues/jobs/stats", "", &st)
	if st.Messages != 1 {
		t.Errorf("the queue holds %d messages after one requeue, want 1", st.Messages)
	}
}

// An operator deletes a queue from its page in a real browser: the button
// does nothing until the queue's name is typed, then the overview says
// what went and lists the queue no more.
func TestAnOperatorDeletesAQueueInChromium(t *testing.T) {
	ctx := chromium(t)
	s := newSite(t, server.AuthOff)
	s.deadLetters("jobs", "smtp 550", "first")
	s.api("POST", "/v1/queues/jobs/messages", `{"messages":[{"body":"later","delay":"1h"}]}`, nil)

	err := chromedp.Do(ctx,
		chromedp.Navigate(s.url+"/ui/queues/jobs"),
		chromedp.WaitVisible(chromedp.ID("delete-queue-button")),
		// Unconfirmed, the browser refuses the form (the box is required)
		// and the page stays.
		chromedp.Click(chromedp.ID("delete-queue-button")),
	)
	if err != nil {
		t.Fatalf("opening the queue and clicking delete: %v", err)
	}
	missing, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('#delete-queue input[name="confirm"]').validity.valueMissing`))
	if err != nil || !missing {
		t.Errorf("the name box of an unconfirmed delete: valueMissing %v (%v), want true", missing, err)
	}
	if path, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`)); err != nil || path != "/ui/queues/jobs" {
		t.Errorf("after a click with no name typed the browser is at %q (%v), want the queue's page", path, err)
	}
	var st struct{ Messages int }
	s.api("GET", "/v1/queues/jobs/stats", "", &st)
	if st.Messages != 1 {
		t.Fatalf("after a click with no name typed the queue holds %d messages, want 1", st.Messages)
	}
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#delete-queue input[name="confirm"]`), "jobs"),
		chromedp.Click(chromedp.ID("delete-queue-button")),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)),
	)
	if err != nil {
		t.Fatalf("deleting the queue: %v", err)
	}
	notice, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.notice`)))
	if !strings.Contains(notice, "Deleted a queue and the 2 message(s) and dead letter(s)") {
		t.Errorf("after deleting: notice %q", notice)
	}
	if n, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`tr[data-queue="jobs"]`), chromedp.AtLeast(0))); err != nil || len(n) != 0 {
		t.Errorf("the overview lists the deleted queue (%d rows, %v)", len(n), err)
	}
}
