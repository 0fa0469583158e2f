package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/abacusdb/abacus/api"
)

// httpError is an error that already knows its wire code; handlers return it
// and writeError sends it unchanged.
type httpError struct {
	code string
	msg  string
}

func (e *httpError) Error() string { return e.code + ": " + e.msg }

func errorf(code, format string, args ...any) *httpError {
	return &httpError{code: code, msg: fmt.Sprintf(format, args...)}
}

// readBody enforces the media type and size limit and returns the whole body.
// Reading everything first (instead of streaming into the decoder) is what
// lets the decoders reject trailing data and locate invalid UTF-8.
//
// A body must come with Content-Type application/json. A missing type is
// refused too: a web page can send a body without one (or with
// text/plain) without the browser asking the server first, and a JSON
// body sent that way is a cross-site write. An empty body needs no type.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	ct := r.Header.Get("Content-Type")
	if ct != "" {
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return nil, errorf(api.CodeUnsupportedMediaType, "Content-Type %q is not supported; send application/json", ct)
		}
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
			return nil, errorf(api.CodeUnsupportedMediaType, "charset %q is not supported; JSON bodies must be UTF-8", cs)
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errorf(api.CodeBodyTooLarge, "request body exceeds the limit of %d bytes", mbe.Limit)
		}
		return nil, errorf(api.CodeInvalidJSON, "reading the request body: %v", err)
	}
	if ct == "" && len(bytes.TrimLeft(body, " \t\r\n")) > 0 {
		return nil, errorf(api.CodeUnsupportedMediaType, "the request has a body but no Content-Type; send it as application/json (curl: --json, or -H 'Content-Type: application/json')")
	}
	return body, nil
}

// decodeStrict decodes one JSON object from data into v: unknown fields,
// trailing data, non-objects and numbers that do not fit are errors. where
// names the object in messages: "" for the whole body, "updates[3]" for a
// batch item.
func decodeStrict(data []byte, v any, where string) error {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		if len(data) > 0 {
			return errorf(api.CodeInvalidJSON, "%sis only whitespace; want a JSON object", orBody(where))
		}
		return errorf(api.CodeInvalidJSON, "%sis empty; want a JSON object", orBody(where))
	}
	if trimmed[0] != '{' {
		// Checked up front because json.Decoder accepts null for a struct,
		// which would make an empty update look deliberate.
		return errorf(api.CodeInvalidJSON, "%smust be a JSON object", orBody(where))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, where)
	}
	if rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return errorf(api.CodeInvalidJSON, "%shas trailing data after the JSON object (at byte %d)", orBody(where), len(data)-len(rest))
	}
	if path, twice, found := memberProblem(data); found {
		if twice {
			return errorf(api.CodeInvalidJSON, "field %q appears more than once (names match ignoring case, as fields do); send each field once", joinPath(where, path))
		}
		return errorf(api.CodeInvalidArgument, "field %q: an empty request id is not allowed; leave the field out and the server makes one", joinPath(where, path))
	}
	if bytes.Contains(data, []byte("null")) {
		// encoding/json takes null as "leave the field alone", which would
		// turn {"value":null} into a deliberate-looking zero. No field of
		// the API is nullable; an absent field takes its default.
		if path := nullPath(data); path != "" {
			return errorf(api.CodeInvalidArgument, "field %q: null is not allowed; leave the field out to take its default", joinPath(where, path))
		}
	}
	if !validText(data) {
		// encoding/json would have replaced the bad bytes (or an unpaired
		// \uD800-style escape) with U+FFFD, so a name would be stored under
		// a different name than the caller sent. Refuse it and say which
		// field it was.
		if path := joinPath(where, invalidUTF8Path(data)); path != "" {
			return errorf(api.CodeInvalidArgument, "field %q: not valid UTF-8", path)
		}
		return errorf(api.CodeInvalidArgument, "%sis not valid UTF-8", orBody(where))
	}
	return nil
}

func orBody(where string) string {
	if where == "" {
		return "request body "
	}
	return where + " "
}

// joinPath joins JSON path parts: ("updates[2]", "namespace") -> "updates[2].namespace".
func joinPath(parent, child string) string {
	switch {
	case parent == "":
		return child
	case child == "" || child[0] == '[':
		return parent + child
	}
	return parent + "." + child
}

// jsonError turns an encoding/json error into a message that names the field.
func jsonError(err error, where string) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return errorf(api.CodeInvalidJSON, "%sis malformed JSON at byte %d: %s", orBody(where), syn.Offset, strings.TrimPrefix(syn.Error(), "json: "))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errorf(api.CodeInvalidJSON, "%sis malformed JSON: it ends too early", orBody(where))
	case errors.As(err, &typ):
		field := joinPath(where, typ.Field)
		if typ.Field == "" {
			return errorf(api.CodeInvalidJSON, "%smust be a JSON object", orBody(where))
		}
		return errorf(api.CodeInvalidArgument, "field %q: want %s, got %s", field, describeType(typ.Type), typ.Value)
	case errors.As(err, new(*time.ParseError)):
		return errorf(api.CodeInvalidArgument, "%shas a time that is not RFC 3339 (such as 2026-11-22T09:30:00Z): %v", orBody(where), err)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for this case.
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return errorf(api.CodeInvalidJSON, "%shas an unknown field %s", orBody(where), name)
	}
	return errorf(api.CodeInvalidJSON, "%scannot be decoded: %v", orBody(where), err)
}

func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int64:
		return "an integer from -9223372036854775808 to 9223372036854775807"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "an array"
	case reflect.Struct:
		return "an object"
	}
	return t.String()
}

// validText reports whether the raw JSON text decodes to valid Unicode
// without replacement: valid UTF-8 and no unpaired surrogate escapes. It
// assumes data is syntactically valid JSON.
func validText(data []byte) bool {
	if !utf8.Valid(data) {
		return false
	}
	if !bytes.Contains(data, []byte(`\u`)) {
		return true
	}
	inString := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			inString = !inString
		case c == '\\' && inString:
			i++ // skip the escaped byte, so \\ and \" never start anything
			if i >= len(data) || data[i] != 'u' {
				continue
			}
			r := hex4(data, i+1)
			i += 4
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return false // a low surrogate with no high one before it
			case r >= 0xD800 && r <= 0xDBFF:
				if i+6 >= len(data) || data[i+1] != '\\' || data[i+2] != 'u' {
					return false
				}
				if lo := hex4(data, i+3); lo < 0xDC00 || lo > 0xDFFF {
					return false
				}
				i += 6
			}
		}
	}
	return true
}

// hex4 parses the four hex digits at data[i:], or returns -1.
func hex4(data []byte, i int) int {
	if i+4 > len(data) {
		return -1
	}
	v, err := strconv.ParseUint(string(data[i:i+4]), 16, 16)
	if err != nil {
		return -1
	}
	return int(v)
}

// invalidUTF8Path returns the path (like "updates[2].namespace") of the first
// JSON value in data whose raw text fails validText ("" if it is data itself,
// or the bad bytes sit in an object key). It is only called
// on bodies that already decoded, so the structure is known to be sound.
func invalidUTF8Path(data []byte) string {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return ""
	}
	switch trimmed[0] {
	case '{':
		var m map[string]json.RawMessage
		if json.Unmarshal(trimmed, &m) != nil {
			return ""
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !validText(m[k]) {
				return joinPath(k, invalidUTF8Path(m[k]))
			}
		}
	case '[':
		var a []json.RawMessage
		if json.Unmarshal(trimmed, &a) != nil {
			return ""
		}
		for i, v := range a {
			if !validText(v) {
				return joinPath("["+strconv.Itoa(i)+"]", invalidUTF8Path(v))
			}
		}
	}
	return ""
}

// nullPath returns the path of the first null member value inside the JSON
// object data ("" if none). It is only called on bodies that already decoded.
func nullPath(data []byte) string {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return ""
	}
	var walk func(v any) string
	walk = func(v any) string {
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if v[k] == nil {
					return k
				}
				if p := walk(v[k]); p != "" {
					return joinPath(k, p)
				}
			}
		case []any:
			// A null item is left to the item's own decoder, which says
			// what it should have been.
			for i, e := range v {
				if p := walk(e); p != "" {
					return joinPath("["+strconv.Itoa(i)+"]", p)
				}
			}
		}
		return ""
	}
	return walk(v)
}

// refuseEmpty refuses a field of the object data (at where) sent as "":
// it would read as "not given" and take the default (for a put's time,
// "now"; for a consistency level, DEFAULT), and an empty value is a
// mistake — a script's unset variable — not a request for the default.
func refuseEmpty(data []byte, where string, fields ...string) error {
	for _, f := range fields {
		if emptyString(data, f) {
			return errorf(api.CodeInvalidArgument, "field %q is empty; leave it out for the default", joinPath(where, f))
		}
	}
	return nil
}

// emptyString reports whether the JSON object data has the field name
// (matched as member matches it) with the value "".
func emptyString(data []byte, name string) bool {
	if !bytes.Contains(data, []byte(`""`)) {
		return false // the common case, without a parse
	}
	v, ok := member(data, name)
	return ok && string(v) == `""`
}

// present reports whether the JSON object data has the field name.
// Decoders use it where an explicit value must be checked against a
// minimum that the default, taken when the field is absent, would hide.
func present(data []byte, name string) bool {
	_, ok := member(data, name)
	return ok
}

// member returns the raw value of the field name of the JSON object data,
// matched as encoding/json matches fields, ignoring case.
func member(data []byte, name string) (json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return nil, false
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

func decodeUpdate(data []byte) (api.UpdateRequest, error) {
	var req api.UpdateRequest
	if err := decodeStrict(data, &req, ""); err != nil {
		return api.UpdateRequest{}, err
	}
	if err := normalizeTime(&req.Time, "time"); err != nil {
		return api.UpdateRequest{}, err
	}
	return req, nil
}

// normalizeTime keeps event times in UTC, the form they are echoed and
// stored in, and refuses years a JSON timestamp cannot carry back.
func normalizeTime(t **time.Time, field string) error {
	if *t == nil {
		return nil
	}
	u := (*t).UTC()
	if u.Year() < 1 || u.Year() > 9999 {
		return errorf(api.CodeInvalidArgument, "field %q: %s is outside the years 1 to 9999", field, (*t).Format(time.RFC3339Nano))
	}
	*t = &u
	return nil
}

func decodeNamespaceCreate(data []byte) (api.CreateNamespaceRequest, error) {
	var req api.CreateNamespaceRequest
	if err := decodeStrict(data, &req, ""); err != nil {
		return api.CreateNamespaceRequest{}, err
	}
	// "" would read as the default, which no enum of the contract holds.
	if err := refuseEmpty(data, "", "read_consistency", "write_consistency", "model", "type"); err != nil {
		return api.CreateNamespaceRequest{}, err
	}
	if ledger, ok := member(data, "ledger"); ok {
		if err := refuseEmpty(ledger, "ledger", "mode"); err != nil {
			return api.CreateNamespaceRequest{}, err
		}
	}
	return req, nil
}

// decodeOptional decodes a request whose fields are all optional: no body
// is the zero request. A body of only whitespace is not: it is not JSON,
// and taking it for "no body" would accept what the contract refuses.
func decodeOptional[T any](data []byte) (T, error) {
	var req T
	if len(data) == 0 {
		return req, nil
	}
	if err := decodeStrict(data, &req, ""); err != nil {
		var zero T
		return zero, err
	}
	return req, nil
}

// decodeGCAll accepts an empty body as "every namespace".
func decodeGCAll(data []byte) (api.GCAllRequest, error) {
	return decodeOptional[api.GCAllRequest](data)
}

// decodeBatch decodes the envelope first and each item on its own, so every
// message can name the index of the offending item.
func decodeBatch(data []byte) (api.BatchRequest, error) {
	updates, err := decodeUpdates[api.BatchUpdate](data)
	if err != nil {
		return api.BatchRequest{}, err
	}
	for i := range updates {
		if err := normalizeTime(&updates[i].Time, fmt.Sprintf("updates[%d].time", i)); err != nil {
			return api.BatchRequest{}, err
		}
	}
	return api.BatchRequest{Updates: updates}, nil
}

// decodeRequest reads a request's body and decodes it with decode. On
// failure it answers the request with the error and returns false.
func decodeRequest[T any](s *Server, w http.ResponseWriter, r *http.Request, decode func([]byte) (T, error)) (T, bool) {
	body, err := readBody(w, r, s.cfg.MaxBodyBytes)
	var req T
	if err == nil {
		req, err = decode(body)
	}
	if err != nil {
		writeError(w, r, err)
		return req, false
	}
	return req, true
}
