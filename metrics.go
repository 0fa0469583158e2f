package abacus

import (
	"github.com/abacusdb/abacus/internal/events"
	"github.com/abacusdb/abacus/internal/sharded"
)

// The engines' measurements, under the names users spell them by.
type (
	// GCResult is the outcome of collecting one counter.
	GCResult = sharded.GCResult
	// ShardedHooks receive measurements of the sharded model as they
	// happen (Config.ShardedHooks). They must be fast and must not block.
	ShardedHooks = sharded.Hooks
	// ShardedStats are the sharded engine's running totals (Client.Stats).
	ShardedStats = sharded.Stats
	// EventsStats are the events engine's running totals
	// (Client.EventsStats).
	EventsStats = events.Stats
)

// EventsStats returns the events engine's running totals (for metrics).
func (c *Client) EventsStats() *EventsStats { return c.events.Stats() }

// LiveMutators returns how many mutators this process holds (for metrics).
func (c *Client) LiveMutators() int { return c.sharded.LiveMutators() }

// Stats returns the sharded engine's running totals (for metrics).
func (c *Client) Stats() *ShardedStats { return c.sharded.Stats() }
