package abacus

import (
	"fmt"

	"github.com/abacusdb/abacus/queue"
)

// Queues returns the client's delay queues (package queue): create queues,
// put messages, consume, observe and manage dead letters. They share the
// client's driver, clock and logger.
func (c *Client) Queues() *queue.Service { return c.queues }

func newQueues(cfg Config) (*queue.Service, error) {
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
