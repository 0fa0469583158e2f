package server

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/abacusdb/abacus/api"
)

// Each target checks the decoder's two promises: it never panics and only
// fails with a wire error, and whatever it accepts survives a round trip
// through the encoder unchanged (so the server acts on what the caller meant).

func checkRejection(t *testing.T, err error) {
	t.Helper()
	var he *httpError
	if !errors.As(err, &he) {
		t.Fatalf("decoder error %v (%T) is not a wire error", err, err)
	}
	if he.code != api.CodeInvalidJSON && he.code != api.CodeInvalidArgument {
		t.Fatalf("decoder error has code %q", he.code)
	}
	if he.msg == "" {
		t.Fatal("decoder error has no message")
	}
}

func roundTrip[T any](t *testing.T, v T, decode func([]byte) (T, error)) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %+v: %v", v, err)
	}
	again, err := decode(b)
	if err != nil {
		t.Fatalf("re-encoded %s is refused: %v", b, err)
	}
	if !reflect.DeepEqual(again, v) {
		t.Fatalf("round trip changed the value:\n got %#v\nwant %#v", again, v)
	}
}

// fuzzDecode fuzzes decode from the seeds: every body must be either
// refused with a wire error or decoded into a value that passes accepted (given the body too).
func fuzzDecode[T any](f *testing.F, seeds []string, decode func([]byte) (T, error), accepted func(t *testing.T, body []byte, v T)) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		v, err := decode(body)
		if err != nil {
			checkRejection(t, err)
			return
		}
		accepted(t, body, v)
	})
}

// roundTripping is the accepted check of a decoder with no checks of its
// own: the value survives a round trip.
func roundTripping[T any](decode func([]byte) (T, error)) func(*testing.T, []byte, T) {
	return func(t *testing.T, _ []byte, v T) { roundTrip(t, v, decode) }
}

func FuzzDecodeUpdate(f *testing.F) {
	fuzzDecode(f, []string{
		`{"delta":1}`, `{"delta":-9223372036854775808,"request_id":"r"}`, `{"item":"x"}`, `{}`,
		`{"delta":9223372036854775808}`, `{"delta":1.5}`, `{"delta":"1"}`, `{"delta":1}{}`,
		`{"Delta":1}`, `{"delta":null}`, "{\"item\":\"\xff\"}", `{"item":"\ud800"}`, ``, `null`, ` {"delta" : 2 } `,
		`{"delta":1,"time":"2026-11-22T09:30:00+01:00","return_value":true}`, `{"time":"0000-01-01T00:00:00Z"}`,
		`{"time":"9999-12-31T23:59:59-01:00"}`, `{"time":"2026-11-22"}`, `{"time":null,"return_value":false}`,
	}, decodeUpdate, roundTripping(decodeUpdate))
}

func FuzzDecodeBatch(f *testing.F) {
	fuzzDecode(f, []string{
		`{"updates":[{"counter":"c","delta":1},{"namespace":"n","counter":"d","item":"x","request_id":"r"}]}`,
		`{"updates":[]}`, `{}`, `{"updates":null}`, `{"updates":[null]}`, `{"updates":[{"counter":1}]}`,
		`{"updates":[{"counter":"c","delta":1e400}]}`, "{\"updates\":[{\"namespace\":\"\xc3\",\"counter\":\"c\"}]}",
		`{"updates":[{"counter":"c"}],"updates":[]}`, `{"updates":[{"counter":"c","extra":true}]}`,
	}, decodeBatch, func(t *testing.T, _ []byte, v api.BatchRequest) {
		if len(v.Updates) > api.MaxBatchItems {
			t.Fatalf("accepted %d updates", len(v.Updates))
		}
		roundTrip(t, v, decodeBatch)
	})
}

func FuzzDecodeNamespaceCreate(f *testing.F) {
	fuzzDecode(f, []string{
		`{"name":"n"}`, `{"name":"n","model":"sharded","type":"max","read_consistency":"QUORUM","write_consistency":"one"}`,
		`{"name":5}`, `{"name":"n","name":"m"}`, `{"name":"\u00e9"}`, `{"name":"a\u0000b"}`, `[]`, `{"name":"n"} x`,
	}, decodeNamespaceCreate, roundTripping(decodeNamespaceCreate))
}

func TestValidText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{`{"a":"plain"}`, true},
		{`{"a":"\u00e9\u2713"}`, true},
		{`{"a":"\ud83d\ude00"}`, true}, // a surrogate pair: 😀
		{`{"a":"\\ud800"}`, true},      // an escaped backslash, then text
		{`{"a":"\ud800"}`, false},
		{`{"a":"\ud800x"}`, false},
		{`{"a":"\ud800\u0041"}`, false},
		{`{"a":"\udc00"}`, false},
		{`{"a":"\ud83d"}`, false},
		{"{\"a\":\"\xff\"}", false},
		{`{"\ud800":1}`, false},
	} {
		if got := validText([]byte(tc.in)); got != tc.want {
			t.Errorf("validText(%s) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
