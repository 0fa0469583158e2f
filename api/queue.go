package api

import "time"

// Limits of the queue API.
const (
	// MaxReceive is the most messages one receive returns.
	MaxReceive = 100
	// MaxReceiveWait is the longest a receive waits for a message.
	MaxReceiveWait = 20 * time.Second
)

// Durations travel as Go duration strings such as "90s", "1m30s" or
// "250ms".

// CreateQueueRequest is the body of POST /v1/queues. Empty fields take the
// defaults: 16 shards of "1m", a spread of 1, one priority level, 5
// deliveries, a "30s" visibility timeout.
type CreateQueueRequest struct {
	Name   string `json:"name"`
	Shards int    `json:"shards,omitempty"`
	// Spread is how many shards one window's puts go to, each put picking
	// one: that many consumers can drain a burst at once. It must divide
	// Shards and leave at least 4 groups (Shards ≥ 4·Spread).
	Spread int `json:"spread,omitempty"`
	// Priorities is how many priority levels messages may have, 1 to 4:
	// a receive hands out due messages of higher levels first. Each level
	// has Shards shards of its own (Shards × Priorities ≤ 4096).
	Priorities        int    `json:"priorities,omitempty"`
	ShardDuration     string `json:"shard_duration,omitempty"`
	MaxDeliveries     int    `json:"max_deliveries,omitempty"`
	VisibilityTimeout string `json:"visibility_timeout,omitempty"`
}

// Queue describes a queue (GET /v1/queues/{queue}).
type Queue struct {
	Name              string    `json:"name"`
	Shards            int       `json:"shards"`
	Spread            int       `json:"spread"`
	Priorities        int       `json:"priorities"`
	ShardDuration     string    `json:"shard_duration"`
	MaxDeliveries     int       `json:"max_deliveries"`
	VisibilityTimeout string    `json:"visibility_timeout"`
	CreatedAt         time.Time `json:"created_at"`
	// Paused is present, and true, while the queue's deliveries are paused.
	Paused bool `json:"paused,omitempty"`
}

// QueuePause is the answer of GET /v1/queues/{queue}/pause and of POST
// …/pause and …/resume: whether the queue's deliveries are paused.
type QueuePause struct {
	Queue  string `json:"queue"`
	Paused bool   `json:"paused"`
	// Since is when the last pause or resume was made; absent for a queue
	// never paused.
	Since *time.Time `json:"since,omitempty"`
}

// QueueList is the body of GET /v1/queues.
type QueueList struct {
	Queues []Queue `json:"queues"`
	// Next is the ?after= of the next page; empty on the last page.
	Next string `json:"next,omitempty"`
}

// PutRequest is the body of POST /v1/queues/{queue}/messages: 1 to 1000
// messages, all refused if one is invalid.
type PutRequest struct {
	Messages []PutMessage `json:"messages"`
}

// PutMessage is one message to put.
type PutMessage struct {
	// Body is the message as UTF-8 text. For other bytes send BodyBase64
	// (standard encoding, with padding) instead.
	Body       string `json:"body,omitempty"`
	BodyBase64 string `json:"body_base64,omitempty"`
	// Delay postpones delivery, as a non-negative duration; or give Due.
	Delay string `json:"delay,omitempty"`
	// Due is when the message may first be delivered, as an RFC 3339 time;
	// a past time means now.
	Due string `json:"due,omitempty"`
	// DedupID, when set, makes the put safe to repeat: another put with
	// this id within the server's de-duplication window (5 minutes by
	// default) stores nothing and answers the first message's id, on any
	// server. Reusing the id for another body is refused (dedup_conflict).
	// At most 128 bytes. Attributes count as part of the body for that.
	DedupID string `json:"dedup_id,omitempty"`
	// Attributes are name/value pairs delivered with the message
	// unchanged: at most 16, names of 1 to 128 letters, digits and
	// "_-.:", values of at most 1,024 bytes.
	Attributes map[string]string `json:"attributes,omitempty"`
	// Priority is the message's level, from 0 (the lowest, the default)
	// to the queue's priorities - 1. It never changes.
	Priority int `json:"priority,omitempty"`
}

// PutResponse is the body of a successful put: the ids, in request order.
type PutResponse struct {
	IDs []string `json:"ids"`
	// Duplicates lists the indexes of messages whose dedup_id was put
	// before within the window: their ids are the earlier messages'.
	Duplicates []int `json:"duplicates,omitempty"`
}

// ReceiveRequest is the (optional) body of POST /v1/queues/{queue}/receive.
type ReceiveRequest struct {
	// Max is how many messages to take, 1 to 100. Default 1.
	Max int `json:"max,omitempty"`
	// Wait is how long to wait for a first message when none is due, up to
	// "20s". Default "0s": answer at once.
	Wait string `json:"wait,omitempty"`
}

// ReceiveResponse is the body of a receive; Messages may be empty.
type ReceiveResponse struct {
	Messages []Delivery `json:"messages"`
}

// Delivery is one message handed out by a receive. Settle it with its
// receipt: ack when handled, nack when it failed, release to give it back.
type Delivery struct {
	ID string `json:"id"`
	// Body is the message when it is valid UTF-8; otherwise it is empty
	// and BodyBase64 holds it.
	Body       string    `json:"body"`
	BodyBase64 string    `json:"body_base64,omitempty"`
	Due        time.Time `json:"due"`
	EnqueuedAt time.Time `json:"enqueued_at"`
	// Attempt is this delivery's number, 1 for the first.
	Attempt int `json:"attempt"`
	// VisibleUntil is when the message is handed out again unless settled.
	VisibleUntil time.Time `json:"visible_until"`
	Receipt      string    `json:"receipt"`
	// Attributes are the message's, as put; absent when none.
	Attributes map[string]string `json:"attributes,omitempty"`
	// Priority is the message's level (0 in a queue of one level).
	Priority int `json:"priority"`
}

// AckRequest is the body of POST /v1/queues/{queue}/ack.
type AckRequest struct {
	Receipts []string `json:"receipts"`
}

// AckResponse is the body of a successful ack.
type AckResponse struct {
	Acknowledged int `json:"acknowledged"`
}

// NackRequest is the body of POST /v1/queues/{queue}/nack.
type NackRequest struct {
	Receipt string `json:"receipt"`
	// Error says why handling failed; it is kept as the message's last
	// error (and shown with its dead letter).
	Error string `json:"error,omitempty"`
	// RetryAfter, such as "30s", makes the message visible again that
	// long after the nack (at most "12h"), longer or shorter than its
	// visibility timeout: the consumer's backoff. Absent: when the
	// visibility timeout ends.
	RetryAfter string `json:"retry_after,omitempty"`
}

// ExtendRequest is the body of POST /v1/queues/{queue}/extend: keep a
// delivery in hand hidden from other consumers for longer.
type ExtendRequest struct {
	Receipt string `json:"receipt"`
	// VisibilityTimeout is how long from now the message stays hidden,
	// such as "5m"; at most "12h". Required.
	VisibilityTimeout string `json:"visibility_timeout"`
}

// ExtendResponse is the body of a successful extend.
type ExtendResponse struct {
	// VisibleUntil is when the message becomes visible again unless it is
	// settled or extended first.
	VisibleUntil time.Time `json:"visible_until"`
}

// NackResponse is the body of a successful nack.
type NackResponse struct {
	// Dead is true when this was the message's last delivery and it moved
	// to the dead letters.
	Dead bool `json:"dead"`
}

// ReleaseRequest is the body of POST /v1/queues/{queue}/release.
type ReleaseRequest struct {
	Receipts []string `json:"receipts"`
}

// ReleaseResponse is the body of a successful release. Stale counts
// receipts whose message was settled or delivered again meanwhile.
type ReleaseResponse struct {
	Released int `json:"released"`
	Stale    int `json:"stale"`
}

// QueueStats is the body of GET /v1/queues/{queue}/stats: the observer's
// numbers.
type QueueStats struct {
	Queue    string    `json:"queue"`
	At       time.Time `json:"at"`
	Messages int       `json:"messages"`
	Due      int       `json:"due"`
	InFlight int       `json:"in_flight"`
	// DeliveryLagSeconds is how long the longest-waiting due message (not
	// in flight) has waited for delivery: since its due time, or since its
	// last delivery's visibility ended; 0 when none waits.
	DeliveryLagSeconds float64      `json:"delivery_lag_seconds"`
	Shards             []ShardStats `json:"shards"`
}

// ShardStats is one shard of QueueStats.
type ShardStats struct {
	Shard int `json:"shard"`
	// Priority is the level whose lane holds the shard: shards
	// l·shards to l·shards+shards-1 hold level l.
	Priority int `json:"priority"`
	// Behind is how many windows the shard is behind the producers': 0 is
	// being written, 2 is the one consumers work.
	Behind int `json:"behind"`
	// Window is the start of the shard's latest window, YYYYdddHHMM (UTC).
	Window   string `json:"window"`
	Messages int    `json:"messages"`
	Due      int    `json:"due"`
	InFlight int    `json:"in_flight"`
	// Holder is the consumer holding the shard's lease, empty if none.
	Holder          string     `json:"holder,omitempty"`
	LeaseAgeSeconds float64    `json:"lease_age_seconds,omitempty"`
	Floor           *time.Time `json:"floor,omitempty"`
}

// DeadLetterList is the body of GET /v1/queues/{queue}/dead.
type DeadLetterList struct {
	DeadLetters []DeadLetter `json:"dead_letters"`
}

// DeadLetter is a message that used up its deliveries.
type DeadLetter struct {
	ID         string    `json:"id"`
	Body       string    `json:"body"`
	BodyBase64 string    `json:"body_base64,omitempty"`
	Due        time.Time `json:"due"`
	EnqueuedAt time.Time `json:"enqueued_at"`
	Deliveries int       `json:"deliveries"`
	LastError  string    `json:"last_error"`
	DiedAt     time.Time `json:"died_at"`
	// Attributes are the message's, as put; absent when none.
	Attributes map[string]string `json:"attributes,omitempty"`
	// Priority is the message's level, which a requeue keeps.
	Priority int `json:"priority"`
}

// PurgeRequest is the body of POST /v1/queues/{queue}/purge; it may be
// left out.
type PurgeRequest struct {
	// DeadLetters deletes the dead letters too.
	DeadLetters bool `json:"dead_letters,omitempty"`
}

// PurgeResponse says what a purge deleted.
type PurgeResponse struct {
	Messages    int `json:"messages"`
	DeadLetters int `json:"dead_letters"`
}

// QueueDeleteResponse is the answer to DELETE /v1/queues/{queue}.
type QueueDeleteResponse struct {
	Queue string `json:"queue"`
	// DeletedAt is the delete's time; every server answers 404 for the
	// queue within its queue refresh (a second by default) of it.
	DeletedAt time.Time `json:"deleted_at"`
	// RecreatableAt is when the name can be created again, as a new,
	// empty queue.
	RecreatableAt time.Time `json:"recreatable_at"`
	// Messages and DeadLetters are how many rows this delete removed (a
	// repeat removes what is left).
	Messages    int `json:"messages"`
	DeadLetters int `json:"dead_letters"`
	// Leftover, when set, says why some rows could not be removed. They
	// are never delivered or listed; they only take space.
	Leftover string `json:"leftover,omitempty"`
}

// RequeueRequest is the body of POST /v1/queues/{queue}/dead/requeue.
type RequeueRequest struct {
	// IDs are the dead letters to requeue; empty requeues them all.
	IDs []string `json:"ids,omitempty"`
}

// RequeueResponse lists the ids put back on the queue.
type RequeueResponse struct {
	Requeued []string `json:"requeued"`
}

// DeleteDeadRequest is the body of POST /v1/queues/{queue}/dead/delete.
type DeleteDeadRequest struct {
	// IDs are the dead letters to delete: 1 to 1,000 of them.
	IDs []string `json:"ids"`
}

// DeleteDeadResponse lists the dead letters deleted (ids that were not
// dead letters are left out).
type DeleteDeadResponse struct {
	Deleted []string `json:"deleted"`
}
