package bench

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/abacusdb/abacus/driver/cassandra"
)

// ReadTrace is what Cassandra's own tracing reports of one read: the live
// rows (cells, on 2.1 and 2.2) and the tombstones stepped over, of each of
// its queries at the replica that saw the most, summed. It is what a read costs in the store, apart from the
// machine it runs on. On the embedded store the driver counts them
// (embedded.ReadStats): the rows its reads returned and the tombstone
// cells they stepped over, and Points besides.
type ReadTrace struct {
	Live       int `json:"live"`
	Tombstones int `json:"tombstones"`
	// Replicas is how many replica read events the traces held when they
	// were read (events arrive asynchronously: a slow replica's may come
	// later and go uncounted).
	Replicas int `json:"replicas"`
	// Points, on the embedded store only, is every point Pebble's
	// iterators stepped over: live rows and tombstone cells, each version
	// and merge operand not yet compacted into one, and Pebble's own
	// deletions (embedded.ReadStats).
	Points int `json:"points,omitempty"`
}

// readActivity matches the trace event every replica logs for a read:
// "Read 1 live rows and 3 tombstone cells" (4.0 on), "Read 1 live and 3
// tombstone cells" (2.1 to 3.11), "... tombstoned cells" (2.0, early 3.0).
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

// traceIDs is a gocql.Tracer that keeps the ids of the traces made.
type traceIDs struct {
	mu  sync.Mutex
	ids [][]byte
}

func (t *traceIDs) Trace(id []byte) {
	t.mu.Lock()
	t.ids = append(t.ids, append([]byte(nil), id...))
	t.mu.Unlock()
}

// TraceReads runs read once with the Cassandra driver's read tracing on
// (cassandra.WithReadTrace) and returns what the replicas reported of the
// queries it made: for each query the most live rows and tombstones one
// replica stepped over (live rows and tombstones each the most of any
// replica, so they may come from different ones), summed over the queries.
// The read traced is the library's own, with its own bounds (a sharded
// read starts after the folded shards). Cassandra writes trace events
// asynchronously: see waitForTrace for how long each trace is waited for.
func TraceReads(ctx context.Context, session *gocql.Session, read func(ctx context.Context) error) (ReadTrace, error) {
	var tr traceIDs
	if err := read(cassandra.WithReadTrace(ctx, &tr)); err != nil {
		return ReadTrace{}, fmt.Errorf("bench: traced read: %w", err)
	}
	tr.mu.Lock()
	ids := tr.ids
	tr.mu.Unlock()
	if len(ids) == 0 {
		return ReadTrace{}, fmt.Errorf("bench: traced read: the read sent Cassandra no traced query")
	}
	// A read may be several queries (an events read: its record, then a
	// query per bucket); what it steps over is their sum.
	var out ReadTrace
	for _, id := range ids {
		got, err := waitForTrace(ctx, session, id)
		if err != nil {
			return ReadTrace{}, err
		}
		out.Live += got.Live
		out.Tombstones += got.Tombstones
		out.Replicas += got.Replicas
	}
	if out.Replicas == 0 {
		return ReadTrace{}, fmt.Errorf("bench: the traces of a read (%d) hold no replica's read event", len(ids))
	}
	return out, nil
}

// preparing is the request Cassandra names a statement's PREPARE by in a
// trace (gocql traces those too); it reads nothing.
const preparing = "Preparing CQL3 query"

// waitForTrace reads one trace once it is complete: its coordinator has
// finished it and, unless it is a PREPARE, a replica's read event is in.
// A finished read whose replicas' events are still missing after 10 s
// counts what is in (a replica that never logged is not counted).
func waitForTrace(ctx context.Context, session *gocql.Session, id []byte) (ReadTrace, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, request, done, err := readTraceEvents(ctx, session, id)
		if err != nil {
			return ReadTrace{}, err
		}
		if done && (got.Replicas > 0 || request == preparing) {
			return got, nil
		}
		if time.Now().After(deadline) {
			if done {
				return got, nil
			}
			return ReadTrace{}, fmt.Errorf("bench: a read's trace was not finished within 10 s")
		}
		select {
		case <-ctx.Done():
			return ReadTrace{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// readTraceEvents reads a trace: the largest counts any replica's read
// event reports, the request the trace is of, and whether the coordinator
// has finished it.
func readTraceEvents(ctx context.Context, session *gocql.Session, id []byte) (ReadTrace, string, bool, error) {
	uuid, err := gocql.UUIDFromBytes(id)
	if err != nil {
		return ReadTrace{}, "", false, fmt.Errorf("bench: trace id: %w", err)
	}
	var duration *int
	var request *string
	if err := session.Query(`SELECT duration, request FROM system_traces.sessions WHERE session_id = ?`, uuid).
		Consistency(gocql.One).ScanContext(ctx, &duration, &request); err != nil && err != gocql.ErrNotFound {
		return ReadTrace{}, "", false, fmt.Errorf("bench: reading a trace: %w", err)
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
		return ReadTrace{}, "", false, fmt.Errorf("bench: reading a trace's events: %w", err)
	}
	var req string
	if request != nil {
		req = *request
	}
	return got, req, duration != nil, nil
}
