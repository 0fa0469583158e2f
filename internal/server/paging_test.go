package server

import (
	"fmt"
	"slices"
	"testing"

	"github.com/abacusdb/abacus/api"
)

// Pages follow each other without a gap or a repeat, "next" is absent on
// the last, and a bad limit is refused.
func TestListsComeInPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	want := []string{"default"}
	for i := range 7 {
		name := fmt.Sprintf("ns%d", i)
		e.mustJSON("POST", "/v1/namespaces", `{"name":"`+name+`"}`, 201, nil)
		e.mustJSON("POST", "/v1/queues", `{"name":"q`+name+`"}`, 201, nil)
		want = append(want, name)
	}
	slices.Sort(want)

	var got []string
	after := ""
	for pages := 0; ; pages++ {
		var list api.NamespaceList
		e.mustJSON("GET", "/v1/namespaces?limit=3&after="+after, "", 200, &list)
		if len(list.Namespaces) > 3 || pages > 5 {
			t.Fatalf("page %d: %d namespaces (limit 3), next %q", pages, len(list.Namespaces), list.Next)
		}
		for _, ns := range list.Namespaces {
			got = append(got, ns.Name)
		}
		if list.Next == "" {
			break
		}
		after = list.Next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages of 3 gave %v, want %v", got, want)
	}
	var all api.NamespaceList
	e.mustJSON("GET", "/v1/namespaces", "", 200, &all)
	if len(all.Namespaces) != len(want) || all.Next != "" {
		t.Fatalf("one default page: %d namespaces, next %q", len(all.Namespaces), all.Next)
	}
	// A cursor that names no namespace starts after where it would be.
	var from api.NamespaceList
	e.mustJSON("GET", "/v1/namespaces?after=ns3x", "", 200, &from)
	if len(from.Namespaces) != 3 || from.Namespaces[0].Name != "ns4" {
		t.Fatalf("after ns3x: %+v", from.Namespaces)
	}
	var queues api.QueueList
	e.mustJSON("GET", "/v1/queues?limit=5", "", 200, &queues)
	if len(queues.Queues) != 5 || queues.Next != "qns4" {
		t.Fatalf("queues page of 5: %d, next %q", len(queues.Queues), queues.Next)
	}
	for _, bad := range []string{"0", "-1", "1001", "x", ""} {
		e.wantError("GET", "/v1/namespaces?limit="+bad, "", 400, api.CodeInvalidArgument, "limit")
		e.wantError("GET", "/v1/queues?limit="+bad, "", 400, api.CodeInvalidArgument, "limit")
	}
}
