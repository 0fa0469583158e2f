package systemtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// startFaultServers starts n servers on the test's keyspace with args plus,
// per server, extra(i) (nil: none). The first creates the schema alone,
// the rest start at once. A server whose extra args make it never ready
// (a clock skewed beyond the limit) is waited for on /healthz when
// unready(i) says so.
func startFaultServers(t *testing.T, n int, args []string, extra func(i int) []string, unready func(i int) bool) []*server {
	t.Helper()
	start := func(i int) *server {
		a := append([]string(nil), args...)
		if extra != nil {
			a = append(a, extra(i)...)
		}
		path := "/readyz"
		if unready != nil && unready(i) {
			path = "/healthz"
		}
		return startServerWaiting(t, fmt.Sprintf("server-%d", i), path, a...)
	}
	servers := make([]*server, n)
	servers[0] = start(0)
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Go(func() { servers[i] = start(i) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return servers
}

// shortLifetimes are serve flags that make sharded shards final seconds
// after their mutator is born: lifetime, refusal margin, GC grace.
func shortLifetimes(lifetime, margin, grace time.Duration) []string {
	return []string{"--mutator-lifetime", lifetime.String(), "--refusal-margin", margin.String(), "--gc-grace", grace.String()}
}

// gcResult is the answer of POST /v1/gc.
type gcResult struct {
	Counters int `json:"counters"`
	Folded   int `json:"folded"`
	Skipped  int `json:"skipped"`
}

// gcAll asks s to collect every counter of namespace ns.
func gcAll(s *server, ns string) (gcResult, error) {
	a, body := postJSON(s.Base, "/v1/gc", map[string]any{"namespace": ns}, time.Minute)
	if a.out != acked {
		return gcResult{}, fmt.Errorf("POST /v1/gc on %s: %v", s.Name, a.err)
	}
	var r gcResult
	err := json.Unmarshal(body, &r)
	return r, err
}

// counterDetail is the part of a counter read that tells how much GC left.
type counterDetail struct {
	Value  int64 `json:"value"`
	Shards int   `json:"shards"`
	Events int   `json:"events"`
}

func readDetail(s *server, ns, counter string) (counterDetail, error) {
	var d counterDetail
	resp, err := faultClient.Get(fmt.Sprintf("%s/v1/namespaces/%s/counters/%s", s.Base, ns, counter))
	if err != nil {
		return d, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return d, fmt.Errorf("HTTP %d: %s", resp.StatusCode, body)
	}
	err = json.Unmarshal(body, &d)
	return d, err
}

// readAll reads every counter of every model through s.
func readAll(t *testing.T, s *server, models []faultModel, counters int) map[string]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := map[string]int64{}
	for _, m := range models {
		for c := range counters {
			name := fmt.Sprintf("c%d", c)
			v, err := readValue(ctx, s, m, name)
			if err != nil {
				fatalProblemf(t, "read %s/%s through %s: %v", m.ns, name, s.Name, err)
			}
			out[m.ns+"/"+name] = v
		}
	}
	return out
}

// getText GETs path from s and returns the status and body.
func getText(s *server, path string) (int, string, error) {
	resp, err := faultClient.Get(s.Base + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// metric returns the value of an unlabelled gauge or counter on /metrics.
func metric(s *server, name string) (float64, error) {
	_, body, err := getText(s, "/metrics")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == name {
			return strconv.ParseFloat(f[1], 64)
		}
	}
	return 0, fmt.Errorf("%s not on /metrics of %s", name, s.Name)
}

// raceGCUnderLoad runs the load cfg while all its servers collect the
// sharded and events namespaces ("sh" and "ev") at once, round after round,
// every `every`; after the load it races on for settle, so that what the
// load wrote becomes collectable, and ends with a last round on each.
func raceGCUnderLoad(t *testing.T, cfg loadConfig, every, settle time.Duration) (*faultLedger, *gcRacer) {
	t.Helper()
	racer := startGCRacer(cfg.servers(), []string{"sh", "ev"}, every)
	l := runFaultLoad(t, cfg)
	time.Sleep(settle)
	racer.finish()
	return l, racer
}

// gcRacer makes every given server POST /v1/gc for one namespace at the
// same moment, round after round, alternating over namespaces, until
// finished; it adds up what each namespace's collections folded and
// skipped, and remembers errors.
type gcRacer struct {
	servers    []*server
	namespaces []string

	mu      sync.Mutex
	folded  map[string]int
	skipped map[string]int
	rounds  int
	errs    []error
	stop    chan struct{}
	done    chan struct{}
}

func startGCRacer(servers []*server, namespaces []string, every time.Duration) *gcRacer {
	g := &gcRacer{servers: servers, namespaces: namespaces,
		folded: map[string]int{}, skipped: map[string]int{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(g.done)
		for r := 0; ; r++ {
			g.round(namespaces[r%len(namespaces)])
			select {
			case <-g.stop:
				return
			case <-time.After(every):
			}
		}
	}()
	return g
}

// round releases one collection per server at once (a closed channel is
// the starting gun) and waits for all of them.
func (g *gcRacer) round(ns string) {
	gun := make(chan struct{})
	var wg sync.WaitGroup
	for _, s := range g.servers {
		wg.Go(func() {
			<-gun
			r, err := gcAll(s, ns)
			g.mu.Lock()
			defer g.mu.Unlock()
			if err != nil {
				if len(g.errs) < 5 {
					g.errs = append(g.errs, err)
				}
				return
			}
			g.folded[ns] += r.Folded
			g.skipped[ns] += r.Skipped
		})
	}
	close(gun)
	wg.Wait()
	g.mu.Lock()
	g.rounds++
	g.mu.Unlock()
}

// finish stops the racing, then races one last round over each namespace,
// so that whatever became collectable by now is collected.
func (g *gcRacer) finish() {
	close(g.stop)
	<-g.done
	for _, ns := range g.namespaces {
		g.round(ns)
	}
}
