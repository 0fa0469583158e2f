package server

import (
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
// proxy that checked it, saw 1. Names are compared ignoring case, as
// encoding/json matches them to fields ("Delta" sets delta too). An empty
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
	// Request objects have a handful of members; names stay in the body's
	// bytes and the slice on the stack unless an object has more than 16.
	var nameBuf [16][]byte
	names := nameBuf[:0]
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
		for _, seen := range names {
			if equalLower(seen, name) {
				return i, problem{path: string(name), twice: true, found: true}
			}
		}
		names = append(names, name)
		if equalLower(name, []byte("request_id")) && i+1 < len(s.data) && s.data[i] == '"' && s.data[i+1] == '"' {
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

// equalLower reports whether a and b are equal once each rune is lower
// cased, as strings.ToLower(a) == strings.ToLower(b) would, without
// making either string.
func equalLower(a, b []byte) bool {
	for len(a) > 0 && len(b) > 0 {
		ra, na := utf8.DecodeRune(a)
		rb, nb := utf8.DecodeRune(b)
		if ra != rb && unicode.ToLower(ra) != unicode.ToLower(rb) {
			return false
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) == 0 && len(b) == 0
}
