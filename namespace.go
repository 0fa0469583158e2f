package abacus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/abacusdb/abacus/crdt"
	"github.com/abacusdb/abacus/driver"
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
const MaxNameLen = 256

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
	// Ledger sets the options of a ModelLedger namespace; nil takes every
	// default. It must be nil for other models.
	Ledger *LedgerOptions
	// Events sets the options of a ModelEvents namespace; nil takes every
	// default. It must be nil for other models.
	Events *EventsOptions
}

// ValidateName checks a namespace or counter name.
func ValidateName(kind, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: %s name is empty", ErrInvalid, kind)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: %s name is %d bytes, the limit is %d", ErrInvalid, kind, len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: %s name is not valid UTF-8", ErrInvalid, kind)
	}
	return nil
}

func (c NamespaceConfig) withDefaults() NamespaceConfig {
	// Stored names are canonical lower case: the type is compared exactly
	// on every update, so "DISTINCT" must not be stored as given.
	c.Model = Model(strings.ToLower(strings.TrimSpace(string(c.Model))))
	c.Type = strings.ToLower(strings.TrimSpace(c.Type))
	if c.Model == "" {
		c.Model = ModelSharded
	}
	switch c.Model {
	case ModelSharded, ModelEvents, ModelActor, ModelNative, ModelCAS:
		if c.Type == "" {
			c.Type = TypeSum
		}
	}
	return c
}

func (c NamespaceConfig) validate() error {
	if err := ValidateName("namespace", c.Name); err != nil {
		return err
	}
	switch c.Model {
	case ModelSharded:
		if _, err := crdt.ParseKind(c.Type); err != nil {
			return fmt.Errorf("%w: type %q: want sum, max, min or distinct", ErrInvalid, c.Type)
		}
	case ModelLedger:
		if c.Type != "" {
			return fmt.Errorf("%w: type %q: ledger namespaces have no type", ErrInvalid, c.Type)
		}
		if err := c.ledgerOptions().engine().Validate(); err != nil {
			return fmt.Errorf("%w: ledger options: %v", ErrInvalid, err)
		}
	case ModelEvents, ModelActor, ModelNative, ModelCAS:
		if c.Type != TypeSum {
			return fmt.Errorf("%w: type %q: %s counters are sums (type sum or none)", ErrInvalid, c.Type, c.Model)
		}
		if c.Model == ModelEvents {
			if err := c.eventsOptions().engine().Validate(); err != nil {
				return fmt.Errorf("%w: events options: %v", ErrInvalid, err)
			}
		}
	default:
		return fmt.Errorf("%w: unknown model %q (want sharded, events, actor, ledger, native or cas)", ErrInvalid, c.Model)
	}
	if c.Model != ModelLedger && c.Ledger != nil {
		return fmt.Errorf("%w: ledger options given for a namespace of model %q", ErrInvalid, c.Model)
	}
	if c.Model != ModelEvents && c.Events != nil {
		return fmt.Errorf("%w: events options given for a namespace of model %q", ErrInvalid, c.Model)
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
	}
	if ns.Model == ModelLedger {
		o, err := ledgerOptionsFromMap(r.Options)
		if err != nil {
			return nil, fmt.Errorf("namespace %q has corrupt ledger options: %w", r.Name, err)
		}
		ns.Ledger = &o
	}
	if ns.Model == ModelEvents {
		o, err := eventsOptionsFromMap(r.Options)
		if err != nil {
			return nil, fmt.Errorf("namespace %q has corrupt events options: %w", r.Name, err)
		}
		ns.Events = &o
	}
	return ns, nil
}

// CreateNamespace creates a namespace. It returns ErrNamespaceExists if the
// name is taken, whatever its configuration.
func (c *Client) CreateNamespace(ctx context.Context, nc NamespaceConfig) (*Namespace, error) {
	nc = nc.withDefaults()
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
	}
	switch nc.Model {
	case ModelLedger:
		rec.Options = nc.ledgerOptions().toMap()
	case ModelEvents:
		rec.Options = nc.eventsOptions().toMap()
	}
	err := c.cfg.Driver.CreateNamespace(ctx, &driver.CreateNamespaceParams{Namespace: rec})
	if errors.Is(err, driver.ErrExists) {
		return nil, fmt.Errorf("%w: %q", ErrNamespaceExists, nc.Name)
	}
	if err != nil {
		return nil, wrapDriverError(err)
	}
	ns, err := namespaceFromRecord(&rec)
	if err != nil {
		return nil, err
	}
	c.namespaces.Store(ns.Name, ns)
	return ns, nil
}

// Namespace returns the named namespace or ErrNamespaceNotFound. Namespaces
// never change, so they are cached after the first lookup.
func (c *Client) Namespace(ctx context.Context, name string) (*Namespace, error) {
	if name == "" {
		name = DefaultNamespace
	}
	if v, ok := c.namespaces.Load(name); ok {
		return v.(*Namespace), nil
	}
	if err := ValidateName("namespace", name); err != nil {
		return nil, err
	}
	rec, err := c.cfg.Driver.GetNamespace(ctx, &driver.GetNamespaceParams{Name: name})
	if errors.Is(err, driver.ErrNotFound) {
		return nil, fmt.Errorf("%w: %q", ErrNamespaceNotFound, name)
	}
	if err != nil {
		return nil, err
	}
	ns, err := namespaceFromRecord(rec)
	if err != nil {
		return nil, err
	}
	c.namespaces.Store(name, ns)
	return ns, nil
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
