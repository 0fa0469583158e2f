package server

import (
	"fmt"
	"slices"
	"testing"

	"github.com/abacusdb/abacus/api"
)

// Every model's counters are listed, page by page, and only the
// namespace's own.
func TestCountersAreListedPageByPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, ns := range []string{`{"name":"s"}`, `{"name":"ev","model":"events"}`, `{"name":"ac","model":"actor"}`, `{"name":"na","model":"native"}`, `{"name":"ca","model":"cas"}`, `{"name":"le","model":"ledger"}`} {
		if r := e.do("POST", "/v1/namespaces", ns); r.status != 201 {
			t.Fatalf("create %s: %d %s", ns, r.status, r.body)
		}
	}
	write := func(ns, name string) {
		t.Helper()
		path, body := "/v1/namespaces/"+ns+"/counters/"+name+"/updates", `{"delta":1}`
		switch ns {
		case "ac":
			path, body = "/v1/namespaces/ac/counters/"+name+"/actors/p", `{"value":1,"version":1}`
		case "le":
			path, body = "/v1/namespaces/le/ledgers/"+name+"/credits", `{"amount":1}`
		}
		if r := e.do("POST", path, body); r.status != 200 {
			t.Fatalf("write %s/%s: %d %s", ns, name, r.status, r.body)
		}
	}
	for _, ns := range []string{"s", "ev", "ac", "na", "ca", "le"} {
		want := []string{}
		for i := range 5 {
			name := fmt.Sprintf("%s-%d", ns, 4-i)
			write(ns, name)
			want = append(want, name)
		}
		slices.Sort(want)
		var got []string
		after := ""
		for pages := 0; ; pages++ {
			if pages > 5 {
				t.Fatalf("%s: more than 5 pages of 2", ns)
			}
			var l api.CounterList
			path := "/v1/namespaces/" + ns + "/counters?limit=2"
			if after != "" {
				path += "&after=" + after
			}
			e.mustJSON("GET", path, "", 200, &l)
			got = append(got, l.Counters...)
			if l.Next == "" {
				break
			}
			after = l.Next
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s lists %v, want %v", ns, got, want)
		}
	}
	var empty api.CounterList
	e.mustJSON("GET", "/v1/namespaces/default/counters", "", 200, &empty)
	if empty.Counters == nil || len(empty.Counters) != 0 {
		t.Errorf("an empty namespace lists %#v, want []", empty.Counters)
	}
	if r := e.do("GET", "/v1/namespaces/nope/counters", ""); r.status != 404 || r.apiError().Code != api.CodeNamespaceNotFound {
		t.Errorf("a missing namespace: %d %s", r.status, r.body)
	}
}
