package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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

func TestMemberProblem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body, path string
		twice      bool
	}{
		{`{"delta":1}`, "", false},
		// Members named "": a problem whose path is short or empty is
		// still a problem (the scanner once lost its place here and spun).
		{`{"":1,"":2}`, "", true},
		{`{"a":[{"":1,"":2}]}`, "a[0]", true},
		{`{"a":{"":1,"":2},"a":3}`, "a", true},
		{`{"a":{"":1,"":{"b":2}},"c":3}`, "a", true},
		{`{"":{"x":1,"x":2}}`, "x", true},
		// Folded as encoding/json folds field names: a long s is an s, the
		// Kelvin sign a k.
		{`{"request_id":"a","requeſt_id":"b"}`, "requeſt_id", true},
		{`{"requeſt_id":""}`, "requeſt_id", false},
		{`{"k":1,"K":2}`, "K", true},
		{`{"delta":1,"delta":2}`, "delta", true},
		{`{"delta":1,"Delta":2}`, "Delta", true},
		{`{"d\u0065lta":1,"delta":2}`, "delta", true},
		{`{"request_id":""}`, "request_id", false},
		{`{"request_id" : "" }`, "request_id", false},
		{`{"request_id":"a"}`, "", false},
		{`{"updates":[{"counter":"c"},{"counter":"c","COUNTER":"d"}]}`, "updates[1].COUNTER", true},
		{`{"updates":[{"request_id":""}]}`, "updates[0].request_id", false},
		{`{"a":{"b":[1,[2,{"c":3,"c":4}]]}}`, "a.b[1][1].c", true},
		{`{"a":"x\"y","b":"}","a":1}`, "a", true},
		{` { "a" : [ ] , "b" : { } , "c" : null } `, "", false},
		{`{"k1":1,"k2":1,"k3":1,"k4":1,"k5":1,"k6":1,"k7":1,"k8":1,"k9":1,"k10":1,"k11":1,"k12":1,"k13":1,"k14":1,"k15":1,"k16":1,"k17":1,"k1":2}`, "k1", true},
	} {
		wantFound := tc.path != "" || tc.twice
		path, twice, found := memberProblem([]byte(tc.body))
		if path != tc.path || twice != tc.twice || found != wantFound {
			t.Errorf("memberProblem(%s) = %q, %v, %v; want %q, %v, %v", tc.body, path, twice, found, tc.path, tc.twice, wantFound)
		}
		if opath, otwice, ofound := memberProblemByTokens([]byte(tc.body)); opath != path || otwice != twice || ofound != found {
			t.Errorf("%s: the token walk says %q, %v, %v; the scanner %q, %v, %v", tc.body, opath, otwice, ofound, path, twice, found)
		}
	}
}

// FuzzMemberProblem holds the scanner to the token walk on every body that
// decodes, which is all memberProblem is ever given.
func FuzzMemberProblem(f *testing.F) {
	for _, seed := range []string{
		`{"delta":1,"request_id":"r"}`, `{"delta":1,"DELTA":2}`, `{"request_id":""}`,
		`{"updates":[{"counter":"c","delta":1},{"counter":"d","Counter":"e"}]}`,
		`{"a\u00e9":1,"A\u00c9":2}`, `{"\u212a":1,"k":2}`, "{\"\xff\":1,\"\xfe\":2}",
		`{"a":[[],{},"\\",-1.5e3,true,false,null]}`,
		`{"a":[{"":1,"":2}]}`, `{"a":{"":1,"":2},"a":3}`, `{"":1,"":2}`,
		`{"s":1,"ſ":2}`, `{"requeſt_id":""}`, manyMembers(40, true), manyMembers(40, false),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		path, twice, found := memberProblem(data)
		opath, otwice, ofound := memberProblemByTokens(data)
		if path != opath || twice != otwice || found != ofound {
			t.Fatalf("%q: the scanner says %q, %v, %v; the token walk %q, %v, %v", data, path, twice, found, opath, otwice, ofound)
		}
	})
}

// The command and numbers are in docs/benchmarks.md, "Request decoding".
func BenchmarkMemberProblem(b *testing.B) {
	body := []byte(`{"delta":5,"request_id":"6f1c2e9a-3b7d-4c1e-9a2f-0d8e7b6a5c4d","time":"2026-11-24T19:00:00Z"}`)
	b.Run("scanner", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			memberProblem(body)
		}
	})
	b.Run("tokens", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			memberProblemByTokens(body)
		}
	})
	b.Run("decodeUpdate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeUpdate(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// memberProblemByTokens is the first memberProblem, kept as the oracle the
// scanner is checked against: it walks encoding/json's tokens, slow but
// plainly right. It returns the path of the first member of data (an object
// that already decoded) that is a second member of the same name in its
// object, twice true, or an explicitly empty request_id, twice false; ""
// when there is none. encoding/json keeps the last of two members of one
// name, so {"delta":1,"delta":2} would apply 2 while a reader of the body,
// or a proxy that checked it, saw 1. Names are compared ignoring case, as
// encoding/json matches them to fields ("Delta" sets delta too). An empty
// request id would silently mean "make one", so a retry of it counts
// again.
func memberProblemByTokens(data []byte) (path string, twice, found bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var value func(at string) (string, bool, bool)
	value = func(at string) (string, bool, bool) {
		tok, err := dec.Token()
		if err != nil {
			return "", false, false
		}
		switch tok {
		case json.Delim('{'):
			var seen []string
			for dec.More() {
				kt, err := dec.Token()
				name, ok := kt.(string)
				if err != nil || !ok {
					return "", false, false
				}
				p := joinPath(at, name)
				if slices.ContainsFunc(seen, func(s string) bool { return strings.EqualFold(s, name) }) {
					return p, true, true
				}
				seen = append(seen, name)
				if strings.EqualFold(name, "request_id") && bytes.HasPrefix(bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n:"), []byte(`""`)) {
					return p, false, true
				}
				if p, twice, found := value(p); found {
					return p, twice, true
				}
			}
			_, _ = dec.Token() // the closing brace
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if p, twice, found := value(joinPath(at, "["+strconv.Itoa(i)+"]")); found {
					return p, twice, true
				}
			}
			_, _ = dec.Token() // the closing bracket
		}
		return "", false, false
	}
	return value("")
}

// manyMembers is an object of n distinct members, with a case-folded
// repeat of the first at the end when repeat: past 16 members the scanner
// switches from pairwise comparison to a map.
func manyMembers(n int, repeat bool) string {
	var b strings.Builder
	b.WriteString(`{"Member":0`)
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, `,"m%d":%d`, i, i)
	}
	if repeat {
		b.WriteString(`,"mEMBER":1`)
	}
	b.WriteString("}")
	return b.String()
}

// A huge object costs linear time: a 1 MiB body of distinct members took
// over 40 s when every name was compared with every other.
func TestManyMembersScanInLinearTime(t *testing.T) {
	t.Parallel()
	body := []byte(`{"updates":[` + manyMembers(100_000, true) + `]}`)
	done := make(chan problem, 1)
	go func() {
		path, twice, found := memberProblem(body)
		done <- problem{path, twice, found}
	}()
	select {
	case p := <-done:
		if p.path != "updates[0].mEMBER" || !p.twice || !p.found {
			t.Fatalf("memberProblem of 100,000 members = %+v, want the repeat of the first", p)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("scanning 100,000 members took over 20 s")
	}
}

// Members named "" inside a batch or a put are found and refused, and the
// scan ends: it once lost its place on them and spun forever on one core.
func TestEmptyMemberNamesInBatchesAreRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		decode func([]byte) error
		body   string
		path   string
	}{
		{"batch", func(b []byte) error { _, err := decodeBatch(b); return err }, `{"updates":[{"":1,"":2}]}`, `"updates[0]"`},
		{"put", func(b []byte) error { _, err := decodePut(b); return err }, `{"messages":[{"":1,"":2}]}`, `"messages[0]"`},
		// At the top the strict decode refuses the unknown field first.
		{"top", func(b []byte) error { _, err := decodeUpdate(b); return err }, `{"":1,"":2}`, ""},
	} {
		done := make(chan error, 1)
		go func() { done <- tc.decode([]byte(tc.body)) }()
		select {
		case err := <-done:
			var ae *httpError
			if !errors.As(err, &ae) || ae.code != api.CodeInvalidJSON || tc.path != "" && (!strings.Contains(ae.msg, "appears more than once") || !strings.Contains(ae.msg, tc.path)) {
				t.Errorf("%s %s: %v, want invalid_json: a member at %q appears more than once", tc.name, tc.body, err, tc.path)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s %s: the decode did not end in 10 s", tc.name, tc.body)
		}
	}
}
