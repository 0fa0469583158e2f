package bench

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// ReadTrace is what Cassandra's own tracing reports of one read: the live
// rows and the tombstones the replica that saw the most read. It is what
// a read costs in the store, apart from the machine it runs on.
type ReadTrace struct {
	Live       int `json:"live"`
	Tombstones int `json:"tombstones"`
	// Replicas is how many replicas reported a read (one per replica the
	// read's consistency level asked).
	Replicas int `json:"replicas"`
}

// readActivity matches the trace event every replica logs for a read:
// "Read 1 live rows and 3 tombstone cells" (3.0 on), "Read 1 live and 3
// tombstoned cells" (2.1).
var readActivity = regexp.MustCompile(`^Read (\d+) live (?:rows )?and (\d+) tombstoned? cells`)

// parseReadActivity returns the counts a read's trace event gives.
func parseReadActivity(activity string) (live, tombstones int, ok bool) {
	m := readActivity.FindStringSubmatch(activity)
	if m == nil {
		return 0, 0, false
	}
	live, err1 := strconv.Atoi(m[1])
	tombstones, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return live, tombstones, true
}

// traceID is a gocql.Tracer that keeps the id of the query's trace.
type traceID struct {
	mu sync.Mutex
	id []byte
}

func (t *traceID) Trace(id []byte) {
	t.mu.Lock()
	t.id = append([]byte(nil), id...)
	t.mu.Unlock()
}

// TraceRead runs stmt, a read, once with tracing on at consistency cl and
// returns what its replicas reported. Cassandra writes trace events
// asynchronously, so it waits (up to 10 s) for the trace's session to be
// complete and for each replica's read event.
func TraceRead(ctx context.Context, session *gocql.Session, cl gocql.Consistency, stmt string, args ...any) (ReadTrace, error) {
	var tr traceID
	iter := session.Query(stmt, args...).Consistency(cl).Trace(&tr).IterContext(ctx)
	for iter.Scanner().Next() {
	}
	if err := iter.Close(); err != nil {
		return ReadTrace{}, fmt.Errorf("bench: traced read: %w", err)
	}
	tr.mu.Lock()
	id := tr.id
	tr.mu.Unlock()
	if id == nil {
		return ReadTrace{}, fmt.Errorf("bench: traced read: Cassandra returned no trace id")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, done, err := readTraceEvents(ctx, session, id)
		if err != nil {
			return ReadTrace{}, err
		}
		if done && got.Replicas > 0 {
			return got, nil
		}
		if time.Now().After(deadline) {
			return ReadTrace{}, fmt.Errorf("bench: the trace of a read reported no replica read within 10 s")
		}
		select {
		case <-ctx.Done():
			return ReadTrace{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// readTraceEvents reads a trace: the largest counts any replica's read
// event reports, and whether the coordinator has finished the trace.
func readTraceEvents(ctx context.Context, session *gocql.Session, id []byte) (ReadTrace, bool, error) {
	uuid, err := gocql.UUIDFromBytes(id)
	if err != nil {
		return ReadTrace{}, false, fmt.Errorf("bench: trace id: %w", err)
	}
	var duration *int
	if err := session.Query(`SELECT duration FROM system_traces.sessions WHERE session_id = ?`, uuid).
		Consistency(gocql.One).ScanContext(ctx, &duration); err != nil && err != gocql.ErrNotFound {
		return ReadTrace{}, false, fmt.Errorf("bench: reading a trace: %w", err)
	}
	var got ReadTrace
	var activity string
	iter := session.Query(`SELECT activity FROM system_traces.events WHERE session_id = ?`, uuid).
		Consistency(gocql.One).IterContext(ctx)
	for iter.Scan(&activity) {
		if live, tomb, ok := parseReadActivity(activity); ok {
			got.Replicas++
			got.Live, got.Tombstones = max(got.Live, live), max(got.Tombstones, tomb)
		}
	}
	if err := iter.Close(); err != nil {
		return ReadTrace{}, false, fmt.Errorf("bench: reading a trace's events: %w", err)
	}
	return got, duration != nil, nil
}
