package embedded

import (
	"context"

	"github.com/abacusdb/abacus/driver"
)

// CreateNamespace implements driver.Namespaces.
func (d *Driver) CreateNamespace(ctx context.Context, p *driver.CreateNamespaceParams) error {
	ns := &p.Namespace
	return d.createRecord(ctx, "namespace", ns.Name, namespaceKey(ns.Name),
		func() ([]byte, error) { return encodeNamespace(ns) },
		func() func() { d.nsMu.Lock(); return d.nsMu.Unlock })
}

// GetNamespace implements driver.Namespaces.
func (d *Driver) GetNamespace(ctx context.Context, p *driver.GetNamespaceParams) (*driver.Namespace, error) {
	return getRecord(ctx, d, "namespace", p.Name, namespaceKey(p.Name), decodeNamespace, namespaceName)
}

// ListNamespaces implements driver.Namespaces.
func (d *Driver) ListNamespaces(ctx context.Context, p *driver.ListNamespacesParams) ([]*driver.Namespace, error) {
	return listRecords(ctx, d, "list namespaces", tableNamespaces, func(key []byte) (string, error) {
		_, parts, err := decodeKey(key)
		if err != nil {
			return "", err
		}
		return parts[0], nil
	}, decodeNamespace, namespaceName)
}

func namespaceName(ns *driver.Namespace) string { return ns.Name }
