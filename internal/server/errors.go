package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/abacusdb/abacus"
	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/outcome"
)

// errorCode maps an error from the library (or a handler) to its wire code:
// the one place where errors become codes. Order matters: an
// unknown-outcome error wraps the context error that caused it, and the
// outcome is what the caller needs to know; the queue's refusals come
// first, as they always have.
func errorCode(err error) (code, msg string) {
	var he *httpError
	if errors.As(err, &he) {
		return he.code, he.msg
	}
	msg = err.Error()
	switch {
	case errors.Is(err, abacus.ErrQueueNotFound):
		return api.CodeQueueNotFound, msg
	case errors.Is(err, abacus.ErrQueueExists):
		return api.CodeQueueExists, msg
	case errors.Is(err, abacus.ErrStaleReceipt):
		return api.CodeStaleReceipt, msg
	case errors.Is(err, abacus.ErrDedupConflict):
		return api.CodeDedupConflict, msg
	case errors.Is(err, abacus.ErrMessageTooLarge):
		return api.CodeBodyTooLarge, msg
	case errors.Is(err, abacus.ErrConsumerStopped):
		return api.CodeUnavailable, msg
	case errors.Is(err, abacus.ErrBelowFloor):
		return api.CodeBelowFloor, msg
	case errors.Is(err, abacus.ErrRightsHeld):
		return api.CodeRightsHeld, msg
	case errors.Is(err, abacus.ErrUnknownOutcome), errors.Is(err, driver.ErrUnknownOutcome):
		return api.CodeUnknownOutcome, msg
	case errors.Is(err, abacus.ErrNotApplied):
		return api.CodeNotApplied, msg
	case errors.Is(err, abacus.ErrRequestConflict):
		return api.CodeRequestConflict, msg
	case errors.Is(err, abacus.ErrVersionConflict):
		return api.CodeVersionConflict, msg
	case errors.Is(err, abacus.ErrTooLate):
		return api.CodeTooLate, msg
	case errors.Is(err, abacus.ErrWrongModel):
		return api.CodeWrongModel, msg
	case errors.Is(err, abacus.ErrWrongType):
		return api.CodeWrongType, msg
	case errors.Is(err, abacus.ErrOverflow):
		return api.CodeOverflow, msg
	case errors.Is(err, abacus.ErrNamespaceNotFound):
		return api.CodeNamespaceNotFound, msg
	case errors.Is(err, abacus.ErrNamespaceExists):
		return api.CodeNamespaceExists, msg
	case errors.Is(err, outcome.ErrKeyNotFound):
		return api.CodeKeyNotFound, msg
	case errors.Is(err, abacus.ErrInvalid):
		return api.CodeInvalidArgument, msg
	case errors.Is(err, abacus.ErrUnavailable), errors.Is(err, driver.ErrClosed),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		// Reads and namespace lookups that time out or find the store
		// closed (we are shutting down) changed nothing.
		return api.CodeUnavailable, msg
	}
	return api.CodeInternal, msg
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	// The client has already got the status; a failed write of the body
	// means it went away and there is no one left to tell.
	_ = enc.Encode(v)
}

// writeResult answers err when there is one, else 200 with toJSON(v): for
// the handlers that read one thing and show it.
func writeResult[V, J any](w http.ResponseWriter, r *http.Request, v V, err error, toJSON func(V) J) {
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toJSON(v))
}

// jsonEach converts every element of list for an answer. The result is
// never nil, so an empty list goes out as [] rather than null.
func jsonEach[S, J any](list []S, toJSON func(S) J) []J {
	out := make([]J, len(list))
	for i, v := range list {
		out[i] = toJSON(v)
	}
	return out
}

func writeError(w http.ResponseWriter, r *http.Request, err error) {
	code, msg := errorCode(err)
	if info := requestInfoFrom(r); info != nil {
		info.err = err
	}
	writeJSON(w, api.Status(code), api.Error{Code: code, Message: msg})
}
