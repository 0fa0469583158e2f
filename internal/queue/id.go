package queue

import (
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// ID is a message's id: a time-based (version 1) UUID, a timeuuid in
// Cassandra. Its time is when the message was put.
type ID = driver.MessageID

// ParseID parses an id in the canonical 8-4-4-4-12 form.
func ParseID(s string) (ID, error) {
	id, err := driver.ParseMessageID(s)
	if err != nil {
		return ID{}, invalidf("%v", err)
	}
	return id, nil
}

// gregorianToUnix is the number of 100 ns intervals between the UUID epoch
// (1582-10-15) and the Unix epoch.
const gregorianToUnix = 0x01B21DD213814000

// idGen makes ids that are unique without coordination: the node field is
// random per generator (with the multicast bit set, as RFC 4122 asks for
// random nodes), the clock sequence random, and within one generator the
// 100 ns timestamp never repeats (it runs ahead of the clock when ids are
// made faster than one per 100 ns). Each Service has its own, so that an
// id's time is its Service's clock.
type idGen struct {
	mu    sync.Mutex
	last  int64
	clock uint16
	node  [6]byte
}

func newIDGen() *idGen {
	g := &idGen{}
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	g.clock = binary.BigEndian.Uint16(b[:2]) & 0x3fff
	copy(g.node[:], b[2:])
	g.node[0] |= 0x01
	return g
}

// newID returns a fresh id whose time is t (or the first unused 100 ns
// tick after it).
func (g *idGen) newID(t time.Time) ID {
	ts := t.UnixNano()/100 + gregorianToUnix
	g.mu.Lock()
	if ts <= g.last {
		ts = g.last + 1
	}
	g.last = ts
	g.mu.Unlock()
	var id ID
	binary.BigEndian.PutUint32(id[0:4], uint32(ts))
	binary.BigEndian.PutUint16(id[4:6], uint16(ts>>32))
	binary.BigEndian.PutUint16(id[6:8], uint16(ts>>48)&0x0fff|0x1000)
	binary.BigEndian.PutUint16(id[8:10], g.clock|0x8000)
	copy(id[10:], g.node[:])
	return id
}
