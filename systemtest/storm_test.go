package systemtest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus"
)

func createNamespace(t *testing.T, s *server, body string) {
	t.Helper()
	resp, err := httpClient.Post(s.Base+"/v1/namespaces", "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create namespace %s: HTTP %d", body, resp.StatusCode)
	}
}

// The retry storm: every increment is sent one to three times, some of
// the copies at the same moment, to different servers. Events counters
// must end exactly at the sum of the distinct requests; the native
// counters, hit by the same storm in the same run, count every copy.
func TestRetryStormEventsVsNative(t *testing.T) {
	servers := startServers(t, 3, cassandraArgs(t))
	createNamespace(t, servers[0], `{"name":"ev","model":"events"}`)
	createNamespace(t, servers[0], `{"name":"nat","model":"native"}`)
	const requests, counters, workers = 1200, 8, 24

	type send struct {
		counter string
		delta   int64
		id      string
		copies  int
	}
	rng := rand.New(rand.NewPCG(7, 11))
	sends := make([]send, requests)
	for i := range sends {
		sends[i] = send{
			counter: fmt.Sprintf("c%d", rng.IntN(counters)),
			delta:   1 + rng.Int64N(100),
			id:      abacus.NewRequestID(),
			copies:  1 + rng.IntN(3),
		}
	}
	type tally struct{ distinct, copiesAcked, unknown, failed int64 }
	var mu sync.Mutex
	want := map[string]map[string]*tally{"ev": {}, "nat": {}}
	for ns := range want {
		for c := range counters {
			want[ns][fmt.Sprintf("c%d", c)] = &tally{}
		}
	}

	work := make(chan send)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for s := range work {
				for _, ns := range []string{"ev", "nat"} {
					// Copies go out at once to different servers, so some
					// retries race the original.
					var cwg sync.WaitGroup
					outs := make([]outcome, s.copies)
					for k := range s.copies {
						cwg.Go(func() {
							outs[k], _ = servers[(k+int(s.delta))%len(servers)].add(ns, s.counter, s.delta, s.id)
						})
					}
					cwg.Wait()
					mu.Lock()
					tl := want[ns][s.counter]
					anyAcked := false
					for _, o := range outs {
						switch o {
						case acked:
							tl.copiesAcked += s.delta
							anyAcked = true
						case unknown:
							tl.unknown++
						default:
							tl.failed++
						}
					}
					if anyAcked {
						tl.distinct += s.delta
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, s := range sends {
		work <- s
	}
	close(work)
	wg.Wait()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var evDrift, natDrift int64
	for c := range counters {
		name := fmt.Sprintf("c%d", c)
		ev, nat := want["ev"][name], want["nat"][name]
		if ev.unknown+ev.failed+nat.unknown+nat.failed != 0 {
			t.Fatalf("%s: every server was up, yet events had %d unknown/%d failed and native %d/%d sends", name, ev.unknown, ev.failed, nat.unknown, nat.failed)
		}
		for _, s := range servers {
			gotEv, err := s.get(ctx, "ev", name)
			if err != nil {
				t.Fatal(err)
			}
			gotNat, err := s.get(ctx, "nat", name)
			if err != nil {
				t.Fatal(err)
			}
			if gotEv != ev.distinct {
				t.Errorf("events %s via %s = %d, want the distinct sum %d", name, s.Name, gotEv, ev.distinct)
			}
			if gotNat != nat.copiesAcked {
				t.Errorf("native %s via %s = %d, want %d (every acknowledged copy)", name, s.Name, gotNat, nat.copiesAcked)
			}
			if s == servers[0] {
				evDrift += gotEv - ev.distinct
				natDrift += gotNat - nat.distinct
				t.Logf("%s: distinct sum %d | events %d (drift %+d) | native %d (drift %+d)", name, ev.distinct, gotEv, gotEv-ev.distinct, gotNat, gotNat-nat.distinct)
			}
		}
	}
	total := 0
	for _, s := range sends {
		total += s.copies
	}
	t.Logf("retry storm: %d requests sent %d times to 3 servers; drift events %+d, native %+d", requests, total, evDrift, natDrift)
	if natDrift <= 0 {
		t.Fatalf("native counters show no drift (%+d) although %d requests were sent more than once", natDrift, total-requests)
	}
}
