package ledger

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/abacusdb/abacus/internal/crdt"
	"github.com/abacusdb/abacus/internal/outcome"
)

// Limits of the model.
const (
	// DefaultHistoryLength is how many request ids each section of an actor
	// keeps when a namespace does not say (the design's default).
	DefaultHistoryLength = 10
	// MaxHistoryLength bounds history_length: every write reads and rewrites
	// up to two histories per actor, so the row must stay small.
	MaxHistoryLength = 1000
	// MaxRequestIDLen is the longest request id, in bytes.
	MaxRequestIDLen = 256
)

var (
	// ErrOverflow means an amount would take a total outside the int64 range.
	ErrOverflow = outcome.Tag(crdt.ErrOverflow, errors.New("ledger total would overflow int64"))

	// ErrActorConflict means two versions of one actor's row disagree about
	// its history: two processes wrote under the same actor id. The model
	// requires one writer per actor id (see the package documentation).
	ErrActorConflict = errors.New("two writers used one actor id")

	// ErrInvalidEntry means an entry has an empty, over-long or non-UTF-8
	// request id, or an amount that is not positive.
	ErrInvalidEntry = outcome.Tag(outcome.ErrInvalid, errors.New("invalid ledger entry"))
)

// ValidateRequestID checks a request id: 1 to MaxRequestIDLen bytes of UTF-8.
// UTF-8 is required because Cassandra stores request ids in text columns.
func ValidateRequestID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: request id is empty", ErrInvalidEntry)
	case len(id) > MaxRequestIDLen:
		return fmt.Errorf("%w: request id is %d bytes, the limit is %d", ErrInvalidEntry, len(id), MaxRequestIDLen)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: request id is not valid UTF-8", ErrInvalidEntry)
	}
	return nil
}

// Entry is one applied request in a section's history.
type Entry struct {
	RequestID string
	// Amount is always positive; the section says whether it was a credit
	// or a debit.
	Amount int64
}

// Section is one half (positive or negative) of one actor's state: a
// running total and the most recent entries, oldest first.
//
// Entries are numbered in the order the actor appended them, from 1. The
// first Folded entries have been folded into Total and forgotten; History
// holds entries Folded+1 … Seq(). Numbering is what lets two versions of
// the same actor's row be merged: the later version is the one that has
// seen more entries (and folded more of them).
type Section struct {
	// Total is the sum of the folded entries' amounts.
	Total int64
	// Folded is how many entries have been folded into Total.
	Folded uint64
	// History holds the entries not yet folded, oldest first.
	History []Entry
}

// Seq is the number of the section's newest entry (0 when it has none).
func (s *Section) Seq() uint64 { return s.Folded + uint64(len(s.History)) }

// Sum is Total plus the amounts still in History. ok is false if it
// overflows int64, which a well-formed section never does.
func (s *Section) Sum() (sum int64, ok bool) {
	sum = s.Total
	for _, e := range s.History {
		if sum > math.MaxInt64-e.Amount {
			return 0, false
		}
		sum += e.Amount
	}
	return sum, true
}

// EntryAt returns the entry numbered seq if it is still in the history.
func (s *Section) EntryAt(seq uint64) (Entry, bool) {
	if seq <= s.Folded || seq > s.Seq() {
		return Entry{}, false
	}
	return s.History[seq-s.Folded-1], true
}

// find returns the number of the entry holding id.
func (s *Section) find(id string) (uint64, Entry, bool) {
	for i, e := range s.History {
		if e.RequestID == id {
			return s.Folded + uint64(i) + 1, e, true
		}
	}
	return 0, Entry{}, false
}

// Append adds e as the section's newest entry and returns its number.
// The section is unchanged on error.
func (s *Section) Append(e Entry) (uint64, error) {
	if err := ValidateRequestID(e.RequestID); err != nil {
		return 0, err
	}
	if e.Amount <= 0 {
		return 0, fmt.Errorf("%w: amount %d is not positive", ErrInvalidEntry, e.Amount)
	}
	sum, ok := s.Sum()
	if !ok || sum > math.MaxInt64-e.Amount {
		return 0, ErrOverflow
	}
	s.History = append(s.History, e)
	return s.Seq(), nil
}

// Compact applies the overflow rule: while the history holds more than
// keep entries, the oldest one's amount moves into Total. It reports
// whether anything moved. The sum is unchanged.
func (s *Section) Compact(keep int) bool {
	if keep < 0 {
		keep = 0
	}
	over := len(s.History) - keep
	if over <= 0 {
		return false
	}
	for _, e := range s.History[:over] {
		s.Total += e.Amount // cannot overflow: Sum fits, and folding keeps it
	}
	s.Folded += uint64(over)
	s.History = slices.Clone(s.History[over:])
	return true
}

func (s Section) clone() Section {
	s.History = slices.Clone(s.History)
	return s
}

func (s *Section) equal(o *Section) bool {
	return s.Total == o.Total && s.Folded == o.Folded && slices.Equal(s.History, o.History)
}

// joinSections merges two versions of the same actor's section. Versions
// written by one serial writer are views of one log: each has folded a
// prefix and holds the entries after it. The join is the view of the
// longest log with the longest folded prefix, which makes it commutative,
// associative and idempotent. Versions that cannot come from one log are
// reported as ErrActorConflict rather than guessed at.
func joinSections(a, b *Section) (Section, error) {
	if a.Folded > b.Folded {
		a, b = b, a // from here on a has folded no more than b
	}
	// Entries both versions still hold must be the same entries.
	lo, hi := b.Folded+1, min(a.Seq(), b.Seq())
	for seq := lo; seq <= hi; seq++ {
		ea, _ := a.EntryAt(seq)
		eb, _ := b.EntryAt(seq)
		if ea != eb {
			return Section{}, fmt.Errorf("%w: entry %d is %q in one version and %q in another", ErrActorConflict, seq, ea.RequestID, eb.RequestID)
		}
	}
	// b's total must be a's total plus what a holds of the entries b folded
	// since, plus at least 1 per entry a has not seen (amounts are positive).
	var grew int64
	for seq := a.Folded + 1; seq <= min(a.Seq(), b.Folded); seq++ {
		e, _ := a.EntryAt(seq)
		grew += e.Amount // bounded by a's sum, which fits
	}
	if a.Folded == b.Folded {
		if a.Total != b.Total {
			return Section{}, fmt.Errorf("%w: %d entries folded into totals %d and %d", ErrActorConflict, a.Folded, a.Total, b.Total)
		}
	} else {
		unseen := uint64(0)
		if b.Folded > a.Seq() {
			unseen = b.Folded - a.Seq()
		}
		diff := b.Total - a.Total // both are non-negative, so this cannot overflow
		ok := diff >= grew && (unseen == 0 && diff == grew || unseen > 0 && uint64(diff-grew) >= unseen)
		if !ok {
			return Section{}, fmt.Errorf("%w: total %d after %d folded entries does not follow from total %d after %d", ErrActorConflict, b.Total, b.Folded, a.Total, a.Folded)
		}
	}
	out := Section{Total: b.Total, Folded: b.Folded}
	longest := a
	if b.Seq() > a.Seq() {
		longest = b
	}
	if longest.Seq() > out.Folded {
		out.History = slices.Clone(longest.History[out.Folded-longest.Folded:])
	}
	return out, nil
}

// Actor is one actor's state: its positive (credit) and negative (debit)
// sections.
type Actor struct {
	P Section
	N Section
}

// Section returns the negative section when negative is set, else the
// positive one.
func (a *Actor) Section(negative bool) *Section {
	if negative {
		return &a.N
	}
	return &a.P
}

// Clone returns a deep copy.
func (a *Actor) Clone() *Actor {
	return &Actor{P: a.P.clone(), N: a.N.clone()}
}

// Equal reports whether a and o hold the same state.
func (a *Actor) Equal(o *Actor) bool { return a.P.equal(&o.P) && a.N.equal(&o.N) }

// Compact applies the overflow rule to both sections.
func (a *Actor) Compact(keep int) bool {
	p := a.P.Compact(keep)
	n := a.N.Compact(keep)
	return p || n
}

// Join merges two versions of one actor's state (see joinSections).
func Join(a, b *Actor) (*Actor, error) {
	p, err := joinSections(&a.P, &b.P)
	if err != nil {
		return nil, fmt.Errorf("positive section: %w", err)
	}
	n, err := joinSections(&a.N, &b.N)
	if err != nil {
		return nil, fmt.Errorf("negative section: %w", err)
	}
	return &Actor{P: p, N: n}, nil
}

// State is a whole ledger: every actor's state, keyed by actor id.
type State struct {
	actors map[string]*Actor
	// fenced lists the actors whose rows a reclaim of their debit rights
	// fenced (driver.FenceTimestamp): they must never write again.
	fenced map[string]bool
	// base holds the totals of the actors folds have passed (fold.go);
	// no actor below its cut is in actors.
	base Base
}

// Base returns what folds have left of the actors they passed.
func (s *State) Base() Base { return s.base }

func (s *State) markFenced(id string) {
	if s.fenced == nil {
		s.fenced = map[string]bool{}
	}
	s.fenced[id] = true
}

// NewState returns an empty ledger.
func NewState() *State { return &State{actors: map[string]*Actor{}} }

// Actor returns the actor's state, or nil if it has none. The result is
// the state's own copy.
func (s *State) Actor(id string) *Actor { return s.actors[id] }

// Set replaces an actor's state with a.
func (s *State) Set(id string, a *Actor) { s.actors[id] = a }

// Actors returns the actor ids, sorted.
func (s *State) Actors() []string {
	ids := make([]string, 0, len(s.actors))
	for id := range s.actors {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Len is the number of actors.
func (s *State) Len() int { return len(s.actors) }

// Clone returns a deep copy.
func (s *State) Clone() *State {
	c := NewState()
	for id, a := range s.actors {
		c.actors[id] = a.Clone()
	}
	c.base = s.base
	return c
}

// Equal reports whether s and o hold the same actors with the same states.
func (s *State) Equal(o *State) bool {
	if len(s.actors) != len(o.actors) || s.base != o.base {
		return false
	}
	for id, a := range s.actors {
		b, ok := o.actors[id]
		if !ok || !a.Equal(b) {
			return false
		}
	}
	return true
}

// Merge joins o into s, actor by actor. Of two bases the later one wins
// (two different bases of one version mean two folds both won, which the
// compare-and-set rules out), and the actors below its cut leave: it
// counts them. On error s is unchanged.
func (s *State) Merge(o *State) error {
	base := s.base
	switch {
	case o.base.Version > base.Version:
		base = o.base
	case o.base.Version == base.Version && o.base != base:
		return fmt.Errorf("%w: two bases of version %d: %v and %v", ErrCorrupt, base.Version, base, o.base)
	}
	joined := make(map[string]*Actor, len(o.actors))
	for id, b := range o.actors {
		a, ok := s.actors[id]
		if !ok {
			joined[id] = b.Clone()
			continue
		}
		j, err := Join(a, b)
		if err != nil {
			return fmt.Errorf("actor %q: %w", id, err)
		}
		joined[id] = j
	}
	for id, a := range joined {
		s.actors[id] = a
	}
	s.base = base
	for id := range s.actors {
		if id < base.Cut {
			delete(s.actors, id)
		}
	}
	return nil
}

// Totals returns the sum of every actor's positive and negative sections.
// They overflow only if several actors, each checking the limit against
// what it had read, credited at the same moment; that is reported as
// ErrOverflow rather than wrapped around.
func (s *State) Totals() (p, n int64, err error) {
	p, n = s.base.P, s.base.N
	for _, id := range s.Actors() { // sorted, so the error names the same actor every time
		a := s.actors[id]
		for neg, sec := range []*Section{&a.P, &a.N} {
			sum, ok := sec.Sum()
			acc := &p
			if neg == 1 {
				acc = &n
			}
			if !ok || *acc > math.MaxInt64-sum {
				return 0, 0, fmt.Errorf("%w: the sum over actors passes int64 at actor %q", ErrOverflow, id)
			}
			*acc += sum
		}
	}
	return p, n, nil
}

// Value is Σ P − Σ N over actors. Both sums lie in [0, MaxInt64], so the
// difference always fits.
func (s *State) Value() (int64, error) {
	p, n, err := s.Totals()
	if err != nil {
		return 0, err
	}
	return p - n, nil
}

// Found says where a request id is recorded.
type Found struct {
	Actor    string
	Negative bool
	Seq      uint64
	// Amount is signed: negative for a debit.
	Amount int64
}

// Lookup finds a request id in any actor's history. Actors are searched in
// id order, so the answer is the same on every call.
func (s *State) Lookup(requestID string) (Found, bool) {
	for _, id := range s.Actors() {
		a := s.actors[id]
		for _, neg := range []bool{false, true} {
			if seq, e, ok := a.Section(neg).find(requestID); ok {
				amt := e.Amount
				if neg {
					amt = -amt
				}
				return Found{Actor: id, Negative: neg, Seq: seq, Amount: amt}, true
			}
		}
	}
	return Found{}, false
}

// Has reports whether the request id is in any actor's history.
func (s *State) Has(requestID string) bool {
	_, ok := s.Lookup(requestID)
	return ok
}

// RequestIDs returns every request id still in a history, sorted.
func (s *State) RequestIDs() []string {
	var ids []string
	for _, a := range s.actors {
		for _, sec := range []*Section{&a.P, &a.N} {
			for _, e := range sec.History {
				ids = append(ids, e.RequestID)
			}
		}
	}
	slices.SortFunc(ids, cmp.Compare)
	return slices.Compact(ids)
}
