package server

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/internal/apikey"
)

// The ledger batch, POST /v1/ledger-updates: the ledger counterpart of the
// counter batch (handlers.go), with the same all-or-nothing check.

func (s *Server) ledgerBatch(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeRequest(s, w, r, decodeLedgerBatch)
	if !ok {
		return
	}
	updates := make([]abacus.LedgerUpdate, len(req.Updates))
	for i, u := range req.Updates {
		if u.RequestID == "" {
			// Made here, as for every other update, so that all ids the
			// server makes look alike.
			u.RequestID = newRequestID()
		}
		updates[i] = abacus.LedgerUpdate{Namespace: u.Namespace, Ledger: u.Ledger, Amount: u.Amount, RequestID: u.RequestID}
	}
	// All or nothing for caller mistakes, as in the counter batch: a client
	// that fixes its request and sends it again must not have the updates
	// that happened to be fine applied twice (those without a request id
	// would be).
	err := firstInvalid(len(updates), func(i int) error {
		u := updates[i]
		if ns := cmp.Or(u.Namespace, api.DefaultLedgerNamespace); !s.allowed(r, apikey.KindNamespace, ns, apikey.Write) {
			return forbidden(r, apikey.KindNamespace, ns, apikey.Write)
		}
		return s.client.CheckLedgerUpdate(r.Context(), u)
	})
	if err != nil {
		writeError(w, r, err)
		return
	}

	// One call, not one goroutine per update: UpdateLedgers queues the
	// updates of one ledger together, so they share read-merge-writes.
	out := s.client.UpdateLedgers(r.Context(), updates)
	res := api.LedgerBatchResponse{Results: make([]api.LedgerBatchResult, len(out))}
	for i, o := range out {
		s.countLedgerUpdate(o.Err == nil && o.Replayed, o.Err)
		res.Results[i] = api.LedgerBatchResult{
			Namespace: cmp.Or(o.Namespace, api.DefaultLedgerNamespace), Ledger: o.Ledger, RequestID: o.RequestID,
			Applied: o.Err == nil && o.Applied, Replayed: o.Err == nil && o.Replayed,
		}
		if o.Err != nil {
			code, msg := errorCode(o.Err)
			res.Results[i].Error = &api.Error{Code: code, Message: msg}
		}
	}
	logAttrs(r, slog.Int("updates", len(updates)))
	writeJSON(w, http.StatusOK, res)
}

// firstInvalid runs check on each of n batch items and returns the first
// failure, its message prefixed with the item's index and followed by how
// many more failed, so one answer tells the caller how much to fix.
func firstInvalid(n int, check func(i int) error) error {
	bad, first := 0, (*httpError)(nil)
	for i := range n {
		if err := check(i); err != nil {
			if bad == 0 {
				code, msg := errorCode(err)
				first = errorf(code, "updates[%d]: %s", i, msg)
			}
			bad++
		}
	}
	if first == nil {
		return nil
	}
	if bad > 1 {
		first.msg += fmt.Sprintf(" (and %d more invalid updates)", bad-1)
	}
	return first
}

// decodeLedgerBatch decodes a ledger batch; see decodeUpdates.
func decodeLedgerBatch(data []byte) (api.LedgerBatchRequest, error) {
	updates, err := decodeUpdates[api.LedgerBatchUpdate](data)
	if err != nil {
		return api.LedgerBatchRequest{}, err
	}
	return api.LedgerBatchRequest{Updates: updates}, nil
}

// decodeUpdates decodes a batch body, {"updates": [...]}, of at most
// api.MaxBatchItems items. It decodes the envelope first and each item on
// its own, as decodeBatch does, so every message can name the index of the
// offending item.
func decodeUpdates[T any](data []byte) ([]T, error) {
	var env struct {
		Updates []json.RawMessage `json:"updates"`
	}
	if err := decodeStrict(data, &env, ""); err != nil {
		return nil, err
	}
	if len(env.Updates) > api.MaxBatchItems {
		return nil, errorf(api.CodeInvalidArgument, "updates: %d items, the limit is %d", len(env.Updates), api.MaxBatchItems)
	}
	updates := make([]T, len(env.Updates))
	for i, raw := range env.Updates {
		if err := decodeStrict(raw, &updates[i], fmt.Sprintf("updates[%d]", i)); err != nil {
			return nil, err
		}
	}
	return updates, nil
}
