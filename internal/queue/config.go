package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/abacusdb/abacus/clock"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/names"
	"github.com/abacusdb/abacus/internal/queue/shard"
	"github.com/abacusdb/abacus/internal/randomid"
)

// Defaults and limits.
const (
	// DefaultShards is a new queue's shard count.
	DefaultShards = 16
	// DefaultShardDuration is the window each shard stands for: a minute,
	// as in the original design.
	DefaultShardDuration = time.Minute
	// DefaultMaxDeliveries is how often a message is handed out before it
	// moves to the dead letters.
	DefaultMaxDeliveries = 5
	// DefaultVisibilityTimeout is how long a delivered message stays
	// hidden while its handler runs.
	DefaultVisibilityTimeout = 30 * time.Second
	// DefaultMaxBodyBytes is the largest message body accepted.
	DefaultMaxBodyBytes = 64 << 10
	// DefaultMaxClockSkew is the largest difference assumed between the
	// clocks of any two processes using a queue: the original design's 60 s.
	DefaultMaxClockSkew = 60 * time.Second
	// MaxNameLen is the longest queue name, in bytes.
	MaxNameLen = names.MaxLen
	// MaxBatch is the most messages one PutBatch takes.
	MaxBatch = 1000
	// MaxMaxDeliveries bounds QueueConfig.MaxDeliveries.
	MaxMaxDeliveries = 1000
	// MinVisibilityTimeout and MaxVisibilityTimeout bound
	// QueueConfig.VisibilityTimeout.
	MinVisibilityTimeout = time.Second
	MaxVisibilityTimeout = 12 * time.Hour
)

// Config configures a Service. Zero fields take the documented defaults.
type Config struct {
	// Store holds the queues. Required.
	Store driver.Queues

	// Clock tells the time used for due times, shards and visibility.
	// Default: the system clock; tests inject a clock.Manual. (Leases are
	// measured in real time, because Cassandra's TTLs are.)
	Clock clock.Clock

	// Logger receives operational warnings. Default: slog.Default().
	Logger *slog.Logger

	// MaxBodyBytes is the largest message body Put accepts. Bodies live in
	// one Cassandra cell each and are read in batches, so keep them small;
	// put large payloads elsewhere and queue a reference. Default 64 KiB.
	MaxBodyBytes int

	// MaxClockSkew is the largest difference between the clocks of any two
	// processes that put or consume (plus the time a put may take to land).
	// A shard's floor is kept at least this far behind the consumer's
	// clock, so that a message put by a process whose clock runs behind is
	// never below it. Default 60s.
	MaxClockSkew time.Duration

	// DeepSweepInterval is how often a consumer reads a shard from its very
	// start, ignoring the floor. That finds a message that reached the store
	// below the floor anyway: a put whose outcome was unknown and which a
	// replica applied much later, or one from a clock skewed beyond
	// MaxClockSkew. Such a read skips every tombstone left in the shard, so
	// it is kept rare. Measured on Clock. Default 1h.
	DeepSweepInterval time.Duration

	// DedupWindow is how long a message's dedup id keeps later puts with
	// the same id from storing another message. Every process putting to
	// a queue should use the same window. At most MaxDedupWindow (and, on
	// Cassandra, the queue tables' gc_grace_seconds). Default 5 minutes,
	// Amazon SQS's.
	DedupWindow time.Duration

	// PauseRefresh is how long a process trusts the pause state and the
	// record of a queue it last read: consumers stop (or start again)
	// handing out messages within this long of a pause (or resume) made in
	// any process, and every call on a queue answers ErrNotFound within
	// this long of its delete. Each process reads a queue's state about
	// once a PauseRefresh while it uses the queue. Measured in real time,
	// not on Clock. Every process should use the same value: a deleted
	// name is free again after it (Service.RecreateWait). Negative: read
	// them before every use. Default 1s.
	PauseRefresh time.Duration
}

// DefaultPauseRefresh is Config.PauseRefresh's default.
const DefaultPauseRefresh = time.Second

// DefaultDedupWindow and MaxDedupWindow bound Config.DedupWindow.
const (
	DefaultDedupWindow = 5 * time.Minute
	MaxDedupWindow     = time.Hour
)

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	c.Logger = cmp.Or(c.Logger, slog.Default())
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, DefaultMaxBodyBytes)
	c.MaxClockSkew = cmp.Or(c.MaxClockSkew, DefaultMaxClockSkew)
	c.DeepSweepInterval = cmp.Or(c.DeepSweepInterval, time.Hour)
	c.DedupWindow = cmp.Or(c.DedupWindow, DefaultDedupWindow)
	c.PauseRefresh = cmp.Or(c.PauseRefresh, DefaultPauseRefresh)
	return c
}

func (c Config) validate() error {
	switch {
	case c.Store == nil:
		return errors.New("queue: Config.Store is required")
	case c.MaxBodyBytes < 0:
		return fmt.Errorf("queue: Config.MaxBodyBytes is %d, must not be negative", c.MaxBodyBytes)
	case c.MaxClockSkew < 0 || c.DeepSweepInterval < 0:
		return errors.New("queue: durations in Config must not be negative")
	case c.DedupWindow < time.Second || c.DedupWindow > MaxDedupWindow:
		return fmt.Errorf("queue: Config.DedupWindow %v is outside 1s to %v", c.DedupWindow, MaxDedupWindow)
	}
	return nil
}

// QueueConfig describes a queue to create. Zero fields take the defaults.
// A queue cannot be changed once created: producers and consumers must
// agree on its shard count and window.
type QueueConfig struct {
	// Name is required: 1 to 256 bytes of UTF-8.
	Name string
	// Shards is the number of shard partitions; at least 4 (shard.MinShards),
	// at most 4096. More shards spread a rotation over more partitions and
	// give each one longer idle stretches for compaction to clear its
	// tombstones; the catch-up sweep reads one row range per shard.
	// Default 16.
	Shards int
	// Spread is how many shards one window's puts go to, each put picking
	// one at random. A burst put within a window lands in that many shards,
	// so that many consumers can drain it at once (one consumer works one
	// shard at a time); an idle consumer looks at that many shards of the
	// current and of the previous window on every round. It must divide
	// Shards and leave at least 4 groups (Shards ≥ 4·Spread), 1 to 64.
	// Default 1.
	Spread int
	// ShardDuration is the window each shard stands for, a whole number of
	// seconds from 1s to 24h. A message put now is first read by the
	// catch-up sweep once its window has passed, so the window bounds how
	// soon an immediately due message can be delivered. Default 1m.
	ShardDuration time.Duration
	// MaxDeliveries is how many deliveries a message gets before it moves
	// to the dead letters, 1 to 1000. Default 5.
	MaxDeliveries int
	// Priorities is how many priority levels the queue's messages have,
	// 1 to 4; a put names a level from 0 (the lowest, the default) to
	// Priorities-1, and a consumer takes due messages of higher levels
	// first. Each level is a lane of Shards shards of its own, so Shards
	// times Priorities is at most 4096, and every receive may look at each
	// lane. Default 1: a queue as before priorities.
	Priorities int
	// VisibilityTimeout is how long a delivered message stays hidden from
	// other consumers; a message not acknowledged by then is delivered
	// again. 1s to 12h. Default 30s.
	VisibilityTimeout time.Duration
}

func (c QueueConfig) withDefaults() QueueConfig {
	c.Shards = cmp.Or(c.Shards, DefaultShards)
	c.ShardDuration = cmp.Or(c.ShardDuration, DefaultShardDuration)
	c.Spread = cmp.Or(c.Spread, 1)
	c.Priorities = cmp.Or(c.Priorities, 1)
	c.MaxDeliveries = cmp.Or(c.MaxDeliveries, DefaultMaxDeliveries)
	c.VisibilityTimeout = cmp.Or(c.VisibilityTimeout, DefaultVisibilityTimeout)
	return c
}

func (c QueueConfig) validate() error {
	if err := ValidateName(c.Name); err != nil {
		return err
	}
	m, err := shard.NewSpread(c.Shards, c.Spread, c.ShardDuration)
	if err == nil {
		_, err = m.Lane(0, c.Priorities)
	}
	if err != nil {
		return fmt.Errorf("%w: queue %q: %w", ErrInvalid, c.Name, err)
	}
	if c.MaxDeliveries < 1 || c.MaxDeliveries > MaxMaxDeliveries {
		return invalidf("queue %q: max deliveries %d is outside 1 to %d", c.Name, c.MaxDeliveries, MaxMaxDeliveries)
	}
	if c.VisibilityTimeout < MinVisibilityTimeout || c.VisibilityTimeout > MaxVisibilityTimeout || c.VisibilityTimeout%time.Millisecond != 0 {
		return invalidf("queue %q: visibility timeout %v is outside %v to %v (whole milliseconds)",
			c.Name, c.VisibilityTimeout, MinVisibilityTimeout, MaxVisibilityTimeout)
	}
	return nil
}

// ValidateName checks a queue name: 1 to 256 bytes of UTF-8, the same rule
// as for namespace and counter names. A new queue's name must also be made
// of ASCII letters, digits, '_', '-', '.' and ':', starting with a letter or
// digit (see Service.Create).
func ValidateName(name string) error { return names.Check("queue", name) }

// ConsumerConfig configures a Consumer. Zero fields take the defaults.
type ConsumerConfig struct {
	// Queue is the queue to consume. Required.
	Queue string

	// Name identifies the consumer as a lease holder, in the observer and
	// in the store. It must be unique among the queue's live consumers.
	// Default: host name, process id and a random suffix.
	Name string

	// Handler is called by Start for every delivery. Returning nil
	// acknowledges (deletes) the message; an error, a panic or running past
	// the visibility timeout makes it visible again after the timeout and
	// counts towards MaxDeliveries. Required for Start; Receive does not
	// use it.
	Handler func(ctx context.Context, d *Delivery) error

	// Concurrency is how many handlers Start runs at once. Default 1.
	Concurrency int

	// LeaseTTL is how long a shard lease lasts unless renewed. The consumer
	// renews at a third of it; Cassandra counts TTLs in whole seconds and
	// may end one up to a second early, hence the 2s minimum. A crashed
	// consumer's shard is taken over after at most this long. Real time.
	// Default 30s.
	LeaseTTL time.Duration

	// PollInterval is how long Start waits after finding nothing to do,
	// unless a wake time comes sooner or a put or settled delivery in this
	// process rings first. It bounds how late a message put by another
	// process and due now is seen; each round costs two reads of each of
	// two shards (of 2·Spread shards for a spread queue). Real time.
	// Default 500ms.
	PollInterval time.Duration

	// CatchUpInterval is how often the consumer sweeps every shard for
	// due messages. Between sweeps it looks at the producers' shard and
	// the previous window's on every round and at other shards when their
	// wake time comes; the sweep is the backstop for what wake times cannot
	// know (another process releasing a message early, a consumer that
	// died holding a lease). Measured on the service's Clock. Default 10s.
	CatchUpInterval time.Duration

	// BatchSize is how many rows one read of a shard returns. Default 100.
	BatchSize int

	// RetryDelay, when positive, makes a failed message visible again this
	// long after the failure instead of when its visibility timeout ends.
	RetryDelay time.Duration

	// Backoff, when set, says how long after the failure of delivery
	// attempt (1 for the first) the message becomes visible again, longer
	// or shorter than the visibility timeout; it overrides RetryDelay.
	// Results are clamped to (0, MaxVisibilityTimeout]. ExponentialBackoff
	// makes the usual one.
	Backoff func(attempt int) time.Duration
}

func (c ConsumerConfig) withDefaults() ConsumerConfig {
	if c.Name == "" {
		c.Name = defaultConsumerName()
	}
	c.Concurrency = cmp.Or(c.Concurrency, 1)
	c.LeaseTTL = cmp.Or(c.LeaseTTL, 30*time.Second)
	c.PollInterval = cmp.Or(c.PollInterval, 500*time.Millisecond)
	c.CatchUpInterval = cmp.Or(c.CatchUpInterval, 10*time.Second)
	c.BatchSize = cmp.Or(c.BatchSize, 100)
	return c
}

func (c ConsumerConfig) validate() error {
	switch {
	case c.Concurrency < 0 || c.BatchSize < 0:
		return invalidf("consumer of %q: Concurrency and BatchSize must not be negative", c.Queue)
	case c.LeaseTTL < 2*time.Second:
		return invalidf("consumer of %q: LeaseTTL %v is below the 2s minimum", c.Queue, c.LeaseTTL)
	case c.PollInterval < 0 || c.CatchUpInterval < 0 || c.RetryDelay < 0:
		return invalidf("consumer of %q: intervals must not be negative", c.Queue)
	case len(c.Name) > MaxNameLen || !utf8.ValidString(c.Name):
		return invalidf("consumer name must be at most %d bytes of UTF-8", MaxNameLen)
	}
	return ValidateName(c.Queue)
}

// defaultConsumerName is "host/pid/random": readable in the observer, and
// unique even for two consumers in one process.
func defaultConsumerName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return host + "/" + strconv.Itoa(os.Getpid()) + "/" + randomid.Hex(4)
}
