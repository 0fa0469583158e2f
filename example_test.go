package abacus_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/driver/embedded"
)

// Counting on the embedded store: open a driver, make a client, add, read.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "abacus-example")
	defer os.RemoveAll(dir)

	store, err := embedded.Open(ctx, embedded.Config{Dir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	client, err := abacus.NewClient(ctx, abacus.Config{Driver: store})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)

	_ = client.Add(ctx, abacus.DefaultNamespace, "likes", 5)
	_ = client.Add(ctx, abacus.DefaultNamespace, "likes", 5)

	v, err := client.Get(ctx, abacus.DefaultNamespace, "likes")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v.Value)
	// Output: 10
}

// exampleClient is the setup of Example for the examples that follow it: a
// client on the embedded store in a temporary directory; done stops the
// client, closes the store and removes the directory.
func exampleClient(ctx context.Context) (client *abacus.Client, done func()) {
	dir, _ := os.MkdirTemp("", "abacus-example")
	store, _ := embedded.Open(ctx, embedded.Config{Dir: dir})
	client, _ = abacus.NewClient(ctx, abacus.Config{Driver: store})
	return client, func() {
		client.Stop(ctx)
		store.Close()
		os.RemoveAll(dir)
	}
}

// A retry that carries the same request id is counted once.
func ExampleClient_Apply_retry() {
	ctx := context.Background()
	client, done := exampleClient(ctx)
	defer done()

	u := abacus.Update{Counter: "credits", Delta: 100, RequestID: "order-7781"}
	for range 3 { // the caller timed out twice and retried
		if err := client.Apply(ctx, u); err != nil {
			log.Fatal(err)
		}
	}
	v, _ := client.Get(ctx, "", "credits")
	fmt.Println(v.Value)
	// Output: 100
}

// Namespaces choose a counter type; distinct counters estimate how many
// different items were added.
func ExampleClient_CreateNamespace() {
	ctx := context.Background()
	client, done := exampleClient(ctx)
	defer done()

	if _, err := client.CreateNamespace(ctx, abacus.NamespaceConfig{Name: "visitors", Type: abacus.TypeDistinct}); err != nil {
		log.Fatal(err)
	}
	for _, user := range []string{"ann", "bob", "ann", "cy", "bob"} {
		_ = client.Apply(ctx, abacus.Update{Namespace: "visitors", Counter: "2026-11-22", Item: user})
	}
	v, _ := client.Get(ctx, "visitors", "2026-11-22")
	fmt.Println(v.Value)
	// Output: 3
}
