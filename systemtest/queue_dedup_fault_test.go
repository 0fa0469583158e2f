package systemtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/abacusdb/abacus/api"
)

// Fault: producer de-duplication under client timeouts and a SIGKILL. Three
// servers; 300 puts, each with its own dedup id, from 6 workers. The first
// attempt of each put gets 15 ms, each retry doubles that up to 3 s, and a
// put is retried — on the next live server — until a server answers 201.
// A third into the load one server is killed with SIGKILL. Every put ends
// acknowledged, and the queue then holds exactly 300 messages: none lost
// (a put that died between its claim and its message was completed by a
// retry elsewhere) and none stored twice (a retry of a put that did land
// stored nothing).
func TestFaultQueueDedupUnderTimeoutsAndKill(t *testing.T) {
	faultSuite(t)
	servers := startFaultServers(t, 3, cassandraArgs(t), nil, nil)
	const puts, workers, maxAttempts = 300, 6, 12
	if a, body := postJSON(servers[0].Base, "/v1/queues", json.RawMessage(`{"name":"dd","shards":4}`), 10*time.Second); a.out != acked {
		t.Fatalf("create queue: %v %s", a.err, body)
	}
	var (
		alive   atomic.Pointer[[]*server]
		done    atomic.Int64
		retried atomic.Int64
		killed  atomic.Bool
		mu      sync.Mutex
		firstID = map[int]string{} // the message id each put was first answered with
		missing []int
	)
	alive.Store(&servers)
	next := make(chan int)
	go func() {
		for i := range puts {
			next <- i
		}
		close(next)
	}()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range next {
				body := fmt.Sprintf(`{"messages":[{"body":"put %d","dedup_id":"put-%d"}]}`, i, i)
				answered := false
				for attempt := range maxAttempts {
					live := *alive.Load()
					s := live[(i+w+attempt)%len(live)]
					timeout := min(15*time.Millisecond<<attempt, 3*time.Second)
					a, resp := postJSON(s.Base, "/v1/queues/dd/messages", json.RawMessage(body), timeout)
					if a.out != acked {
						if a.out == failed && a.code != "" && a.code != "unavailable" && a.code != "not_applied" {
							t.Errorf("put %d refused: %v", i, a.err)
							break
						}
						retried.Add(1)
						continue
					}
					var out api.PutResponse
					if err := json.Unmarshal(resp, &out); err != nil || len(out.IDs) != 1 {
						t.Errorf("put %d: answer %s", i, resp)
						break
					}
					mu.Lock()
					if prev, ok := firstID[i]; ok && prev != out.IDs[0] {
						t.Errorf("put %d answered %s, then %s", i, prev, out.IDs[0])
					}
					firstID[i] = out.IDs[0]
					mu.Unlock()
					answered = true
					break
				}
				if !answered {
					mu.Lock()
					missing = append(missing, i)
					mu.Unlock()
				}
				if done.Add(1) == puts/3 && killed.CompareAndSwap(false, true) {
					survivors := []*server{servers[0], servers[2]}
					alive.Store(&survivors)
					servers[1].Kill()
					t.Logf("killed %s with SIGKILL after %d puts", servers[1].Name, puts/3)
				}
			}
		})
	}
	wg.Wait()
	if len(missing) > 0 {
		t.Fatalf("%d puts never acknowledged in %d attempts each: %v", len(missing), maxAttempts, missing)
	}
	if retried.Load() == 0 {
		t.Fatal("no put was retried: the fault was not injected (every put answered within 15 ms)")
	}
	code, resp := getJSON(t, servers[0], "/v1/queues/dd/stats")
	var st api.QueueStats
	if code != http.StatusOK || json.Unmarshal(resp, &st) != nil {
		t.Fatalf("stats: %d %s", code, resp)
	}
	t.Logf("%d puts, %d attempts retried, %d messages stored", puts, retried.Load(), st.Messages)
	if st.Messages != puts {
		t.Fatalf("%d messages stored for %d dedup ids, want exactly one each", st.Messages, puts)
	}
}

func getJSON(t *testing.T, s *server, path string) (int, []byte) {
	t.Helper()
	resp, err := httpClient.Get(s.Base + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
