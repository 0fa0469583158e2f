package cassandra

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// Defaults applied by Open to zero-valued Config fields.
const (
	DefaultPort              = 9042
	DefaultKeyspace          = "abacus"
	DefaultTimeout           = 5 * time.Second
	DefaultConnectTimeout    = 5 * time.Second
	DefaultNumConns          = 2
	DefaultReplicationFactor = 1
	DefaultQueueGCGrace      = 3 * time.Hour
)

// Replication strategies accepted in Replication.Strategy.
const (
	SimpleStrategy          = "SimpleStrategy"
	NetworkTopologyStrategy = "NetworkTopologyStrategy"
)

// Config configures a Cassandra driver. The zero value of every field except
// Hosts means "use the default" given in the field's comment.
type Config struct {
	// Hosts are the contact points, as "host" or "host:port". Required.
	// The rest of the ring is discovered from them.
	Hosts []string

	// Port is the CQL native port used for hosts given without one.
	// Default: 9042.
	Port int

	// Keyspace holds Abacus' tables. It must be a valid unquoted CQL name:
	// lower-case letters, digits and underscores, starting with a letter, at
	// most 48 characters. Default: "abacus".
	Keyspace string

	// Replication is used when Open creates the keyspace. An existing
	// keyspace keeps its replication. Default: SimpleStrategy, factor 1.
	Replication Replication

	// LocalDataCenter names the data center this process runs in. When
	// set, every request is coordinated by a node of that data center
	// (token-aware routing over data-center-aware round robin, with the
	// other data centers' nodes left out of the pool), and
	// ReadConsistency and WriteConsistency default to LOCAL_QUORUM
	// instead of QUORUM. Lightweight transactions stay at SERIAL whatever
	// the level: their decisions (a request id claimed, a lease held, a
	// name created) must be one across data centers (docs/datacenters.md).
	// Open fails, naming the data centers the cluster has, when no node
	// is in this one. Default: "", every node coordinates, QUORUM.
	LocalDataCenter string

	// ReadConsistency is used by ReadShards, GetNamespace, ListNamespaces,
	// ListCounters and the events model's reads (ReadEventCounter,
	// ReadEvents, ListEventCounters) when the operation's Consistency is
	// driver.Default. Default: driver.Quorum, or driver.LocalQuorum when
	// LocalDataCenter is set.
	ReadConsistency driver.Consistency

	// WriteConsistency is used by WriteShard, CreateNamespace, WriteEvent
	// and MarkEventBucket when the operation's Consistency is
	// driver.Default. Default: driver.Quorum, or driver.LocalQuorum when
	// LocalDataCenter is set.
	WriteConsistency driver.Consistency

	// FoldConsistency is used by Fold, WriteRollup and DeleteEventBuckets
	// (the events model's counterpart of a fold) when their Consistency is
	// driver.Default. Default: driver.Quorum.
	FoldConsistency driver.Consistency

	// GCReadConsistency is the level for the read that precedes a fold: it
	// must see every replica, or the fold could tally a stale copy of a
	// shard (its last write missing on the replicas that answered) and
	// then delete the shard. driver.ReadShardsParams cannot say that a read
	// is for a fold, so ReadShards never picks this level by itself; GC
	// callers pass driver.All (or Driver.GCReadConsistency()) as the read's
	// Consistency. Default: driver.All.
	GCReadConsistency driver.Consistency

	// Timeout bounds each request on the client side; the context passed to
	// an operation can shorten it further. For writes Cassandra's own
	// timeout (2 s by default) fires first and reports how many replicas
	// acknowledged; either way a timed-out write is an unknown outcome.
	// Default: 5s.
	Timeout time.Duration

	// ConnectTimeout bounds dialing and the connection handshake.
	// Default: 5s.
	ConnectTimeout time.Duration

	// NumConns is the number of connections per host. Default: 2.
	NumConns int

	// ProtocolVersion pins the native protocol version (3, 4 or 5).
	// Default: 0, negotiate: gocql offers v5 and steps down each time a node
	// refuses (Cassandra 2.1 speaks v3 and logs each refusal as an error),
	// so pinning saves two round trips and log noise on old clusters.
	ProtocolVersion int

	// Username and Password enable PasswordAuthenticator when Username is
	// set. Default: no authentication.
	Username string
	Password string

	// TLS enables TLS when not nil. Default: plain TCP.
	TLS *TLSConfig

	// Schema says whether Open creates the keyspace and tables.
	// Default: SchemaCreate.
	Schema SchemaMode

	// QueueGCGrace is the gc_grace_seconds of the queue tables, in whole
	// seconds: how long a deleted (acknowledged) message's tombstone is
	// kept before compaction may drop it. Shorter means fewer tombstones
	// for reads to skip; but a replica that missed a delete and is not
	// repaired (or sent the hint, which expires after the same grace)
	// within it brings the message back, and it is delivered again. The
	// queue's read floor keeps consumers from scanning old tombstones, so
	// the default errs on the safe side. It applies when Open creates the
	// tables; change it later with ALTER TABLE. Default: 3h, Cassandra's
	// default hint window.
	QueueGCGrace time.Duration

	// Logger receives the driver's and gocql's messages; gocql's info and
	// debug messages are logged at debug level. Default: slog.Default().
	Logger *slog.Logger
}

// Replication is the replication of the keyspace Open creates.
type Replication struct {
	// Strategy is SimpleStrategy or NetworkTopologyStrategy.
	// Default: SimpleStrategy.
	Strategy string

	// ReplicationFactor is the number of replicas under SimpleStrategy; it
	// must be zero under NetworkTopologyStrategy. Default: 1.
	ReplicationFactor int

	// DataCenters maps data center names to replica counts under
	// NetworkTopologyStrategy, where it is required; it must be empty
	// under SimpleStrategy.
	DataCenters map[string]int
}

// TLSConfig configures TLS to the cluster. Server certificates and host
// names are verified unless InsecureSkipVerify is set.
type TLSConfig struct {
	// Config is a base configuration, cloned before use. Default: an empty
	// tls.Config.
	Config *tls.Config

	// CAFile is a PEM file of CA certificates to trust in addition to
	// Config.RootCAs (or, when that is nil, instead of the system pool).
	CAFile string

	// CertFile and KeyFile are a PEM client certificate and its key, for
	// clusters that require client authentication. Both or neither.
	CertFile string
	KeyFile  string

	// InsecureSkipVerify accepts any server certificate. Only for tests.
	InsecureSkipVerify bool
}

// SchemaMode says whether Open creates the keyspace and tables.
type SchemaMode uint8

const (
	// SchemaCreate creates the keyspace and tables when missing, with
	// IF NOT EXISTS, and waits for the cluster to agree on the schema.
	SchemaCreate SchemaMode = iota

	// SchemaExisting issues no DDL; Open fails if the tables are missing.
	// For users whose role may not create keyspaces or tables.
	SchemaExisting
)

func (m SchemaMode) String() string {
	switch m {
	case SchemaCreate:
		return "create"
	case SchemaExisting:
		return "existing"
	}
	return fmt.Sprintf("SchemaMode(%d)", uint8(m))
}

// withDefaults returns a copy of c with defaults filled in. It does not
// modify c or share its slices and maps.
func (c Config) withDefaults() Config {
	c.Hosts = append([]string(nil), c.Hosts...)
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.Keyspace == "" {
		c.Keyspace = DefaultKeyspace
	}
	if c.Replication.Strategy == "" {
		c.Replication.Strategy = SimpleStrategy
	}
	if c.Replication.Strategy == SimpleStrategy && c.Replication.ReplicationFactor == 0 {
		c.Replication.ReplicationFactor = DefaultReplicationFactor
	}
	if c.Replication.DataCenters != nil {
		dcs := make(map[string]int, len(c.Replication.DataCenters))
		for k, v := range c.Replication.DataCenters {
			dcs[k] = v
		}
		c.Replication.DataCenters = dcs
	}
	if c.ReadConsistency == driver.Default {
		c.ReadConsistency = c.defaultLevel()
	}
	if c.WriteConsistency == driver.Default {
		c.WriteConsistency = c.defaultLevel()
	}
	if c.FoldConsistency == driver.Default {
		c.FoldConsistency = driver.Quorum
	}
	if c.GCReadConsistency == driver.Default {
		c.GCReadConsistency = driver.All
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.NumConns == 0 {
		c.NumConns = DefaultNumConns
	}
	if c.QueueGCGrace == 0 {
		c.QueueGCGrace = DefaultQueueGCGrace
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// defaultLevel is the read and write level of a config that names none: a
// quorum of the local data center's replicas when there is one, so that no
// request waits on another data center (or fails while it is cut off).
func (c Config) defaultLevel() driver.Consistency {
	if c.LocalDataCenter != "" {
		return driver.LocalQuorum
	}
	return driver.Quorum
}

// Unquoted CQL identifiers are case-insensitive (folded to lower case), so
// only lower case is accepted: a keyspace called "Abacus" in the config and
// "abacus" in cqlsh would otherwise be a needless surprise. 48 characters is
// Cassandra's limit for keyspace names.
var keyspaceRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,47}$`)

// Data center names are interpolated into the replication map literal.
var dataCenterRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.\-]*$`)

// ValidKeyspace reports whether name is accepted as Config.Keyspace.
func ValidKeyspace(name string) bool { return keyspaceRE.MatchString(name) }

// validate checks a Config that has been through withDefaults and returns
// every problem found, joined.
func (c Config) validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format, args...))
	}
	if len(c.Hosts) == 0 {
		bad("Hosts is empty; give at least one contact point")
	}
	for i, h := range c.Hosts {
		if strings.TrimSpace(h) == "" {
			bad("Hosts[%d] is empty", i)
		}
	}
	if c.Port < 1 || c.Port > 65535 {
		bad("Port %d is out of range 1-65535", c.Port)
	}
	if !keyspaceRE.MatchString(c.Keyspace) {
		bad("Keyspace %q is not a valid name (lower-case letters, digits and '_', starting with a letter, at most 48 characters)", c.Keyspace)
	}
	if err := c.Replication.validate(); err != nil {
		errs = append(errs, err)
	}
	if c.LocalDataCenter != "" && !dataCenterRE.MatchString(c.LocalDataCenter) {
		bad("LocalDataCenter %q is not a valid data center name", c.LocalDataCenter)
	}
	for _, l := range []struct {
		name  string
		level driver.Consistency
		read  bool
	}{
		{"ReadConsistency", c.ReadConsistency, true},
		{"WriteConsistency", c.WriteConsistency, false},
		{"FoldConsistency", c.FoldConsistency, false},
		{"GCReadConsistency", c.GCReadConsistency, true},
	} {
		if _, ok := gocqlConsistency(l.level); !ok {
			bad("%s %v is not a consistency level", l.name, l.level)
		} else if l.read && l.level == driver.Any {
			bad("%s cannot be ANY: Cassandra accepts ANY for writes only", l.name)
		}
	}
	if c.Timeout < 0 {
		bad("Timeout %v is negative", c.Timeout)
	}
	if c.ConnectTimeout < 0 {
		bad("ConnectTimeout %v is negative", c.ConnectTimeout)
	}
	if c.NumConns < 0 {
		bad("NumConns %d is negative", c.NumConns)
	}
	if c.ProtocolVersion != 0 && (c.ProtocolVersion < 3 || c.ProtocolVersion > 5) {
		bad("ProtocolVersion %d is not supported (3, 4, 5, or 0 to negotiate)", c.ProtocolVersion)
	}
	if c.Username == "" && c.Password != "" {
		bad("Password is set but Username is empty")
	}
	if t := c.TLS; t != nil && (t.CertFile == "") != (t.KeyFile == "") {
		bad("TLS.CertFile and TLS.KeyFile must be given together")
	}
	if c.QueueGCGrace < time.Second || c.QueueGCGrace%time.Second != 0 || c.QueueGCGrace > math.MaxInt32*time.Second {
		bad("QueueGCGrace %v is not a whole number of seconds between 1s and 68 years", c.QueueGCGrace)
	}
	if c.Schema > SchemaExisting {
		bad("Schema %v is not a schema mode", c.Schema)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("cassandra: invalid config: %w", errors.Join(errs...))
}

func (r Replication) validate() error {
	switch r.Strategy {
	case SimpleStrategy:
		if r.ReplicationFactor < 1 {
			return fmt.Errorf("Replication.ReplicationFactor %d must be at least 1", r.ReplicationFactor)
		}
		if len(r.DataCenters) > 0 {
			return errors.New("Replication.DataCenters is only for NetworkTopologyStrategy; use ReplicationFactor with SimpleStrategy")
		}
	case NetworkTopologyStrategy:
		if r.ReplicationFactor != 0 {
			return errors.New("Replication.ReplicationFactor is only for SimpleStrategy; give per-data-center factors in DataCenters")
		}
		if len(r.DataCenters) == 0 {
			return errors.New("Replication.DataCenters is required with NetworkTopologyStrategy")
		}
		for dc, n := range r.DataCenters {
			if !dataCenterRE.MatchString(dc) {
				return fmt.Errorf("Replication.DataCenters: %q is not a valid data center name", dc)
			}
			if n < 0 {
				return fmt.Errorf("Replication.DataCenters[%q] = %d is negative", dc, n)
			}
		}
	default:
		return fmt.Errorf("Replication.Strategy %q is unknown (want %s or %s)", r.Strategy, SimpleStrategy, NetworkTopologyStrategy)
	}
	return nil
}

// cql renders the replication as the map literal of CREATE KEYSPACE.
// The names were validated, so they need no escaping.
func (r Replication) cql() string {
	if r.Strategy == SimpleStrategy {
		return fmt.Sprintf("{'class': 'SimpleStrategy', 'replication_factor': %d}", r.ReplicationFactor)
	}
	dcs := make([]string, 0, len(r.DataCenters))
	for dc := range r.DataCenters {
		dcs = append(dcs, dc)
	}
	sort.Strings(dcs)
	var b strings.Builder
	b.WriteString("{'class': 'NetworkTopologyStrategy'")
	for _, dc := range dcs {
		fmt.Fprintf(&b, ", '%s': %d", dc, r.DataCenters[dc])
	}
	b.WriteString("}")
	return b.String()
}
