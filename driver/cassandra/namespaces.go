package cassandra

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// CreateNamespace inserts the namespace once (insertRecord): of two
// processes racing to create the same name exactly one succeeds and the
// other gets driver.ErrExists.
func (d *Driver) CreateNamespace(ctx context.Context, p *driver.CreateNamespaceParams) error {
	const op = "create namespace"
	if err := d.begin(ctx, op); err != nil {
		return err
	}
	ns := p.Namespace
	vals, err := namespaceValues(ns)
	if err != nil {
		return fmt.Errorf("cassandra: %s %q: %w", op, ns.Name, err)
	}
	return d.insertRecord(ctx, op, "namespace", ns.Name, d.q.insertNamespace, vals,
		func(existing map[string]any) bool { return sameNamespace(existing, ns) })
}

// sameNamespace reports whether the row returned by a not-applied insert
// holds exactly ns (as far as the table can store it).
func sameNamespace(existing map[string]any, ns driver.Namespace) bool {
	var r namespaceRow
	str := func(col string) *string {
		if v, ok := existing[col].(string); ok {
			return &v
		}
		return nil
	}
	r.Name, r.Model, r.Type = str("name"), str("model"), str("type")
	r.ReadCL, r.WriteCL = str("read_cl"), str("write_cl")
	if v, ok := existing["retention_ms"].(int64); ok {
		r.RetentionMS = &v
	}
	if v, ok := existing["created_at"].(time.Time); ok {
		r.CreatedAt = &v
	}
	r.Options, _ = existing["options"].(map[string]string)
	got, err := namespaceFromRow(r)
	if err != nil {
		return false
	}
	return got.Name == ns.Name && got.Model == ns.Model && got.Type == ns.Type &&
		got.ReadConsistency == ns.ReadConsistency && got.WriteConsistency == ns.WriteConsistency &&
		got.Retention == ns.Retention && maps.Equal(got.Options, ns.Options) &&
		got.CreatedAt.Equal(ns.CreatedAt.Truncate(time.Millisecond))
}

// GetNamespace reads one namespace at the ReadConsistency level.
func (d *Driver) GetNamespace(ctx context.Context, p *driver.GetNamespaceParams) (*driver.Namespace, error) {
	return getRecord[driver.Namespace, namespaceRow](ctx, d, d.cfg.ReadConsistency, "get namespace", "namespace", p.Name, d.q.getNamespace, namespaceFromRow)
}

// ListNamespaces reads every namespace at the ReadConsistency level and
// returns them sorted by name.
func (d *Driver) ListNamespaces(ctx context.Context, _ *driver.ListNamespacesParams) ([]*driver.Namespace, error) {
	return listRecords[driver.Namespace, namespaceRow](ctx, d, d.cfg.ReadConsistency, "list namespaces", d.q.listNamespaces, namespaceFromRow,
		func(ns *driver.Namespace) string { return ns.Name })
}

// namespaceRow is one row of the namespaces table as scanned. Pointers are
// nil where the column is null, so the decoder can tell null from empty.
type namespaceRow struct {
	Name        *string
	Model       *string
	Type        *string
	ReadCL      *string
	WriteCL     *string
	RetentionMS *int64
	Options     map[string]string
	CreatedAt   *time.Time
}

func (r *namespaceRow) dest() []any {
	return []any{&r.Name, &r.Model, &r.Type, &r.ReadCL, &r.WriteCL, &r.RetentionMS, &r.Options, &r.CreatedAt}
}

// errBadRow marks rows that do not decode; they were written by something
// other than this driver, or damaged.
var errBadRow = errors.New("malformed row")

// badRecordRow is the errBadRow of a row of a record table (namespaces,
// queues) whose name column holds name, or null.
func badRecordRow(table string, name *string, format string, args ...any) error {
	n := "<null>"
	if name != nil {
		n = fmt.Sprintf("%q", *name)
	}
	return fmt.Errorf("%w: %s row %s: %s", errBadRow, table, n, fmt.Sprintf(format, args...))
}

// namespaceFromRow converts a scanned row. Every column this driver writes
// must be present; options may be null because Cassandra stores an empty
// map as null.
func namespaceFromRow(r namespaceRow) (*driver.Namespace, error) {
	bad := func(format string, args ...any) (*driver.Namespace, error) {
		return nil, badRecordRow("namespaces", r.Name, format, args...)
	}
	switch {
	case r.Name == nil:
		return bad("name is null")
	case r.Model == nil:
		return bad("model is null")
	case r.Type == nil:
		return bad("type is null")
	case r.ReadCL == nil:
		return bad("read_cl is null")
	case r.WriteCL == nil:
		return bad("write_cl is null")
	case r.RetentionMS == nil:
		return bad("retention_ms is null")
	case r.CreatedAt == nil:
		return bad("created_at is null")
	}
	readCL, err := parseStoredConsistency(*r.ReadCL)
	if err != nil {
		return bad("read_cl: %v", err)
	}
	writeCL, err := parseStoredConsistency(*r.WriteCL)
	if err != nil {
		return bad("write_cl: %v", err)
	}
	ms := *r.RetentionMS
	if ms < 0 {
		return bad("retention_ms %d is negative", ms)
	}
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return bad("retention_ms %d overflows a time.Duration", ms)
	}
	ns := &driver.Namespace{
		Name:             *r.Name,
		Model:            *r.Model,
		Type:             *r.Type,
		ReadConsistency:  readCL,
		WriteConsistency: writeCL,
		Retention:        time.Duration(ms) * time.Millisecond,
		CreatedAt:        *r.CreatedAt,
	}
	if len(r.Options) > 0 {
		ns.Options = make(map[string]string, len(r.Options))
		for k, v := range r.Options {
			ns.Options[k] = v
		}
	}
	return ns, nil
}

// parseStoredConsistency accepts exactly the names Consistency.String
// writes, DEFAULT included; anything else in the column is an error.
func parseStoredConsistency(s string) (driver.Consistency, error) {
	c, err := driver.ParseConsistency(s)
	if err != nil {
		return 0, err
	}
	if c.String() != s {
		return 0, fmt.Errorf("%q is not a stored consistency name (want %q)", s, c.String())
	}
	return c, nil
}

// namespaceValues are the bind values of insertNamespace. Namespaces that
// could not be read back are refused here rather than stored.
func namespaceValues(ns driver.Namespace) ([]any, error) {
	for _, c := range []driver.Consistency{ns.ReadConsistency, ns.WriteConsistency} {
		if _, ok := gocqlConsistency(c); !ok && c != driver.Default {
			return nil, fmt.Errorf("unknown consistency level %v", c)
		}
	}
	if ns.Retention < 0 {
		return nil, fmt.Errorf("retention %v is negative", ns.Retention)
	}
	if ns.Retention%time.Millisecond != 0 {
		return nil, fmt.Errorf("retention %v is not a whole number of milliseconds (the column's unit)", ns.Retention)
	}
	return []any{
		ns.Name, ns.Model, ns.Type,
		ns.ReadConsistency.String(), ns.WriteConsistency.String(),
		ns.Retention.Milliseconds(),
		ns.Options,
		ns.CreatedAt,
	}, nil
}
