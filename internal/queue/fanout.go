package queue

import "sync"

// fanOut is how many store calls of one operation over a queue's shards
// (or a listing's queues) run at once: enough to hide a round trip, few
// enough not to crowd out the consumers' own reads.
const fanOut = 8

// forEach runs f(i) for every i in [0, n), at most fanOut at once, and
// returns the error of the lowest i that failed. Every f runs, even after
// one fails, so that callers may sum what each did.
func forEach(n int, f func(i int) error) error {
	errs := make([]error, n)
	sem := make(chan struct{}, fanOut)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = f(i)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
