package server

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// The shell examples of docs/api.md run, in order, against a real server
// with real curl, and every request in them succeeds: a doc that shows a
// request the server refuses (a retired id, a missing Content-Type) fails
// here. curl is a test dependency (.ci/run installs it).
func TestDocsExamplesRun(t *testing.T) {
	t.Parallel()
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("curl is needed to run the docs' examples (apt-get install curl): ", err)
	}
	doc, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllSubmatch(doc, -1)
	if len(blocks) < 3 {
		t.Fatalf("found %d shell examples in docs/api.md, want at least 3", len(blocks))
	}
	e := newEnv(t)
	host := strings.TrimPrefix(e.ts.URL, "http://")
	requests := 0
	for i, b := range blocks {
		script := strings.ReplaceAll(string(b[1]), "localhost:7070", host)
		requests += strings.Count(script, "curl ")
		// --fail-with-body turns an HTTP error into a failed command, and
		// -w puts each answer on its own line of the output.
		prelude := "set -euo pipefail\ncurl() { " + curl + " --fail-with-body -sS -w '\\n' \"$@\"; }\n"
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-c", prelude+script)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Fatalf("shell example %d of docs/api.md failed (%v):\n%s\noutput:\n%s", i+1, err, script, out.String())
		}
	}
	if requests < 15 {
		t.Fatalf("ran %d requests, want the docs' 15 or more", requests)
	}
	// The examples did what they say.
	if v := e.value("default", "likes"); v.Value != 5 {
		t.Errorf("likes after the examples: %+v, want 5", v)
	}
	if v := e.value("orders", "open-qty"); v.Value != 1500 {
		t.Errorf("open-qty after the examples: %+v, want 1500", v)
	}
}

// The alert rules and the dashboard in deploy/ name only series a real
// server exports: a renamed metric would otherwise leave an alert that
// never fires and a panel that stays empty.
func TestMonitoringFilesNameRealSeries(t *testing.T) {
	t.Parallel()
	exported := exportedSeries(t)

	var rules struct {
		Groups []struct {
			Name  string
			Rules []struct {
				Alert       string
				Expr        string
				For         string
				Labels      map[string]string
				Annotations map[string]string
			}
		}
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "prometheus", "abacus-alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&rules); err != nil {
		t.Fatalf("abacus-alerts.yaml: %v", err)
	}
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts++
			if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("rule %+v lacks an alert name, expr, severity or summary", r)
			}
			checkSeries(t, "alert "+r.Alert, r.Expr, exported)
		}
	}
	if alerts < 5 {
		t.Fatalf("%d alert rules read; the file has more", alerts)
	}

	data, err = os.ReadFile(filepath.Join("..", "..", "deploy", "grafana", "abacus-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("abacus-dashboard.json: %v", err)
	}
	targets := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			targets++
			checkSeries(t, "panel "+p.Title, tg.Expr, exported)
		}
	}
	if targets < 10 {
		t.Fatalf("%d dashboard targets read; the file has more", targets)
	}
}

var seriesName = regexp.MustCompile(`\babacus_[a-z_]+`)

// checkSeries fails unless every abacus_ series expr names is exported.
func checkSeries(t *testing.T, where, expr string, exported map[string]bool) {
	t.Helper()
	names := seriesName.FindAllString(expr, -1)
	if len(names) == 0 {
		if !strings.Contains(expr, "up{") {
			t.Errorf("%s: %q names no abacus series", where, expr)
		}
		return
	}
	for _, n := range names {
		if !exported[n] {
			t.Errorf("%s: %q is not a series the server exports", where, n)
		}
	}
}

// exportedSeries returns the names of the series a server exports once it
// has served updates, a ledger update, a queue and a collection, with a
// histogram's _bucket, _sum and _count.
func exportedSeries(t *testing.T) map[string]bool {
	t.Helper()
	e := newEnv(t)
	e.mustJSON("POST", "/v1/namespaces/default/counters/c/updates", `{"delta":1}`, 200, nil)
	e.mustJSON("GET", "/v1/namespaces/default/counters/c", "", 200, nil)
	e.mustJSON("POST", "/v1/namespaces", `{"name":"wallets","model":"ledger"}`, 201, nil)
	e.mustJSON("POST", "/v1/namespaces/wallets/ledgers/alice/credits", `{"amount":5}`, 200, nil)
	e.mustJSON("GET", "/v1/namespaces/wallets/ledgers/alice", "", 200, nil)
	e.mustJSON("POST", "/v1/queues", `{"name":"jobs"}`, 201, nil)
	// An events read reports its counter's rollup lag, which only then
	// has a series.
	e.mustJSON("POST", "/v1/namespaces", `{"name":"clicks","model":"events"}`, 201, nil)
	e.mustJSON("POST", "/v1/namespaces/clicks/counters/home/updates", `{"delta":1}`, 200, nil)
	e.mustJSON("GET", "/v1/namespaces/clicks/counters/home", "", 200, nil)
	e.mustJSON("POST", "/v1/gc", "", 200, nil)
	r := e.do("GET", "/metrics", "")
	out := map[string]bool{}
	for line := range strings.SplitSeq(string(r.body), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "#" || f[1] != "TYPE" {
			continue
		}
		out[f[2]] = true
		if slices.Contains([]string{"histogram", "summary"}, f[3]) {
			out[f[2]+"_sum"], out[f[2]+"_count"] = true, true
			out[f[2]+"_bucket"] = f[3] == "histogram"
		}
	}
	if len(out) < 20 {
		t.Fatalf("only %d series families on /metrics", len(out))
	}
	return out
}
