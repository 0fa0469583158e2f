package sharded

import (
	"container/list"
	"sync"
	"time"

	"github.com/abacusdb/abacus/internal/crdt"
)

type dedupKey struct{ ns, counter, id string }

// dedupEntry remembers one request id: which mutator applied it, as which
// update, so a retry can wait for exactly that update to be durable.
type dedupEntry struct {
	key     dedupKey
	at      time.Time
	op      crdt.Op
	settled chan struct{} // closed once m/seq/err are set
	m       *mutator
	seq     uint64
	err     error
}

// dedup is a bounded, time-limited memory of request ids.
type dedup struct {
	window time.Duration
	max    int

	mu      sync.Mutex
	entries map[dedupKey]*list.Element
	order   *list.List // oldest at the front
}

func (d *dedup) init(window time.Duration, max int) {
	d.window, d.max = window, max
	d.entries = map[dedupKey]*list.Element{}
	d.order = list.New()
}

// claim returns the entry for key and whether the caller is the first to
// claim it (and so must apply the update and settle the entry).
func (d *dedup) claim(key dedupKey, op crdt.Op, now time.Time) (*dedupEntry, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expireLocked(now)
	if el, ok := d.entries[key]; ok {
		return el.Value.(*dedupEntry), false
	}
	op.Item = append([]byte(nil), op.Item...)
	ent := &dedupEntry{key: key, at: now, op: op, settled: make(chan struct{})}
	d.entries[key] = d.order.PushBack(ent)
	return ent, true
}

// settle records the outcome of applying the entry's update. An update that
// was refused outright is forgotten, so a retry applies it afresh.
func (d *dedup) settle(ent *dedupEntry, m *mutator, seq uint64, err error) {
	ent.m, ent.seq, ent.err = m, seq, err
	close(ent.settled)
	if err != nil {
		d.mu.Lock()
		if el, ok := d.entries[ent.key]; ok && el.Value == ent {
			d.order.Remove(el)
			delete(d.entries, ent.key)
		}
		d.mu.Unlock()
	}
}

func (d *dedup) expireLocked(now time.Time) {
	for el := d.order.Front(); el != nil; el = d.order.Front() {
		ent := el.Value.(*dedupEntry)
		if d.order.Len() <= d.max && now.Sub(ent.at) < d.window {
			return
		}
		d.order.Remove(el)
		delete(d.entries, ent.key)
	}
}
