package cassandra

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/abacusdb/abacus/driver"
	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// A queue's pause state. The row is written at the pause's own time
// (USING TIMESTAMP), so racing pauses and resumes settle on the latest
// whatever order they land in; at equal times the greater value, paused,
// wins.
const queuePausesDDL = `CREATE TABLE IF NOT EXISTS %[1]s.queue_pauses (
	queue text PRIMARY KEY,
	paused boolean,
	since timestamp
)`

type pauseStatements struct{ set, get, probe string }

func newPauseStatements(ks string) pauseStatements {
	return pauseStatements{
		set:   "INSERT INTO " + ks + ".queue_pauses (queue, paused, since) VALUES (?, ?, ?) USING TIMESTAMP ?",
		get:   "SELECT paused, since FROM " + ks + ".queue_pauses WHERE queue = ?",
		probe: "SELECT queue FROM " + ks + ".queue_pauses LIMIT 1",
	}
}

// SetQueuePause implements driver.Queues at the WriteConsistency level.
func (d *Driver) SetQueuePause(ctx context.Context, p *driver.SetQueuePauseParams) error {
	since := p.Pause.Since.Truncate(time.Millisecond)
	return d.execAt(ctx, "set queue pause", driver.Default, d.cfg.WriteConsistency,
		d.q.pause.set, []any{p.Queue, p.Pause.Paused, since, since.UnixMicro()}, " %s", p.Queue)
}

// GetQueuePause implements driver.Queues at the ReadConsistency level.
func (d *Driver) GetQueuePause(ctx context.Context, p *driver.GetQueuePauseParams) (driver.QueuePause, error) {
	const op = "get queue pause"
	cl, err := d.beginAt(ctx, op, driver.Default, d.cfg.ReadConsistency)
	if err != nil {
		return driver.QueuePause{}, err
	}
	var paused bool
	var since time.Time
	err = d.session.Query(d.q.pause.get, p.Queue).Consistency(cl).ScanContext(ctx, &paused, &since)
	if errors.Is(err, gocql.ErrNotFound) {
		return driver.QueuePause{}, nil
	}
	if err != nil {
		return driver.QueuePause{}, fmt.Errorf("cassandra: %s %s: %w", op, p.Queue, mapError(opRead, err))
	}
	if !since.IsZero() {
		since = since.UTC()
	}
	return driver.QueuePause{Paused: paused, Since: since}, nil
}
