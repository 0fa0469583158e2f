package embedded

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// Queue keys and values come from disk like every other stored byte: the
// decoders must never panic, and what they accept must re-encode to the
// same bytes.

var fuzzID = driver.MessageID{0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}

func fuzzMessage() driver.Message {
	return driver.Message{
		MessageKey: driver.MessageKey{Shard: 7, Due: time.UnixMilli(1_700_000_000_123).UTC(), ID: fuzzID},
		Body:       []byte("hello"),
		EnqueuedAt: time.UnixMilli(1_700_000_000_000).UTC(),
		Deliveries: 2,
		VisibleAt:  time.UnixMilli(1_700_000_030_000).UTC(),
		LastError:  "exit status 1",
	}
}

func FuzzDecodeQueueKey(f *testing.F) {
	f.Add(queueKey("jobs"))
	f.Add(messageKey("jobs", fuzzMessage().MessageKey))
	f.Add(messageKey("", driver.MessageKey{Due: time.UnixMilli(-5).UTC()}))
	f.Add(shardStateKey("jobs", 4095))
	f.Add(deadKey("jobs", fuzzID))
	fuzzRoundTrip(f, "decodeQueueKey", decodeQueueKey, encodeQueueKey)
}

func FuzzDecodeQueueRecord(f *testing.F) {
	f.Add(encodeQueue(&driver.Queue{Name: "jobs", Shards: 16, ShardDuration: time.Minute, MaxDeliveries: 5,
		VisibilityTimeout: 30 * time.Second, CreatedAt: time.Unix(1_700_000_000, 5).UTC()}))
	f.Add(encodeQueue(&driver.Queue{}))
	f.Add(encodeQueue(&driver.Queue{Name: "burst", Shards: 32, Spread: 8, ShardDuration: time.Second, MaxDeliveries: 5,
		VisibilityTimeout: 30 * time.Second, CreatedAt: time.Unix(1_700_000_000, 5).UTC()}))
	f.Add(encodeQueue(&driver.Queue{Name: "gone", Shards: 4, ShardDuration: time.Minute, CreatedAt: time.Unix(1_700_000_000, 5).UTC(),
		DeletedAt: time.UnixMilli(1_700_000_100_000).UTC()}))
	f.Add(encodeQueue(&driver.Queue{Name: "again", Shards: 8, Spread: 2, ShardDuration: time.Minute, CreatedAt: time.Unix(1_700_000_000, 5).UTC(),
		Generation: 3}))
	f.Add(encodeQueue(&driver.Queue{Name: "levels", Shards: 8, Spread: 2, Priorities: 3, ShardDuration: time.Minute, CreatedAt: time.Unix(1_700_000_000, 5).UTC()}))
	f.Add(encodeQueue(&driver.Queue{Name: "levels-again", Shards: 4, Priorities: 2, ShardDuration: time.Minute, CreatedAt: time.Unix(1_700_000_000, 5).UTC(),
		Generation: 1, DeletedAt: time.UnixMilli(1_700_000_100_000).UTC()}))
	fuzzRoundTrip(f, "decodeQueue", decodeQueue, encodeQueue)
}

func FuzzDecodeQueueMessage(f *testing.F) {
	m := fuzzMessage()
	f.Add(encodeMessage(&m))
	f.Add(encodeMessage(&driver.Message{}))
	m.Attributes = map[string]string{"tenant": "acme", "trace": "", "z": "last"}
	f.Add(encodeMessage(&m))
	// Refused: names out of order, a name twice, format 2 without any.
	two := encodeMessage(&driver.Message{Attributes: map[string]string{"a": "0", "b": "0"}})
	f.Add(bytes.Replace(two, []byte{1, 'a', 1, '0', 1, 'b'}, []byte{1, 'b', 1, '0', 1, 'a'}, 1))
	f.Add(bytes.Replace(two, []byte{1, 'a', 1, '0', 1, 'b'}, []byte{1, 'a', 1, '0', 1, 'a'}, 1))
	f.Add(append([]byte{withAttributesVersion}, encodeMessage(&driver.Message{})[1:]...))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m driver.Message
		if err := decodeMessage(b, &m, true); err != nil {
			return
		}
		if got := encodeMessage(&m); !bytes.Equal(got, b) {
			t.Fatalf("decodeMessage(%x) = %+v, which re-encodes as %x", b, m, got)
		}
	})
}

// redeliver rewrites a stored message's delivery state in place; for every
// value decodeMessage takes it must give what decoding, changing and
// encoding again gives, and it must refuse a value whose delivery state
// decodeMessage would refuse.
func FuzzRedeliver(f *testing.F) {
	m := fuzzMessage()
	f.Add(encodeMessage(&m), 3, int64(1_700_000_000_123), "boom")
	f.Add(encodeMessage(&driver.Message{}), 0, int64(0), "")
	m.Attributes = map[string]string{"tenant": "acme", "z": "last"}
	m.LastError = "an earlier error"
	f.Add(encodeMessage(&m), 1<<20, int64(-5), "")
	f.Fuzz(func(t *testing.T, b []byte, deliveries int, visibleMs int64, lastError string) {
		if deliveries < 0 || deliveries > math.MaxInt32 {
			return
		}
		visibleAt := time.UnixMilli(visibleMs).UTC()
		st := deliveryState{deliveries, visibleAt, lastError}
		var seen deliveryState
		got, err := redeliver(b, func(old deliveryState) (deliveryState, bool) { seen = old; return st, true })
		var m driver.Message
		if decodeMessage(b, &m, true) != nil {
			return // a corrupt tail may pass redeliver: reads check it
		}
		if err != nil {
			t.Fatalf("redeliver(%x) = %v; decodeMessage takes it", b, err)
		}
		if seen != (deliveryState{m.Deliveries, m.VisibleAt, m.LastError}) {
			t.Fatalf("redeliver(%x) saw %+v; decodeMessage read %+v", b, seen, m)
		}
		m.Deliveries, m.VisibleAt, m.LastError = deliveries, visibleAt, lastError
		if want := encodeMessage(&m); !bytes.Equal(got, want) {
			t.Fatalf("redeliver(%x) = %x; want %x", b, got, want)
		}
		if kept, err := redeliver(b, func(deliveryState) (deliveryState, bool) { return st, false }); kept != nil || err != nil {
			t.Fatalf("a declined redeliver = %x, %v", kept, err)
		}
	})
}

func FuzzDecodeShardState(f *testing.F) {
	f.Add(encodeShardState(&shardState{QueueShardState: driver.QueueShardState{Holder: "host-1/42", Since: time.UnixMilli(1).UTC(), Floor: time.UnixMilli(2).UTC()}, Expires: 3}))
	f.Add(encodeShardState(&shardState{}))
	fuzzRoundTrip(f, "decodeShardState", decodeShardState, encodeShardState)
}

func FuzzDecodeDeadLetter(f *testing.F) {
	f.Add(encodeDead(&driver.DeadLetter{Message: fuzzMessage(), DiedAt: time.UnixMilli(1_700_000_060_000).UTC()}))
	f.Add(encodeDead(&driver.DeadLetter{}))
	withAttrs := fuzzMessage()
	withAttrs.Attributes = map[string]string{"tenant": "acme"}
	f.Add(encodeDead(&driver.DeadLetter{Message: withAttrs}))
	fuzzRoundTrip(f, "decodeDead", func(b []byte) (*driver.DeadLetter, error) { return decodeDead(b, fuzzID) }, encodeDead)
}

// TestQueueSeedCorpus keeps the hand-written queue seeds honest: files
// named valid-* must decode, files named bad-* must not.
func TestQueueSeedCorpus(t *testing.T) {
	t.Parallel()
	decoders := map[string]func(string, [][]byte) error{
		"FuzzDecodeQueueKey":    oneArg(func(b []byte) error { _, err := decodeQueueKey(b); return err }),
		"FuzzDecodeQueueRecord": oneArg(func(b []byte) error { _, err := decodeQueue(b); return err }),
		"FuzzDecodeQueueMessage": oneArg(func(b []byte) error {
			var m driver.Message
			return decodeMessage(b, &m, true)
		}),
		"FuzzDecodeShardState": oneArg(func(b []byte) error { _, err := decodeShardState(b); return err }),
		"FuzzDecodeDeadLetter": oneArg(func(b []byte) error { _, err := decodeDead(b, fuzzID); return err }),
	}
	checkSeedCorpus(t, decoders, nil, 10)
}

// fuzzRoundTrip fuzzes decode, named name: whatever it accepts must
// encode back to the same bytes.
func fuzzRoundTrip[T any](f *testing.F, name string, decode func([]byte) (T, error), encode func(T) []byte) {
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decode(b)
		if err != nil {
			return
		}
		if got := encode(v); !bytes.Equal(got, b) {
			t.Fatalf("%s(%x) = %+v, which re-encodes as %x", name, b, v, got)
		}
	})
}

// FuzzDecodeDedup checks that the dedup record decoder refuses or
// round-trips every input.
func FuzzDecodeDedup(f *testing.F) {
	f.Add(encodeDedup(&dedupRecord{
		Key:       driver.MessageKey{Shard: 3, Due: time.UnixMilli(1_800_000_000_123).UTC(), ID: driver.MessageID{6: 0x10, 8: 0x80}},
		ExpiresAt: time.UnixMilli(1_800_000_300_123).UTC(),
	}))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeDedup(b)
		if err != nil {
			return
		}
		if got := encodeDedup(r); !bytes.Equal(got, b) {
			t.Fatalf("decoded %+v re-encodes as %x, not %x", r, got, b)
		}
	})
}

func FuzzDecodeQueuePause(f *testing.F) {
	f.Add(encodeQueuePause(driver.QueuePause{Paused: true, Since: time.UnixMilli(1_700_000_000_123).UTC()}))
	f.Add(encodeQueuePause(driver.QueuePause{}))
	fuzzRoundTrip(f, "decodeQueuePause", decodeQueuePause, encodeQueuePause)
}
