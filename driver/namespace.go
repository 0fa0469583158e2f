package driver

import (
	"context"
	"time"
)

// Namespace is the stored configuration shared by many counters.
// Validation of its fields belongs to the caller (package abacus); drivers
// store and return what they are given.
type Namespace struct {
	// Name is the namespace's unique name.
	Name string
	// Model is how its counters are stored: "sharded", "events", "actor",
	// "ledger", "native" or "cas".
	Model string
	// Type is the state type for the sharded model: "sum", "max", "min" or "distinct".
	Type string
	// ReadConsistency and WriteConsistency apply to the namespace's counters.
	ReadConsistency  Consistency
	WriteConsistency Consistency
	// Retention is how long counters are kept; zero keeps them forever.
	Retention time.Duration
	// Options holds model-specific settings (such as a ledger's history length)
	// as text, so new models need no schema change.
	Options map[string]string
	// CreatedAt is when the namespace was first created.
	CreatedAt time.Time
}

// CreateNamespaceParams are the parameters of Namespaces.CreateNamespace.
type CreateNamespaceParams struct {
	Namespace Namespace
}

// GetNamespaceParams are the parameters of Namespaces.GetNamespace.
type GetNamespaceParams struct {
	Name string
}

// ListNamespacesParams are the parameters of Namespaces.ListNamespaces.
type ListNamespacesParams struct{}

// Namespaces stores namespace records.
type Namespaces interface {
	// CreateNamespace stores a new namespace. If one with the same name exists
	// it returns ErrExists and leaves the stored record unchanged, so two
	// processes racing to create a namespace end with exactly one record.
	CreateNamespace(ctx context.Context, p *CreateNamespaceParams) error

	// GetNamespace returns the namespace or ErrNotFound.
	GetNamespace(ctx context.Context, p *GetNamespaceParams) (*Namespace, error)

	// ListNamespaces returns every namespace sorted by name.
	ListNamespaces(ctx context.Context, p *ListNamespacesParams) ([]*Namespace, error)
}
