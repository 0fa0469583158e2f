package server

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/internal/queue"
)

// The queue endpoints' decoders, held to the same promises as the others:
// no panics, only wire errors, and what they accept survives a round trip.

func FuzzDecodeCreateQueue(f *testing.F) {
	fuzzDecode(f, []string{
		`{"name":"q"}`, `{"name":"q","shards":8,"shard_duration":"30s","max_deliveries":3,"visibility_timeout":"1m"}`,
		`{"name":"q","shards":-1}`, `{"name":"q","shards":1e99}`, `{"name":1}`, `{"nam":"q"}`, ``, `[]`,
	}, decodeCreateQueue, roundTripping(decodeCreateQueue))
}

func FuzzDecodePut(f *testing.F) {
	fuzzDecode(f, []string{
		`{"messages":[{"body":"a"}]}`, `{"messages":[{"body":"a","delay":"1s"},{"body_base64":"/wA=","due":"2030-01-01T00:00:00Z"}]}`,
		`{"messages":[]}`, `{"messages":null}`, `{"messages":[{"body":"\ud800"}]}`, `{"messages":[{"due":"x"}]}`,
		`{"messages":[{"delay":"-1s"}]}`, `{"messages":[1]}`, `{}`,
	}, decodePut, func(t *testing.T, _ []byte, v api.PutRequest) {
		if len(v.Messages) == 0 || len(v.Messages) > queue.MaxBatch {
			t.Fatalf("accepted %d messages", len(v.Messages))
		}
		roundTrip(t, v, decodePut)
		// Converting must fail only with a wire error too.
		if _, err := putMessages(v); err != nil {
			checkRejection(t, err)
		}
	})
}

func FuzzDecodeReceive(f *testing.F) {
	fuzzDecode(f, []string{``, `{}`, `{"max":10,"wait":"5s"}`, `{"max":"1"}`, `{"wait":5}`, ` `}, decodeReceive, roundTripping(decodeReceive))
}

func FuzzDecodeReceipts(f *testing.F) {
	fuzzDecode(f, []string{`{"receipts":["1.0.0.6ba7b810-9dad-11d1-80b4-00c04fd430c8.1"]}`, `{"receipts":[]}`, `{"receipts":[1]}`, `{}`}, decodeReceipts, func(t *testing.T, _ []byte, v []string) {
		b, _ := json.Marshal(api.AckRequest{Receipts: v})
		again, err := decodeReceipts(b)
		if err != nil || !slices.Equal(again, v) {
			t.Fatalf("round trip: %v, %v", again, err)
		}
	})
}

func FuzzDecodeNack(f *testing.F) {
	fuzzDecode(f, []string{`{"receipt":"r","error":"e"}`, `{"receipt":""}`, `{"error":"e"}`, `{"receipt":"r","extra":1}`}, decodeNack, roundTripping(decodeNack))
}

func FuzzDecodeRequeue(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"ids":["6ba7b810-9dad-11d1-80b4-00c04fd430c8"]}`, `{"ids":["x"]}`, `{"ids":[null]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ids, err := decodeRequeue(body)
		if err != nil {
			var he *httpError
			if !errors.As(err, &he) {
				t.Fatalf("error %v is not a wire error", err)
			}
			return
		}
		strs := make([]string, len(ids))
		for i, id := range ids {
			strs[i] = id.String()
		}
		b, _ := json.Marshal(api.RequeueRequest{IDs: strs})
		again, err := decodeRequeue(b)
		if err != nil || !slices.Equal(again, ids) {
			t.Fatalf("round trip: %v, %v", again, err)
		}
	})
}
