package apikey

import (
	"errors"
	"fmt"
	"strings"

	"github.com/abacusdb/abacus/internal/names"
)

// Role is what a grant lets its holder do; each role includes the ones
// below it.
type Role uint8

// Roles, weakest first.
const (
	// Read reads counters, ledgers, namespaces and queue statistics.
	Read Role = iota + 1
	// Write also changes counters and ledgers and puts, receives and
	// acknowledges messages.
	Write
	// Admin also creates namespaces and queues, runs GC and requeues dead
	// letters; "*:admin" also manages keys.
	Admin
)

var roleNames = map[string]Role{"read": Read, "write": Write, "admin": Admin}

func (r Role) String() string {
	for n, v := range roleNames {
		if v == r {
			return n
		}
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// Kinds of resources a grant names.
const (
	KindNamespace = "ns"
	KindQueue     = "queue"
	// KindMetrics is /metrics, which names namespaces and queues: the scope
	// "metrics:read" lets a scraper read it and nothing else.
	KindMetrics = "metrics"
)

// Grant is one parsed scope: Role over the resource of Kind named Name,
// where Name "*" is every resource of that kind and Kind "*" is everything.
type Grant struct {
	Kind string
	Name string
	Role Role
}

// ErrBadScope means a scope does not parse.
var ErrBadScope = errors.New("bad scope")

// ParseScope parses "ns:NAME:ROLE", "queue:NAME:ROLE" (NAME may be "*"),
// "metrics:read" or "*:ROLE". Names may hold ':', so the role is what
// follows the last ':'.
func ParseScope(s string) (Grant, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return Grant{}, fmt.Errorf("%w %q: want ns:NAME:ROLE, queue:NAME:ROLE, metrics:read or *:ROLE", ErrBadScope, s)
	}
	role, ok := roleNames[s[i+1:]]
	if !ok {
		return Grant{}, fmt.Errorf("%w %q: role %q is not read, write or admin", ErrBadScope, s, s[i+1:])
	}
	res := s[:i]
	switch res {
	case "*":
		return Grant{Kind: "*", Name: "*", Role: role}, nil
	case KindMetrics:
		if role != Read {
			return Grant{}, fmt.Errorf("%w %q: the metrics can only be read (metrics:read)", ErrBadScope, s)
		}
		return Grant{Kind: KindMetrics, Name: "*", Role: role}, nil
	}
	kind, name, ok := strings.Cut(res, ":")
	if !ok || (kind != KindNamespace && kind != KindQueue) {
		return Grant{}, fmt.Errorf("%w %q: want ns:NAME:ROLE, queue:NAME:ROLE or *:ROLE", ErrBadScope, s)
	}
	if name != "*" {
		if err := names.Check(kind, name); err != nil {
			return Grant{}, fmt.Errorf("%w %q: %w", ErrBadScope, s, err)
		}
	}
	return Grant{Kind: kind, Name: name, Role: role}, nil
}

func (g Grant) String() string {
	if g.Kind == "*" || g.Kind == KindMetrics {
		return g.Kind + ":" + g.Role.String()
	}
	return g.Kind + ":" + g.Name + ":" + g.Role.String()
}

// covers reports whether g gives at least role over the resource.
func (g Grant) covers(kind, name string, role Role) bool {
	if g.Role < role {
		return false
	}
	if g.Kind == "*" {
		return true
	}
	return g.Kind == kind && (g.Name == "*" || g.Name == name)
}

// ParseScopes parses every scope, refusing an empty list: a key that may
// do nothing is a mistake, not a key.
func ParseScopes(scopes []string) ([]Grant, error) {
	if len(scopes) == 0 {
		return nil, fmt.Errorf("%w: a key needs at least one scope", ErrBadScope)
	}
	out := make([]Grant, 0, len(scopes))
	for _, s := range scopes {
		g, err := ParseScope(s)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}
