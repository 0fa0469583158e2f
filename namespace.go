package abacus

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/names"
	"github.com/abacusdb/abacus/internal/registry"
)

// Model is how a namespace's counters are stored.
type Model string

// Models: how a namespace's counters are stored (see docs/guarantees.md).
const (
	ModelSharded Model = "sharded"
	ModelEvents  Model = "events"
	ModelActor   Model = "actor"
	ModelLedger  Model = "ledger"
	ModelNative  Model = "native"
	ModelCAS     Model = "cas"
)

// Counter types of the sharded model.
const (
	TypeSum      = "sum"      // signed sum (a PN counter)
	TypeMax      = "max"      // largest observed value
	TypeMin      = "min"      // smallest observed value
	TypeDistinct = "distinct" // estimated number of distinct items (HyperLogLog, precision 14)
)

// DefaultNamespace always exists: model sharded, type sum.
const DefaultNamespace = "default"

// MaxNameLen is the longest namespace or counter name, in bytes.
const MaxNameLen = names.MaxLen

// Namespace is a named configuration shared by many counters. Namespaces
// cannot be changed once created.
type Namespace struct {
	Name  string
	Model Model
	Type  string
	// ReadConsistency and WriteConsistency apply to every counter of the
	// namespace; driver.Default means the driver's configured level.
	ReadConsistency  driver.Consistency
	WriteConsistency driver.Consistency
	CreatedAt        time.Time
	// TTL, when positive, is the length of the periods counters live in:
	// at every multiple of it since the Unix epoch (UTC), each counter
	// starts again from zero, and what it counted before is purged later.
	TTL time.Duration
	// Ledger holds the options of a ledger namespace, with every default
	// filled in; nil for other models.
	Ledger *LedgerOptions
	// Events holds the options of an events namespace, with every default
	// filled in; nil for other models.
	Events *EventsOptions
}

// NamespaceConfig is what CreateNamespace takes.
type NamespaceConfig struct {
	// Name is required: 1 to 256 bytes of UTF-8.
	Name string
	// Model defaults to ModelSharded.
	Model Model
	// Type defaults to TypeSum. Only sharded counters have other types;
	// events, actor, native and cas counters are sums.
	Type string
	// ReadConsistency and WriteConsistency default to the driver's levels.
	// A ledger's de-duplication across processes relies on reads that see
	// every acknowledged write: keep the levels overlapping (QUORUM for
	// both, the Cassandra driver's default).
	ReadConsistency  driver.Consistency
	WriteConsistency driver.Consistency
	// TTL, when set, makes every counter of the namespace start again
	// from zero at each multiple of it since the Unix epoch (UTC): a
	// counter's value covers one period, as in "requests this hour". It
	// must be a whole number of seconds, at least MinTTL. A ledger with a
	// TTL forgets its balance and its request ids at each period's end: a
	// retry arriving in the next period is applied again. Zero keeps
	// counters until deleted.
	TTL time.Duration
	// Ledger sets the options of a ModelLedger namespace; nil takes every
	// default. It must be nil for other models.
	Ledger *LedgerOptions
	// Events sets the options of a ModelEvents namespace; nil takes every
	// default. It must be nil for other models.
	Events *EventsOptions
}

// ValidateName checks a namespace, counter or ledger name: 1 to 256 bytes
// of UTF-8. A new namespace's name must also be made of ASCII letters,
// digits, '_', '-', '.' and ':', starting with a letter or digit (see
// CreateNamespace); existing namespaces keep the names they have.
func ValidateName(kind, name string) error { return names.Check(kind, name) }

func (c NamespaceConfig) withDefaults() NamespaceConfig {
	// Stored names are canonical lower case: the type is compared exactly
	// on every update, so "DISTINCT" must not be stored as given.
	c.Model = Model(strings.ToLower(strings.TrimSpace(string(c.Model))))
	c.Type = strings.ToLower(strings.TrimSpace(c.Type))
	if c.Model == "" {
		c.Model = ModelSharded
	}
	if m, ok := models[c.Model]; ok && c.Type == "" {
		c.Type = m.defaultType()
	}
	return c
}

func (c NamespaceConfig) validate() error {
	if err := names.Check("namespace", c.Name); err != nil {
		return err
	}
	m, ok := models[c.Model]
	if !ok {
		return fmt.Errorf("%w: unknown model %q (want sharded, events, actor, ledger, native or cas)", ErrInvalid, c.Model)
	}
	if err := m.checkNamespace(c); err != nil {
		return err
	}
	if c.Model != ModelLedger && c.Ledger != nil {
		return fmt.Errorf("%w: ledger options given for a namespace of model %q", ErrInvalid, c.Model)
	}
	if c.Model != ModelEvents && c.Events != nil {
		return fmt.Errorf("%w: events options given for a namespace of model %q", ErrInvalid, c.Model)
	}
	switch {
	case c.TTL == 0:
	case c.TTL < MinTTL || c.TTL%time.Second != 0:
		return fmt.Errorf("%w: ttl %v must be a whole number of seconds, at least %v", ErrInvalid, c.TTL, MinTTL)
	}
	for _, cl := range []driver.Consistency{c.ReadConsistency, c.WriteConsistency} {
		if cl > driver.Any {
			return fmt.Errorf("%w: unknown consistency level %v", ErrInvalid, cl)
		}
	}
	return nil
}

func (c NamespaceConfig) eventsOptions() EventsOptions {
	if c.Events == nil {
		return EventsOptions{}
	}
	return *c.Events
}

func namespaceFromRecord(r *driver.Namespace) (*Namespace, error) {
	ns := &Namespace{
		Name:             r.Name,
		Model:            Model(r.Model),
		Type:             r.Type,
		ReadConsistency:  r.ReadConsistency,
		WriteConsistency: r.WriteConsistency,
		CreatedAt:        r.CreatedAt,
		TTL:              r.Retention,
	}
	if m, ok := models[ns.Model]; ok {
		if err := m.loadOptions(ns, r.Options); err != nil {
			return nil, err
		}
	}
	return ns, nil
}

// CreateNamespace creates a namespace. It returns ErrNamespaceExists if the
// name is taken, whatever its configuration.
func (c *Client) CreateNamespace(ctx context.Context, nc NamespaceConfig) (*Namespace, error) {
	nc = nc.withDefaults()
	if err := names.CheckNew("namespace", nc.Name); err != nil {
		return nil, c.namespaces.Existing(ctx, nc.Name, err)
	}
	if err := nc.validate(); err != nil {
		return nil, err
	}
	rec := driver.Namespace{
		Name:             nc.Name,
		Model:            string(nc.Model),
		Type:             nc.Type,
		ReadConsistency:  nc.ReadConsistency,
		WriteConsistency: nc.WriteConsistency,
		CreatedAt:        c.cfg.Clock.Now().UTC().Truncate(time.Millisecond),
		Retention:        nc.TTL,
	}
	rec.Options = models[nc.Model].storedOptions(nc)
	return c.namespaces.Create(nc.Name, &rec,
		func() error { return c.cfg.Driver.CreateNamespace(ctx, &driver.CreateNamespaceParams{Namespace: rec}) },
		publicError)
}

// Namespace returns the named namespace or ErrNamespaceNotFound, which it
// also returns once a delete of the namespace has taken effect. Namespaces
// never change, so they are cached after the first lookup; a cached one is
// checked against the store with its cuts, every Config.LifecycleRefresh.
func (c *Client) Namespace(ctx context.Context, name string) (*Namespace, error) {
	ns, _, err := c.live(ctx, namespaceOrDefault(name))
	return ns, err
}

// KnownNamespace returns the named namespace if this client has read or
// created it before, without asking the store: for callers, such as
// metrics, that must not turn a request into another store read.
func (c *Client) KnownNamespace(name string) (*Namespace, bool) {
	return c.namespaces.Cached(namespaceOrDefault(name))
}

// newNamespaceRegistry is the Client's cache of namespaces (they never
// change once created).
func newNamespaceRegistry(d driver.Driver) *registry.Registry[driver.Namespace, Namespace] {
	return &registry.Registry[driver.Namespace, Namespace]{
		NotFound: ErrNamespaceNotFound, Exists: ErrNamespaceExists,
		Validate: func(name string) error { return ValidateName("namespace", name) },
		Read: func(ctx context.Context, name string) (*driver.Namespace, error) {
			return d.GetNamespace(ctx, &driver.GetNamespaceParams{Name: name})
		},
		Decode: namespaceFromRecord,
	}
}

// Namespaces lists every namespace, sorted by name.
func (c *Client) Namespaces(ctx context.Context) ([]*Namespace, error) {
	recs, err := c.cfg.Driver.ListNamespaces(ctx, &driver.ListNamespacesParams{})
	if err != nil {
		return nil, err
	}
	out := make([]*Namespace, len(recs))
	for i, r := range recs {
		if out[i], err = namespaceFromRecord(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}
