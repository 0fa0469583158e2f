package client

import (
	"context"
	"strconv"
	"time"

	"github.com/abacusdb/abacus/api"
)

// The delay queue endpoints (see package queue and docs/queue.md). Puts are
// never retried by the client: a put whose answer was lost may have queued
// its messages, and sending it again would queue them twice. Acks are
// idempotent and retried like updates (WithRetries).

func queuePath(name string) string { return "/v1/queues/" + escape(name) }

// CreateQueue creates a delay queue.
func (c *Client) CreateQueue(ctx context.Context, req api.CreateQueueRequest) (*api.Queue, error) {
	if err := requireName("queue", req.Name); err != nil {
		return nil, err
	}
	return call[api.Queue](ctx, c, "POST", "/v1/queues", req)
}

// Queues lists every queue, sorted by name.
func (c *Client) Queues(ctx context.Context) ([]api.Queue, error) {
	return allPages(ctx, c, "/v1/queues", func(out *api.QueueList) ([]api.Queue, string) { return out.Queues, out.Next })
}

// Queue describes one queue.
func (c *Client) Queue(ctx context.Context, name string) (*api.Queue, error) {
	return callNamed[api.Queue](ctx, c, "queue", name, "GET", queuePath(name), nil)
}

// Put queues messages (1 to 1000) and returns their ids in order. If one
// is invalid the server refuses them all. See PutMessages.
func (c *Client) Put(ctx context.Context, queue string, msgs ...api.PutMessage) ([]string, error) {
	out, err := c.PutMessages(ctx, queue, msgs...)
	if err != nil {
		return nil, err
	}
	return out.IDs, nil
}

// PutMessages queues messages (1 to 1000) and returns the server's answer:
// their ids in order, and which were duplicates of earlier puts. When
// every message has a DedupID, a put whose outcome is unknown (a timeout,
// a lost connection, unknown_outcome) is sent again under the client's
// retry policy: the dedup ids make a repeat store nothing twice. Without
// them it is sent once, since a repeat could queue a message twice.
func (c *Client) PutMessages(ctx context.Context, queue string, msgs ...api.PutMessage) (*api.PutResponse, error) {
	if err := requireName("queue", queue); err != nil {
		return nil, err
	}
	var out api.PutResponse
	put := func() error {
		out = api.PutResponse{}
		return c.do(ctx, "POST", queuePath(queue)+"/messages", api.PutRequest{Messages: msgs}, &out)
	}
	repeatable := len(msgs) > 0
	for _, m := range msgs {
		repeatable = repeatable && m.DedupID != ""
	}
	var err error
	if repeatable {
		err = c.retrying(ctx, put)
	} else {
		err = put()
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Receive takes up to req.Max due messages, waiting up to req.Wait for
// one. Settle each with Ack, Nack or Release.
func (c *Client) Receive(ctx context.Context, queue string, req api.ReceiveRequest) ([]api.Delivery, error) {
	return callNamedPick(ctx, c, "queue", queue, "POST", queuePath(queue)+"/receive", req, func(out *api.ReceiveResponse) []api.Delivery { return out.Messages })
}

// Ack acknowledges deliveries by receipt: their messages are deleted.
func (c *Client) Ack(ctx context.Context, queue string, receipts ...string) error {
	if err := requireName("queue", queue); err != nil {
		return err
	}
	return c.retrying(ctx, func() error {
		return c.do(ctx, "POST", queuePath(queue)+"/ack", api.AckRequest{Receipts: receipts}, nil)
	})
}

// Nack reports that handling a delivery failed, with reason as its last
// error, and says whether the message moved to the dead letters.
func (c *Client) Nack(ctx context.Context, queue, receipt, reason string) (dead bool, err error) {
	return c.NackAfter(ctx, queue, receipt, reason, 0)
}

// NackAfter is Nack with a backoff: unless it moves to the dead letters,
// the message is visible again after from now (at most 12h), longer or
// shorter than the visibility timeout; 0 is Nack.
func (c *Client) NackAfter(ctx context.Context, queue, receipt, reason string, after time.Duration) (dead bool, err error) {
	req := api.NackRequest{Receipt: receipt, Error: reason}
	if after > 0 {
		req.RetryAfter = after.String()
	}
	return callNamedPick(ctx, c, "queue", queue, "POST", queuePath(queue)+"/nack", req, func(out *api.NackResponse) bool { return out.Dead })
}

// Extend keeps a delivery in hand hidden from other consumers for d from
// now, for a handler that needs longer than the visibility timeout, and
// returns until when. Call it before the visibility ends: after that, or
// once the message was delivered again, it fails with code stale_receipt.
func (c *Client) Extend(ctx context.Context, queue, receipt string, d time.Duration) (time.Time, error) {
	return callNamedPick(ctx, c, "queue", queue, "POST", queuePath(queue)+"/extend",
		api.ExtendRequest{Receipt: receipt, VisibilityTimeout: d.String()}, func(out *api.ExtendResponse) time.Time { return out.VisibleUntil })
}

// Release gives deliveries back unhandled: visible again at once, and not
// counted.
func (c *Client) Release(ctx context.Context, queue string, receipts ...string) (*api.ReleaseResponse, error) {
	return callNamed[api.ReleaseResponse](ctx, c, "queue", queue, "POST", queuePath(queue)+"/release", api.ReleaseRequest{Receipts: receipts})
}

// QueueStats returns the observer's numbers for a queue, per shard.
func (c *Client) QueueStats(ctx context.Context, queue string) (*api.QueueStats, error) {
	return callNamed[api.QueueStats](ctx, c, "queue", queue, "GET", queuePath(queue)+"/stats", nil)
}

// DeadLetters lists up to limit dead letters of a queue, oldest first;
// limit 0 means the server's default (100).
func (c *Client) DeadLetters(ctx context.Context, queue string, limit int) ([]api.DeadLetter, error) {
	if err := requireName("queue", queue); err != nil {
		return nil, err
	}
	path := queuePath(queue) + "/dead"
	if limit > 0 {
		path += "?limit=" + strconv.Itoa(limit)
	}
	return callPick(ctx, c, "GET", path, nil, func(out *api.DeadLetterList) []api.DeadLetter { return out.DeadLetters })
}

// Requeue puts dead letters back on their queue (all of them when ids is
// empty) and returns the ids requeued.
func (c *Client) Requeue(ctx context.Context, queue string, ids ...string) ([]string, error) {
	return callNamedPick(ctx, c, "queue", queue, "POST", queuePath(queue)+"/dead/requeue", api.RequeueRequest{IDs: ids}, func(out *api.RequeueResponse) []string { return out.Requeued })
}

// DeleteDeadLetters deletes dead letters by id (1 to 1,000 of them) and
// returns the ids it found and deleted. Deleting is idempotent, so it is
// retried like Set; a retry after an answer was lost returns only the ids
// it still found.
func (c *Client) DeleteDeadLetters(ctx context.Context, queue string, ids ...string) ([]string, error) {
	if err := requireName("queue", queue); err != nil {
		return nil, err
	}
	var out api.DeleteDeadResponse
	err := c.retrying(ctx, func() error {
		out = api.DeleteDeadResponse{}
		return c.do(ctx, "POST", queuePath(queue)+"/dead/delete", api.DeleteDeadRequest{IDs: ids}, &out)
	})
	return out.Deleted, err
}

// PauseQueue pauses a queue's deliveries on every server (within a
// second, at the servers' default settings); puts, acks and the rest go
// on. Pausing is idempotent, so it is retried like Set.
func (c *Client) PauseQueue(ctx context.Context, queue string) (*api.QueuePause, error) {
	return c.setQueuePause(ctx, queue, "/pause")
}

// ResumeQueue lets a paused queue deliver again; idempotent, retried.
func (c *Client) ResumeQueue(ctx context.Context, queue string) (*api.QueuePause, error) {
	return c.setQueuePause(ctx, queue, "/resume")
}

// QueuePause reports whether a queue's deliveries are paused.
func (c *Client) QueuePause(ctx context.Context, queue string) (*api.QueuePause, error) {
	return callNamed[api.QueuePause](ctx, c, "queue", queue, "GET", queuePath(queue)+"/pause", nil)
}

func (c *Client) setQueuePause(ctx context.Context, queue, tail string) (*api.QueuePause, error) {
	if err := requireName("queue", queue); err != nil {
		return nil, err
	}
	var out api.QueuePause
	err := c.retrying(ctx, func() error {
		return c.do(ctx, "POST", queuePath(queue)+tail, nil, &out)
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteQueue deletes a queue: every server answers 404 for it within its
// queue refresh, its messages and dead letters are removed, and the name
// can be created again, as a new and empty queue, from the answer's
// RecreatableAt. A repeat, until the name is made again, answers as the
// first delete did and removes whatever rows are left; the client does
// not repeat it by itself, since a repeat sent after the name was made
// again would delete the new queue.
func (c *Client) DeleteQueue(ctx context.Context, queue string) (*api.QueueDeleteResponse, error) {
	return callNamed[api.QueueDeleteResponse](ctx, c, "queue", queue, "DELETE", queuePath(queue), nil)
}

// PurgeQueue deletes the messages of a queue put before the purge began,
// and its dead letters when deadLetters is set. It is not retried: a
// repeat would also delete what was put in between; send it again
// yourself after an error to finish a purge that stopped part way.
func (c *Client) PurgeQueue(ctx context.Context, queue string, deadLetters bool) (*api.PurgeResponse, error) {
	return callNamed[api.PurgeResponse](ctx, c, "queue", queue, "POST", queuePath(queue)+"/purge", api.PurgeRequest{DeadLetters: deadLetters})
}
