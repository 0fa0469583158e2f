package server

import (
	"net/http"
	"time"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/internal/ledger"
)

// Ledger endpoints (the ledger model). Routes are registered in routesMux.

// ledgerOp is what a ledger update endpoint does with its amount.
type ledgerOp int

const (
	opCredit ledgerOp = iota // amount > 0 is credited
	opDebit                  // amount > 0 is debited
	opUpdate                 // amount is signed
)

func (s *Server) ledgerUpdate(op ledgerOp) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ns, name := r.PathValue("ns"), r.PathValue("ledger")
		req, ok := readLedgerRequest(s, w, r, decodeLedgerUpdate, func(req *api.LedgerUpdateRequest) *string { return &req.RequestID })
		if !ok {
			return
		}
		var (
			res *abacus.LedgerResult
			err error
		)
		switch op {
		case opCredit:
			res, err = s.client.Credit(r.Context(), ns, name, req.Amount, req.RequestID)
		case opDebit:
			res, err = s.client.Debit(r.Context(), ns, name, req.Amount, req.RequestID)
		default:
			res, err = s.client.UpdateLedger(r.Context(), abacus.LedgerUpdate{
				Namespace: ns, Ledger: name, Amount: req.Amount, RequestID: req.RequestID,
			})
		}
		s.answerLedgerRequest(w, r, err, func() (bool, any) {
			return res.Replayed, api.LedgerUpdateResponse{
				Namespace: res.Namespace, Ledger: name, RequestID: res.RequestID, Applied: res.Applied, Replayed: res.Replayed,
			}
		})
	}
}

// readLedgerRequest reads a ledger request's body with decode and settles
// its request id (*id(&req): from the body, the Idempotency-Key header or
// a new one); on a mistake it answers, counts it and reports false.
func readLedgerRequest[T any](s *Server, w http.ResponseWriter, r *http.Request, decode func([]byte) (T, error), id func(*T) *string) (T, bool) {
	var req T
	body, err := readBody(w, r, s.cfg.MaxBodyBytes)
	if err == nil {
		req, err = decode(body)
	}
	if err == nil {
		rid := id(&req)
		*rid, err = announceRequestID(w, r, *rid)
	}
	if err != nil {
		s.countLedgerUpdate(false, err)
		writeError(w, r, err)
		return req, false
	}
	return req, true
}

// answerLedgerRequest counts a ledger request's outcome and answers it:
// the error, or the body ok gives, marked as a replay when it says so.
func (s *Server) answerLedgerRequest(w http.ResponseWriter, r *http.Request, err error, ok func() (replayed bool, body any)) {
	if err != nil {
		s.countLedgerUpdate(false, err)
		writeError(w, r, err)
		return
	}
	replayed, body := ok()
	s.countLedgerUpdate(replayed, nil)
	if replayed {
		w.Header().Set(replayedHeader, "true")
	}
	writeJSON(w, http.StatusOK, body)
}

// ledgerTransfer moves an amount from the path's ledger to another.
func (s *Server) ledgerTransfer(w http.ResponseWriter, r *http.Request) {
	ns, from := r.PathValue("ns"), r.PathValue("ledger")
	req, ok := readLedgerRequest(s, w, r, decodeLedgerTransfer, func(req *api.LedgerTransferRequest) *string { return &req.RequestID })
	if !ok {
		return
	}
	res, err := s.client.Transfer(r.Context(), abacus.LedgerTransfer{
		Namespace: ns, From: from, To: req.To, Amount: req.Amount, RequestID: req.RequestID,
	})
	s.answerLedgerRequest(w, r, err, func() (bool, any) {
		return res.Replayed, api.LedgerTransferResponse{
			Namespace: res.Namespace, From: from, To: req.To, RequestID: res.RequestID, Applied: res.Applied, Replayed: res.Replayed,
		}
	})
}

// replayedHeader marks the answer to a recognised retry of a ledger update,
// as payment APIs do for their idempotency keys (Stripe's name): the body
// is the first attempt's answer, and the header tells that nothing was
// written this time to a caller that reads only headers.
const replayedHeader = "Idempotent-Replayed"

func (s *Server) countLedgerUpdate(replayed bool, err error) {
	result := "applied"
	switch {
	case err != nil:
		result, _ = errorCode(err)
	case replayed:
		result = "duplicate"
	}
	s.metrics.ledgerUpdates.WithLabelValues(result).Inc()
}

func ledgerValueJSON(v *abacus.LedgerValue) api.LedgerValue {
	return api.LedgerValue{
		Namespace: v.Namespace, Ledger: v.Ledger, Value: v.Value,
		Credits: v.Credits, Debits: v.Debits, Actors: v.Actors, Folds: v.Folds,
	}
}

func (s *Server) ledgerValue(w http.ResponseWriter, r *http.Request) {
	v, err := s.client.LedgerValue(r.Context(), r.PathValue("ns"), r.PathValue("ledger"))
	writeResult(w, r, v, err, ledgerValueJSON)
}

func (s *Server) ledgerFind(w http.ResponseWriter, r *http.Request) {
	v, err := s.client.FindLedger(r.Context(), r.PathValue("ns"), r.PathValue("ledger"))
	writeResult(w, r, v, err, ledgerValueJSON)
}

// ledgerHistory lists a ledger's entries, newest first, a page at a time.
func (s *Server) ledgerHistory(w http.ResponseWriter, r *http.Request) {
	limit, err := limitParam(r, 100, abacus.MaxLedgerHistoryPage)
	if err != nil {
		writeError(w, r, err)
		return
	}
	h, err := s.client.LedgerHistory(r.Context(), r.PathValue("ns"), r.PathValue("ledger"), r.URL.Query().Get("after"), limit)
	writeResult(w, r, h, err, func(h *abacus.LedgerHistory) api.LedgerHistory {
		out := api.LedgerHistory{Namespace: h.Namespace, Ledger: h.Ledger, Entries: make([]api.LedgerEntry, len(h.Entries)), Next: h.Next}
		for i, e := range h.Entries {
			out.Entries[i] = api.LedgerEntry{RequestID: e.RequestID, Amount: e.Amount, At: e.At, Actor: e.Actor}
		}
		return out
	})
}

func (s *Server) ledgerHasRequest(w http.ResponseWriter, r *http.Request) {
	ns, name, id := r.PathValue("ns"), r.PathValue("ledger"), r.PathValue("request_id")
	known, err := s.client.HasRequestID(r.Context(), ns, name, id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.RequestIDStatus{Namespace: ns, Ledger: name, RequestID: id, Known: known})
}

func ledgerOptionsJSON(o *abacus.LedgerOptions) *api.LedgerOptions {
	if o == nil {
		return nil
	}
	mode := o.WithDefaults().Mode
	// A stored retention of 0 is "no history"; over HTTP that is -1, since
	// 0 in a create request asks for the default.
	retention := int64(o.EntryRetention / time.Second)
	if retention <= 0 {
		retention = -1
	}
	// Likewise a stored actor age of 0: actors never retire.
	age := int64(o.ActorMaxAge / time.Second)
	if age <= 0 {
		age = -1
	}
	j := &api.LedgerOptions{
		HistoryLength: o.HistoryLength, Mode: string(mode), Strict: mode == ledger.ModeExact, RetryCount: o.RetryCount,
		ClaimTTLSeconds: int64(o.ClaimTTL / time.Second), EntryRetentionSeconds: retention,
		ActorMaxAgeSeconds: age,
	}
	if o.Floored {
		j.Floor = &o.Floor
	}
	return j
}

// ledgerOptionsFromJSON converts a create request's options. Out-of-range
// values are left for the library to refuse with its own message; only
// a TTL too large to be a time.Duration is refused here.
func ledgerOptionsFromJSON(o *api.LedgerOptions) (*abacus.LedgerOptions, error) {
	if o == nil {
		return nil, nil
	}
	const maxSeconds = int64(1<<63-1) / int64(time.Second)
	if o.ClaimTTLSeconds < 0 || o.ClaimTTLSeconds > maxSeconds {
		return nil, errorf(api.CodeInvalidArgument, "field \"ledger.claim_ttl_seconds\": %d is outside 0 to %d", o.ClaimTTLSeconds, maxSeconds)
	}
	// The library reads any negative retry count as "none"; the API
	// documents -1 for that and refuses the rest.
	if o.RetryCount < -1 || o.RetryCount > ledger.MaxRetryCount {
		return nil, errorf(api.CodeInvalidArgument, "field \"ledger.retry_count\": %d is outside -1 to %d", o.RetryCount, ledger.MaxRetryCount)
	}
	maxRetention := int64(ledger.MaxEntryRetention / time.Second)
	if o.EntryRetentionSeconds < -1 || o.EntryRetentionSeconds > maxRetention {
		return nil, errorf(api.CodeInvalidArgument, "field \"ledger.entry_retention_seconds\": %d is outside -1 to %d", o.EntryRetentionSeconds, maxRetention)
	}
	maxAge := int64(ledger.MaxActorMaxAge / time.Second)
	if o.ActorMaxAgeSeconds < -1 || o.ActorMaxAgeSeconds > maxAge {
		return nil, errorf(api.CodeInvalidArgument, "field \"ledger.actor_max_age_seconds\": %d is outside -1 to %d", o.ActorMaxAgeSeconds, maxAge)
	}
	if o.HistoryLength < 0 || o.HistoryLength > ledger.MaxHistoryLength {
		return nil, errorf(api.CodeInvalidArgument, "field \"ledger.history_length\": %d is outside 0 to %d", o.HistoryLength, ledger.MaxHistoryLength)
	}
	mode := ledger.Mode(o.Mode)
	switch {
	case o.Mode != "" && o.Mode != api.LedgerModeExact && o.Mode != api.LedgerModeConcurrentRetriesMayDouble:
		return nil, errorf(api.CodeInvalidArgument, "field \"ledger.mode\": %q is neither %q nor %q", o.Mode, api.LedgerModeExact, api.LedgerModeConcurrentRetriesMayDouble)
	case o.Strict && o.Mode == api.LedgerModeConcurrentRetriesMayDouble:
		return nil, errorf(api.CodeInvalidArgument, "field \"ledger.strict\": true contradicts mode %q; leave strict out", o.Mode)
	case o.Strict:
		mode = ledger.ModeExact
	}
	lo := &abacus.LedgerOptions{
		HistoryLength: o.HistoryLength, Mode: mode, RetryCount: o.RetryCount,
		ClaimTTL:       time.Duration(o.ClaimTTLSeconds) * time.Second,
		EntryRetention: time.Duration(o.EntryRetentionSeconds) * time.Second,
		ActorMaxAge:    time.Duration(o.ActorMaxAgeSeconds) * time.Second,
	}
	if o.Floor != nil {
		if *o.Floor > 0 || *o.Floor < ledger.MinFloor {
			return nil, errorf(api.CodeInvalidArgument, "field \"ledger.floor\": %d is outside %d to 0", *o.Floor, int64(ledger.MinFloor))
		}
		lo.Floored, lo.Floor = true, *o.Floor
	}
	return lo, nil
}

func decodeLedgerTransfer(data []byte) (api.LedgerTransferRequest, error) {
	var req api.LedgerTransferRequest
	if err := decodeStrict(data, &req, ""); err != nil {
		return api.LedgerTransferRequest{}, err
	}
	return req, nil
}

func decodeLedgerUpdate(data []byte) (api.LedgerUpdateRequest, error) {
	var req api.LedgerUpdateRequest
	if err := decodeStrict(data, &req, ""); err != nil {
		return api.LedgerUpdateRequest{}, err
	}
	return req, nil
}
