package server

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/abacusdb/abacus/api"
)

// Lists that grow with use (namespaces, queues) come in pages: up to
// ?limit= items (api.MaxPageSize, also the default) in name order, after
// the name ?after= gives; the answer's "next" is the after of the next
// page, absent on the last. The cursor is the last name itself, so a page
// is stable while names are created or removed around it, and a caller can
// start anywhere. The store still reads the whole list for each page:
// quotas keep it to thousands (--max-namespaces, --max-queues).

// pageParams reads ?after= and ?limit=.
func pageParams(r *http.Request) (after string, limit int, err error) {
	limit, err = limitParam(r, api.MaxPageSize, api.MaxPageSize)
	return r.URL.Query().Get("after"), limit, err
}

// limitParam reads ?limit=, a number from 1 to most; def when it is
// absent. An empty ?limit= is refused, not taken as absent: it is a
// mistake, as in a script whose variable was unset.
func limitParam(r *http.Request, def, most int) (int, error) {
	q := r.URL.Query()
	if !q.Has("limit") {
		return def, nil
	}
	v := q.Get("limit")
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		return 0, errorf(api.CodeInvalidArgument, "limit %q is not a number from 1 to %d", v, most)
	}
	return n, nil
}

// page sorts list by name and returns its items after the name after, at
// most limit of them, and the cursor of the next page ("" if none).
func page[T any](list []T, nameOf func(T) string, after string, limit int) (items []T, next string) {
	// The stores list in name order already; sorting again costs little
	// and keeps the cursor right whatever a store does.
	sorted := slices.SortedFunc(slices.Values(list), func(a, b T) int { return strings.Compare(nameOf(a), nameOf(b)) })
	start := 0
	if after != "" {
		start, _ = slices.BinarySearchFunc(sorted, after, func(item T, name string) int {
			switch n := nameOf(item); {
			case n < name:
				return -1
			case n > name:
				return 1
			}
			return 0
		})
		if start < len(sorted) && nameOf(sorted[start]) == after {
			start++
		}
	}
	items = sorted[start:]
	if len(items) > limit {
		items = items[:limit]
		next = nameOf(items[limit-1])
	}
	return items, next
}
