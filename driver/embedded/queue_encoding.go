package embedded

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// ---- queue keys ------------------------------------------------------------
//
// Queue keys use the same length-prefixed components as the counter tables,
// but shard, due time and id are fixed-width big-endian values, so within a
// queue's shard the keys sort by due time and then by the time in the id,
// which is the clustering order Cassandra uses:
//
//	0x04 | queue                         queue record
//	0x05 | queue | shard | due | id      message
//	0x06 | queue | shard                 shard state
//	0x07 | queue | id                    dead letter
//	0x08 | queue | dedup id              producer de-duplication record (queue_dedup.go)
//
// shard is 4 bytes; due is 8 bytes, the Unix milliseconds with the sign bit
// flipped so that negative times sort first; id is the UUID with its time
// fields moved to the front (time_hi, time_mid, time_low, then the rest),
// so ids sort by time.

const (
	shardLen = 4
	dueLen   = 8
	idLen    = 16
)

func appendFixed(b []byte, v []byte) []byte {
	b = append(b, byte(len(v)))
	return append(b, v...)
}

func shardBytes(s int) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(s))
}

func dueBytes(t time.Time) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(t.UnixMilli())^(1<<63))
}

// sortableID reorders a version 1 UUID so that byte order is time order.
func sortableID(id driver.MessageID) []byte {
	b := make([]byte, 0, idLen)
	b = append(b, id[6], id[7], id[4], id[5], id[0], id[1], id[2], id[3])
	return append(b, id[8:]...)
}

func idFromSortable(b []byte) driver.MessageID {
	var id driver.MessageID
	id[6], id[7], id[4], id[5], id[0], id[1], id[2], id[3] = b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]
	copy(id[8:], b[8:])
	return id
}

func queueKey(name string) []byte {
	return appendComponent([]byte{tableQueues}, name)
}

// queueMessagesPrefix is the prefix of every message of one queue.
func queueMessagesPrefix(queue string) []byte {
	return appendComponent([]byte{tableQueueMessages}, queue)
}

// shardMessagesPrefix is the prefix of every message of one shard.
func shardMessagesPrefix(queue string, shard int) []byte {
	return appendFixed(queueMessagesPrefix(queue), shardBytes(shard))
}

// messageDuePrefix is the prefix of the shard's messages due at t; it is
// also the lowest key of those due at t or later.
func messageDuePrefix(queue string, shard int, due time.Time) []byte {
	return appendFixed(shardMessagesPrefix(queue, shard), dueBytes(due))
}

func messageKey(queue string, k driver.MessageKey) []byte {
	return appendFixed(messageDuePrefix(queue, k.Shard, k.Due), sortableID(k.ID))
}

func shardStateKey(queue string, shard int) []byte {
	return appendFixed(appendComponent([]byte{tableQueueShards}, queue), shardBytes(shard))
}

func deadPrefix(queue string) []byte {
	return appendComponent([]byte{tableQueueDead}, queue)
}

func deadKey(queue string, id driver.MessageID) []byte {
	return appendFixed(deadPrefix(queue), sortableID(id))
}

// queueKeyParts is a decoded queue key.
type queueKeyParts struct {
	Table byte
	Queue string
	Shard int
	Due   time.Time
	ID    driver.MessageID
}

// queueKeyLayout lists each queue table's fixed-width components after the
// queue name.
var queueKeyLayout = map[byte][]int{
	tableQueues:        {},
	tableQueueMessages: {shardLen, dueLen, idLen},
	tableQueueShards:   {shardLen},
	tableQueueDead:     {idLen},
}

// decodeQueueKey splits a stored queue key. Keys come from disk, so any
// byte string must yield either a result or an error.
func decodeQueueKey(key []byte) (queueKeyParts, error) {
	var p queueKeyParts
	if len(key) == 0 {
		return p, fmt.Errorf("%w: empty", errBadKey)
	}
	p.Table = key[0]
	layout, ok := queueKeyLayout[p.Table]
	if !ok {
		return p, fmt.Errorf("%w: 0x%02x is not a queue table", errBadKey, p.Table)
	}
	r := newReader(key[1:])
	p.Queue = r.String("queue name")
	if r.Err != nil {
		return p, fmt.Errorf("%w: %v", errBadKey, r.Err)
	}
	for _, width := range layout {
		if len(r.B) < 1+width || int(r.B[0]) != width {
			return p, fmt.Errorf("%w: table 0x%02x wants a %d-byte component", errBadKey, p.Table, width)
		}
		v := r.B[1 : 1+width]
		r.B = r.B[1+width:]
		switch width {
		case shardLen:
			s := binary.BigEndian.Uint32(v)
			if s > math.MaxInt32 {
				return p, fmt.Errorf("%w: shard %d out of range", errBadKey, s)
			}
			p.Shard = int(s)
		case dueLen:
			p.Due = time.UnixMilli(int64(binary.BigEndian.Uint64(v) ^ (1 << 63))).UTC()
		case idLen:
			p.ID = idFromSortable(v)
		}
	}
	if len(r.B) != 0 {
		return p, fmt.Errorf("%w: %d trailing bytes", errBadKey, len(r.B))
	}
	return p, nil
}

// encodeQueueKey rebuilds the key decodeQueueKey decoded; the fuzz test
// checks the two agree.
func encodeQueueKey(p queueKeyParts) []byte {
	switch p.Table {
	case tableQueues:
		return queueKey(p.Queue)
	case tableQueueMessages:
		return messageKey(p.Queue, driver.MessageKey{Shard: p.Shard, Due: p.Due, ID: p.ID})
	case tableQueueShards:
		return shardStateKey(p.Queue, p.Shard)
	case tableQueueDead:
		return deadKey(p.Queue, p.ID)
	}
	return nil
}

// ---- queue values ----------------------------------------------------------
//
// Every value starts with a format version byte (currently 1); a reader
// refuses versions it does not know. Times are Unix milliseconds (int64,
// big-endian) except where noted; noTime stands for the zero time. Strings
// are a uvarint length and the bytes. Each value has exactly one valid
// encoding, so decode followed by encode gives back the same bytes.
//
//	queue record:  version | name | shards uvarint | shard duration ns int64 |
//	               max deliveries uvarint | visibility timeout ns int64 |
//	               created_at secs int64 | created_at nanos uint32 (< 1e9)
//	message:       version | enqueued_at | deliveries uvarint | visible_at |
//	               last error | [attributes] | body (the rest)
//	shard state:   version | holder | since | lease expiry (Unix ns, the
//	               store's clock) | floor
//	dead letter:   version | shard uvarint | due | enqueued_at |
//	               deliveries uvarint | last error | died_at | [attributes] |
//	               body (the rest)
//
// [attributes] is present only in version 2 (withAttributesVersion): a
// uvarint count (at least 1) and as many name/value pairs, names
// ascending.

const queueValueVersion byte = 1

// noTime encodes the zero time.Time, which has no millisecond value worth
// keeping (it lies before any time the queue writes).
const noTime = math.MinInt64

func appendTime(b []byte, t time.Time) []byte {
	v := int64(noTime)
	if !t.IsZero() {
		v = t.UnixMilli()
	}
	return binary.BigEndian.AppendUint64(b, uint64(v))
}

func (r *reader) time(what string) time.Time {
	v := int64(r.Uint64(what))
	if r.Err != nil || v == noTime {
		return time.Time{}
	}
	t := time.UnixMilli(v).UTC()
	if t.IsZero() {
		// The zero time has its own encoding; accepting its millisecond
		// value too would give one value two encodings.
		r.Fail("%s encodes the zero time without the marker", what)
	}
	return t
}

// ms truncates t to the millisecond precision the queue tables keep,
// leaving the zero time alone.
func ms(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return time.UnixMilli(t.UnixMilli()).UTC()
}

func (r *reader) int(what string) int {
	v := r.Uvarint(what)
	if r.Err == nil && v > math.MaxInt32 {
		r.Fail("%s %d out of range", what, v)
	}
	return int(v)
}

func (r *reader) version(what string) {
	if v := r.Byte("version"); r.Err == nil && v != queueValueVersion {
		r.Fail("%s format version %d, this build reads only version %d", what, v, queueValueVersion)
	}
}

// withAttributesVersion marks a message or dead letter value that carries
// attributes: after the fields of version 1 and before the body, a uvarint
// count and that many name/value string pairs in ascending name order. A
// value without attributes keeps version 1, which earlier builds read.
const withAttributesVersion byte = 2

// messageVersion reads a message or dead letter value's version and
// reports whether attributes follow.
func (r *reader) messageVersion(what string) (attrs bool) {
	switch v := r.Byte("version"); {
	case r.Err != nil:
	case v == withAttributesVersion:
		return true
	case v != queueValueVersion:
		r.Fail("%s format version %d, this build reads versions %d and %d", what, v, queueValueVersion, withAttributesVersion)
	}
	return false
}

// appendVersion starts a message or dead letter value.
func appendVersion(b []byte, attrs map[string]string) []byte {
	if len(attrs) > 0 {
		return append(b, withAttributesVersion)
	}
	return append(b, queueValueVersion)
}

func appendAttributes(b []byte, attrs map[string]string) []byte {
	if len(attrs) == 0 {
		return b
	}
	b = binary.AppendUvarint(b, uint64(len(attrs)))
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		b = appendString(b, name)
		b = appendString(b, attrs[name])
	}
	return b
}

// attributes reads what appendAttributes wrote. Names must come in
// ascending order without repeats, so a value has one encoding, and the
// count is bounded by the bytes left before any map is made.
func (r *reader) attributes() map[string]string {
	n := r.Uvarint("attribute count")
	if r.Err != nil {
		return nil
	}
	if n == 0 || n > uint64(len(r.B))/2 {
		r.Fail("attribute count %d does not fit the %d bytes left", n, len(r.B))
		return nil
	}
	attrs := make(map[string]string, n)
	prev := ""
	for i := range n {
		name, value := r.String("attribute name"), r.String("attribute value")
		if r.Err != nil {
			return nil
		}
		if i > 0 && name <= prev {
			r.Fail("attribute %q after %q: names out of order", name, prev)
			return nil
		}
		attrs[name], prev = value, name
	}
	return attrs
}

func (r *reader) done(what string) error {
	if r.Err == nil && len(r.B) != 0 {
		r.Fail("%d trailing bytes after %s", len(r.B), what)
	}
	return r.Err
}

// spreadQueueVersion marks a queue record whose windows spread over more
// than one shard: the fields of version 1, then the spread as a uvarint. A
// record with spread 1 keeps version 1, which earlier builds read.
const spreadQueueVersion byte = 2

// generationQueueVersion marks the record of a deleted queue, or of one
// whose name was deleted before: the fields of version 1, then the spread
// (uvarint, at least 1), the generation (uvarint) and the deletion time
// (appendTime; noTime for a live queue). Records of live first
// generations keep versions 1 and 2, which earlier builds read.
const generationQueueVersion byte = 3

// prioritiesQueueVersion marks the record of a queue with more than one
// priority level: the fields of version 3, then the number of levels
// (uvarint, at least 2). Queues of one level keep the earlier versions;
// a build that predates priorities refuses this record rather than serve
// only the lowest level's shards.
const prioritiesQueueVersion byte = 4

func encodeQueue(q *driver.Queue) []byte {
	b := make([]byte, 0, 64+len(q.Name))
	version := queueValueVersion
	switch {
	case q.Priorities > 1:
		version = prioritiesQueueVersion
	case q.Generation > 0 || !q.DeletedAt.IsZero():
		version = generationQueueVersion
	case q.Spread > 1:
		version = spreadQueueVersion
	}
	b = append(b, version)
	b = appendString(b, q.Name)
	b = binary.AppendUvarint(b, uint64(q.Shards))
	b = binary.BigEndian.AppendUint64(b, uint64(q.ShardDuration))
	b = binary.AppendUvarint(b, uint64(q.MaxDeliveries))
	b = binary.BigEndian.AppendUint64(b, uint64(q.VisibilityTimeout))
	b = binary.BigEndian.AppendUint64(b, uint64(q.CreatedAt.Unix()))
	b = binary.BigEndian.AppendUint32(b, uint32(q.CreatedAt.Nanosecond()))
	switch version {
	case spreadQueueVersion:
		b = binary.AppendUvarint(b, uint64(q.Spread))
	case generationQueueVersion, prioritiesQueueVersion:
		b = binary.AppendUvarint(b, uint64(max(q.Spread, 1)))
		b = binary.AppendUvarint(b, uint64(q.Generation))
		b = appendTime(b, q.DeletedAt)
	}
	if version == prioritiesQueueVersion {
		b = binary.AppendUvarint(b, uint64(q.Priorities))
	}
	return b
}

func decodeQueue(b []byte) (*driver.Queue, error) {
	r := newReader(b)
	version := r.Byte("version")
	switch {
	case r.Err != nil:
	case version < queueValueVersion || version > prioritiesQueueVersion:
		r.Fail("queue record format version %d, this build reads versions %d to %d", version, queueValueVersion, prioritiesQueueVersion)
	}
	q := &driver.Queue{}
	q.Name = r.String("name")
	q.Shards = r.int("shards")
	q.ShardDuration = time.Duration(r.Uint64("shard duration"))
	q.MaxDeliveries = r.int("max deliveries")
	q.VisibilityTimeout = time.Duration(r.Uint64("visibility timeout"))
	secs := int64(r.Uint64("created_at"))
	nanos := r.Uint32("created_at")
	if r.Err == nil && nanos >= 1e9 {
		r.Fail("created_at nanoseconds %d out of range", nanos)
	}
	q.Spread, q.Priorities = 1, 1
	switch version {
	case spreadQueueVersion:
		if q.Spread = r.int("spread"); r.Err == nil && q.Spread < 2 {
			r.Fail("spread %d in a version %d record", q.Spread, spreadQueueVersion)
		}
	case generationQueueVersion, prioritiesQueueVersion:
		if q.Spread = r.int("spread"); r.Err == nil && q.Spread < 1 {
			r.Fail("spread %d in a version %d record", q.Spread, version)
		}
		if g := r.Uvarint("generation"); r.Err == nil && g > math.MaxInt64 {
			r.Fail("generation %d out of range", g)
		} else {
			q.Generation = int64(g)
		}
		q.DeletedAt = r.time("deleted_at")
		if r.Err == nil && version == generationQueueVersion && q.Generation == 0 && q.DeletedAt.IsZero() {
			r.Fail("a live first generation in a version %d record", generationQueueVersion)
		}
	}
	if version == prioritiesQueueVersion {
		if q.Priorities = r.int("priorities"); r.Err == nil && q.Priorities < 2 {
			r.Fail("%d priority levels in a version %d record", q.Priorities, prioritiesQueueVersion)
		}
	}
	if err := r.done("queue record"); err != nil {
		return nil, err
	}
	if q.ShardDuration < 0 || q.VisibilityTimeout < 0 {
		return nil, fmt.Errorf("%w: negative duration in queue record", errCorrupt)
	}
	q.CreatedAt = time.Unix(secs, int64(nanos)).UTC()
	return q, nil
}

func encodeMessage(m *driver.Message) []byte {
	b := make([]byte, 0, 32+len(m.LastError)+len(m.Body))
	b = appendVersion(b, m.Attributes)
	b = appendTime(b, m.EnqueuedAt)
	b = appendDeliveryState(b, deliveryState{m.Deliveries, m.VisibleAt, m.LastError})
	b = appendAttributes(b, m.Attributes)
	return append(b, m.Body...)
}

// deliveryState is the part of a stored message that changes after its
// put: how often it was handed out, when it is visible again, and the last
// error a consumer reported.
type deliveryState struct {
	Deliveries int
	VisibleAt  time.Time
	LastError  string
}

// appendDeliveryState and readDeliveryState are the one place that lays
// out a message value's delivery state: encodeMessage, decodeMessage and
// redeliver all go through them.
func appendDeliveryState(b []byte, st deliveryState) []byte {
	b = binary.AppendUvarint(b, uint64(st.Deliveries))
	b = appendTime(b, st.VisibleAt)
	return appendString(b, st.LastError)
}

func (r *reader) deliveryState() deliveryState {
	var st deliveryState
	st.Deliveries = r.int("deliveries")
	st.VisibleAt = r.time("visible_at")
	st.LastError = r.String("last error")
	return st
}

// redeliver returns the stored message value raw with its delivery state
// replaced by what change makes of it, or nil when change declines (write
// false). What follows that state, the attributes and the body, is copied
// as it stands rather than decoded and encoded again: a consumer rewrites
// every message it hands out, and the full round trip was a tenth of its
// processor time. Reads still check the whole value.
func redeliver(raw []byte, change func(deliveryState) (deliveryState, bool)) ([]byte, error) {
	r := newReader(raw)
	r.messageVersion("message")
	r.time("enqueued_at")
	head := len(raw) - len(r.B)
	st := r.deliveryState()
	if r.Err != nil {
		return nil, r.Err
	}
	tail := r.B
	st, write := change(st)
	if !write {
		return nil, nil
	}
	b := make([]byte, 0, head+binary.MaxVarintLen64+8+binary.MaxVarintLen64+len(st.LastError)+len(tail))
	st.VisibleAt = ms(st.VisibleAt)
	b = appendDeliveryState(append(b, raw[:head]...), st)
	return append(b, tail...), nil
}

// decodeMessage decodes a message value into m, leaving its key alone.
// The body aliases b unless withBody is false, in which case it is nil.
func decodeMessage(b []byte, m *driver.Message, withBody bool) error {
	r := newReader(b)
	attrs := r.messageVersion("message")
	m.EnqueuedAt = r.time("enqueued_at")
	st := r.deliveryState()
	m.Deliveries, m.VisibleAt, m.LastError = st.Deliveries, st.VisibleAt, st.LastError
	m.Attributes = nil
	if attrs {
		// Read (and checked) either way; handed out, as the body is,
		// only when asked for: the Cassandra driver reads neither then.
		if a := r.attributes(); withBody {
			m.Attributes = a
		}
	}
	if r.Err != nil {
		return r.Err
	}
	m.Body = nil
	if withBody {
		m.Body = r.B
	}
	return nil
}

// shardState is the stored form of driver.QueueShardState plus the lease's
// expiry on the store's clock.
type shardState struct {
	driver.QueueShardState
	// Expires is when the lease lapses, in Unix nanoseconds; a lease whose
	// expiry has passed is free whatever Holder says.
	Expires int64
}

func encodeShardState(s *shardState) []byte {
	b := make([]byte, 0, 32+len(s.Holder))
	b = append(b, queueValueVersion)
	b = appendString(b, s.Holder)
	b = appendTime(b, s.Since)
	b = binary.BigEndian.AppendUint64(b, uint64(s.Expires))
	return appendTime(b, s.Floor)
}

func decodeShardState(b []byte) (*shardState, error) {
	r := newReader(b)
	r.version("shard state")
	s := &shardState{}
	s.Holder = r.String("holder")
	s.Since = r.time("since")
	s.Expires = int64(r.Uint64("lease expiry"))
	s.Floor = r.time("floor")
	if err := r.done("shard state"); err != nil {
		return nil, err
	}
	return s, nil
}

func encodeDead(l *driver.DeadLetter) []byte {
	b := make([]byte, 0, 48+len(l.LastError)+len(l.Body))
	b = appendVersion(b, l.Attributes)
	b = binary.AppendUvarint(b, uint64(l.Shard))
	b = appendTime(b, l.Due)
	b = appendTime(b, l.EnqueuedAt)
	b = binary.AppendUvarint(b, uint64(l.Deliveries))
	b = appendString(b, l.LastError)
	b = appendTime(b, l.DiedAt)
	b = appendAttributes(b, l.Attributes)
	return append(b, l.Body...)
}

// decodeDead decodes a dead letter value; its id comes from the key. The
// body is copied.
func decodeDead(b []byte, id driver.MessageID) (*driver.DeadLetter, error) {
	r := newReader(b)
	attrs := r.messageVersion("dead letter")
	l := &driver.DeadLetter{}
	l.ID = id
	l.Shard = r.int("shard")
	l.Due = r.time("due")
	l.EnqueuedAt = r.time("enqueued_at")
	l.Deliveries = r.int("deliveries")
	l.LastError = r.String("last error")
	l.DiedAt = r.time("died_at")
	if attrs {
		l.Attributes = r.attributes()
	}
	if r.Err != nil {
		return nil, r.Err
	}
	l.Body = append([]byte{}, r.B...)
	return l, nil
}
