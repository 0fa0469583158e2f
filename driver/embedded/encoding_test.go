package embedded

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

func TestKeysNeverCollide(t *testing.T) {
	t.Parallel()
	// Pairs that plain concatenation would merge into one key.
	pairs := []struct{ a, b []byte }{
		{tallyKey("a", "bc"), tallyKey("ab", "c")},
		{tallyKey("", "abc"), tallyKey("abc", "")},
		{shardKey("a", "b", "c"), shardKey("a", "bc", "")},
		{shardKey("a", "b", "c"), shardKey("ab", "", "c")},
		{namespaceKey("a"), namespaceKey("a\x00")},
		{shardKey("ns", "c", "m"), tallyKey("ns", "c")},
	}
	for _, p := range pairs {
		if bytes.Equal(p.a, p.b) {
			t.Errorf("keys collide: %x", p.a)
		}
	}
	// The prefix scan of one counter must not reach another counter's
	// shards.
	if bytes.HasPrefix(shardKey("a", "bc", "x"), counterPrefix("a", "b")) {
		t.Error(`counter "a"/"b" prefix covers a shard of "a"/"bc"`)
	}
	if bytes.HasPrefix(shardKey("ab", "c", "x"), counterPrefix("a", "bc")) {
		t.Error(`counter "a"/"bc" prefix covers a shard of "ab"/"c"`)
	}
}

func TestDecodeKey(t *testing.T) {
	t.Parallel()
	long := string(bytes.Repeat([]byte("x"), 300)) // two-byte length prefix
	good := []struct {
		key   []byte
		table byte
		parts []string
	}{
		{namespaceKey("default"), tableNamespaces, []string{"default"}},
		{namespaceKey(""), tableNamespaces, []string{""}},
		{shardKey("ns", long, "m/1"), tableShards, []string{"ns", long, "m/1"}},
		{tallyKey("ünï", "🙂"), tableTally, []string{"ünï", "🙂"}},
	}
	for _, tc := range good {
		table, parts, err := decodeKey(tc.key)
		if err != nil || table != tc.table || !reflect.DeepEqual(parts, tc.parts) {
			t.Errorf("decodeKey(%x) = %d %q %v, want %d %q", tc.key, table, parts, err, tc.table, tc.parts)
		}
	}
	bad := map[string][]byte{
		"empty":            {},
		"unknown table":    {0x7f, 0},
		"missing part":     {tableTally, 1, 'a'},
		"extra part":       append(tallyKey("a", "b"), 0),
		"overrun":          {tableNamespaces, 5, 'a'},
		"truncated varint": {tableNamespaces, 0x80},
		"non-minimal":      {tableNamespaces, 0x81, 0x00, 'a'},
	}
	for name, key := range bad {
		if _, _, err := decodeKey(key); !errors.Is(err, errBadKey) {
			t.Errorf("%s: decodeKey(%x) error = %v, want errBadKey", name, key, err)
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want []byte }{
		{[]byte{1, 2}, []byte{1, 3}},
		{[]byte{1, 0xff}, []byte{2}},
		{[]byte{0xff, 0xff}, nil},
	}
	for _, tc := range cases {
		if got := prefixEnd(tc.in); !bytes.Equal(got, tc.want) {
			t.Errorf("prefixEnd(%x) = %x, want %x", tc.in, got, tc.want)
		}
	}
}

func TestCellRoundTrip(t *testing.T) {
	t.Parallel()
	cells := []cell{
		{Timestamp: 0},
		{Timestamp: 1, Payload: []byte("state")},
		{Timestamp: -1, Tombstone: true},
		{Timestamp: math.MaxInt64, Payload: []byte{0}},
		{Timestamp: math.MinInt64, Tombstone: true},
	}
	for _, c := range cells {
		enc := appendCell(nil, c)
		got, err := decodeCell(enc)
		if err != nil {
			t.Fatalf("decodeCell(%x): %v", enc, err)
		}
		if got.Timestamp != c.Timestamp || got.Tombstone != c.Tombstone || !bytes.Equal(got.Payload, c.Payload) {
			t.Errorf("round trip of %+v gave %+v", c, got)
		}
	}
}

func TestDecodeCellErrors(t *testing.T) {
	t.Parallel()
	cases := map[string][]byte{
		"empty":              {},
		"short header":       {cellVersion, 0, 0, 0},
		"unknown version":    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		"newer version":      {cellVersion + 1, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		"unknown flag":       {cellVersion, 2, 0, 0, 0, 0, 0, 0, 0, 0},
		"tombstone w/ value": {cellVersion, cellFlagTombstone, 0, 0, 0, 0, 0, 0, 0, 0, 'x'},
	}
	for name, b := range cases {
		if _, err := decodeCell(b); !errors.Is(err, errCorrupt) {
			t.Errorf("%s: decodeCell(%x) error = %v, want errCorrupt", name, b, err)
		}
	}
}

func TestShardPayload(t *testing.T) {
	t.Parallel()
	s := driver.Shard{State: []byte{1, 2, 3}, ExpiresAt: -42}
	exp, state, err := decodeShardPayload(appendShardPayload(nil, s))
	if err != nil || exp != s.ExpiresAt || !bytes.Equal(state, s.State) {
		t.Errorf("round trip = %d %x %v", exp, state, err)
	}
	if _, _, err := decodeShardPayload([]byte{1, 2, 3}); !errors.Is(err, errCorrupt) {
		t.Errorf("short payload error = %v, want errCorrupt", err)
	}
}

func TestNamespaceRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []driver.Namespace{
		{Name: "default", Model: "sharded", Type: "sum"},
		{
			Name: "ünï/🙂", Model: "ledger", ReadConsistency: driver.LocalQuorum, WriteConsistency: driver.Any,
			Retention: 36 * time.Hour, Options: map[string]string{"b": "2", "a": "", "": "empty key"},
			CreatedAt: time.Date(2025, 3, 4, 5, 6, 7, 891011121, time.UTC),
		},
		{Name: "", Retention: -1, CreatedAt: time.Unix(-1e11, 1).UTC()},
	}
	for _, want := range cases {
		enc, err := encodeNamespace(&want)
		if err != nil {
			t.Fatalf("encodeNamespace(%+v): %v", want, err)
		}
		got, err := decodeNamespace(enc)
		if err != nil {
			t.Fatalf("decodeNamespace(%x): %v", enc, err)
		}
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("round trip:\n got %+v\nwant %+v", *got, want)
		}
	}
}

func TestEncodeNamespaceRejectsUnknownConsistency(t *testing.T) {
	t.Parallel()
	if _, err := encodeNamespace(&driver.Namespace{Name: "x", ReadConsistency: driver.Any + 1}); err == nil {
		t.Error("accepted an unknown read consistency")
	}
	if _, err := encodeNamespace(&driver.Namespace{Name: "x", WriteConsistency: 200}); err == nil {
		t.Error("accepted an unknown write consistency")
	}
}

func TestDecodeNamespaceErrors(t *testing.T) {
	t.Parallel()
	valid, err := encodeNamespace(&driver.Namespace{Name: "n", Options: map[string]string{"a": "1", "b": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(valid)) }
	// Offsets into valid: version 0, name 1-2, model 3, type 4, read cl 5,
	// write cl 6, retention 7-14, secs 15-22, nanos 23-26, count 27, then
	// options.
	cases := map[string][]byte{
		"empty":             {},
		"unknown version":   mutate(func(b []byte) []byte { b[0] = 9; return b }),
		"truncated":         valid[:len(valid)-1],
		"trailing bytes":    append(bytes.Clone(valid), 0),
		"name overrun":      mutate(func(b []byte) []byte { b[1] = 0x7f; return b }),
		"bad read cl":       mutate(func(b []byte) []byte { b[5] = 0xee; return b }),
		"bad write cl":      mutate(func(b []byte) []byte { b[6] = 0xee; return b }),
		"nanos too large":   mutate(func(b []byte) []byte { b[23] = 0xff; return b }),
		"huge count":        mutate(func(b []byte) []byte { return append(b[:27], 0xff, 0xff, 0xff, 0xff, 0x0f) }),
		"keys out of order": mutate(func(b []byte) []byte { b[29], b[33] = 'b', 'a'; return b }),
		"duplicate keys":    mutate(func(b []byte) []byte { b[33] = 'a'; return b }),
	}
	for name, b := range cases {
		if _, err := decodeNamespace(b); !errors.Is(err, errCorrupt) {
			t.Errorf("%s: decodeNamespace(%x) error = %v, want errCorrupt", name, b, err)
		}
	}
}
