package abacus_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver/embedded"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// A delay queue on the embedded store. The example moves a manual clock
// instead of waiting: a message is taken once its shard window has passed
// and it is due.
func ExampleClient_Queues() {
	ctx := context.Background()
	store, err := embedded.Open(ctx, embedded.Config{FS: vfs.NewMem()})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	now := clock.NewManual(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	client, err := abacus.NewClient(ctx, abacus.Config{Driver: store, Clock: now})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	queues := client.Queues()

	if _, err := queues.Create(ctx, abacus.QueueConfig{Name: "emails", Shards: 8}); err != nil {
		log.Fatal(err)
	}
	_, _ = queues.Put(ctx, "emails", abacus.QueueMessage{Body: []byte("welcome alice")})
	_, _ = queues.Put(ctx, "emails", abacus.QueueMessage{Body: []byte("remind bob"), Delay: time.Hour})

	consumer, err := queues.NewConsumer(ctx, abacus.ConsumerConfig{Queue: "emails"})
	if err != nil {
		log.Fatal(err)
	}
	defer consumer.Stop(ctx)
	for _, step := range []time.Duration{time.Minute, time.Hour} {
		now.Advance(step)
		ds, err := consumer.Receive(ctx, 10)
		if err != nil {
			log.Fatal(err)
		}
		for _, d := range ds {
			fmt.Printf("%s (attempt %d)\n", d.Body(), d.Attempt())
			_ = d.Ack(ctx)
		}
	}
	// Output:
	// welcome alice (attempt 1)
	// remind bob (attempt 1)
}
