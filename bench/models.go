package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/sharded"
)

// Models measured next to the sharded model in the increments scenario.
const (
	ModelEvents = "events"
	ModelActor  = "actor"
	ModelCAS    = "cas"
)

// Models lists the models Config.Models accepts, in the order they run.
var Models = []string{ModelEvents, ModelActor, ModelCAS}

// EventsIncrements returns an op that adds 1 to an events counter of
// namespace chosen uniformly from names. Each call gets a new request id
// (a version 7 UUID made by the library), as a caller would send.
func EventsIncrements(c *abacus.Client, namespace string, names []string, workers int) (Op, error) {
	return ShardedIncrements(c, namespace, names, workers)
}

// ActorIncrements returns an op that counts up by one per call on an actor
// counter: each worker is one actor and sets its own running count, with
// the count as the version. The counter's value is then the number of
// acknowledged calls, like an increment's.
func ActorIncrements(c *abacus.Client, namespace string, names []string, workers int) (Op, error) {
	p, err := newPicker(names, workers)
	if err != nil {
		return nil, err
	}
	counts := make([]map[string]int64, workers) // per worker: one goroutine each
	for i := range counts {
		counts[i] = make(map[string]int64, len(names))
	}
	actors := CounterNames("actor", workers)
	return func(ctx context.Context, worker int) error {
		name := p.pick(worker)
		next := counts[worker][name] + 1
		err := c.Set(ctx, abacus.ActorSet{Namespace: namespace, Counter: name, Actor: actors[worker], Version: next, Value: next})
		if err == nil {
			counts[worker][name] = next
		}
		return err
	}, nil
}

// EventsReads returns an op that reads one events counter.
func EventsReads(c *abacus.Client, namespace, counter string) Op {
	return ShardedReads(c, namespace, counter)
}

// modelNamespace creates this run's namespace of the model.
func (s *suite) modelNamespace(ctx context.Context, c *abacus.Client, model string) (string, error) {
	name := fmt.Sprintf("bench-%s-%s", s.runID, model)
	_, err := c.CreateNamespace(ctx, abacus.NamespaceConfig{Name: name, Model: abacus.Model(model)})
	if errors.Is(err, abacus.ErrNamespaceExists) {
		err = nil
	}
	return name, err
}

func (s *suite) sumModel(ctx context.Context, c *abacus.Client, ns string, names []string) (int64, error) {
	var total int64
	for _, n := range names {
		v, err := c.Get(ctx, ns, n)
		if err != nil {
			return 0, err
		}
		total += v.Value
	}
	return total, nil
}

// modelIncrements measures one model's increments over n counters through
// the library, on the same store and options as the sharded rows.
func (s *suite) modelIncrements(ctx context.Context, model string, n int) (Row, error) {
	c, err := s.newClient(ctx, sharded.Hooks{})
	if err != nil {
		return Row{}, err
	}
	defer s.stopClient(c)
	ns, err := s.modelNamespace(ctx, c, model)
	if err != nil {
		return Row{}, err
	}
	names := s.names(model, n)
	var op Op
	switch model {
	case ModelActor:
		op, err = ActorIncrements(c, ns, names, s.cfg.Options.Concurrency)
	default: // events and cas take plain increments
		op, err = EventsIncrements(c, ns, names, s.cfg.Options.Concurrency)
	}
	if err != nil {
		return Row{}, err
	}
	row := s.measure(ctx, Row{Scenario: "increments", Kind: "increments", Model: model, Via: "library", Counters: n}, op)
	row.Check = s.check(ctx, row.Result, func() (int64, error) { return s.sumModel(ctx, c, ns, names) })
	return row, nil
}

// eventsReads measures reads of an events counter holding n events that
// no rollup has folded yet, and then of the same counter after a rollup
// folded them all.
func (s *suite) eventsReads(ctx context.Context, n int) ([]Row, error) {
	c, err := s.newClient(ctx, sharded.Hooks{})
	if err != nil {
		return nil, err
	}
	defer s.stopClient(c)
	ns, err := s.modelNamespace(ctx, c, ModelEvents)
	if err != nil {
		return nil, err
	}
	name := s.names("eventsread", n)[0]
	if err := seedEvents(ctx, c, ns, name, n, s.cfg.Options.Concurrency); err != nil {
		return nil, err
	}
	v, err := c.Get(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	if v.Value != int64(n) || v.Events != n {
		return nil, fmt.Errorf("bench: events counter %s reads %d from %d events, want %d from %d", name, v.Value, v.Events, n, n)
	}
	// One caller: a read of n rows costs the store O(n), and with many
	// callers a big n measures the queue in front of the store instead of
	// the read. The latency of one read is the figure that matters here.
	one := s.cfg.Options
	one.Concurrency = 1
	live := s.measureWith(ctx, one, Row{Scenario: fmt.Sprintf("read, %d un-rolled events, 1 caller", n), Kind: "read", Model: ModelEvents, Via: "library", Counters: 1, Events: n}, EventsReads(c, ns, name))
	live.Check = fmt.Sprintf("ok: read %d from %d events before the run", n, n)

	// A process whose clock is two hours ahead rolls everything up: the
	// events are then older than its accept window plus rollup delay.
	ahead, err := abacus.NewClient(ctx, abacus.Config{Driver: s.store, GCInterval: -1, Logger: s.log, Clock: clock.Offset{Base: clock.Real{}, By: 2 * time.Hour}})
	if err != nil {
		return nil, err
	}
	defer s.stopClient(ahead)
	res, err := ahead.GC(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	if res.Skipped || res.Folded != n {
		return nil, fmt.Errorf("bench: rollup of %s folded %d of %d events (skipped %v: %v)", name, res.Folded, n, res.Skipped, res.Err)
	}
	v, err = c.Get(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	if v.Value != int64(n) || v.Events != 0 {
		return nil, fmt.Errorf("bench: after the rollup %s reads %d from %d events, want %d from 0", name, v.Value, v.Events, n)
	}
	rolled := s.measure(ctx, Row{Scenario: fmt.Sprintf("read after rollup of %d events", n), Kind: "read_after_rollup", Model: ModelEvents, Via: "library", Counters: 1}, EventsReads(c, ns, name))
	rolled.Check = fmt.Sprintf("ok: the rollup folded %d events; read %d from the rollup alone", n, n)
	return []Row{live, rolled}, nil
}

// seedEvents adds n increments of 1 to one events counter with a pool of
// writers, each increment a new event.
func seedEvents(ctx context.Context, c *abacus.Client, ns, name string, n, workers int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range min(workers, n) {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := c.Apply(ctx, abacus.Update{Namespace: ns, Counter: name, Delta: 1}); err != nil {
					errs <- fmt.Errorf("bench: seeding events counter %s: %w", name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}
