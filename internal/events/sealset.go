package events

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/abacusdb/abacus/api"
	"github.com/abacusdb/abacus/driver"
)

// A seal names the events it counted, so that a retry arriving after its
// range was sealed can be answered — counted (replayed) or not — without
// a row of its own that may have landed late. The set is stored with the
// seal (driver.EventSeal.Events) in this form:
//
//	format byte (1), uvarint count, then per event in (time, id) order:
//	uvarint time - previous time (the first from the seal's start, so
//	every delta of a well-formed set is at least 0 and the first above 0),
//	then the id: 0 and the 16 bytes of a UUID written in its canonical
//	lower-case form (what clients generate), or 1, uvarint length and the
//	bytes of any other id.
//
// A version 7 id costs 18–19 bytes, about a third of its row.

const sealSetFormat = 1

var errBadSealSet = errors.New("events: damaged seal event set")

// encodeSealSet encodes evs, which must be sorted by (time, id) with no
// duplicates and every time above start.
func encodeSealSet(start int64, evs []driver.Event) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(evs)*20)
	b = append(b, sealSetFormat)
	b = binary.AppendUvarint(b, uint64(len(evs)))
	prev := start
	for _, ev := range evs {
		b = binary.AppendUvarint(b, uint64(ev.Time-prev))
		prev = ev.Time
		if u, ok := canonicalUUID(ev.ID); ok {
			b = append(b, 0)
			b = append(b, u[:]...)
		} else {
			b = append(b, 1)
			b = binary.AppendUvarint(b, uint64(len(ev.ID)))
			b = append(b, ev.ID...)
		}
	}
	return b
}

// sealedEvent is one entry of a decoded set: its time and id.
type sealedEvent struct {
	Time int64
	ID   string
}

// decodeSealSet decodes a set strictly: the format, the count, strictly
// increasing (time, id) keys above start, and no trailing bytes.
func decodeSealSet(start int64, b []byte) ([]sealedEvent, error) {
	if len(b) == 0 || b[0] != sealSetFormat {
		return nil, fmt.Errorf("%w: unknown format", errBadSealSet)
	}
	r := bytes.NewReader(b[1:])
	n, err := binary.ReadUvarint(r)
	if err != nil || n > uint64(r.Len()) {
		return nil, fmt.Errorf("%w: bad count", errBadSealSet)
	}
	out := make([]sealedEvent, 0, n)
	prev := start
	for i := range n {
		d, err := binary.ReadUvarint(r)
		if err != nil || d > uint64(1<<63-1) || prev > int64(1<<63-1)-int64(d) {
			return nil, fmt.Errorf("%w: event %d: bad time", errBadSealSet, i)
		}
		t := prev + int64(d)
		tag, err := r.ReadByte()
		if err != nil {
			return nil, fmt.Errorf("%w: event %d: truncated", errBadSealSet, i)
		}
		var id string
		switch tag {
		case 0:
			var u [16]byte
			if _, err := io.ReadFull(r, u[:]); err != nil {
				return nil, fmt.Errorf("%w: event %d: truncated uuid", errBadSealSet, i)
			}
			id = api.FormatUUID(u)
		case 1:
			l, err := binary.ReadUvarint(r)
			if err != nil || l > uint64(r.Len()) {
				return nil, fmt.Errorf("%w: event %d: bad id length", errBadSealSet, i)
			}
			raw := make([]byte, l)
			_, _ = io.ReadFull(r, raw) // l <= r.Len(): cannot fall short
			id = string(raw)
			if _, canonical := canonicalUUID(id); canonical {
				return nil, fmt.Errorf("%w: event %d: a uuid stored long", errBadSealSet, i)
			}
		default:
			return nil, fmt.Errorf("%w: event %d: unknown id tag %d", errBadSealSet, i, tag)
		}
		ev := sealedEvent{Time: t, ID: id}
		if t <= start || (i > 0 && compareSealed(out[i-1], ev) >= 0) {
			return nil, fmt.Errorf("%w: event %d is out of order", errBadSealSet, i)
		}
		out = append(out, ev)
		prev = t
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errBadSealSet, r.Len())
	}
	return out, nil
}

func compareSealed(a, b sealedEvent) int {
	return cmp.Or(cmp.Compare(a.Time, b.Time), cmp.Compare(a.ID, b.ID))
}

// sealHolds reports whether the seal counted the event (time, id).
func sealHolds(s *driver.EventSeal, t int64, id string) (bool, error) {
	if s.Clear || len(s.Events) == 0 {
		return false, nil
	}
	set, err := decodeSealSet(s.Start, s.Events)
	if err != nil {
		return false, err
	}
	_, found := slices.BinarySearchFunc(set, sealedEvent{Time: t, ID: id}, compareSealed)
	return found, nil
}

// canonicalUUID parses a UUID written as 36 lower-case hex digits and
// hyphens; only that form is stored in 16 bytes, so decoding gives back
// exactly the id that was sent.
func canonicalUUID(s string) ([16]byte, bool) {
	u, ok := api.ParseUUID(s)
	return u, ok && api.FormatUUID(u) == s
}
