package abacus

import (
	"time"

	"fmt"

	"github.com/abacusdb/abacus/internal/queue"
)

// The delay queues' types. The queue engine lives in internal/queue; these
// names are how users spell its types (docs/queue.md describes them).
type (
	// Queues creates queues, puts messages, consumes, observes and
	// manages dead letters (Client.Queues).
	Queues = queue.Service
	// QueuesConfig configures a client's delay queues (Config.Queues).
	QueuesConfig = queue.Config
	// Queue is one queue's stored configuration.
	Queue = queue.Queue
	// QueueConfig is what Queues.Create makes a queue with.
	QueueConfig = queue.QueueConfig
	// QueueMessage is one message to put.
	QueueMessage = queue.Message
	// MessageID identifies a message; it carries the shard and due time.
	MessageID = queue.ID
	// QueueConsumer takes messages of one queue under leases.
	QueueConsumer = queue.Consumer
	// ConsumerConfig configures a QueueConsumer.
	ConsumerConfig = queue.ConsumerConfig
	// Delivery is one leased message; Ack, Fail or Release end the lease.
	Delivery = queue.Delivery
	// DeadLetter is a message that failed too often.
	DeadLetter = queue.DeadLetter
	// QueueObservation is what Queues.Observe reports about one queue.
	QueueObservation = queue.Observation
	// QueueShardView is one time shard of a queue in an observation.
	QueueShardView = queue.ShardView
	// QueueStats are the queues' running totals (for metrics).
	QueueStats = queue.Stats
	// QueuePauseState is whether a queue's deliveries are paused
	// (Queues.Pause, Resume, PauseState).
	QueuePauseState = queue.PauseState
	// QueueDeleteResult is what Queues.Delete did.
	QueueDeleteResult = queue.DeleteResult
)

// ParseMessageID parses the text form of a MessageID.
func ParseMessageID(s string) (MessageID, error) { return queue.ParseID(s) }

// ExponentialBackoff is a ConsumerConfig.Backoff policy: base after the
// first failed attempt, doubling up to limit, with equal jitter.
func ExponentialBackoff(base, limit time.Duration) func(attempt int) time.Duration {
	return queue.ExponentialBackoff(base, limit)
}

// Queues returns the client's delay queues: create queues, put messages,
// consume, observe and manage dead letters. They share the client's
// driver, clock and logger.
func (c *Client) Queues() *Queues { return c.queues }

func newQueues(cfg Config) (*Queues, error) {
	qc := cfg.Queues
	if qc.Store == nil {
		qc.Store = cfg.Driver
	}
	if qc.Clock == nil {
		qc.Clock = cfg.Clock
	}
	if qc.Logger == nil {
		qc.Logger = cfg.Logger
	}
	s, err := queue.New(qc)
	if err != nil {
		return nil, fmt.Errorf("abacus: %w", err)
	}
	return s, nil
}
