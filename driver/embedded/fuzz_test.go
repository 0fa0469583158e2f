package embedded

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// The decoders read bytes from disk, which may be corrupt or written by
// another version. Each target checks that a decoder never panics and that
// whatever it accepts re-encodes to the same bytes (one valid encoding per
// value, so nothing is silently reinterpreted).

func FuzzDecodeCell(f *testing.F) {
	f.Add(appendCell(nil, cell{Timestamp: 10, Payload: appendShardPayload(nil, driver.Shard{State: []byte{1, 2}, ExpiresAt: 99})}))
	f.Add(appendCell(nil, cell{Timestamp: 11, Tombstone: true}))
	f.Add(appendCell(nil, cell{Timestamp: -1, Payload: []byte("tally")}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeCell(b)
		if err != nil {
			return
		}
		if got := appendCell(nil, c); !bytes.Equal(got, b) {
			t.Fatalf("decodeCell(%x) re-encodes as %x", b, got)
		}
		if c.Tombstone {
			return
		}
		// A live cell's payload may be a shard row.
		exp, state, err := decodeShardPayload(c.Payload)
		if err != nil {
			return
		}
		if got := appendShardPayload(nil, driver.Shard{State: state, ExpiresAt: exp}); !bytes.Equal(got, c.Payload) {
			t.Fatalf("decodeShardPayload(%x) re-encodes as %x", c.Payload, got)
		}
	})
}

func FuzzDecodeNamespace(f *testing.F) {
	seeds := []driver.Namespace{
		{Name: "default", Model: "sharded", Type: "sum"},
		{
			Name: "ledger", Model: "ledger", ReadConsistency: driver.Quorum, WriteConsistency: driver.All,
			Retention: time.Hour, Options: map[string]string{"history_length": "10", "strict": "true"},
			CreatedAt: time.Unix(1_700_000_000, 123).UTC(),
		},
	}
	for _, ns := range seeds {
		b, err := encodeNamespace(&ns)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ns, err := decodeNamespace(b)
		if err != nil {
			return
		}
		got, err := encodeNamespace(ns)
		if err != nil {
			t.Fatalf("decoded %+v does not re-encode: %v", ns, err)
		}
		if !bytes.Equal(got, b) {
			t.Fatalf("decodeNamespace(%x) re-encodes as %x", b, got)
		}
	})
}

func FuzzDecodeKey(f *testing.F) {
	f.Add(namespaceKey("default"))
	f.Add(shardKey("ns", "counter", "mutator-1"))
	f.Add(tallyKey("a", "bc"))
	f.Add(ledgerRowKey("ns", "ledger", "actor-1"))
	f.Add(claimKey("ns", "ledger", "request-1"))
	f.Add(actorKey("ns", "counter", "P1"))
	f.Add(nativeKey("ns", "counter"))
	f.Add(casKey("a", "bc"))
	f.Add(rightsKey("ns", "ledger", ""))
	f.Add(rightsKey("ns", "ledger", "dc1"))
	f.Add(dedupKey("q", "id-1"))
	f.Add(queuePauseKey("q"))
	f.Add(cutKey("ns", driver.Cut{Counter: "c", At: 1_700_000_000_000_000}))
	f.Fuzz(func(t *testing.T, b []byte) {
		table, parts, err := decodeKey(b)
		if err != nil {
			return
		}
		var got []byte
		switch table {
		case tableNamespaces:
			got = namespaceKey(parts[0])
		case tableShards:
			got = shardKey(parts[0], parts[1], parts[2])
			id, err := shardIDAfter(b, len(counterPrefix(parts[0], parts[1])))
			if err != nil || id != parts[2] {
				t.Fatalf("shardIDAfter(%x) = %q, %v; want %q", b, id, err, parts[2])
			}
		case tableTally:
			got = tallyKey(parts[0], parts[1])
		case tableLedgers:
			got = ledgerRowKey(parts[0], parts[1], parts[2])
			actor, err := shardIDAfter(b, len(ledgerPrefix(parts[0], parts[1])))
			if err != nil || actor != parts[2] {
				t.Fatalf("actor after the ledger prefix of %x = %q, %v; want %q", b, actor, err, parts[2])
			}
		case tableLedgerClaims:
			got = claimKey(parts[0], parts[1], parts[2])
		case tableLedgerRights:
			got = rightsKey(parts[0], parts[1], "")
		case tableLedgerRightsDC:
			if parts[2] == "" {
				return // no data center has an empty name: never written
			}
			got = rightsKey(parts[0], parts[1], parts[2])
		case tableActorValues:
			got = actorKey(parts[0], parts[1], parts[2])
			actor, err := shardIDAfter(b, len(actorPrefix(parts[0], parts[1])))
			if err != nil || actor != parts[2] {
				t.Fatalf("actor after the counter prefix of %x = %q, %v; want %q", b, actor, err, parts[2])
			}
		case tableNativeCounters:
			got = nativeKey(parts[0], parts[1])
		case tableCASCounters:
			got = casKey(parts[0], parts[1])
		case tableAPIKeys:
			got = apiKeyKey(parts[0])
		case tableQueueDedup:
			got = dedupKey(parts[0], parts[1])
		case tableQueuePauses:
			got = queuePauseKey(parts[0])
		case tableCuts:
			// The time component is any length here; cutKey writes 8 bytes.
			got = appendComponent(counterKey(tableCuts, parts[0], parts[1], 0), parts[2])
		default:
			t.Fatalf("decodeKey(%x) returned unknown table %d", b, table)
		}
		if !bytes.Equal(got, b) {
			t.Fatalf("decodeKey(%x) = %d %q, which re-encodes as %x", b, table, parts, got)
		}
	})
}

// FuzzMergeCells checks the merge operator on arbitrary operands: it must
// not panic, and when all operands are valid the result must not depend on
// their order, direction or grouping.
func FuzzMergeCells(f *testing.F) {
	a := appendCell(nil, cell{Timestamp: 5, Payload: []byte("a")})
	b := appendCell(nil, cell{Timestamp: 5, Payload: []byte("b")})
	del := appendCell(nil, cell{Timestamp: 5, Tombstone: true})
	f.Add(a, b, del)
	f.Add(del, appendCell(nil, cell{Timestamp: 6}), a)
	f.Add([]byte{}, a, b)
	f.Fuzz(func(t *testing.T, x, y, z []byte) {
		merge := func(ops ...[]byte) ([]byte, error) {
			vm, err := lwwMergeOperator.Merge(nil, ops[0])
			if err != nil {
				return nil, err
			}
			for _, o := range ops[1:] {
				if err := vm.MergeOlder(o); err != nil {
					return nil, err
				}
			}
			out, _, err := vm.Finish(true)
			return bytes.Clone(out), err
		}
		want, err := merge(x, y, z)
		if err != nil {
			return
		}
		orders := [][][]byte{{z, y, x}, {y, x, z}, {x, z, y}}
		for _, o := range orders {
			if got, err := merge(o...); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("merge(%x) = %x, %v; merge(x,y,z) = %x", o, got, err, want)
			}
		}
		xy, _ := merge(x, y)
		if got, err := merge(xy, z); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("merge(merge(x,y),z) = %x, %v; want %x", got, err, want)
		}
		if got, err := merge(want, want); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("merge is not idempotent: %x", got)
		}
	})
}

// TestSeedCorpusValidEntries keeps the hand-written seeds honest: files
// named valid-* must decode, files named bad-* must not.
func TestSeedCorpusValidEntries(t *testing.T) {
	t.Parallel()
	decoders := map[string]func(name string, args [][]byte) error{
		"FuzzDecodeCell": func(name string, args [][]byte) error {
			c, err := decodeCell(args[0])
			if err == nil && !c.Tombstone && strings.Contains(name, "shard") {
				_, _, err = decodeShardPayload(c.Payload)
			}
			return err
		},
		"FuzzDecodeNamespace": func(_ string, args [][]byte) error { _, err := decodeNamespace(args[0]); return err },
		"FuzzDecodeKey":       func(_ string, args [][]byte) error { _, _, err := decodeKey(args[0]); return err },
		"FuzzDecodeActorCell": func(_ string, args [][]byte) error {
			_, _, live, err := decodeActorCell(args[0])
			if err == nil && !live {
				err = errors.New("tombstone")
			}
			return err
		},
		"FuzzDecodeCounterValue": func(_ string, args [][]byte) error { _, err := decodeCounterValue(args[0]); return err },
		"FuzzDecodeLedgerRights": func(_ string, args [][]byte) error { _, err := decodeRights(args[0]); return err },
	}
	checkSeedCorpus(t, decoders, nil, 10)
}
