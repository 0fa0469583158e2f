package events

import "github.com/abacusdb/abacus/driver"

type eventDelta int64

type eventDeltas []eventDelta

func (ds eventDeltas) events() []driver.Event {
	out := make([]driver.Event, len(ds))
	for i, d := range ds {
		out[i] = driver.Event{ID: "e", Time: int64(i), Delta: int64(d)}
	}
	return out
}
