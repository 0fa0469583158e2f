package embedded

import (
	"context"
	"errors"
	"fmt"

	"github.com/abacusdb/abacus/driver"
	"github.com/cockroachdb/pebble/v2"
)

// A queue's pause state, one record per queue:
//
//	0x09 | queue    version | paused (0 or 1) | since (ms, appendTime)
const tableQueuePauses byte = 0x09

func init() { componentsPerTable[tableQueuePauses] = 1 } // queue

func queuePauseKey(queue string) []byte {
	return appendComponent([]byte{tableQueuePauses}, queue)
}

func encodeQueuePause(p driver.QueuePause) []byte {
	b := []byte{queueValueVersion, 0}
	if p.Paused {
		b[1] = 1
	}
	return appendTime(b, p.Since)
}

func decodeQueuePause(b []byte) (driver.QueuePause, error) {
	r := newReader(b)
	r.version("queue pause")
	flag := r.Byte("paused")
	since := r.time("since")
	if r.Err == nil && flag > 1 {
		r.Fail("paused flag %d", flag)
	}
	if err := r.done("queue pause"); err != nil {
		return driver.QueuePause{}, err
	}
	return driver.QueuePause{Paused: flag == 1, Since: since}, nil
}

// SetQueuePause implements driver.Queues. Like Cassandra's write at a
// timestamp, a call older than the stored state changes nothing.
func (d *Driver) SetQueuePause(ctx context.Context, p *driver.SetQueuePauseParams) error {
	if err := d.acquire(ctx, "set queue pause"); err != nil {
		return err
	}
	defer d.mu.RUnlock()
	d.pauseMu.Lock()
	defer d.pauseMu.Unlock()
	cur, err := d.queuePause(p.Queue)
	if err != nil {
		return err
	}
	next := driver.QueuePause{Paused: p.Pause.Paused, Since: ms(p.Pause.Since)}
	// At equal times the pause wins, as the greater cell value does on
	// Cassandra.
	if next.Since.Before(cur.Since) || next.Since.Equal(cur.Since) && (cur.Paused || !next.Paused) {
		return nil
	}
	if err := d.db.Set(queuePauseKey(p.Queue), encodeQueuePause(next), d.writeOpts); err != nil {
		return fmt.Errorf("embedded: set queue pause %s: %w", p.Queue, err)
	}
	return nil
}

// GetQueuePause implements driver.Queues.
func (d *Driver) GetQueuePause(ctx context.Context, p *driver.GetQueuePauseParams) (driver.QueuePause, error) {
	if err := d.acquire(ctx, "get queue pause"); err != nil {
		return driver.QueuePause{}, err
	}
	defer d.mu.RUnlock()
	return d.queuePause(p.Queue)
}

func (d *Driver) queuePause(queue string) (driver.QueuePause, error) {
	raw, closer, err := d.db.Get(queuePauseKey(queue))
	if errors.Is(err, pebble.ErrNotFound) {
		return driver.QueuePause{}, nil
	}
	if err != nil {
		return driver.QueuePause{}, fmt.Errorf("embedded: queue pause %s: %w", queue, err)
	}
	defer closer.Close()
	st, err := decodeQueuePause(raw)
	if err != nil {
		return driver.QueuePause{}, fmt.Errorf("embedded: queue pause %s: %w", queue, err)
	}
	return st, nil
}
