package cassandra

import (
	"crypto/sha256"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/abacusdb/abacus/driver"
)

var testID = [16]byte{0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}

func TestQueueSchemaUsesGCGrace(t *testing.T) {
	t.Parallel()
	stmts, err := Schema(Config{Keyspace: "k1", QueueGCGrace: 90 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var messages, dead, dedup string
	for _, s := range stmts {
		switch {
		case strings.HasPrefix(s, "ALTER TABLE"):
		case strings.Contains(s, "k1.queue_messages"):
			messages = s
		case strings.Contains(s, "k1.queue_dead"):
			dead = s
		case strings.Contains(s, "k1.queue_dedup"):
			dedup = s
		}
	}
	for _, s := range []string{messages, dead, dedup} {
		if !strings.Contains(s, "gc_grace_seconds = 90") {
			t.Errorf("queue table without the configured gc_grace_seconds: %s", s)
		}
	}
	for _, want := range []string{"lock text static", "PRIMARY KEY ((queue, shard), due, id)", "CLUSTERING ORDER BY (due ASC, id ASC)"} {
		if !strings.Contains(messages, want) {
			t.Errorf("queue_messages lacks %q: %s", want, messages)
		}
	}
	def, err := Schema(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(def, "\n"), "gc_grace_seconds = 10800") {
		t.Errorf("default schema does not use the 3h default grace")
	}
	for _, bad := range []time.Duration{-time.Second, 1500 * time.Millisecond, time.Millisecond} {
		if _, err := Schema(Config{QueueGCGrace: bad}); err == nil || !strings.Contains(err.Error(), "QueueGCGrace") {
			t.Errorf("QueueGCGrace %v: error %v, want one naming QueueGCGrace", bad, err)
		}
	}
}

func TestQueueFromRow(t *testing.T) {
	t.Parallel()
	good := func() queueRow {
		return queueRow{Name: ptr("jobs"), Shards: ptr(16), ShardMS: ptr(int64(60_000)), MaxDeliveries: ptr(5),
			VisibilityMS: ptr(int64(30_000)), CreatedAt: ptr(time.UnixMilli(1_700_000_000_000))}
	}
	q, err := queueFromRow(good())
	if err != nil {
		t.Fatal(err)
	}
	// A row without spread (a queue made before the column) spreads over one.
	want := driver.Queue{Name: "jobs", Shards: 16, Spread: 1, Priorities: 1, ShardDuration: time.Minute, MaxDeliveries: 5,
		VisibilityTimeout: 30 * time.Second, CreatedAt: time.UnixMilli(1_700_000_000_000).UTC()}
	if *q != want {
		t.Fatalf("got %+v, want %+v", *q, want)
	}
	vals, err := queueValues(*q)
	if err != nil || vals[2] != int64(60_000) || vals[4] != int64(30_000) || vals[6] != 1 || vals[7] != 1 {
		t.Fatalf("queueValues = %v, %v", vals, err)
	}
	spread := good()
	spread.Spread = ptr(8)
	if q, err := queueFromRow(spread); err != nil || q.Spread != 8 {
		t.Fatalf("a row with spread 8 = %+v, %v", q, err)
	}
	levels := good()
	levels.Priorities = ptr(3)
	if q, err := queueFromRow(levels); err != nil || q.Priorities != 3 {
		t.Fatalf("a row with 3 priority levels = %+v, %v", q, err)
	}
	// The row a not-applied IF NOT EXISTS returns: with the column, and
	// without it (a queue an earlier release made).
	for _, tc := range []struct {
		m    map[string]any
		want int
	}{
		{map[string]any{"name": "jobs", "shards": 32, "shard_ms": int64(1000), "max_deliveries": 5, "visibility_ms": int64(1000), "created_at": time.UnixMilli(1), "spread": 8}, 8},
		{map[string]any{"name": "jobs", "shards": 32, "shard_ms": int64(1000), "max_deliveries": 5, "visibility_ms": int64(1000), "created_at": time.UnixMilli(1), "spread": 0}, 1},
		{map[string]any{"name": "jobs", "shards": 32, "shard_ms": int64(1000), "max_deliveries": 5, "visibility_ms": int64(1000), "created_at": time.UnixMilli(1)}, 1},
	} {
		var r queueRow
		r.fromMap(tc.m)
		if q, err := queueFromRow(r); err != nil || q.Spread != tc.want {
			t.Errorf("fromMap(%v) = %+v, %v; want spread %d", tc.m, q, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		mod  func(*queueRow)
		want string
	}{
		{"null name", func(r *queueRow) { r.Name = nil }, "name is null"},
		{"null shards", func(r *queueRow) { r.Shards = nil }, "shards is null"},
		{"null created_at", func(r *queueRow) { r.CreatedAt = nil }, "created_at is null"},
		{"negative shards", func(r *queueRow) { r.Shards = ptr(-1) }, "negative"},
		{"negative visibility", func(r *queueRow) { r.VisibilityMS = ptr(int64(-1)) }, "out of range"},
		{"huge shard_ms", func(r *queueRow) { r.ShardMS = ptr(int64(math.MaxInt64)) }, "out of range"},
		{"negative spread", func(r *queueRow) { r.Spread = ptr(-1) }, "negative spread"},
		{"negative priorities", func(r *queueRow) { r.Priorities = ptr(-1) }, "negative priorities"},
	} {
		r := good()
		tc.mod(&r)
		if _, err := queueFromRow(r); err == nil || !errors.Is(err, errBadRow) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want a malformed row error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestMessageFromRow(t *testing.T) {
	t.Parallel()
	due := time.UnixMilli(1_700_000_000_000)
	full := messageRow{Due: &due, ID: ptr(testID), EnqueuedAt: &due, Deliveries: ptr(2),
		VisibleAt: ptr(due.Add(time.Minute)), LastError: ptr("boom"), Body: ptr([]byte("hi"))}
	m, frag, err := messageFromRow(3, full, true)
	if err != nil || frag || m.Shard != 3 || string(m.Body) != "hi" || m.Deliveries != 2 || m.LastError != "boom" ||
		!m.VisibleAt.Equal(due.Add(time.Minute)) {
		t.Fatalf("messageFromRow = %+v, %v, %v", m, frag, err)
	}
	empty := full
	empty.Body, empty.VisibleAt, empty.LastError = nil, nil, nil
	m, _, err = messageFromRow(3, empty, true)
	if err != nil || m.Body == nil || len(m.Body) != 0 || !m.VisibleAt.IsZero() || m.LastError != "" {
		t.Fatalf("null body/visible/error: %+v, %v", m, err)
	}
	fragment := messageRow{Due: &due, ID: ptr(testID), Deliveries: ptr(1)}
	if m, frag, err := messageFromRow(3, fragment, true); err != nil || !frag || m.ID != driver.MessageID(testID) {
		t.Fatalf("fragment: %+v, %v, %v", m, frag, err)
	}
	for _, tc := range []struct {
		name string
		row  messageRow
	}{
		{"null due", messageRow{ID: ptr(testID), EnqueuedAt: &due, Deliveries: ptr(0)}},
		{"null id", messageRow{Due: &due, EnqueuedAt: &due, Deliveries: ptr(0)}},
		{"v4 id", messageRow{Due: &due, ID: ptr([16]byte{6: 0x40, 8: 0x80}), EnqueuedAt: &due, Deliveries: ptr(0)}},
		{"null deliveries", messageRow{Due: &due, ID: ptr(testID), EnqueuedAt: &due}},
		{"negative deliveries", messageRow{Due: &due, ID: ptr(testID), EnqueuedAt: &due, Deliveries: ptr(-1)}},
	} {
		if _, _, err := messageFromRow(0, tc.row, false); !errors.Is(err, errBadRow) {
			t.Errorf("%s: error %v, want a malformed row error", tc.name, err)
		}
	}
}

func TestDeadFromRow(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(1_700_000_000_000)
	row := deadRow{ID: ptr(testID), Shard: ptr(2), Due: &at, EnqueuedAt: &at, Deliveries: ptr(5), DiedAt: &at}
	l, err := deadFromRow(row)
	if err != nil || l.Body == nil || l.LastError != "" || l.Deliveries != 5 || l.Shard != 2 {
		t.Fatalf("deadFromRow = %+v, %v", l, err)
	}
	row.DiedAt = nil
	if _, err := deadFromRow(row); !errors.Is(err, errBadRow) {
		t.Fatalf("null died_at: %v", err)
	}
}

func TestShardStateFromRow(t *testing.T) {
	t.Parallel()
	at := time.UnixMilli(5)
	if s := shardStateFromRow(shardStateRow{}); s != (driver.QueueShardState{}) {
		t.Fatalf("empty row = %+v", s)
	}
	s := shardStateFromRow(shardStateRow{Lock: ptr("h"), Since: &at, Floor: &at})
	if s.Holder != "h" || !s.Since.Equal(at) || !s.Floor.Equal(at) {
		t.Fatalf("= %+v", s)
	}
	// A since without a holder (a lease that expired cell by cell) is
	// not a lease.
	if s := shardStateFromRow(shardStateRow{Since: &at}); !s.Since.IsZero() {
		t.Fatalf("since without holder = %+v", s)
	}
}

// FuzzMessageFromRow feeds arbitrary column values (nulls chosen by a bit
// mask) to the message decoder: it must not panic, and what it accepts
// must carry the row's values.
func FuzzMessageFromRow(f *testing.F) {
	f.Add(uint8(0), int64(1_700_000_000_000), testID[:], int64(1_700_000_000_000), 1, int64(0), "err", []byte("body"))
	f.Add(uint8(0x04), int64(0), testID[:], int64(0), 0, int64(0), "", []byte{})
	f.Add(uint8(0xff), int64(-1), []byte{}, int64(-1), -1, int64(-1), "", []byte(nil))
	f.Fuzz(func(t *testing.T, nulls uint8, dueMS int64, id []byte, enqMS int64, deliveries int, visMS int64, lastErr string, body []byte) {
		r := messageRow{Due: unlessNull(nulls, 0, time.UnixMilli(dueMS)), EnqueuedAt: unlessNull(nulls, 2, time.UnixMilli(enqMS)),
			Deliveries: unlessNull(nulls, 3, deliveries), VisibleAt: unlessNull(nulls, 4, time.UnixMilli(visMS)),
			LastError: unlessNull(nulls, 5, lastErr), Body: unlessNull(nulls, 6, body)}
		if len(id) == 16 {
			r.ID = unlessNull(nulls, 1, [16]byte(id))
		}
		m, frag, err := messageFromRow(1, r, true)
		if refused(t, err) {
			return
		}
		if !m.ID.Valid() || !m.Due.Equal(*r.Due) {
			t.Fatalf("accepted %+v from %+v", m, r)
		}
		if frag {
			return
		}
		if m.Deliveries < 0 || m.Body == nil || m.Deliveries != *r.Deliveries {
			t.Fatalf("accepted %+v", m)
		}
	})
}

func FuzzQueueFromRow(f *testing.F) {
	f.Add(uint8(0), "jobs", 16, int64(60_000), 5, int64(30_000), int64(1_700_000_000_000))
	f.Add(uint8(0x3f), "", -1, int64(-1), -1, int64(math.MaxInt64), int64(0))
	f.Fuzz(func(t *testing.T, nulls uint8, name string, shards int, shardMS int64, maxDel int, visMS int64, createdMS int64) {
		r := queueRow{Name: unlessNull(nulls, 0, name), Shards: unlessNull(nulls, 1, shards),
			ShardMS: unlessNull(nulls, 2, shardMS), MaxDeliveries: unlessNull(nulls, 3, maxDel),
			VisibilityMS: unlessNull(nulls, 4, visMS), CreatedAt: unlessNull(nulls, 5, time.UnixMilli(createdMS))}
		q, err := queueFromRow(r)
		if refused(t, err) {
			return
		}
		if q.Shards < 0 || q.ShardDuration < 0 || q.VisibilityTimeout < 0 {
			t.Fatalf("accepted negative values: %+v", q)
		}
		vals, err := queueValues(*q)
		if err != nil {
			t.Fatalf("decoded queue %+v does not encode: %v", q, err)
		}
		if vals[0] != name || vals[1] != shards || vals[2] != shardMS || vals[3] != maxDel || vals[4] != visMS {
			t.Fatalf("round trip: %v", vals)
		}
	})
}

func FuzzDeadFromRow(f *testing.F) {
	f.Add(uint8(0), testID[:], 3, int64(1), []byte("x"), int64(2), 5, "boom", int64(3))
	f.Add(uint8(0xff), []byte{1}, -1, int64(0), []byte(nil), int64(0), -1, "", int64(0))
	f.Fuzz(func(t *testing.T, nulls uint8, id []byte, shard int, dueMS int64, body []byte, enqMS int64, deliveries int, lastErr string, diedMS int64) {
		r := deadRow{Shard: unlessNull(nulls, 1, shard), Due: unlessNull(nulls, 2, time.UnixMilli(dueMS)),
			Body: unlessNull(nulls, 3, body), EnqueuedAt: unlessNull(nulls, 4, time.UnixMilli(enqMS)),
			Deliveries: unlessNull(nulls, 5, deliveries), LastError: unlessNull(nulls, 6, lastErr),
			DiedAt: unlessNull(nulls, 7, time.UnixMilli(diedMS))}
		if len(id) == 16 {
			r.ID = unlessNull(nulls, 0, [16]byte(id))
		}
		l, err := deadFromRow(r)
		if refused(t, err) {
			return
		}
		if !l.ID.Valid() || l.Body == nil || l.Shard < 0 || l.Deliveries < 0 {
			t.Fatalf("accepted %+v", l)
		}
	})
}

// FuzzDedupFromRow feeds the claim decoder rows of any shape: it must
// refuse or return a claim with a valid key, never panic.
func FuzzDedupFromRow(f *testing.F) {
	f.Add(2, int64(1_800_000_000_000), []byte{0x11, 6: 0x11, 8: 0x80, 15: 0}, int64(1_800_000_000_000), make([]byte, 32), int64(7), true)
	f.Add(-1, int64(0), []byte{}, int64(0), []byte{1}, int64(0), false)
	f.Fuzz(func(t *testing.T, shard int, due int64, id []byte, enqueued int64, hash []byte, ts int64, withID bool) {
		row := map[string]any{"shard": shard, "due": time.UnixMilli(due), "enqueued_at": time.UnixMilli(enqueued), "body_hash": hash, "written_at": ts}
		if withID && len(id) == 16 {
			row["id"] = gocql.UUID(id)
		}
		c, err := dedupFromRow(row)
		if err != nil {
			return
		}
		if !c.key.ID.Valid() || c.key.Shard < 0 || len(c.hash) != sha256.Size || c.enqueued.IsZero() {
			t.Fatalf("accepted a bad row as %+v", c)
		}
	})
}

func FuzzDecodeAttributes(f *testing.F) {
	f.Add(encodeAttributes(map[string]string{"tenant": "acme", "trace": "", "ünï": "välue"}))
	f.Add(encodeAttributes(map[string]string{"a": "1"}))
	f.Add([]byte{attributesVersion, 0})
	f.Add([]byte{attributesVersion, 2, 1, 'b', 0, 1, 'a', 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		attrs, err := decodeAttributes(b)
		if err != nil {
			return
		}
		if b == nil {
			if attrs != nil {
				t.Fatalf("a null cell decoded as %v", attrs)
			}
			return
		}
		if got := encodeAttributes(attrs); string(got) != string(b) {
			t.Fatalf("decodeAttributes(%x) = %v, which encodes as %x", b, attrs, got)
		}
	})
}

func TestAttributesRefusedEncodings(t *testing.T) {
	t.Parallel()
	for _, b := range [][]byte{
		{},                     // empty, not null
		{2, 1, 1, 'a', 0},      // unknown version
		{attributesVersion, 0}, // no attributes: written as no cell
		{attributesVersion, 2, 1, 'b', 0, 1, 'a', 0}, // names out of order
		{attributesVersion, 2, 1, 'a', 0, 1, 'a', 0}, // a name twice
		{attributesVersion, 1, 1, 'a', 0, 9},         // trailing bytes
		{attributesVersion, 1, 5, 'a'},               // a length past the end
		{attributesVersion, 0x81, 0, 1, 1, 'a', 0},   // a count not in its shortest form
	} {
		if attrs, err := decodeAttributes(b); err == nil {
			t.Errorf("decodeAttributes(%x) = %v, want an error", b, attrs)
		}
	}
}
