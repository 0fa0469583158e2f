package queue

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// Delivery is one message handed to a consumer. Settle it exactly once:
// Ack when it was handled, Fail when it was not (it comes back after the
// visibility timeout, or goes to the dead letters after MaxDeliveries), or
// Release to give it back unhandled at once, uncounted. An unsettled
// delivery comes back after the visibility timeout and counts as failed.
type Delivery struct {
	svc        *Service
	q          *Queue
	retryDelay time.Duration
	backoff    func(attempt int) time.Duration

	// mu guards msg, which Extend changes while a handler may be settling
	// the delivery, and handlerCtx, whose deadline Extend moves.
	mu         sync.Mutex
	msg        driver.Message // as marked: Deliveries and VisibleAt of this delivery
	handlerCtx *movableDeadline
}

// message returns a copy of the delivery's message.
func (d *Delivery) message() driver.Message {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.msg
}

// ID returns the message's id.
func (d *Delivery) ID() ID { return d.message().ID }

// Queue returns the queue's name.
func (d *Delivery) Queue() string { return d.q.Name }

// Body returns the message body. Callers must not modify it.
func (d *Delivery) Body() []byte { return d.message().Body }

// Attributes returns the message's attributes as put (nil when none). The
// map is the delivery's own; do not change it.
func (d *Delivery) Attributes() map[string]string { return d.message().Attributes }

// Due returns when the message became due.
func (d *Delivery) Due() time.Time { return d.message().Due }

// EnqueuedAt returns when the message was put.
func (d *Delivery) EnqueuedAt() time.Time { return d.message().EnqueuedAt }

// Attempt returns this delivery's number: 1 for the first delivery.
func (d *Delivery) Attempt() int { return d.message().Deliveries }

// Shard returns the shard the message is stored in.
func (d *Delivery) Shard() int { return d.message().Shard }

// Priority returns the message's priority level.
func (d *Delivery) Priority() int { return d.q.levelOf(d.message().Shard) }

// VisibleUntil returns when the message becomes visible to other consumers
// again unless it is settled first (service clock).
func (d *Delivery) VisibleUntil() time.Time { return d.message().VisibleAt }

// Receipt returns a text token naming this delivery, with which any
// process can settle it through the Service (the HTTP API does).
func (d *Delivery) Receipt() string {
	m := d.message()
	return receiptOf(m).String()
}

// Ack deletes the message: it was handled. An error wrapping
// ErrUnknownOutcome means the delete may not have happened, and the message
// may be delivered again.
func (d *Delivery) Ack(ctx context.Context) error {
	if err := d.svc.current(ctx, d.q); err != nil {
		return err
	}
	return d.svc.ack(ctx, d.q, d.message().MessageKey)
}

// Fail records that the delivery failed with cause. The message becomes
// visible again when its visibility timeout ends (or after
// ConsumerConfig.RetryDelay); if this was its last allowed delivery it
// moves to the dead letters now, with cause as its last error. A delivery
// that is no longer the message's latest (its visibility ended and the
// message was delivered again, or acknowledged), or was settled as failed
// already, is not recorded: ErrStaleReceipt. Recording it would set the
// newer delivery's count back and show the message while another consumer
// holds it, or bring an acknowledged message back as a dead letter. The
// check reads the message first, so a redelivery landing between that read
// and the write is still overwritten; it narrows the window to that.
func (d *Delivery) Fail(ctx context.Context, cause error) error {
	m := d.message()
	var after time.Duration
	if d.backoff != nil {
		after = clampBackoff(d.backoff(m.Deliveries))
	}
	if err := d.svc.current(ctx, d.q); err != nil {
		return err
	}
	_, err := d.svc.fail(ctx, d.q, receiptOf(m), cause, d.retryDelay, after)
	return err
}

func receiptOf(m driver.Message) receipt {
	return receipt{Key: m.MessageKey, Deliveries: m.Deliveries}
}

// clampBackoff keeps a backoff policy's answer in (0, MaxVisibilityTimeout].
func clampBackoff(d time.Duration) time.Duration {
	return min(max(d, time.Millisecond), MaxVisibilityTimeout)
}

// ExponentialBackoff returns the backoff policy most queues want: base
// after the first failed attempt, doubling with each further one up to
// limit, with "equal jitter" (half the delay fixed, half random) so that
// messages that failed together do not all come back together.
func ExponentialBackoff(base, limit time.Duration) func(attempt int) time.Duration {
	return func(attempt int) time.Duration {
		d := limit
		if attempt < 1 {
			attempt = 1
		}
		if shift := attempt - 1; base > 0 && shift < 62 && base <= limit>>shift {
			d = base << shift
		}
		half := d / 2
		if half <= 0 {
			return d
		}
		return half + rand.N(d-half+1)
	}
}

// Release gives the message back unhandled: it is visible again at once
// and this delivery does not count. For consumers that took more than they
// can handle, for example when shutting down.
func (d *Delivery) Release(ctx context.Context) error {
	if err := d.svc.current(ctx, d.q); err != nil {
		return err
	}
	return d.svc.release(ctx, d.q, receiptOf(d.message()))
}

// Extend keeps the message hidden from other consumers until at least by
// from now (at most MaxVisibilityTimeout; it never shortens what is
// there), for a handler that needs longer than the visibility timeout:
// call it before VisibleUntil, as often as needed. A handler run by a
// Consumer gets a context whose deadline moves with it. It returns
// ErrStaleReceipt once the visibility has ended (the message may be
// delivered again at any moment) or after the delivery was settled or
// delivered again.
func (d *Delivery) Extend(ctx context.Context, by time.Duration) error {
	if err := d.svc.current(ctx, d.q); err != nil {
		return err
	}
	m, err := d.svc.extend(ctx, d.q, d.message(), by)
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.msg.VisibleAt = m.VisibleAt
	if d.handlerCtx != nil {
		d.handlerCtx.moveTo(m.VisibleAt.Sub(d.svc.now()))
	}
	d.mu.Unlock()
	return nil
}

// failed reports whether m's current delivery was settled as a failure:
// fail writes its error as "delivery N: …", where the mark written when it
// was handed out says "delivery N (consumer …) was not acknowledged …".
func failed(m *driver.Message) bool {
	return strings.HasPrefix(m.LastError, fmt.Sprintf("delivery %d: ", m.Deliveries))
}

func (s *Service) extend(ctx context.Context, q *Queue, m driver.Message, by time.Duration) (driver.Message, error) {
	if by <= 0 || by > MaxVisibilityTimeout {
		return m, invalidf("a visibility extension must be positive and at most %v, not %v", MaxVisibilityTimeout, by)
	}
	cur, err := s.inHand(ctx, q, receiptOf(m))
	if err != nil {
		return m, err
	}
	now := s.now()
	if !now.Before(cur.VisibleAt) {
		return m, fmt.Errorf("%w: message %s became visible again at %s; it may be delivered again",
			ErrStaleReceipt, m.ID, cur.VisibleAt.UTC().Format(time.RFC3339Nano))
	}
	until := now.Add(by).Truncate(time.Millisecond)
	if until.Before(cur.VisibleAt) {
		until = cur.VisibleAt
	}
	wrote, err := s.store.ExtendVisibility(ctx, &driver.ExtendVisibilityParams{
		Queue: q.stored(), Key: cur.MessageKey, Deliveries: cur.Deliveries, VisibleAt: until,
	})
	if err != nil {
		return m, err
	}
	if !wrote {
		return m, fmt.Errorf("%w: message %s was settled or delivered again meanwhile", ErrStaleReceipt, m.ID)
	}
	s.stats.Extended.Add(1)
	cur.VisibleAt = until
	return *cur, nil
}

// fail records the failure of the delivery r names, if it is still in
// hand (inHand). The message becomes visible again after, when positive (a
// backoff: longer or shorter than the visibility timeout); else after
// retryDelay when that is sooner than the visibility's end; else when the
// visibility ends.
func (s *Service) fail(ctx context.Context, q *Queue, r receipt, cause error, retryDelay, after time.Duration) (dead bool, _ error) {
	cur, err := s.inHand(ctx, q, r)
	if err != nil {
		return false, err
	}
	m := *cur
	reason := "failed"
	if cause != nil {
		reason = cause.Error()
	}
	const maxReason = 4 << 10 // the reason is stored with the message
	if len(reason) > maxReason {
		reason = reason[:maxReason] + "..."
	}
	m.LastError = fmt.Sprintf("delivery %d: %s", m.Deliveries, reason)
	s.stats.Failed.Add(1)
	now := s.now()
	if m.Deliveries >= q.MaxDeliveries {
		err := s.store.DeadLetter(ctx, &driver.DeadLetterParams{Queue: q.stored(), Letters: []driver.DeadLetter{{Message: m, DiedAt: now}}})
		if err != nil {
			return false, err
		}
		s.stats.DeadLettered.Add(1)
		return true, nil
	}
	switch {
	case after > 0:
		m.VisibleAt = now.Add(after).Truncate(time.Millisecond)
	case retryDelay > 0 && now.Add(retryDelay).Before(m.VisibleAt):
		m.VisibleAt = now.Add(retryDelay)
	}
	if err := s.store.UpdateMessages(ctx, &driver.UpdateMessagesParams{Queue: q.stored(), Updates: []driver.Message{m}}); err != nil {
		return false, err
	}
	s.consumers.hint(q.Name, m.Shard, m.VisibleAt, now)
	return false, nil
}

// release gives back the delivery r names, if it is still in hand
// (inHand): a failed delivery given back would lose its count and skip
// its backoff.
func (s *Service) release(ctx context.Context, q *Queue, r receipt) error {
	cur, err := s.inHand(ctx, q, r)
	if err != nil {
		return err
	}
	cur.Deliveries--
	cur.VisibleAt = time.Time{}
	cur.LastError = ""
	if err := s.store.UpdateMessages(ctx, &driver.UpdateMessagesParams{Queue: q.stored(), Updates: []driver.Message{*cur}}); err != nil {
		return err
	}
	now := s.now()
	s.consumers.hint(q.Name, cur.Shard, now, now)
	s.stats.Released.Add(1)
	return nil
}

// Ack acknowledges the delivery a receipt names: the message is deleted.
// Acknowledging twice, or after the message was delivered again, is
// harmless.
func (s *Service) Ack(ctx context.Context, queue, receiptText string) error {
	q, r, err := s.receipt(ctx, queue, receiptText)
	if err != nil {
		return err
	}
	return s.ack(ctx, q, r.Key)
}

// Fail records that the delivery a receipt names failed, as Delivery.Fail
// does, and reports whether the message moved to the dead letters. It
// returns ErrStaleReceipt if the message was delivered again (or settled)
// since.
func (s *Service) Fail(ctx context.Context, queue, receiptText, reason string) (dead bool, err error) {
	return s.FailAfter(ctx, queue, receiptText, reason, 0)
}

// FailAfter is Fail with a backoff: unless it moves to the dead letters,
// the message becomes visible again after from now (0 < after ≤
// MaxVisibilityTimeout), longer or shorter than its visibility timeout; 0
// means when the visibility ends, as Fail.
func (s *Service) FailAfter(ctx context.Context, queue, receiptText, reason string, after time.Duration) (dead bool, err error) {
	if after < 0 || after > MaxVisibilityTimeout {
		return false, invalidf("a retry delay must be positive and at most %v, not %v", MaxVisibilityTimeout, after)
	}
	q, r, err := s.receipt(ctx, queue, receiptText)
	if err != nil {
		return false, err
	}
	return s.fail(ctx, q, r, errors.New(reason), 0, after)
}

// Extend keeps the delivery a receipt names hidden for by from now, as
// Delivery.Extend does, and returns until when.
func (s *Service) Extend(ctx context.Context, queue, receiptText string, by time.Duration) (time.Time, error) {
	q, r, err := s.receipt(ctx, queue, receiptText)
	if err != nil {
		return time.Time{}, err
	}
	m, err := s.extend(ctx, q, driver.Message{MessageKey: r.Key, Deliveries: r.Deliveries}, by)
	if err != nil {
		return time.Time{}, err
	}
	return m.VisibleAt, nil
}

// Release gives back the delivery a receipt names, as Delivery.Release
// does.
func (s *Service) Release(ctx context.Context, queue, receiptText string) error {
	q, r, err := s.receipt(ctx, queue, receiptText)
	if err != nil {
		return err
	}
	return s.release(ctx, q, r)
}

func (s *Service) receipt(ctx context.Context, queue, text string) (*Queue, receipt, error) {
	q, err := s.Queue(ctx, queue)
	if err != nil {
		return nil, receipt{}, err
	}
	r, err := parseReceipt(text)
	if err != nil {
		return nil, receipt{}, err
	}
	if r.Key.Shard >= q.storedShards() {
		return nil, receipt{}, invalidf("receipt names shard %d of a queue with %d", r.Key.Shard, q.storedShards())
	}
	return q, r, nil
}

// inHand reads the message a receipt names and checks that the receipt's
// delivery is still in hand: the message's latest delivery (not delivered
// again, not acknowledged) and not settled as failed. Every settlement but
// an ack goes through it, so each is applied at most once per delivery.
func (s *Service) inHand(ctx context.Context, q *Queue, r receipt) (*driver.Message, error) {
	m, err := s.store.GetMessage(ctx, &driver.GetMessageParams{Queue: q.stored(), Key: r.Key})
	if errors.Is(err, driver.ErrNotFound) {
		return nil, fmt.Errorf("%w: message %s is gone", ErrStaleReceipt, r.Key.ID)
	}
	if err != nil {
		return nil, err
	}
	if m.Deliveries != r.Deliveries {
		return nil, fmt.Errorf("%w: message %s was delivered again (delivery %d, the receipt is for %d)",
			ErrStaleReceipt, r.Key.ID, m.Deliveries, r.Deliveries)
	}
	if failed(m) {
		return nil, fmt.Errorf("%w: delivery %d of message %s was settled as failed", ErrStaleReceipt, m.Deliveries, r.Key.ID)
	}
	return m, nil
}
