package driver

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/abacusdb/abacus/api"
)

// Queue is a delay queue's stored configuration (“cassandra-ruby-queue”). Validation
// belongs to the caller (package queue); drivers store what they are given.
type Queue struct {
	// Name is the queue's unique name.
	Name string
	// Shards is how many partitions the queue's messages are spread over.
	Shards int
	// ShardDuration is the time window each shard stands for.
	ShardDuration time.Duration
	// Spread is how many shards one window's puts go to. A queue created
	// with 0 or 1, or made before spreads existed, reads back as 1.
	Spread int
	// Priorities is how many priority levels the queue's messages have.
	// The queue engine keeps level l in shards l·Shards to l·Shards+Shards-1,
	// so drivers see only more shard numbers. A queue created with 0 or 1,
	// or made before priorities existed, reads back as 1.
	Priorities int
	// MaxDeliveries is how many times a message is handed out before it
	// moves to the dead letters.
	MaxDeliveries int
	// VisibilityTimeout is how long a delivered message stays hidden from
	// other consumers while it is being handled.
	VisibilityTimeout time.Duration
	// CreatedAt is when the queue was created.
	CreatedAt time.Time
	// Generation counts how often the name was made again after a delete:
	// 0 for a queue whose name was never deleted (and for every queue made
	// before deletes existed). The queue engine keeps each generation's
	// messages under a name of its own, so a new generation never sees
	// the rows of an old one.
	Generation int64
	// DeletedAt is when the queue was deleted (millisecond precision); zero
	// for a live queue. A deleted queue keeps its record, so that the next
	// generation of the name knows its number.
	DeletedAt time.Time
}

// MessageID is a message's time-based (version 1) UUID, which Cassandra
// stores as a timeuuid.
type MessageID [16]byte

// String formats the id in the canonical 8-4-4-4-12 hex form.
func (id MessageID) String() string { return api.FormatUUID(id) }

// ParseMessageID parses the canonical form written by MessageID.String
// (upper- or lower-case hex). It accepts only version 1 UUIDs of the RFC
// 4122 variant, the ids Cassandra accepts as timeuuids.
func ParseMessageID(s string) (MessageID, error) {
	b, ok := api.ParseUUID(s)
	if !ok {
		return MessageID{}, fmt.Errorf("message id %q is not a UUID in 8-4-4-4-12 hex form", s)
	}
	if id := MessageID(b); id.Valid() {
		return id, nil
	}
	return MessageID{}, fmt.Errorf("message id %q is not a time-based (version 1) UUID", s)
}

// Valid reports whether id is a version 1 UUID of the RFC 4122 variant.
func (id MessageID) Valid() bool {
	return id[6]>>4 == 1 && id[8]&0xc0 == 0x80
}

// Time returns the instant encoded in a version 1 UUID (100 ns resolution).
func (id MessageID) Time() time.Time {
	ts := int64(id[6]&0x0f)<<56 | int64(id[7])<<48 | int64(id[4])<<40 | int64(id[5])<<32 |
		int64(id[0])<<24 | int64(id[1])<<16 | int64(id[2])<<8 | int64(id[3])
	// Version 1 timestamps count 100 ns intervals from 1582-10-15.
	const gregorianToUnix = 0x01B21DD213814000
	ts -= gregorianToUnix
	return time.Unix(ts/1e7, (ts%1e7)*100).UTC()
}

// MessageKey locates one message: its shard partition, then its due time
// and id, the clustering order within the shard.
type MessageKey struct {
	Shard int
	// Due is when the message may be delivered, at millisecond precision
	// (CQL timestamps have no more). Callers truncate; drivers truncate too.
	Due time.Time
	ID  MessageID
}

// Message is one queued message as stored.
type Message struct {
	MessageKey
	// Body is the payload. ReadMessages leaves it nil unless asked for it.
	Body []byte
	// EnqueuedAt is when the message was put.
	EnqueuedAt time.Time
	// Deliveries counts how often the message has been handed out.
	Deliveries int
	// VisibleAt hides a delivered message until then; the zero time means
	// visible as soon as it is due.
	VisibleAt time.Time
	// LastError is the last failure recorded for the message.
	LastError string
	// Attributes are the producer's name/value pairs, stored and returned
	// with the message (and its dead letter) unchanged; nil when none.
	// The queue service bounds them (MaxAttributes); drivers store what
	// they are given.
	Attributes map[string]string
}

// Attribute limits, enforced by the queue service before anything is
// stored: at most MaxAttributes pairs, names of 1 to MaxAttributeName
// bytes, values of at most MaxAttributeValue bytes, all UTF-8.
const (
	MaxAttributes     = 16
	MaxAttributeName  = 128
	MaxAttributeValue = 1024
)

// ContentHash is what de-duplication compares to tell a repeated put from
// another message under the same dedup id. Without attributes it is the
// body's SHA-256, as before attributes existed, so records stored then
// still compare equal. With attributes it is SHA-512/256 of the body and
// the attributes in name order, each length-prefixed: another function,
// so that no body alone can hash like a body with attributes.
func (m *Message) ContentHash() [sha256.Size]byte {
	if len(m.Attributes) == 0 {
		return sha256.Sum256(m.Body)
	}
	h := sha512.New512_256()
	write := func(b []byte) {
		h.Write(binary.AppendUvarint(nil, uint64(len(b))))
		h.Write(b)
	}
	write(m.Body)
	for _, name := range slices.Sorted(maps.Keys(m.Attributes)) {
		write([]byte(name))
		write([]byte(m.Attributes[name]))
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// QueueShardState is a shard's partition-wide state: the consumer lease and the
// read floor, kept in static columns next to the messages.
type QueueShardState struct {
	// Holder is the consumer holding the lease, "" when the shard is free.
	Holder string
	// Since is when the holder took the lease (renewals keep it).
	Since time.Time
	// Floor is a due time that no live message of the shard is older than,
	// allowing for clock skew (see package queue); zero when never set.
	Floor time.Time
}

// DeadLetter is a message that exhausted its deliveries.
type DeadLetter struct {
	Message
	// DiedAt is when the message was moved to the dead letters.
	DiedAt time.Time
}

// CreateQueueParams are the parameters of Queues.CreateQueue.
type CreateQueueParams struct {
	Queue Queue
	// Replaces, when set, is the deleted record Queue takes the place of:
	// the create succeeds only if the stored record is still exactly that
	// one (same CreatedAt and DeletedAt), and ErrExists otherwise.
	Replaces *Queue
}

// DeleteQueueParams are the parameters of Queues.DeleteQueue.
type DeleteQueueParams struct {
	Name string
	// CreatedAt names the record to delete: the one made at this time.
	CreatedAt time.Time
	// At is the delete's time, recorded as the record's DeletedAt.
	At time.Time
}

// GetQueueParams are the parameters of Queues.GetQueue.
type GetQueueParams struct {
	Name string
}

// ListQueuesParams are the parameters of Queues.ListQueues.
type ListQueuesParams struct{}

// PutMessagesParams are the parameters of Queues.PutMessages.
type PutMessagesParams struct {
	Queue string
	// Messages are written as given: key, body, EnqueuedAt, Deliveries,
	// VisibleAt and LastError.
	Messages []Message
}

// MaxDedupIDLen bounds a de-duplication id, in bytes.
const MaxDedupIDLen = 128

// PutDedupParams are the parameters of Queues.PutDedupMessage.
type PutDedupParams struct {
	Queue string
	// DedupID names the message for de-duplication: one message per id is
	// stored within Window of the first put.
	DedupID string
	Window  time.Duration
	// Message is the message to store if the id is new (Deliveries 0, no
	// VisibleAt or LastError).
	Message Message
}

// PutDedupResult is the answer of Queues.PutDedupMessage.
type PutDedupResult struct {
	// Key is where the message with this id is stored: Message's own key
	// when the id was new, else the first put's.
	Key MessageKey
	// Duplicate reports that the id was put before within the window and
	// nothing new was stored.
	Duplicate bool
	// SameBody reports, for a duplicate, whether its body and attributes
	// equal the first put's (Message.ContentHash).
	SameBody bool
}

// ReadMessagesParams are the parameters of Queues.ReadMessages.
type ReadMessagesParams struct {
	Queue string
	Shard int
	// From and To bound the due times read, both inclusive.
	From, To time.Time
	// Limit caps the number of messages returned; it must be positive.
	Limit int
	// WithBody asks for the bodies too; without it Body is nil.
	WithBody bool
}

// MessagePage is the answer of Queues.ReadMessages.
type MessagePage struct {
	// Messages are sorted by due time, then id.
	Messages []Message
	// Fragments are rows left behind when an update raced with the delete
	// of its message: they have a key but no message. Drivers that cannot
	// produce them return none. Callers delete them.
	Fragments []MessageKey
}

// GetMessageParams are the parameters of Queues.GetMessage.
type GetMessageParams struct {
	Queue string
	Key   MessageKey
}

// UpdateMessagesParams are the parameters of Queues.UpdateMessages.
type UpdateMessagesParams struct {
	Queue string
	// Updates set Deliveries, VisibleAt and LastError of existing messages;
	// the other fields of each Message are ignored.
	Updates []Message
}

// ExtendVisibilityParams are the parameters of Queues.ExtendVisibility.
type ExtendVisibilityParams struct {
	Queue string
	Key   MessageKey
	// Deliveries is the delivery count the message must still have.
	Deliveries int
	// VisibleAt is the new end of the message's visibility.
	VisibleAt time.Time
}

// DeleteMessagesParams are the parameters of Queues.DeleteMessages.
type DeleteMessagesParams struct {
	Queue string
	Keys  []MessageKey
}

// QueueShardParams name one shard of a queue.
type QueueShardParams struct {
	Queue string
	Shard int
}

// LeaseParams are the parameters of the lease operations.
type LeaseParams struct {
	Queue string
	Shard int
	// Holder identifies the consumer; it must not be empty.
	Holder string
	// Since is recorded as the lease's start when it is acquired; renewals
	// pass the original value again.
	Since time.Time
	// TTL is how long the lease lasts unless renewed, counted on the
	// store's clock (Cassandra's TTL, rounded up to whole seconds).
	TTL time.Duration
}

// LeaseResult is the outcome of a lease operation.
type LeaseResult struct {
	// Held reports whether the caller holds the lease afterwards (for
	// ReleaseLease: whether it held the lease it released).
	Held bool
	// Holder is the holder the store saw when the operation was not
	// applied, "" if unknown or free.
	Holder string
}

// SetFloorParams are the parameters of Queues.SetFloor.
type SetFloorParams struct {
	Queue string
	Shard int
	Floor time.Time
}

// QueueShardStatsParams are the parameters of Queues.QueueShardStats.
type QueueShardStatsParams struct {
	Queue string
	Shard int
	// From is the lowest due time counted: the shard's floor less the clock
	// skew allowance skips the tombstones of everything consumed, which on
	// Cassandra can be many. The zero time counts the whole shard.
	From time.Time
	// Now decides which messages count as due.
	Now time.Time
}

// QueueShardStats counts one shard's messages.
type QueueShardStats struct {
	QueueShardState
	// Messages counts every live message of the shard.
	Messages int
	// Due counts the messages whose due time has passed, delivered or not.
	Due int
	// InFlight counts the due messages hidden by a delivery in progress.
	InFlight int
	// OldestWaiting is when the longest-waiting due message not in flight
	// became available (zero if none): its due time, or, for one
	// delivered before, when that delivery's visibility ended — so a
	// message retried after a failure does not count as hours late.
	OldestWaiting time.Time
}

// DeadLetterParams are the parameters of Queues.DeadLetter.
type DeadLetterParams struct {
	Queue   string
	Letters []DeadLetter
}

// ListDeadParams are the parameters of Queues.ListDead.
type ListDeadParams struct {
	Queue string
	// IDs restricts the answer to these ids when not empty.
	IDs []MessageID
	// Limit caps the answer; zero means no cap.
	Limit int
}

// DeleteDeadParams are the parameters of Queues.DeleteDead.
type DeleteDeadParams struct {
	Queue string
	IDs   []MessageID
}

// QueuePause is whether a queue is paused, and since when.
type QueuePause struct {
	Paused bool
	// Since is when the pause or resume that set Paused was made
	// (millisecond precision); zero for a queue never paused.
	Since time.Time
}

// SetQueuePauseParams are the parameters of Queues.SetQueuePause.
type SetQueuePauseParams struct {
	Queue string
	// Pause is the state to record; Pause.Since orders racing calls.
	Pause QueuePause
}

// GetQueuePauseParams are the parameters of Queues.GetQueuePause.
type GetQueuePauseParams struct {
	Queue string
}

// Queues stores the time-sharded delay queue of “cassandra-ruby-queue”: a partition per
// (queue, shard) holding messages ordered by due time and id, with the
// shard's consumer lease and read floor in static columns; plus the queue
// records and the dead letters.
//
// Writes are last-write-wins upserts unless stated otherwise; the queue
// engine, not the driver, keeps them consistent (one consumer per shard at
// a time, by lease). Times are stored with millisecond precision.
type Queues interface {
	// CreateQueue stores a new queue record, or returns ErrExists and
	// leaves the stored one unchanged; of racing creators exactly one wins.
	// With p.Replaces set it overwrites that deleted record instead, under
	// the same rule.
	CreateQueue(ctx context.Context, p *CreateQueueParams) error

	// DeleteQueue marks the live record made at p.CreatedAt as deleted at
	// p.At. It returns ErrNotFound, and changes nothing, when there is no
	// such record or it is deleted already; of racing deletes exactly one
	// succeeds. It deletes no messages.
	DeleteQueue(ctx context.Context, p *DeleteQueueParams) error

	// GetQueue returns the queue record or ErrNotFound.
	GetQueue(ctx context.Context, p *GetQueueParams) (*Queue, error)

	// ListQueues returns every queue record sorted by name.
	ListQueues(ctx context.Context, p *ListQueuesParams) ([]*Queue, error)

	// SetQueuePause records whether the queue is paused. Of two calls the
	// one with the later Pause.Since wins, whatever order they land in.
	// It does not check that the queue exists.
	SetQueuePause(ctx context.Context, p *SetQueuePauseParams) error

	// GetQueuePause returns the queue's pause state: not paused, with a
	// zero Since, when none was ever recorded.
	GetQueuePause(ctx context.Context, p *GetQueuePauseParams) (QueuePause, error)

	// PutMessages writes the messages. Writing the same message again is
	// harmless.
	PutMessages(ctx context.Context, p *PutMessagesParams) error

	// PutDedupMessage stores p.Message unless a message with the same
	// DedupID was put within Window: of any number of puts of one id, from
	// any processes, racing or retried, one message is stored (its key is
	// every put's answer). A put whose outcome was unknown may be repeated:
	// the repeat completes it. The window must not exceed the store's
	// limit (Cassandra: the queue tables' gc_grace_seconds).
	PutDedupMessage(ctx context.Context, p *PutDedupParams) (*PutDedupResult, error)

	// ReadMessages returns up to Limit messages of one shard whose due
	// times lie in [From, To], in due order.
	ReadMessages(ctx context.Context, p *ReadMessagesParams) (*MessagePage, error)

	// GetMessage returns one message with its body, or ErrNotFound.
	GetMessage(ctx context.Context, p *GetMessageParams) (*Message, error)

	// UpdateMessages sets the delivery fields of messages. An update of a
	// message that no longer exists must not bring it back as a message:
	// it is either dropped or leaves a fragment (see MessagePage).
	UpdateMessages(ctx context.Context, p *UpdateMessagesParams) error

	// ExtendVisibility sets the message's visible_at, and no other field,
	// so that it can never roll back a delivery count or error that a
	// concurrent redelivery wrote. It reports whether it wrote: the
	// embedded store writes only while the message exists with
	// p.Deliveries (checked under the shard lock); Cassandra writes the one
	// column (last write wins), and a message deleted meanwhile is left a
	// fragment, never brought back as a message.
	ExtendVisibility(ctx context.Context, p *ExtendVisibilityParams) (bool, error)

	// DeleteMessages deletes messages (and fragments); deleting a missing
	// one is not an error.
	DeleteMessages(ctx context.Context, p *DeleteMessagesParams) error

	// ReadQueueShard returns the shard's lease holder and floor. A shard never
	// written reads as free with a zero floor.
	ReadQueueShard(ctx context.Context, p *QueueShardParams) (*QueueShardState, error)

	// AcquireLease takes the shard's lease for p.Holder if nobody holds it
	// (atomically: a lightweight transaction on Cassandra). Acquiring a
	// lease one already holds fails like any other held lease.
	AcquireLease(ctx context.Context, p *LeaseParams) (LeaseResult, error)

	// RenewLease extends the lease if p.Holder still holds it.
	RenewLease(ctx context.Context, p *LeaseParams) (LeaseResult, error)

	// ReleaseLease frees the lease if p.Holder holds it.
	ReleaseLease(ctx context.Context, p *LeaseParams) (LeaseResult, error)

	// SetFloor records the shard's read floor.
	SetFloor(ctx context.Context, p *SetFloorParams) error

	// QueueShardStats counts the shard's messages due at or after p.From and
	// returns its lease state.
	QueueShardStats(ctx context.Context, p *QueueShardStatsParams) (*QueueShardStats, error)

	// DeadLetter stores the letters in the queue's dead letters and then
	// deletes their messages. Repeating it is harmless.
	DeadLetter(ctx context.Context, p *DeadLetterParams) error

	// ListDead returns dead letters (with bodies) in the order of the
	// times in their ids.
	ListDead(ctx context.Context, p *ListDeadParams) ([]DeadLetter, error)

	// DeleteDead deletes dead letters; missing ones are not an error.
	DeleteDead(ctx context.Context, p *DeleteDeadParams) error
}
