package cassandra

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

func ptr[T any](v T) *T { return &v }

// unlessNull is a fuzzed column: a pointer to v, or nil (a null) when the
// bit of the fuzzer's null mask is set.
func unlessNull[T any](nulls uint8, bit uint, v T) *T {
	if nulls&(1<<bit) != 0 {
		return nil
	}
	return &v
}

// fuzzBytes hands out a fuzzer's bytes; reads past the end give zeros, so
// every input decodes into some rows. small values are single signed bytes
// so that the fuzzer finds equal buckets, rollups and event keys easily.
type fuzzBytes []byte

func (f *fuzzBytes) byte() byte {
	if len(*f) == 0 {
		return 0
	}
	b := (*f)[0]
	*f = (*f)[1:]
	return b
}

func (f *fuzzBytes) small() int64 { return int64(int8(f.byte())) }

func (f *fuzzBytes) str() string {
	n := min(int(f.byte()%4), len(*f))
	s := string((*f)[:n])
	*f = (*f)[n:]
	return s
}

// lenPrefixed takes a length byte and up to that many bytes after it, or
// nil when no bytes are left.
func (f *fuzzBytes) lenPrefixed() []byte {
	if len(*f) == 0 {
		return nil
	}
	n := min(int((*f)[0]), len(*f)-1)
	b := (*f)[1 : 1+n]
	*f = (*f)[1+n:]
	return b
}

// bigEndian takes up to 8 bytes as a big-endian integer.
func (f *fuzzBytes) bigEndian() int64 {
	var v int64
	for range 8 {
		if len(*f) > 0 {
			v = v<<8 | int64(f.byte())
		}
	}
	return v
}

// refused reports whether a fuzzed decode failed, which it may only do
// with a malformed row error.
func refused(t *testing.T, err error) bool {
	t.Helper()
	if err != nil && !errors.Is(err, errBadRow) {
		t.Fatalf("error %v is not a malformed row error", err)
	}
	return err != nil
}

// decodedAll checks the outcome of decoding fuzzed rows into one result per
// row: a refusal must be errBadRow with no results, a success must keep
// every row. It reports whether there are results to check further.
func decodedAll[R, T any](t *testing.T, rows []R, out []T, err error) bool {
	t.Helper()
	if err != nil {
		if out != nil || !errors.Is(err, errBadRow) {
			t.Fatalf("got %+v with error %v", out, err)
		}
		return false
	}
	if len(out) != len(rows) {
		t.Fatalf("%d rows in, %d out", len(rows), len(out))
	}
	return true
}

// schemaHas checks that the default schema in keyspace k1 contains each of
// want.
func schemaHas(t *testing.T, want ...string) {
	t.Helper()
	stmts, err := Schema(Config{Keyspace: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(stmts, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("schema lacks %q", w)
		}
	}
}

func goodNamespaceRow() namespaceRow {
	return namespaceRow{
		Name: ptr("n"), Model: ptr("sharded"), Type: ptr("sum"),
		ReadCL: ptr("QUORUM"), WriteCL: ptr("DEFAULT"), RetentionMS: ptr(int64(1500)),
		Options:   map[string]string{"k": "v"},
		CreatedAt: ptr(time.UnixMilli(1_700_000_000_000).UTC()),
	}
}

func TestNamespaceFromRow(t *testing.T) {
	t.Parallel()
	got, err := namespaceFromRow(goodNamespaceRow())
	if err != nil {
		t.Fatal(err)
	}
	want := &driver.Namespace{Name: "n", Model: "sharded", Type: "sum", ReadConsistency: driver.Quorum,
		WriteConsistency: driver.Default, Retention: 1500 * time.Millisecond,
		Options: map[string]string{"k": "v"}, CreatedAt: time.UnixMilli(1_700_000_000_000).UTC()}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}

	noOpts := goodNamespaceRow()
	noOpts.Options = map[string]string{}
	if got, err := namespaceFromRow(noOpts); err != nil || got.Options != nil {
		t.Fatalf("empty options: %+v, %v; want nil options", got, err)
	}

	bad := []struct {
		name string
		mod  func(*namespaceRow)
		want string
	}{
		{"null name", func(r *namespaceRow) { r.Name = nil }, "name is null"},
		{"null model", func(r *namespaceRow) { r.Model = nil }, "model is null"},
		{"null type", func(r *namespaceRow) { r.Type = nil }, "type is null"},
		{"null read_cl", func(r *namespaceRow) { r.ReadCL = nil }, "read_cl is null"},
		{"null write_cl", func(r *namespaceRow) { r.WriteCL = nil }, "write_cl is null"},
		{"null retention", func(r *namespaceRow) { r.RetentionMS = nil }, "retention_ms is null"},
		{"null created_at", func(r *namespaceRow) { r.CreatedAt = nil }, "created_at is null"},
		{"unknown read_cl", func(r *namespaceRow) { r.ReadCL = ptr("SOMETIMES") }, "read_cl"},
		{"empty write_cl", func(r *namespaceRow) { r.WriteCL = ptr("") }, "write_cl"},
		{"lower-case cl", func(r *namespaceRow) { r.ReadCL = ptr("quorum") }, "read_cl"},
		{"padded cl", func(r *namespaceRow) { r.ReadCL = ptr(" ONE") }, "read_cl"},
		{"negative retention", func(r *namespaceRow) { r.RetentionMS = ptr(int64(-1)) }, "negative"},
		{"huge retention", func(r *namespaceRow) { r.RetentionMS = ptr(int64(math.MaxInt64)) }, "overflows"},
	}
	for _, tt := range bad {
		r := goodNamespaceRow()
		tt.mod(&r)
		ns, err := namespaceFromRow(r)
		if err == nil || !errors.Is(err, errBadRow) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %+v, %v; want a malformed row error about %q", tt.name, ns, err, tt.want)
		}
	}
}

func TestNamespaceValues(t *testing.T) {
	t.Parallel()
	ns := driver.Namespace{Name: "n", ReadConsistency: driver.LocalOne, Retention: 2 * time.Second}
	vals, err := namespaceValues(ns)
	if err != nil {
		t.Fatal(err)
	}
	if vals[3] != "LOCAL_ONE" || vals[4] != "DEFAULT" || vals[5] != int64(2000) {
		t.Errorf("values = %v", vals)
	}
	for _, bad := range []driver.Namespace{
		{Retention: -time.Millisecond},
		{Retention: time.Millisecond + time.Nanosecond},
		{WriteConsistency: driver.Consistency(42)},
	} {
		if _, err := namespaceValues(bad); err == nil {
			t.Errorf("namespaceValues(%+v) accepted", bad)
		}
	}
}

func TestSameNamespace(t *testing.T) {
	t.Parallel()
	created := time.UnixMilli(1_700_000_000_123).UTC()
	ns := driver.Namespace{Name: "n", Model: "sharded", Type: "sum", ReadConsistency: driver.One,
		Retention: time.Hour, CreatedAt: created.Add(456 * time.Microsecond)}
	row := map[string]any{
		"[applied]": false, "name": "n", "model": "sharded", "type": "sum", "read_cl": "ONE",
		"write_cl": "DEFAULT", "retention_ms": int64(3_600_000), "options": map[string]string{},
		"created_at": created,
	}
	if !sameNamespace(row, ns) {
		t.Fatal("identical namespace (up to the column's millisecond precision) not recognised")
	}
	for col, v := range map[string]any{
		"model": "ledger", "type": "max", "read_cl": "ALL", "write_cl": "ONE", "retention_ms": int64(1),
		"options": map[string]string{"k": "v"}, "created_at": created.Add(time.Millisecond),
		"name": "m", "retention_ms ": nil,
	} {
		other := maps.Clone(row)
		other[col] = v
		if col == "retention_ms " {
			delete(other, "retention_ms")
		}
		if sameNamespace(other, ns) {
			t.Errorf("row with %s = %v taken for the same namespace", col, v)
		}
	}
}

func shardRowOf(id, state string, expires int64, tally *string, tallyTS *int64) shardRow {
	r := shardRow{Shard: ptr(id), State: ptr([]byte(state)), ExpiresAt: ptr(expires), TallyTS: tallyTS}
	if tally != nil {
		r.Tally = ptr([]byte(*tally))
	}
	return r
}

func TestShardSetFromRows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		rows []shardRow
		want string // summary, or "error: <substring>"
	}{
		{"no rows", nil, "no tally"},
		{"shards without tally", []shardRow{
			shardRowOf("b", "2", 20, nil, nil),
			shardRowOf("a", "1", 10, nil, nil),
		}, `no tally a="1"/10 b="2"/20`},
		{"shards with tally", []shardRow{
			shardRowOf("a", "1", 10, ptr("T"), ptr(int64(5))),
			shardRowOf("b", "", 20, ptr("T"), ptr(int64(5))),
		}, `tally="T"@5 a="1"/10 b=""/20`},
		{"static-only row", []shardRow{{Tally: ptr([]byte("T")), TallyTS: ptr(int64(7))}}, `tally="T"@7`},
		{"empty tally", []shardRow{{Tally: ptr([]byte(nil)), TallyTS: ptr(int64(7))}}, `tally=""@7`},

		{"all null", []shardRow{{}}, "error: neither a shard nor a tally"},
		{"null id among rows", []shardRow{
			shardRowOf("a", "1", 10, nil, nil),
			{},
		}, "error: null shard id"},
		{"columns without id", []shardRow{{State: ptr([]byte("x")), Tally: ptr([]byte("T")), TallyTS: ptr(int64(1))}},
			"error: without a shard id"},
		{"null state", []shardRow{{Shard: ptr("a"), ExpiresAt: ptr(int64(1))}}, "error: state is null"},
		{"null expires", []shardRow{{Shard: ptr("a"), State: ptr([]byte("x"))}}, "error: expires_at is null"},
		{"tally without ts", []shardRow{{Tally: ptr([]byte("T"))}}, "error: tally_ts is null"},
		{"ts without tally", []shardRow{{TallyTS: ptr(int64(3))}}, "error: tally is null"},
		{"tallies differ", []shardRow{
			shardRowOf("a", "1", 10, ptr("T"), ptr(int64(5))),
			shardRowOf("b", "2", 20, ptr("U"), ptr(int64(5))),
		}, "error: static tally differs"},
		{"tally on some rows", []shardRow{
			shardRowOf("a", "1", 10, nil, nil),
			shardRowOf("b", "2", 20, ptr("U"), ptr(int64(5))),
		}, "error: static tally differs"},
		{"duplicate", []shardRow{
			shardRowOf("a", "1", 10, nil, nil),
			shardRowOf("a", "2", 20, nil, nil),
		}, "error: appears twice"},
	}
	for _, tt := range tests {
		set, err := shardSetFromRows(tt.rows)
		if want, ok := strings.CutPrefix(tt.want, "error: "); ok {
			if err == nil || !errors.Is(err, errBadRow) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: got %v, %v; want a malformed row error about %q", tt.name, set, err, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got := summarize(set); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
		for _, s := range set.Shards {
			if s.State == nil {
				t.Errorf("%s: shard %s has a nil state", tt.name, s.ID)
			}
		}
		if set.Tally != nil && set.Tally.State == nil {
			t.Errorf("%s: tally has a nil state", tt.name)
		}
	}
}

func summarize(set *driver.ShardSet) string {
	var b strings.Builder
	if set.Tally != nil {
		b.WriteString("tally=")
		b.WriteString(quote(set.Tally.State))
		b.WriteString("@")
		b.WriteString(itoa(set.Tally.Timestamp))
	} else {
		b.WriteString("no tally")
	}
	for _, s := range set.Shards {
		b.WriteString(" " + s.ID + "=" + quote(s.State) + "/" + itoa(s.ExpiresAt))
	}
	return b.String()
}

func quote(b []byte) string { return `"` + string(b) + `"` }

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// FuzzNamespaceFromRow feeds arbitrary column values, any of them null, to
// the namespace decoder. It must never panic; what it accepts must encode
// back to the same column values.
func FuzzNamespaceFromRow(f *testing.F) {
	f.Add(uint8(0), "default", "sharded", "sum", "QUORUM", "DEFAULT", int64(0), int64(1_700_000_000_000), "")
	f.Add(uint8(0), "ledger", "ledger", "", "LOCAL_QUORUM", "ALL", int64(86_400_000), int64(0), "history_length=128;strict=true")
	f.Add(uint8(0x01), "", "", "", "", "", int64(-1), int64(-1), "=")
	f.Add(uint8(0x80), "x", "y", "z", "one", "TWO ", int64(math.MaxInt64), int64(math.MinInt64), ";;")
	f.Fuzz(func(t *testing.T, nulls uint8, name, model, typ, readCL, writeCL string, retention, createdMS int64, opts string) {
		r := namespaceRow{Name: unlessNull(nulls, 0, name), Model: unlessNull(nulls, 1, model),
			Type: unlessNull(nulls, 2, typ), ReadCL: unlessNull(nulls, 3, readCL),
			WriteCL: unlessNull(nulls, 4, writeCL), RetentionMS: unlessNull(nulls, 5, retention)}
		set := func(bit uint8) bool { return nulls&(1<<bit) == 0 }
		if set(6) {
			created := time.UnixMilli(createdMS).UTC()
			r.CreatedAt = &created
		}
		if set(7) && opts != "" {
			r.Options = map[string]string{}
			for _, kv := range strings.Split(opts, ";") {
				k, v, _ := strings.Cut(kv, "=")
				r.Options[k] = v
			}
		}
		ns, err := namespaceFromRow(r)
		if err != nil && ns != nil {
			t.Fatalf("error %v with a non-nil namespace", err)
		}
		if refused(t, err) {
			return
		}
		if ns.Retention < 0 {
			t.Fatalf("negative retention %v accepted", ns.Retention)
		}
		vals, err := namespaceValues(*ns)
		if err != nil {
			t.Fatalf("decoded namespace %+v does not encode: %v", ns, err)
		}
		want := []any{*r.Name, *r.Model, *r.Type, *r.ReadCL, *r.WriteCL, *r.RetentionMS}
		if !reflect.DeepEqual(vals[:6], want) {
			t.Fatalf("round trip: %v, want %v", vals[:6], want)
		}
		if len(r.Options) == 0 != (ns.Options == nil) || (len(r.Options) > 0 && !reflect.DeepEqual(ns.Options, r.Options)) {
			t.Fatalf("options %v decoded as %v", r.Options, ns.Options)
		}
	})
}

// fuzzRows turns bytes into shard rows: per row a byte of null flags, then
// the shard id, state and tally as length-prefixed strings and expires_at
// and tally_ts as 8 bytes each.
func fuzzRows(data []byte) []shardRow {
	var rows []shardRow
	take := func(n int) []byte {
		n = min(n, len(data))
		b := data[:n:n]
		data = data[n:]
		return b
	}
	str := func() []byte {
		l := take(1)
		if len(l) == 0 {
			return nil
		}
		return take(int(l[0] % 16))
	}
	i64 := func() int64 {
		var b [8]byte
		copy(b[:], take(8))
		return int64(binary.BigEndian.Uint64(b[:]))
	}
	for len(data) > 0 && len(rows) < 64 {
		flags := take(1)[0]
		var r shardRow
		id, state, exp, tally, ts := str(), str(), i64(), str(), i64()
		if flags&1 != 0 {
			r.Shard = ptr(string(id))
		}
		if flags&2 != 0 {
			r.State = ptr(bytes.Clone(state))
		}
		if flags&4 != 0 {
			r.ExpiresAt = ptr(exp)
		}
		if flags&8 != 0 {
			r.Tally = ptr(bytes.Clone(tally))
		}
		if flags&16 != 0 {
			r.TallyTS = ptr(ts)
		}
		rows = append(rows, r)
	}
	return rows
}

// FuzzShardSetFromRows checks that the partition decoder never panics and
// that whatever it accepts satisfies the ShardSet contract.
func FuzzShardSetFromRows(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x07, 1, 'a', 1, 'x', 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0x18, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 'T', 0, 0, 0, 0, 0, 0, 0, 5})
	f.Add([]byte{0x1f, 1, 'b', 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 'T', 0, 0, 0, 0, 0, 0, 0, 5,
		0x1f, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 'T', 0, 0, 0, 0, 0, 0, 0, 5})
	f.Add([]byte{0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		rows := fuzzRows(data)
		set, err := shardSetFromRows(rows)
		if err != nil && set != nil {
			t.Fatalf("error %v with a non-nil set", err)
		}
		if refused(t, err) {
			return
		}
		for i, s := range set.Shards {
			if s.State == nil {
				t.Fatalf("shard %q has a nil state", s.ID)
			}
			if i > 0 && set.Shards[i-1].ID >= s.ID {
				t.Fatalf("shards not strictly sorted: %q then %q", set.Shards[i-1].ID, s.ID)
			}
		}
		if set.Tally != nil && set.Tally.State == nil {
			t.Fatal("tally has a nil state")
		}
		// Every shard row is returned, and nothing else.
		ids := 0
		for _, r := range rows {
			if r.Shard != nil {
				ids++
			}
		}
		if ids != len(set.Shards) {
			t.Fatalf("%d shard rows decoded as %d shards", ids, len(set.Shards))
		}
		if len(rows) > 0 && (rows[0].Tally != nil) != (set.Tally != nil) {
			t.Fatalf("tally presence %v decoded as %v", rows[0].Tally != nil, set.Tally)
		}
	})
}
