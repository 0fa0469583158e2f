package cassandra_test

import (
	"maps"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/driver/cassandra"
)

// A keyspace made before message attributes, queue spreads and queue
// deletes existed gets the columns when a newer process opens it, and only
// then; opening again changes nothing. A queue made before reads back with
// spread 1, as a live first generation, and can be deleted.
// Here the older tables are made by dropping the column from new ones:
// the table an earlier release made differs from that in nothing a query
// can see.
//
// Not parallel: it changes the schema five times, and on three busy nodes
// each change waits long for every node to agree.
func TestOpenAddsTheNewColumnsToOlderTables(t *testing.T) {
	// Each step has a minute of its own: schema changes on three busy
	// nodes take a good part of one.
	cfg := testConfig(t)
	d := open(t, cfg)
	exec := rawExec(t, ctxT(t))
	for _, table := range []string{"queue_messages", "queue_dead"} {
		exec("ALTER TABLE " + cfg.Keyspace + "." + table + " DROP attributes")
	}
	for _, column := range []string{"spread", "generation", "deleted_at", "priorities"} {
		exec("ALTER TABLE " + cfg.Keyspace + ".queues DROP " + column)
	}
	// A queue as an earlier release writes it: no spread cell at all.
	older := driver.Queue{Name: "older", Shards: 16, ShardDuration: time.Minute, MaxDeliveries: 5,
		VisibilityTimeout: time.Second, CreatedAt: time.UnixMilli(1_700_000_000_000).UTC()}
	exec("INSERT INTO " + cfg.Keyspace + ".queues (name, shards, shard_ms, max_deliveries, visibility_ms, created_at) " +
		"VALUES ('older', 16, 60000, 5, 1000, 1700000000000)")
	d.Close()

	// On tables without the column, SchemaExisting refuses to start
	// rather than fail on the first put.
	existing := cfg
	existing.Schema = cassandra.SchemaExisting
	if d, err := cassandra.Open(ctxT(t), existing); err == nil {
		d.Close()
		t.Fatal("Open with SchemaExisting on tables without the attributes column succeeded")
	}

	for range 2 { // the second open finds the columns there
		d = open(t, cfg)
	}
	ctx := ctxT(t)
	spread := older
	spread.Name, spread.Shards, spread.Spread, spread.Priorities = "spread", 32, 8, 2
	if err := d.CreateQueue(ctx, &driver.CreateQueueParams{Queue: spread}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []driver.Queue{older, spread} {
		got, err := d.GetQueue(ctx, &driver.GetQueueParams{Name: q.Name})
		if err != nil || got.Spread != max(q.Spread, 1) || got.Priorities != max(q.Priorities, 1) || got.Generation != 0 || !got.DeletedAt.IsZero() {
			t.Fatalf("queue %s read back = %+v, %v; want spread %d, %d levels, generation 0, live", q.Name, got, err, max(q.Spread, 1), max(q.Priorities, 1))
		}
	}
	// A queue of an earlier release can be deleted.
	if err := d.DeleteQueue(ctx, &driver.DeleteQueueParams{Name: older.Name, CreatedAt: older.CreatedAt, At: older.CreatedAt.Add(time.Hour)}); err != nil {
		t.Fatalf("deleting a queue made by an earlier release: %v", err)
	}
	m := driver.Message{
		MessageKey: driver.MessageKey{Due: time.UnixMilli(1_700_000_000_000).UTC(), ID: driver.MessageID{0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}},
		Body:       []byte("b"), EnqueuedAt: time.UnixMilli(1_700_000_000_000).UTC(),
		Attributes: map[string]string{"tenant": "acme"},
	}
	if err := d.PutMessages(ctx, &driver.PutMessagesParams{Queue: "q", Messages: []driver.Message{m}}); err != nil {
		t.Fatal(err)
	}
	got, err := d.GetMessage(ctx, &driver.GetMessageParams{Queue: "q", Key: m.MessageKey})
	if err != nil || !maps.Equal(got.Attributes, m.Attributes) {
		t.Fatalf("message read back = %+v, %v", got, err)
	}
	if err := d.DeadLetter(ctx, &driver.DeadLetterParams{Queue: "q", Letters: []driver.DeadLetter{{Message: *got, DiedAt: m.Due}}}); err != nil {
		t.Fatal(err)
	}
	dead, err := d.ListDead(ctx, &driver.ListDeadParams{Queue: "q"})
	if err != nil || len(dead) != 1 || !maps.Equal(dead[0].Attributes, m.Attributes) {
		t.Fatalf("dead letters = %+v, %v", dead, err)
	}

	// A keyspace that lacks something else but has the column: the schema
	// statements run again, and adding the column that is there is no
	// failure (this release's error text for it is recognised).
	rawExec(t, ctxT(t))("DROP TABLE " + cfg.Keyspace + ".queue_pauses")
	d = open(t, cfg)
	if dead, err := d.ListDead(ctxT(t), &driver.ListDeadParams{Queue: "q"}); err != nil || len(dead) != 1 || !maps.Equal(dead[0].Attributes, m.Attributes) {
		t.Fatalf("dead letters after the schema ran again = %+v, %v", dead, err)
	}
}
