package server

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// memberProblem returns the path of the first member of data (an object
// that already decoded) that is a second member of the same name in its
// object, twice true, or an explicitly empty request_id, twice false; ""
// when there is none.
//
// Why: encoding/json keeps the last of two members of one name, so
// {"delta":1,"delta":2} would apply 2 while a reader of the body, or a
// proxy that checked it, saw 1. Names are compared as encoding/json
// matches them to fields, ignoring case ("Delta" sets delta too). An empty
// request id would silently mean "make one", so a retry of it counts
// again.
//
// It scans the bytes itself rather than walking encoding/json's tokens:
// every write request passes here, and the token walk cost more than the
// decode it guards (docs/benchmarks.md, "Request decoding"). Since data
// already decoded, it is known to be valid JSON and the scanner need not
// check its grammar. A test holds it to the token walk on fuzzed bodies.
//
// found says whether there is a problem: path is "" for a member named ""
// at the top level.
func memberProblem(data []byte) (path string, twice, found bool) {
	s := memberScan{data: data}
	_, p := s.value(s.skipSpace(0))
	return p.path, p.twice, p.found
}

// problem is what memberScan found: found says whether there is one (its
// path may be "", a member named "" at the top).
type problem struct {
	path         string
	twice, found bool
}

// under returns p as seen from the value that holds it at segment.
func (p problem) under(segment string) problem {
	p.path = joinPath(segment, p.path)
	return p
}

// memberScan walks valid JSON by hand.
type memberScan struct {
	data []byte
}

func (s *memberScan) skipSpace(i int) int {
	for i < len(s.data) {
		switch s.data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// value scans the value starting at i and returns the index after it and
// its first problem, with the path relative to the value. It always moves
// forward, so no loop over its callers can spin in place.
func (s *memberScan) value(i int) (next int, p problem) {
	if i >= len(s.data) {
		return i, problem{}
	}
	switch s.data[i] {
	case '{':
		return s.object(i)
	case '[':
		return s.array(i)
	case '"':
		end, _ := s.str(i)
		return end, problem{}
	}
	start := i
	for i < len(s.data) { // a number, true, false or null
		switch s.data[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			if i == start {
				i++ // not a value: step over it rather than stand still
			}
			return i, problem{}
		}
		i++
	}
	return i, problem{}
}

// str scans the string starting at the quote at i and returns the index
// after its closing quote and whether it holds an escape.
func (s *memberScan) str(i int) (next int, escaped bool) {
	for i++; i < len(s.data); i++ {
		switch s.data[i] {
		case '\\':
			escaped = true
			i++ // the escaped byte cannot close the string
		case '"':
			return i + 1, escaped
		}
	}
	return i, escaped
}

func (s *memberScan) object(i int) (next int, p problem) {
	// Request objects have a handful of members: their names stay in the
	// body's bytes, compared pairwise, with the slice on the stack. Past
	// 16 a map of folded names takes over, so that an object of many
	// thousand members (a hostile body may hold that many inside a batch
	// item, before the item's own decode refuses them) costs linear time,
	// not quadratic.
	var nameBuf [16][]byte
	names := nameBuf[:0]
	var folded map[string]bool
	i = s.skipSpace(i + 1)
	for i < len(s.data) && s.data[i] != '}' {
		start := i
		end, escaped := s.str(i)
		name := s.data[start+1 : end-1]
		if escaped || !utf8.Valid(name) {
			// Rare: compare the name as encoding/json reads it.
			var decoded string
			if json.Unmarshal(s.data[start:end], &decoded) == nil {
				name = []byte(decoded)
			}
		}
		i = s.skipSpace(end)
		i = s.skipSpace(i + 1) // the colon
		var dup bool
		if names, folded, dup = seenBefore(name, names, folded); dup {
			return i, problem{path: string(name), twice: true, found: true}
		}
		if bytes.EqualFold(name, []byte("request_id")) && i+1 < len(s.data) && s.data[i] == '"' && s.data[i+1] == '"' {
			return i, problem{path: string(name), found: true}
		}
		var sub problem
		i, sub = s.value(i)
		if sub.found {
			return i, sub.under(string(name))
		}
		i = s.skipSpace(i)
		if i < len(s.data) && s.data[i] == ',' {
			i = s.skipSpace(i + 1)
		}
	}
	return i + 1, problem{}
}

func (s *memberScan) array(i int) (next int, p problem) {
	i = s.skipSpace(i + 1)
	for n := 0; i < len(s.data) && s.data[i] != ']'; n++ {
		var sub problem
		i, sub = s.value(i)
		if sub.found {
			return i, sub.under("[" + strconv.Itoa(n) + "]")
		}
		i = s.skipSpace(i)
		if i < len(s.data) && s.data[i] == ',' {
			i = s.skipSpace(i + 1)
		}
	}
	return i + 1, problem{}
}

// seenBefore reports whether name matches a name already in this object,
// and records it. Names match as encoding/json matches them to fields:
// equal under Unicode simple case folding (bytes.EqualFold), so that
// "Delta", and even "requeſt_id" with a long s, count as the same member.
// It takes and returns the names so far, pairwise-compared while they fit
// the caller's array, then as a map of fold keys.
func seenBefore(name []byte, names [][]byte, folded map[string]bool) ([][]byte, map[string]bool, bool) {
	if folded == nil {
		for _, seen := range names {
			if bytes.EqualFold(seen, name) {
				return names, nil, true
			}
		}
		if len(names) < cap(names) {
			return append(names, name), nil, false
		}
		folded = make(map[string]bool, 2*len(names))
		for _, seen := range names {
			folded[foldKey(seen)] = true
		}
	}
	key := foldKey(name)
	if folded[key] {
		return names, folded, true
	}
	folded[key] = true
	return names, folded, false
}

// foldKey maps every rune of name to the smallest rune of its simple case
// folding orbit: two names have one key exactly when bytes.EqualFold says
// they are equal.
func foldKey(name []byte) string {
	out := make([]rune, 0, len(name))
	for len(name) > 0 {
		r, n := utf8.DecodeRune(name)
		min := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < min {
				min = f
			}
		}
		out = append(out, min)
		name = name[n:]
	}
	return string(out)
}
