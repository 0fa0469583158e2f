package abacus

import (
	"context"
	"fmt"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// namespaceModel is what a model contributes to its namespaces: which
// configurations it accepts and how its options are stored. Every model
// has one, in a file of its own (model_*.go).
type namespaceModel interface {
	// defaultType is the counter type a namespace gets when none is given
	// ("" for models whose namespaces have no type).
	defaultType() string
	// checkNamespace refuses a configuration (defaults applied) whose type
	// or options the model cannot serve.
	checkNamespace(nc NamespaceConfig) error
	// storedOptions is the options record stored with a new namespace; nil
	// for models without options.
	storedOptions(nc NamespaceConfig) map[string]string
	// loadOptions fills ns's options from its stored record.
	loadOptions(ns *Namespace, stored map[string]string) error
	// list names the counters (ledgers) the store holds in one namespace.
	list(ctx context.Context, d driver.Driver, p *driver.ListCountersParams) ([]driver.CounterKey, error)
}

// counterModel is a model whose namespaces hold counters: the Client looks
// it up once per call and hands it the operation.
type counterModel interface {
	namespaceModel
	// prepare checks an update against p.ns and fills in what apply needs.
	prepare(c *Client, p prepared, u Update) (prepared, error)
	// apply makes a prepared update durable.
	apply(ctx context.Context, c *Client, p prepared, u Update) error
	// read fills in v's value and the model's read statistics.
	read(ctx context.Context, c *Client, ns *Namespace, counter string, v *Value) error
	// clear resets a counter, or says why the model cannot, and says when
	// the reset takes effect.
	clear(ctx context.Context, c *Client, ns *Namespace, counter counterNames, requestID string) (time.Time, error)
	// collect folds what the model can fold of one counter.
	collect(ctx context.Context, c *Client, ns *Namespace, key driver.CounterKey) GCResult
}

// models holds every model this release serves.
var models = map[Model]namespaceModel{
	ModelSharded: shardedModel{},
	ModelEvents:  eventsModel{},
	ModelActor:   actorModel{},
	ModelNative:  nativeModel{},
	ModelCAS:     casModel{},
	ModelLedger:  ledgerModel{},
}

func counterModelOf(m Model) (counterModel, bool) {
	cm, ok := models[m].(counterModel)
	return cm, ok
}

// plainSums is the namespace part of the models whose counters are plain
// sums with no options and nothing to collect (actor, native, cas).
type plainSums struct {
	noOptions
	nothingToCollect
}

func (plainSums) defaultType() string { return TypeSum }

func (plainSums) checkNamespace(nc NamespaceConfig) error { return sumsOnly(nc) }

// numbersAsGiven is the prepare of the models that apply an update's delta
// as it is (native, cas): it only refuses what is not a number.
type numbersAsGiven struct{}

func (numbersAsGiven) prepare(_ *Client, p prepared, u Update) (prepared, error) {
	return p, numbersOnly(p.ns, u)
}

// sumsOnly is the type check of the models whose counters are plain sums.
func sumsOnly(nc NamespaceConfig) error {
	if nc.Type != TypeSum {
		return fmt.Errorf("%w: type %q: %s counters are sums (type sum or none)", ErrInvalid, nc.Type, nc.Model)
	}
	return nil
}

// numbersOnly refuses an item for a model whose counters take numbers.
func numbersOnly(ns *Namespace, u Update) error {
	if u.Item != "" {
		return fmt.Errorf("%w: namespace %q holds %s sum counters, which take a number, not an item", ErrWrongType, ns.Name, ns.Model)
	}
	return nil
}

// noClear is the refusal of the models that cannot reset a counter safely.
func noClear(ns *Namespace) error {
	return fmt.Errorf("%w: namespace %q is of model %q, which has no clear (ledgers are credited and debited)", ErrWrongModel, ns.Name, ns.Model)
}

// noOptions is the options part of the models that have none.
type noOptions struct{}

func (noOptions) storedOptions(NamespaceConfig) map[string]string { return nil }
func (noOptions) loadOptions(*Namespace, map[string]string) error { return nil }

// nothingToCollect is the collect of the models that leave no garbage.
type nothingToCollect struct{}

func (nothingToCollect) collect(_ context.Context, _ *Client, _ *Namespace, key driver.CounterKey) GCResult {
	return GCResult{Key: key}
}
