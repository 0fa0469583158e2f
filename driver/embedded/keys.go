package embedded

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Table prefixes. The first byte of every key names its table, so one table's
// keys can be scanned without touching another's. Values are part of the
// on-disk format: never renumber them.
const (
	tableNamespaces byte = 0x01
	tableShards     byte = 0x02
	tableTally      byte = 0x03

	// Queue tables; their keys and values are in queue_encoding.go.
	tableQueues        byte = 0x04
	tableQueueMessages byte = 0x05
	tableQueueShards   byte = 0x06
	tableQueueDead     byte = 0x07
)

// componentsPerTable is how many components a key of each table has; the
// decoder rejects anything else so that a stray key cannot be misread as
// belonging to a counter.
var componentsPerTable = map[byte]int{
	tableNamespaces: 1, // namespace
	tableShards:     3, // namespace, counter, shard id
	tableTally:      2, // namespace, counter
}

// appendComponent appends s preceded by its length as a uvarint. The length
// prefix is what keeps ("a","bc") and ("ab","c") apart: plain concatenation
// would give both the key "abc".
func appendComponent(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func namespaceKey(name string) []byte {
	return appendComponent([]byte{tableNamespaces}, name)
}

// namespacePrefix is the prefix of table's keys in namespace ns, or of all
// of them when ns is empty.
func namespacePrefix(table byte, ns string) []byte {
	prefix := []byte{table}
	if ns != "" {
		prefix = appendComponent(prefix, ns)
	}
	return prefix
}

// counterKey is table's byte followed by the namespace and counter
// components: the key of a per-counter record, or the prefix of a
// counter's keys, which have room for extra more bytes.
func counterKey(table byte, ns, counter string, extra int) []byte {
	b := make([]byte, 0, 1+2*binary.MaxVarintLen32+len(ns)+len(counter)+extra)
	b = append(b, table)
	b = appendComponent(b, ns)
	return appendComponent(b, counter)
}

// counterPrefix is the key prefix shared by every shard of one counter.
func counterPrefix(ns, counter string) []byte {
	return counterKey(tableShards, ns, counter, 0)
}

func shardKey(ns, counter, id string) []byte {
	return appendComponent(counterPrefix(ns, counter), id)
}

func tallyKey(ns, counter string) []byte {
	return counterKey(tableTally, ns, counter, 0)
}

// prefixEnd returns the smallest key greater than every key that starts with
// prefix, for use as an exclusive upper bound, or nil if there is none (the
// prefix is all 0xff bytes, which no key here can be since keys start with a
// small table byte).
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

var errBadKey = errors.New("malformed key")

// decodeKey splits a stored key into its table and components. Keys come
// from disk, so any byte string must yield either a result or an error.
func decodeKey(key []byte) (table byte, parts []string, err error) {
	if len(key) == 0 {
		return 0, nil, fmt.Errorf("%w: empty", errBadKey)
	}
	table = key[0]
	want, ok := componentsPerTable[table]
	if !ok {
		return 0, nil, fmt.Errorf("%w: unknown table 0x%02x", errBadKey, table)
	}
	rest := key[1:]
	parts = make([]string, 0, want)
	for len(rest) > 0 {
		n, size := binary.Uvarint(rest)
		if size <= 0 {
			return 0, nil, fmt.Errorf("%w: bad component length", errBadKey)
		}
		if size != uvarintLen(n) {
			return 0, nil, fmt.Errorf("%w: non-minimal component length", errBadKey)
		}
		rest = rest[size:]
		if n > uint64(len(rest)) {
			return 0, nil, fmt.Errorf("%w: component of %d bytes overruns key", errBadKey, n)
		}
		parts = append(parts, string(rest[:n]))
		rest = rest[n:]
	}
	if len(parts) != want {
		return 0, nil, fmt.Errorf("%w: table 0x%02x has %d components, want %d", errBadKey, table, len(parts), want)
	}
	return table, parts, nil
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// iterPrefix opens an iterator over the keys that start with prefix.
func (d *Driver) iterPrefix(prefix []byte) (*pebble.Iterator, error) {
	return d.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
}

// closeIter closes it and, unless *err holds an error already, reports a
// failure to close in *err, naming op there if op is set.
func closeIter(it *pebble.Iterator, err *error, op string) {
	cerr := it.Close()
	if *err != nil || cerr == nil {
		return
	}
	if op != "" {
		cerr = fmt.Errorf("embedded: %s: %w", op, cerr)
	}
	*err = cerr
}

// scanPrefix calls fn for every key under prefix, in key order, through
// one iterator (hence one consistent view of them). key and value are only
// valid during the call. An error from fn stops the scan and is returned.
// With points set it adds the points the iterator stepped over
// (ReadStats).
func (d *Driver) scanPrefix(prefix []byte, points *uint64, fn func(key, value []byte) error) error {
	return d.withPrefixIter(prefix, points, func(it *pebble.Iterator) error {
		for valid := it.First(); valid; valid = it.Next() {
			value, err := it.ValueAndErr()
			if err != nil {
				return fmt.Errorf("key %x: %w", it.Key(), err)
			}
			if err := fn(it.Key(), value); err != nil {
				return err
			}
		}
		return it.Error()
	})
}

// withPrefixIter runs walk over an iterator bounded to prefix, then
// closes it, adding to points (when set) the points it stepped over.
func (d *Driver) withPrefixIter(prefix []byte, points *uint64, walk func(*pebble.Iterator) error) (err error) {
	it, err := d.iterPrefix(prefix)
	if err != nil {
		return err
	}
	defer closeIter(it, &err, "")
	if points != nil {
		defer func() { *points += pointsOf(it) }() // before the close
	}
	return walk(it)
}

// scanNamedFrom is scanNamed limited to the names at or after from (byte
// order). Names are length-prefixed, so keys sort by a name's length
// first and by its bytes within one length: the scan seeks, in each
// length's run of keys, to the first name at or after from, and never
// visits the names below it. A read from a cut thus costs a seek per
// length of name, not a step per name below the cut.
func (d *Driver) scanNamedFrom(prefix []byte, from string, points *uint64, fn func(name string, value []byte) error) error {
	return d.withPrefixIter(prefix, points, func(it *pebble.Iterator) error {
		return scanNamesFrom(it, len(prefix), from, fn)
	})
}

func scanNamesFrom(it *pebble.Iterator, prefixLen int, from string, fn func(name string, value []byte) error) error {
	for valid := it.First(); valid; {
		key := it.Key()
		name, err := shardIDAfter(key, prefixLen)
		if err != nil {
			return fmt.Errorf("key %x: %w", key, err)
		}
		if name < from {
			// This key is prefix | len(name) | name, and name < from, so
			// prefix | len(name) | from sorts after it: the seek moves on.
			target := binary.AppendUvarint(bytes.Clone(key[:prefixLen]), uint64(len(name)))
			valid = it.SeekGE(append(target, from...))
			continue
		}
		value, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("key %x: %w", it.Key(), err)
		}
		if err := fn(name, value); err != nil {
			return fmt.Errorf("%q: %w", name, err)
		}
		valid = it.Next()
	}
	return it.Error()
}

// scanNamed is scanPrefix over keys of the shape prefix | name (one
// length-prefixed component, as shards, actor values and ledger rows
// are stored), handing fn the decoded name.
func (d *Driver) scanNamed(prefix []byte, points *uint64, fn func(name string, value []byte) error) error {
	return d.scanNamedFrom(prefix, "", points, fn)
}
