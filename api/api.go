package api

import (
	_ "embed"
	"time"
)

// Limits of the API.
const (
	// MaxBatchItems is the most updates one POST /v1/updates may carry.
	MaxBatchItems = 1000
	// DefaultMaxBodyBytes is the server's default request body limit (1 MiB).
	DefaultMaxBodyBytes = 1 << 20
	// MaxNameLen is the longest namespace name, counter name or request id, in bytes.
	MaxNameLen = 256
)

// OpenAPI is the OpenAPI 3.0 description of the API (openapi.yaml).
//
//go:embed openapi.yaml
var OpenAPI []byte

// Error is the body of every non-2xx response.
type Error struct {
	// Code is one of the Code* constants.
	Code string `json:"code"`
	// Message explains the error to a human; it is not meant to be parsed.
	Message string `json:"message"`
}

// Health is the body of GET /healthz and GET /readyz.
type Health struct {
	Status string `json:"status"`
}

// Namespace describes a namespace (GET /v1/namespaces/{ns}).
type Namespace struct {
	Name  string `json:"name"`
	Model string `json:"model"`
	Type  string `json:"type"`
	// ReadConsistency and WriteConsistency are Cassandra level names such
	// as "QUORUM"; "DEFAULT" means the store's configured level.
	ReadConsistency  string    `json:"read_consistency"`
	WriteConsistency string    `json:"write_consistency"`
	CreatedAt        time.Time `json:"created_at"`
	// TTLSeconds is the length of the periods the namespace's counters
	// live in; absent when they live until deleted.
	TTLSeconds int64 `json:"ttl_seconds,omitempty"`
	// Ledger holds the options of a ledger namespace; absent otherwise.
	Ledger *LedgerOptions `json:"ledger,omitempty"`
	// Events holds the options of an events namespace; absent otherwise.
	Events *EventsOptions `json:"events,omitempty"`
}

// MaxPageSize is the most items one page of a list holds, and the
// default page size (?limit= of GET /v1/namespaces and GET /v1/queues).
const MaxPageSize = 1000

// NamespaceList is the body of GET /v1/namespaces: one page, in name order.
type NamespaceList struct {
	Namespaces []Namespace `json:"namespaces"`
	// Next is the ?after= of the next page; empty on the last page.
	Next string `json:"next,omitempty"`
}

// CounterList is the answer to GET /v1/namespaces/{ns}/counters: the
// names of the namespace's counters (its ledgers, in a ledger namespace).
type CounterList struct {
	Namespace string   `json:"namespace"`
	Counters  []string `json:"counters"`
	// Next is the ?after= of the next page; empty on the last page.
	Next string `json:"next,omitempty"`
}

// CreateNamespaceRequest is the body of POST /v1/namespaces. Empty fields
// take the server's defaults: model "sharded", type "sum" (none for
// ledgers), consistency "DEFAULT".
type CreateNamespaceRequest struct {
	Name             string `json:"name"`
	Model            string `json:"model,omitempty"`
	Type             string `json:"type,omitempty"`
	ReadConsistency  string `json:"read_consistency,omitempty"`
	WriteConsistency string `json:"write_consistency,omitempty"`
	// TTLSeconds, when set, makes every counter start again from zero at
	// each multiple of it since the Unix epoch (UTC); at least 60. Absent
	// or 0: counters live until deleted.
	TTLSeconds int64 `json:"ttl_seconds,omitempty"`
	// Ledger sets the options of a namespace of model "ledger".
	Ledger *LedgerOptions `json:"ledger,omitempty"`
	// Events sets the options of a namespace of model "events".
	Events *EventsOptions `json:"events,omitempty"`
}

// UpdateRequest is the body of POST /v1/namespaces/{ns}/counters/{counter}/updates.
type UpdateRequest struct {
	// Delta is added (type sum) or observed (max, min); it must be zero for
	// distinct counters.
	Delta int64 `json:"delta,omitempty"`
	// Item is the element added to a distinct counter; empty otherwise.
	Item string `json:"item,omitempty"`
	// RequestID identifies the update for retries (see docs/guarantees.md
	// per model). When empty the server generates one (a version 7 UUID)
	// and returns it.
	RequestID string `json:"request_id,omitempty"`
	// Time is the event time of an events-model increment (RFC 3339);
	// absent: the time in request_id, which must then be a version 7 UUID.
	// Other models refuse it.
	Time *time.Time `json:"time,omitempty"`
	// ReturnValue asks for the counter's value, read after the update was
	// applied, in the response (add-and-get).
	ReturnValue bool `json:"return_value,omitempty"`
}

// UpdateResponse is the body of a successful update.
type UpdateResponse struct {
	Namespace    string `json:"namespace"`
	Counter      string `json:"counter"`
	RequestID    string `json:"request_id"`
	Acknowledged bool   `json:"acknowledged"`
	// Replayed is true when the update was a retry of one counted before,
	// recognised by its request id, and added nothing (events counters,
	// for a retry older than the namespace's seal).
	Replayed bool `json:"replayed,omitempty"`
	// Value is present when the request asked for it and the read after
	// the update succeeded.
	Value *Value `json:"value,omitempty"`
	// ValueError is set instead of Value when the update was acknowledged
	// but the read after it failed: the answer stays 200 because the
	// update is stored, and a status that says otherwise would invite a
	// retry that counts it twice on models without request ids.
	ValueError *Error `json:"value_error,omitempty"`
}

// BatchRequest is the body of POST /v1/updates.
type BatchRequest struct {
	Updates []BatchUpdate `json:"updates"`
}

// BatchUpdate is one update of a batch.
type BatchUpdate struct {
	// Namespace defaults to "default".
	Namespace string `json:"namespace,omitempty"`
	Counter   string `json:"counter"`
	Delta     int64  `json:"delta,omitempty"`
	Item      string `json:"item,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	// Time is the event time of an events-model increment.
	Time *time.Time `json:"time,omitempty"`
}

// BatchResponse is the body of a POST /v1/updates that passed validation.
// Results are in the order of the request's updates.
type BatchResponse struct {
	Results []BatchResult `json:"results"`
}

// BatchResult is the outcome of one update of a batch.
type BatchResult struct {
	RequestID    string `json:"request_id"`
	Acknowledged bool   `json:"acknowledged"`
	// Error is set when Acknowledged is false.
	Error *Error `json:"error,omitempty"`
}

// Value is the body of GET /v1/namespaces/{ns}/counters/{counter}.
type Value struct {
	Namespace string `json:"namespace"`
	Counter   string `json:"counter"`
	Type      string `json:"type"`
	// Value is the sum, the extreme, or the distinct-count estimate. When
	// Saturated is true it is the int64 bound nearest to the exact sum.
	Value int64 `json:"value"`
	// Saturated is true when an events or actor sum lies outside the
	// int64 range; Exact then holds the exact sum in decimal.
	Saturated bool   `json:"saturated,omitempty"`
	Exact     string `json:"exact,omitempty"`
	// Empty is true when nothing was ever counted (Value is then 0).
	Empty bool `json:"empty"`
	// Model is the namespace's model.
	Model string `json:"model"`
	// Shards is how many live shards the read merged (sharded model).
	Shards int `json:"shards"`
	// Events is how many events after the last rollup the read added
	// (events model).
	Events int `json:"events,omitempty"`
	// Actors is how many actors' values the read summed (actor model).
	Actors int `json:"actors,omitempty"`
	// AsOf is the time up to which an events counter's value is complete:
	// every increment acknowledged before it is counted. Cached is true
	// when a read with max_staleness was answered from the server's
	// memory (AsOf is then up to max_staleness old).
	AsOf   *time.Time `json:"as_of,omitempty"`
	Cached bool       `json:"cached,omitempty"`
	// RolledUpTo is an events counter's rollup epoch: the value up to it
	// is sealed. Absent when never rolled up.
	RolledUpTo *time.Time `json:"rolled_up_to,omitempty"`
}

// EventsOptions are the options of a namespace of model "events". In a
// create request zero fields take the defaults; in a namespace
// description every field is filled in.
type EventsOptions struct {
	// BucketSeconds is the width of the time buckets. Default 600.
	BucketSeconds int64 `json:"bucket_seconds"`
	// AcceptWindowSeconds is the de-duplication horizon: how long after
	// its event time a retry is recognised. Default 3600; at most 86400.
	AcceptWindowSeconds int64 `json:"accept_window_seconds"`
	// SealSeconds is how long after its event time a new increment can
	// be acknowledged; an older one is answered from the seal of its time
	// (replayed, or too_late). Default 4.
	SealSeconds int64 `json:"seal_seconds"`
	// RollupDelaySeconds is the extra margin rollups keep behind the
	// seal (the worst clock skew between servers). Default 2.
	RollupDelaySeconds int64 `json:"rollup_delay_seconds"`
	// FutureLimitSeconds is how far ahead of the server's clock an event
	// time may be. Default 60.
	FutureLimitSeconds int64 `json:"future_limit_seconds"`
}

// SetRequest is the body of POST
// /v1/namespaces/{ns}/counters/{counter}/actors/{actor} (actor model).
type SetRequest struct {
	// Version orders the actor's sets; the highest wins. Positive.
	Version int64 `json:"version"`
	// Value is the actor's absolute value.
	Value int64 `json:"value"`
}

// SetResponse is the body of a successful set.
type SetResponse struct {
	Namespace    string `json:"namespace"`
	Counter      string `json:"counter"`
	Actor        string `json:"actor"`
	Version      int64  `json:"version"`
	Acknowledged bool   `json:"acknowledged"`
}

// ClearRequest is the (optional) body of POST
// /v1/namespaces/{ns}/counters/{counter}/clear.
type ClearRequest struct {
	// RequestID identifies the clear: repeating it with the same id is the
	// same clear. For events counters a version 7 UUID also fixes the
	// clear's time. Empty: a clear at the server's current time.
	RequestID string `json:"request_id,omitempty"`
}

// ClearResponse is the body of a successful clear.
type ClearResponse struct {
	Namespace    string `json:"namespace"`
	Counter      string `json:"counter"`
	RequestID    string `json:"request_id"`
	Acknowledged bool   `json:"acknowledged"`
	// EffectiveAt is when the reset takes effect: the clear's time for
	// events and cas counters, a moment ahead for the models whose clear
	// is a delete (sharded, actor, native).
	EffectiveAt time.Time `json:"effective_at"`
}

// DeleteResponse is the body of a 202 answer to DELETE of a namespace, a
// counter or a ledger. The delete takes effect at EffectiveAt: what was
// counted before then is erased, and what is counted from then on starts
// from zero (a deleted namespace answers 404 from then on).
type DeleteResponse struct {
	Namespace   string    `json:"namespace"`
	Counter     string    `json:"counter,omitempty"`
	Ledger      string    `json:"ledger,omitempty"`
	EffectiveAt time.Time `json:"effective_at"`
}

// GCResult is the body of POST /v1/namespaces/{ns}/counters/{counter}/gc.
type GCResult struct {
	Namespace string `json:"namespace"`
	Counter   string `json:"counter"`
	// Folded is how many final shards were folded into the tally.
	Folded int `json:"folded"`
	// Skipped is set when collection could not run (a replica is down);
	// Error says why. It is retried later; reads are unaffected.
	Skipped bool   `json:"skipped"`
	Error   string `json:"error,omitempty"`
}

// GCAllRequest is the (optional) body of POST /v1/gc.
type GCAllRequest struct {
	// Namespace restricts collection to one namespace; empty means all.
	Namespace string `json:"namespace,omitempty"`
}

// GCAllResult is the body of a successful POST /v1/gc.
type GCAllResult struct {
	Counters int `json:"counters"`
	Folded   int `json:"folded"`
	Skipped  int `json:"skipped"`
}
