package server

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
)

func eventsOptionsJSON(o *abacus.EventsOptions) *api.EventsOptions {
	if o == nil {
		return nil
	}
	return &api.EventsOptions{
		BucketSeconds:       int64(o.Bucket / time.Second),
		AcceptWindowSeconds: int64(o.AcceptWindow / time.Second),
		SealSeconds:         int64(o.Seal / time.Second),
		RollupDelaySeconds:  int64(o.RollupDelay / time.Second),
		FutureLimitSeconds:  int64(o.FutureLimit / time.Second),
	}
}

// eventsOptionsFromJSON converts a create request's options. Values the
// library would refuse are left for it to refuse with its own message;
// only numbers too large to be a time.Duration are refused here.
func eventsOptionsFromJSON(o *api.EventsOptions) (*abacus.EventsOptions, error) {
	if o == nil {
		return nil, nil
	}
	const maxSeconds = int64(1<<63-1) / int64(time.Second)
	out := &abacus.EventsOptions{}
	for _, f := range []struct {
		name string
		secs int64
		dst  *time.Duration
	}{
		{"events.bucket_seconds", o.BucketSeconds, &out.Bucket},
		{"events.accept_window_seconds", o.AcceptWindowSeconds, &out.AcceptWindow},
		{"events.seal_seconds", o.SealSeconds, &out.Seal},
		{"events.rollup_delay_seconds", o.RollupDelaySeconds, &out.RollupDelay},
		{"events.future_limit_seconds", o.FutureLimitSeconds, &out.FutureLimit},
	} {
		if f.secs < 0 || f.secs > maxSeconds {
			return nil, errorf(api.CodeInvalidArgument, "field %q: %d is out of range", f.name, f.secs)
		}
		*f.dst = time.Duration(f.secs) * time.Second
	}
	return out, nil
}

// decodeSet requires both fields: a missing value decoded as 0 would
// overwrite the actor's part with zero.
func decodeSet(data []byte) (api.SetRequest, error) {
	var req struct {
		Version *int64 `json:"version"`
		Value   *int64 `json:"value"`
	}
	if err := decodeStrict(data, &req, ""); err != nil {
		return api.SetRequest{}, err
	}
	switch {
	case req.Version == nil:
		return api.SetRequest{}, errorf(api.CodeInvalidArgument, "field \"version\" is required")
	case req.Value == nil:
		return api.SetRequest{}, errorf(api.CodeInvalidArgument, "field \"value\" is required: the actor's absolute value (0 must be sent as 0)")
	}
	return api.SetRequest{Version: *req.Version, Value: *req.Value}, nil
}

// decodeClear accepts an empty body as a clear at the server's time.
func decodeClear(data []byte) (api.ClearRequest, error) {
	return decodeOptional[api.ClearRequest](data)
}

func (s *Server) setActor(w http.ResponseWriter, r *http.Request) {
	ns, counter, actor := r.PathValue("ns"), r.PathValue("counter"), r.PathValue("actor")
	req, ok := decodeRequest(s, w, r, decodeSet)
	if !ok {
		return
	}
	logAttrs(r, slog.String("actor", actor), slog.Int64("version", req.Version))
	err := s.client.Set(r.Context(), abacus.ActorSet{
		Namespace: ns, Counter: counter, Actor: actor, Version: req.Version, Value: req.Value,
	})
	s.countUpdate(err)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.SetResponse{
		Namespace: nsOrDefault(ns), Counter: counter, Actor: actor, Version: req.Version, Acknowledged: true,
	})
}

func (s *Server) clear(w http.ResponseWriter, r *http.Request) {
	ns, counter := r.PathValue("ns"), r.PathValue("counter")
	req, ok := decodeRequest(s, w, r, decodeClear)
	if !ok {
		return
	}
	var err error
	if req.RequestID, err = announceRequestID(w, r, req.RequestID); err != nil {
		writeError(w, r, err)
		return
	}
	at, err := s.client.ClearAt(r.Context(), ns, counter, req.RequestID)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ClearResponse{
		Namespace: nsOrDefault(ns), Counter: counter, RequestID: req.RequestID, Acknowledged: true, EffectiveAt: at,
	})
}
