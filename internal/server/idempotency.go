package server

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/abacusdb/abacus/api"
)

// The Idempotency-Key header (IETF httpapi draft) is how HTTP clients that
// know nothing of Abacus mark a request as a retry of an earlier one.
// Where the API has a request id (counter updates and clears, ledger
// credits, debits, updates and transfers) the header is that request id: the same
// key sent again is the same request, recognised as each model says
// (docs/guarantees.md). Elsewhere it is refused rather than ignored, since
// ignoring it would apply a retry twice while the caller believes it safe.

// idempotencyKeyHeader is the header's name.
const idempotencyKeyHeader = "Idempotency-Key"

// refuseIdempotencyKey answers a request that carries the header on a
// path that has no request id with a 400; the routes that have one are
// registered with handleRequest (server.go).
func refuseIdempotencyKey(path string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if len(r.Header.Values(idempotencyKeyHeader)) > 0 {
			writeError(w, r, errorf(api.CodeInvalidArgument,
				"%s is not taken on %s: it sets the request id of counter updates and clears and of ledger credits, debits, updates and transfers (a batch gives each update its own request_id)", idempotencyKeyHeader, path))
			return
		}
		next(w, r)
	}
}

// idempotencyKey returns the request id the header gives ("" when absent).
// The draft makes the value a structured-field string ("…", quoted); a
// bare token, as many clients send, is taken as it is.
func idempotencyKey(r *http.Request) (string, error) {
	values := r.Header.Values(idempotencyKeyHeader)
	switch {
	case len(values) == 0:
		return "", nil
	case len(values) > 1:
		return "", errorf(api.CodeInvalidArgument, "%s is sent %d times; send it once", idempotencyKeyHeader, len(values))
	}
	key := strings.TrimSpace(values[0])
	if strings.HasPrefix(key, `"`) {
		unquoted, err := strconv.Unquote(key)
		if err != nil || strings.ContainsAny(key, "\t\n") {
			return "", errorf(api.CodeInvalidArgument, "%s %s is not a quoted string", idempotencyKeyHeader, key)
		}
		key = unquoted
	}
	if key == "" {
		return "", errorf(api.CodeInvalidArgument, "%s is empty; leave it out and the server makes a request id", idempotencyKeyHeader)
	}
	return key, nil
}
