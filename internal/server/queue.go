package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/internal/apikey"
	"github.com/abacusdb/abacus/internal/names"
	"github.com/abacusdb/abacus/internal/queue"
	"github.com/prometheus/client_golang/prometheus"
)

// The queue endpoints. Receiving goes through one pull consumer per queue
// per server process (a queue.Consumer without a handler): it holds at most
// one shard lease at a time, and every receive request on that queue shares
// it. Deliveries are settled by receipt, which needs no lease, so a client
// may ack through any server.

func (s *Server) queueRoutes(handle func(method, path string, h http.HandlerFunc)) {
	handle("GET", "/v1/queues", s.listQueues)
	handle("POST", "/v1/queues", s.createQueue)
	handle("GET", "/v1/queues/{queue}", s.getQueue)
	handle("POST", "/v1/queues/{queue}/messages", s.putMessages)
	handle("POST", "/v1/queues/{queue}/receive", s.receive)
	handle("POST", "/v1/queues/{queue}/ack", s.ack)
	handle("POST", "/v1/queues/{queue}/nack", s.nack)
	handle("POST", "/v1/queues/{queue}/release", s.release)
	handle("POST", "/v1/queues/{queue}/extend", s.extend)
	handle("GET", "/v1/queues/{queue}/stats", s.queueStats)
	handle("GET", "/v1/queues/{queue}/dead", s.deadLetters)
	handle("POST", "/v1/queues/{queue}/dead/requeue", s.requeue)
	handle("POST", "/v1/queues/{queue}/dead/delete", s.deleteDead)
	handle("GET", "/v1/queues/{queue}/pause", s.getPause)
	handle("POST", "/v1/queues/{queue}/pause", s.setPause(true))
	handle("POST", "/v1/queues/{queue}/resume", s.setPause(false))
	handle("POST", "/v1/queues/{queue}/purge", s.purge)
	handle("DELETE", "/v1/queues/{queue}", s.deleteQueue)
}

// consumers holds the server's pull consumers, one per queue.
type consumers struct {
	mu      sync.Mutex
	byQueue map[string]*queue.Consumer
	closed  bool
}

// get returns the consumer of the queue's current generation, making it
// on first use; a consumer of a deleted generation is stopped and, if the
// name was made again, replaced.
func (c *consumers) get(ctx context.Context, svc *queue.Service, name string) (*queue.Consumer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errorf(api.CodeUnavailable, "shutting down")
	}
	q, err := svc.Queue(ctx, name) // a cached record, read again once a refresh old
	old, ok := c.byQueue[name]
	if err == nil && ok && old.Serves(q) {
		return old, nil
	}
	if ok && (err == nil || errors.Is(err, queue.ErrNotFound)) {
		delete(c.byQueue, name)
		// Its shard lease belongs to a deleted generation: nothing anyone
		// waits for, so the request need not wait for it either.
		go func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = old.Stop(sctx)
		}()
	}
	if err != nil {
		return nil, err
	}
	qc, err := svc.NewConsumer(ctx, queue.ConsumerConfig{Queue: name})
	if err != nil {
		return nil, err
	}
	if c.byQueue == nil {
		c.byQueue = map[string]*queue.Consumer{}
	}
	c.byQueue[name] = qc
	return qc, nil
}

// stop releases every consumer's shard lease, so that other servers can
// take the shards at once.
func (c *consumers) stop(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	list := c.byQueue
	c.byQueue = nil
	c.mu.Unlock()
	var errs []error
	for _, qc := range list {
		errs = append(errs, qc.Stop(ctx))
	}
	return errors.Join(errs...)
}

func queueJSON(q *queue.Queue) api.Queue {
	return api.Queue{
		Name: q.Name, Shards: q.Shards, Spread: q.Math().Spread(), Priorities: q.Levels(), ShardDuration: q.ShardDuration.String(),
		MaxDeliveries: q.MaxDeliveries, VisibilityTimeout: q.VisibilityTimeout.String(), CreatedAt: q.CreatedAt,
	}
}

func (s *Server) listQueues(w http.ResponseWriter, r *http.Request) {
	after, limit, err := pageParams(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	list, err := s.client.Queues().List(r.Context())
	if err != nil {
		writeError(w, r, err)
		return
	}
	list = readable(s, r, apikey.KindQueue, list, func(q *queue.Queue) string { return q.Name })
	items, next := page(list, func(q *queue.Queue) string { return q.Name }, after, limit)
	out, err := s.withPause(r.Context(), items)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.QueueList{Queues: out, Next: next})
}

// parseDuration reads a Go duration string; "" is zero.
func parseDuration(field, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, errorf(api.CodeInvalidArgument, "field %q: %q is not a duration such as \"90s\" or \"1m\"", field, v)
	}
	return d, nil
}

// decodeCreateQueue refuses an explicit 0 for the counts: the spec's
// minimums apply to what is sent, and only an absent field takes the
// default.
func decodeCreateQueue(data []byte) (api.CreateQueueRequest, error) {
	var req api.CreateQueueRequest
	if err := decodeStrict(data, &req, ""); err != nil {
		return api.CreateQueueRequest{}, err
	}
	if err := refuseEmpty(data, "", "shard_duration", "visibility_timeout"); err != nil {
		return api.CreateQueueRequest{}, err
	}
	if req.Shards == 0 && present(data, "shards") {
		return api.CreateQueueRequest{}, errorf(api.CodeInvalidArgument, "field \"shards\": 0 is below the minimum 4; leave the field out for the default")
	}
	if req.Spread == 0 && present(data, "spread") {
		return api.CreateQueueRequest{}, errorf(api.CodeInvalidArgument, "field \"spread\": 0 is below the minimum 1; leave the field out for the default")
	}
	if req.Priorities == 0 && present(data, "priorities") {
		return api.CreateQueueRequest{}, errorf(api.CodeInvalidArgument, "field \"priorities\": 0 is below the minimum 1; leave the field out for the default")
	}
	if req.MaxDeliveries == 0 && present(data, "max_deliveries") {
		return api.CreateQueueRequest{}, errorf(api.CodeInvalidArgument, "field \"max_deliveries\": 0 is below the minimum 1; leave the field out for the default")
	}
	return req, nil
}

func (s *Server) createQueue(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeRequest(s, w, r, decodeCreateQueue)
	if !ok {
		return
	}
	if !s.allowed(r, apikey.KindQueue, req.Name, apikey.Admin) {
		writeError(w, r, forbidden(r, apikey.KindQueue, req.Name, apikey.Admin))
		return
	}
	shardDur, err := parseDuration("shard_duration", req.ShardDuration)
	if err != nil {
		writeError(w, r, err)
		return
	}
	vis, err := parseDuration("visibility_timeout", req.VisibilityTimeout)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if req.Shards < 0 || req.Spread < 0 || req.Priorities < 0 || shardDur < 0 || req.MaxDeliveries < 0 || vis < 0 {
		// Zero means "default" to the library; a negative value is a
		// mistake, not a request for the default.
		writeError(w, r, errorf(api.CodeInvalidArgument, "shards, spread, priorities, shard_duration, max_deliveries and visibility_timeout must not be negative"))
		return
	}
	// A name the library will refuse anyway is refused for that, not for
	// the quota.
	if names.CheckNew("queue", req.Name) == nil {
		if err := withinQuota(r.Context(), "queues", s.cfg.MaxQueues, s.client.Queues().List,
			func(q *queue.Queue) string { return q.Name }, req.Name); err != nil {
			writeError(w, r, err)
			return
		}
	}
	q, err := s.client.Queues().Create(r.Context(), queue.QueueConfig{
		Name: req.Name, Shards: req.Shards, Spread: req.Spread, Priorities: req.Priorities, ShardDuration: shardDur,
		MaxDeliveries: req.MaxDeliveries, VisibilityTimeout: vis,
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/queues/"+url.PathEscape(q.Name))
	writeJSON(w, http.StatusCreated, queueJSON(q))
}

func (s *Server) getQueue(w http.ResponseWriter, r *http.Request) {
	q, err := s.client.Queues().Queue(r.Context(), r.PathValue("queue"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	out, err := s.withPause(r.Context(), []*queue.Queue{q})
	writeResult(w, r, out, err, func(qs []api.Queue) api.Queue { return qs[0] })
}

// withPause answers queues with their pause states, read now (several
// at once).
func (s *Server) withPause(ctx context.Context, qs []*queue.Queue) ([]api.Queue, error) {
	states, err := s.client.Queues().PauseStates(ctx, qs)
	if err != nil {
		return nil, err
	}
	out := jsonEach(qs, queueJSON)
	for i, st := range states {
		out[i].Paused = st.Paused
	}
	return out, nil
}

func (s *Server) getPause(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("queue")
	st, err := s.client.Queues().PauseState(r.Context(), name)
	writeResult(w, r, st, err, func(st queue.PauseState) api.QueuePause { return pauseJSON(name, st) })
}

func (s *Server) setPause(paused bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("queue")
		set := s.client.Queues().Resume
		if paused {
			set = s.client.Queues().Pause
		}
		st, err := set(r.Context(), name)
		writeResult(w, r, st, err, func(st queue.PauseState) api.QueuePause { return pauseJSON(name, st) })
	}
}

func pauseJSON(name string, st queue.PauseState) api.QueuePause {
	out := api.QueuePause{Queue: name, Paused: st.Paused}
	if !st.Since.IsZero() {
		out.Since = &st.Since
	}
	return out
}

// decodePut decodes the envelope and each message on its own, so errors
// name the message's index.
func decodePut(data []byte) (api.PutRequest, error) {
	var env struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := decodeStrict(data, &env, ""); err != nil {
		return api.PutRequest{}, err
	}
	switch n := len(env.Messages); {
	case n == 0:
		return api.PutRequest{}, errorf(api.CodeInvalidArgument, "messages: give at least one message")
	case n > queue.MaxBatch:
		return api.PutRequest{}, errorf(api.CodeInvalidArgument, "messages: %d messages, the limit is %d", n, queue.MaxBatch)
	}
	req := api.PutRequest{Messages: make([]api.PutMessage, len(env.Messages))}
	for i, raw := range env.Messages {
		where := fmt.Sprintf("messages[%d]", i)
		if err := decodeStrict(raw, &req.Messages[i], where); err != nil {
			return api.PutRequest{}, err
		}
		if err := refuseEmpty(raw, where, "due", "delay", "dedup_id"); err != nil {
			return api.PutRequest{}, err
		}
	}
	return req, nil
}

// putMessages converts a decoded put into library messages, refusing the
// mistakes only the wire format can make.
func putMessages(req api.PutRequest) ([]queue.Message, error) {
	out := make([]queue.Message, len(req.Messages))
	for i, m := range req.Messages {
		where := fmt.Sprintf("messages[%d]", i)
		body := []byte(m.Body)
		if m.BodyBase64 != "" {
			if m.Body != "" {
				return nil, errorf(api.CodeInvalidArgument, "%s: give body or body_base64, not both", where)
			}
			b, err := base64.StdEncoding.Strict().DecodeString(m.BodyBase64)
			if err != nil {
				return nil, errorf(api.CodeInvalidArgument, "%s.body_base64: not standard base64: %v", where, err)
			}
			body = b
		}
		delay, err := parseDuration(where+".delay", m.Delay)
		if err != nil {
			return nil, err
		}
		if delay < 0 {
			return nil, errorf(api.CodeInvalidArgument, "%s.delay: %v is negative", where, delay)
		}
		out[i] = queue.Message{Body: body, Delay: delay, DedupID: m.DedupID, Attributes: m.Attributes, Priority: m.Priority}
		if m.Due != "" {
			if m.Delay != "" {
				return nil, errorf(api.CodeInvalidArgument, "%s: give delay or due, not both", where)
			}
			due, err := time.Parse(time.RFC3339Nano, m.Due)
			if err != nil {
				return nil, errorf(api.CodeInvalidArgument, "%s.due: %q is not an RFC 3339 time such as \"2030-01-01T08:00:00Z\"", where, m.Due)
			}
			out[i].Due = due
		}
	}
	return out, nil
}

func (s *Server) putMessages(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeRequest(s, w, r, decodePut)
	if !ok {
		return
	}
	msgs, err := putMessages(req)
	if err != nil {
		writeError(w, r, err)
		return
	}
	ids, dup, err := s.client.Queues().PutBatchDedup(r.Context(), r.PathValue("queue"), msgs)
	if err != nil {
		writeError(w, r, err)
		return
	}
	logAttrs(r, slog.Int("messages", len(ids)))
	resp := api.PutResponse{IDs: jsonEach(ids, queue.ID.String)}
	for i, d := range dup {
		if d {
			resp.Duplicates = append(resp.Duplicates, i)
		}
	}
	writeJSON(w, http.StatusCreated, resp)
}

// decodeReceive accepts an empty body as the defaults.
func decodeReceive(data []byte) (api.ReceiveRequest, error) {
	req, err := decodeOptional[api.ReceiveRequest](data)
	if err != nil {
		return api.ReceiveRequest{}, err
	}
	if err := refuseEmpty(data, "", "wait"); err != nil {
		return api.ReceiveRequest{}, err
	}
	// An empty body has no "max" field, so it passes as the defaults.
	if req.Max == 0 && present(data, "max") {
		return api.ReceiveRequest{}, errorf(api.CodeInvalidArgument, "field \"max\": 0 is outside 1 to %d; leave the field out for 1", api.MaxReceive)
	}
	return req, nil
}

// receivePoll is how often a waiting receive looks again.
const receivePoll = 200 * time.Millisecond

func (s *Server) receive(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeRequest(s, w, r, decodeReceive)
	if !ok {
		return
	}
	max := req.Max
	if max == 0 {
		max = 1
	}
	if max < 1 || max > api.MaxReceive {
		writeError(w, r, errorf(api.CodeInvalidArgument, "field \"max\": %d is outside 1 to %d", req.Max, api.MaxReceive))
		return
	}
	wait, err := parseDuration("wait", req.Wait)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if wait < 0 || wait > api.MaxReceiveWait {
		writeError(w, r, errorf(api.CodeInvalidArgument, "field \"wait\": %v is outside 0s to %v", wait, api.MaxReceiveWait))
		return
	}
	qc, err := s.queues.get(r.Context(), s.client.Queues(), r.PathValue("queue"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	deadline := time.Now().Add(wait)
	var ds []*queue.Delivery
	for {
		ds, err = qc.Receive(r.Context(), max)
		if err != nil || len(ds) > 0 || !time.Now().Before(deadline) {
			break
		}
		t := time.NewTimer(min(receivePoll, time.Until(deadline)))
		select {
		case <-r.Context().Done():
		case <-t.C:
		case <-qc.Ring(): // a put or settled delivery on this server
		}
		t.Stop()
		if r.Context().Err() != nil {
			break
		}
	}
	if err != nil && len(ds) == 0 {
		writeError(w, r, err)
		return
	}
	out := api.ReceiveResponse{Messages: make([]api.Delivery, len(ds))}
	for i, d := range ds {
		out.Messages[i] = api.Delivery{
			ID: d.ID().String(), Due: d.Due(), EnqueuedAt: d.EnqueuedAt(),
			Attempt: d.Attempt(), VisibleUntil: d.VisibleUntil(), Receipt: d.Receipt(),
			Attributes: d.Attributes(), Priority: d.Priority(),
		}
		out.Messages[i].Body, out.Messages[i].BodyBase64 = textOrBase64(d.Body())
	}
	writeJSON(w, http.StatusOK, out)
}

// textOrBase64 puts a body in the text field when it is valid UTF-8 (JSON
// would mangle anything else) and in the base64 field otherwise.
func textOrBase64(b []byte) (string, string) {
	if utf8.Valid(b) {
		return string(b), ""
	}
	return "", base64.StdEncoding.EncodeToString(b)
}

func decodeReceipts(data []byte) ([]string, error) {
	var req api.AckRequest // ReleaseRequest has the same shape
	if err := decodeStrict(data, &req, ""); err != nil {
		return nil, err
	}
	switch n := len(req.Receipts); {
	case n == 0:
		return nil, errorf(api.CodeInvalidArgument, "receipts: give at least one receipt")
	case n > queue.MaxBatch:
		return nil, errorf(api.CodeInvalidArgument, "receipts: %d receipts, the limit is %d", n, queue.MaxBatch)
	}
	return req.Receipts, nil
}

func (s *Server) ack(w http.ResponseWriter, r *http.Request) {
	receipts, ok := decodeRequest(s, w, r, decodeReceipts)
	if !ok {
		return
	}
	// All at once: the receipts of one shard share one delete.
	n, err := s.client.Queues().AckAll(r.Context(), r.PathValue("queue"), receipts)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.AckResponse{Acknowledged: n})
}

func decodeNack(data []byte) (api.NackRequest, error) {
	var req api.NackRequest
	if err := decodeStrict(data, &req, ""); err != nil {
		return api.NackRequest{}, err
	}
	if err := refuseEmpty(data, "", "retry_after"); err != nil {
		return api.NackRequest{}, err
	}
	if req.Receipt == "" {
		return api.NackRequest{}, errorf(api.CodeInvalidArgument, "field \"receipt\" is required")
	}
	return req, nil
}

func decodeExtend(data []byte) (api.ExtendRequest, error) {
	var req api.ExtendRequest
	if err := decodeStrict(data, &req, ""); err != nil {
		return api.ExtendRequest{}, err
	}
	if req.Receipt == "" || req.VisibilityTimeout == "" {
		return api.ExtendRequest{}, errorf(api.CodeInvalidArgument, "fields \"receipt\" and \"visibility_timeout\" are required")
	}
	return req, nil
}

func (s *Server) nack(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeRequest(s, w, r, decodeNack)
	if !ok {
		return
	}
	reason := req.Error
	if reason == "" {
		reason = "failed (no reason given)"
	}
	after, err := parseDuration("retry_after", req.RetryAfter)
	if err == nil && req.RetryAfter != "" && after <= 0 {
		err = errorf(api.CodeInvalidArgument, "field \"retry_after\": %q must be positive", req.RetryAfter)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	dead, err := s.client.Queues().FailAfter(r.Context(), r.PathValue("queue"), req.Receipt, reason, after)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.NackResponse{Dead: dead})
}

func (s *Server) extend(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeRequest(s, w, r, decodeExtend)
	if !ok {
		return
	}
	by, err := parseDuration("visibility_timeout", req.VisibilityTimeout)
	if err != nil {
		writeError(w, r, err)
		return
	}
	until, err := s.client.Queues().Extend(r.Context(), r.PathValue("queue"), req.Receipt, by)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ExtendResponse{VisibleUntil: until.UTC()})
}

func (s *Server) release(w http.ResponseWriter, r *http.Request) {
	receipts, ok := decodeRequest(s, w, r, decodeReceipts)
	if !ok {
		return
	}
	var out api.ReleaseResponse
	for _, rc := range receipts {
		err := s.client.Queues().Release(r.Context(), r.PathValue("queue"), rc)
		switch {
		case err == nil:
			out.Released++
		case errors.Is(err, queue.ErrStaleReceipt):
			out.Stale++
		default:
			writeError(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func statsJSON(o *queue.Observation) api.QueueStats {
	out := api.QueueStats{
		Queue: o.Queue.Name, At: o.At, Messages: o.Messages, Due: o.Due, InFlight: o.InFlight,
		DeliveryLagSeconds: o.DeliveryLag().Seconds(),
		Shards:             make([]api.ShardStats, len(o.Shards)),
	}
	for i, v := range o.Shards {
		out.Shards[i] = api.ShardStats{
			Shard: v.Shard, Priority: v.Priority, Behind: v.Behind, Window: v.Window,
			Messages: v.Messages, Due: v.Due, InFlight: v.InFlight,
			Holder: v.Holder, LeaseAgeSeconds: v.LeaseAge.Seconds(),
		}
		if !v.Floor.IsZero() {
			f := v.Floor
			out.Shards[i].Floor = &f
		}
	}
	return out
}

func (s *Server) queueStats(w http.ResponseWriter, r *http.Request) {
	o, err := s.client.Queues().Observe(r.Context(), r.PathValue("queue"))
	writeResult(w, r, o, err, statsJSON)
}

func (s *Server) deadLetters(w http.ResponseWriter, r *http.Request) {
	limit, err := limitParam(r, 100, queue.MaxBatch)
	if err != nil {
		writeError(w, r, err)
		return
	}
	list, err := s.client.Queues().DeadLetters(r.Context(), r.PathValue("queue"), limit)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := api.DeadLetterList{DeadLetters: make([]api.DeadLetter, len(list))}
	for i, l := range list {
		out.DeadLetters[i] = api.DeadLetter{
			ID: l.ID.String(), Due: l.Due, EnqueuedAt: l.EnqueuedAt,
			Deliveries: l.Deliveries, LastError: l.LastError, DiedAt: l.DiedAt,
			Attributes: l.Attributes, Priority: l.Priority,
		}
		out.DeadLetters[i].Body, out.DeadLetters[i].BodyBase64 = textOrBase64(l.Body)
	}
	writeJSON(w, http.StatusOK, out)
}

// decodeRequeue accepts an empty body as "every dead letter".
func decodeRequeue(data []byte) ([]queue.ID, error) {
	var req api.RequeueRequest
	if len(strings.TrimSpace(string(data))) > 0 {
		if err := decodeStrict(data, &req, ""); err != nil {
			return nil, err
		}
	}
	return parseIDs(req.IDs)
}

// decodeDeleteDead wants at least one id: deleting every dead letter is a
// purge, which says so.
func decodeDeleteDead(data []byte) ([]queue.ID, error) {
	var req api.DeleteDeadRequest
	if err := decodeStrict(data, &req, ""); err != nil {
		return nil, err
	}
	if len(req.IDs) == 0 {
		return nil, errorf(api.CodeInvalidArgument, "ids: give 1 to %d dead letter ids (POST .../purge with dead_letters deletes them all)", queue.MaxBatch)
	}
	return parseIDs(req.IDs)
}

// parseIDs reads the "ids" field of a dead-letter request.
func parseIDs(list []string) ([]queue.ID, error) {
	if len(list) > queue.MaxBatch {
		return nil, errorf(api.CodeInvalidArgument, "ids: %d ids, the limit is %d", len(list), queue.MaxBatch)
	}
	ids := make([]queue.ID, len(list))
	for i, s := range list {
		id, err := queue.ParseID(s)
		if err != nil {
			return nil, errorf(api.CodeInvalidArgument, "ids[%d]: %v", i, strings.TrimPrefix(err.Error(), queue.ErrInvalid.Error()+": "))
		}
		ids[i] = id
	}
	return ids, nil
}

func decodePurge(data []byte) (api.PurgeRequest, error) {
	var req api.PurgeRequest
	if len(strings.TrimSpace(string(data))) > 0 {
		if err := decodeStrict(data, &req, ""); err != nil {
			return req, err
		}
	}
	return req, nil
}

func (s *Server) purge(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeRequest(s, w, r, decodePurge)
	if !ok {
		return
	}
	res, err := s.client.Queues().Purge(r.Context(), r.PathValue("queue"), req.DeadLetters)
	writeResult(w, r, res, err, func(res queue.PurgeResult) api.PurgeResponse {
		return api.PurgeResponse{Messages: res.Messages, DeadLetters: res.DeadLetters}
	})
}

func (s *Server) deleteQueue(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("queue")
	qs := s.client.Queues()
	res, err := qs.Delete(r.Context(), name)
	writeResult(w, r, res, err, func(res queue.DeleteResult) api.QueueDeleteResponse {
		out := api.QueueDeleteResponse{
			Queue: name, DeletedAt: res.DeletedAt, RecreatableAt: res.DeletedAt.Add(qs.RecreateWait()),
			Messages: res.Messages, DeadLetters: res.DeadLetters,
		}
		if res.Leftover != nil {
			out.Leftover = res.Leftover.Error()
		}
		return out
	})
}

func (s *Server) requeue(w http.ResponseWriter, r *http.Request) {
	ids, ok := decodeRequest(s, w, r, decodeRequeue)
	if !ok {
		return
	}
	done, err := s.client.Queues().Requeue(r.Context(), r.PathValue("queue"), ids)
	writeResult(w, r, done, err, func(done []queue.ID) api.RequeueResponse {
		return api.RequeueResponse{Requeued: jsonEach(done, queue.ID.String)}
	})
}

func (s *Server) deleteDead(w http.ResponseWriter, r *http.Request) {
	ids, ok := decodeRequest(s, w, r, decodeDeleteDead)
	if !ok {
		return
	}
	done, err := s.client.Queues().DeleteDead(r.Context(), r.PathValue("queue"), ids)
	writeResult(w, r, done, err, func(done []queue.ID) api.DeleteDeadResponse {
		return api.DeleteDeadResponse{Deleted: jsonEach(done, queue.ID.String)}
	})
}

// ---- metrics ---------------------------------------------------------------

// queueCollector exports the observer's numbers per queue (and the age of
// each held lease), and the engine's running totals. Counting a shard reads
// it whole, so observations are cached for observeEvery and made with a
// time limit: scrapes stay cheap, and a slow store makes the numbers stale
// rather than the scrape fail.
type queueCollector struct {
	svc *queue.Service

	mu      sync.Mutex
	at      time.Time
	cached  []*queue.Observation
	desc    map[string]*prometheus.Desc
	totals  []queueTotal
	timeout time.Duration
}

type queueTotal struct {
	desc *prometheus.Desc
	get  func(*queue.Stats) int64
}

const observeEvery = 10 * time.Second

func newQueueCollector(svc *queue.Service) *queueCollector {
	// One series per queue, not per shard: a queue may have thousands of
	// shards, and per-shard numbers are in GET /v1/queues/{queue}/stats.
	// Lease ages are per shard, but only held shards have one.
	queueLabels := []string{"queue"}
	c := &queueCollector{
		svc:     svc,
		timeout: 5 * time.Second,
		desc: map[string]*prometheus.Desc{
			"messages":  prometheus.NewDesc("abacus_queue_messages", "Messages stored in a queue.", queueLabels, nil),
			"due":       prometheus.NewDesc("abacus_queue_due_messages", "Messages of a queue whose due time has passed (including those in flight).", queueLabels, nil),
			"in_flight": prometheus.NewDesc("abacus_queue_in_flight_messages", "Due messages of a queue hidden by a delivery in progress.", queueLabels, nil),
			"lag":       prometheus.NewDesc("abacus_queue_delivery_lag_seconds", "How long a queue's longest-waiting due message (not in flight) has waited for delivery (since due, or since its last delivery's visibility ended); 0 when none waits.", queueLabels, nil),
			"lease":     prometheus.NewDesc("abacus_queue_lease_age_seconds", "How long the current holder has held a queue shard's lease (absent when free).", []string{"queue", "shard", "holder"}, nil),
		},
	}
	total := func(name, help string, get func(*queue.Stats) int64) {
		c.totals = append(c.totals, queueTotal{prometheus.NewDesc(name, help, nil, nil), get})
	}
	total("abacus_queue_put_total", "Messages put by this process.", func(s *queue.Stats) int64 { return s.Put.Load() })
	total("abacus_queue_delivered_total", "Deliveries handed out by this process.", func(s *queue.Stats) int64 { return s.Delivered.Load() })
	total("abacus_queue_acked_total", "Deliveries acknowledged through this process.", func(s *queue.Stats) int64 { return s.Acked.Load() })
	total("abacus_queue_failed_total", "Deliveries reported failed through this process.", func(s *queue.Stats) int64 { return s.Failed.Load() })
	total("abacus_queue_released_total", "Deliveries given back unhandled through this process.", func(s *queue.Stats) int64 { return s.Released.Load() })
	total("abacus_queue_extended_total", "Visibility extensions of deliveries in hand, through this process.", func(s *queue.Stats) int64 { return s.Extended.Load() })
	total("abacus_queue_deduplicated_total", "Puts answered as duplicates of an earlier put with the same dedup id (nothing new stored), through this process.", func(s *queue.Stats) int64 { return s.Deduplicated.Load() })
	total("abacus_queue_dead_lettered_total", "Messages moved to the dead letters by this process.", func(s *queue.Stats) int64 { return s.DeadLettered.Load() })
	total("abacus_queue_requeued_total", "Dead letters put back by this process.", func(s *queue.Stats) int64 { return s.Requeued.Load() })
	total("abacus_queue_leases_total", "Shard leases taken by this process.", func(s *queue.Stats) int64 { return s.Leases.Load() })
	total("abacus_queue_leases_lost_total", "Shard leases this process found taken over when renewing.", func(s *queue.Stats) int64 { return s.LeasesLost.Load() })
	return c
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.desc {
		ch <- d
	}
	for _, t := range c.totals {
		ch <- t.desc
	}
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.svc.Stats()
	for _, t := range c.totals {
		ch <- prometheus.MustNewConstMetric(t.desc, prometheus.CounterValue, float64(t.get(st)))
	}
	for _, o := range c.observations() {
		ch <- prometheus.MustNewConstMetric(c.desc["messages"], prometheus.GaugeValue, float64(o.Messages), o.Queue.Name)
		ch <- prometheus.MustNewConstMetric(c.desc["due"], prometheus.GaugeValue, float64(o.Due), o.Queue.Name)
		ch <- prometheus.MustNewConstMetric(c.desc["in_flight"], prometheus.GaugeValue, float64(o.InFlight), o.Queue.Name)
		ch <- prometheus.MustNewConstMetric(c.desc["lag"], prometheus.GaugeValue, o.DeliveryLag().Seconds(), o.Queue.Name)
		for _, v := range o.Shards {
			if v.Holder != "" {
				ch <- prometheus.MustNewConstMetric(c.desc["lease"], prometheus.GaugeValue, v.LeaseAge.Seconds(), o.Queue.Name, strconv.Itoa(v.Shard), v.Holder)
			}
		}
	}
}

// observations returns the cached observations, refreshing them when
// older than observeEvery. A queue that cannot be observed in time keeps
// its last numbers.
func (c *queueCollector) observations() []*queue.Observation {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < observeEvery {
		return c.cached
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	list, err := c.svc.List(ctx)
	if err != nil {
		return c.cached
	}
	old := map[string]*queue.Observation{}
	for _, o := range c.cached {
		old[o.Queue.Name] = o
	}
	fresh := make([]*queue.Observation, 0, len(list))
	for _, q := range list {
		o, err := c.svc.Observe(ctx, q.Name)
		if err != nil {
			o = old[q.Name]
		}
		if o != nil {
			fresh = append(fresh, o)
		}
	}
	c.cached, c.at = fresh, time.Now()
	return c.cached
}
