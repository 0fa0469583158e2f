package drivertest

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// exerciseQueues checks the contracts of driver.Queues. Every subtest uses
// its own queue names; open is only used to get a handle to close.
func exerciseQueues(t *testing.T, d driver.Driver, open Opener) {
	t.Run("QueueRecords", func(t *testing.T) { exerciseQueueRecords(t, d) })
	t.Run("Messages", func(t *testing.T) { exerciseMessages(t, d) })
	t.Run("Leases", func(t *testing.T) { exerciseLeases(t, d) })
	t.Run("DeadLetters", func(t *testing.T) { exerciseDeadLetters(t, d) })
	t.Run("Dedup", func(t *testing.T) { exerciseDedup(t, d) })
	t.Run("Pauses", func(t *testing.T) { exercisePauses(t, d) })
	t.Run("QueueClosed", func(t *testing.T) {
		d2 := openClosed(t, open)
		c := ctx(t)
		if _, err := d2.GetQueue(c, &driver.GetQueueParams{Name: "q"}); !errors.Is(err, driver.ErrClosed) {
			t.Errorf("GetQueue after Close: got %v, want ErrClosed", err)
		}
		err := d2.PutMessages(c, &driver.PutMessagesParams{Queue: "q", Messages: []driver.Message{msg(0, base, "x")}})
		if !errors.Is(err, driver.ErrClosed) {
			t.Errorf("PutMessages after Close: got %v, want ErrClosed", err)
		}
		_, err = d2.AcquireLease(c, &driver.LeaseParams{Queue: "q", Holder: "h", TTL: time.Second, Since: base})
		if !errors.Is(err, driver.ErrClosed) {
			t.Errorf("AcquireLease after Close: got %v, want ErrClosed", err)
		}
		if _, err := d2.GetQueuePause(c, &driver.GetQueuePauseParams{Queue: "q"}); !errors.Is(err, driver.ErrClosed) {
			t.Errorf("GetQueuePause after Close: got %v, want ErrClosed", err)
		}
		if err := d2.SetQueuePause(c, &driver.SetQueuePauseParams{Queue: "q", Pause: driver.QueuePause{Paused: true, Since: base}}); !errors.Is(err, driver.ErrClosed) {
			t.Errorf("SetQueuePause after Close: got %v, want ErrClosed", err)
		}
	})
}

// exercisePauses: a queue never paused is not; the latest pause or resume
// wins whatever order they land in; at equal times the pause wins; queues
// are independent.
func exercisePauses(t *testing.T, d driver.Driver) {
	q := unique("paused")
	get := func(queue string) driver.QueuePause {
		t.Helper()
		p, err := d.GetQueuePause(ctx(t), &driver.GetQueuePauseParams{Queue: queue})
		if err != nil {
			t.Fatalf("GetQueuePause(%s): %v", queue, err)
		}
		return p
	}
	set := func(paused bool, since time.Time) {
		t.Helper()
		if err := d.SetQueuePause(ctx(t), &driver.SetQueuePauseParams{Queue: q, Pause: driver.QueuePause{Paused: paused, Since: since}}); err != nil {
			t.Fatalf("SetQueuePause(%s, %v, %v): %v", q, paused, since, err)
		}
	}
	want := func(w driver.QueuePause) {
		t.Helper()
		if got := get(q); got.Paused != w.Paused || !got.Since.Equal(w.Since) {
			t.Fatalf("GetQueuePause = %+v, want %+v", got, w)
		}
	}
	want(driver.QueuePause{})
	set(true, base)
	want(driver.QueuePause{Paused: true, Since: base})
	if other := get(unique("other")); other.Paused {
		t.Fatalf("another queue reads %+v; pauses are per queue", other)
	}
	set(false, base.Add(time.Second))
	want(driver.QueuePause{Since: base.Add(time.Second)})
	set(true, base.Add(500*time.Millisecond)) // older: lands late, changes nothing
	want(driver.QueuePause{Since: base.Add(time.Second)})
	set(true, base.Add(time.Second)) // the same time: the pause wins
	want(driver.QueuePause{Paused: true, Since: base.Add(time.Second)})
	set(false, base.Add(time.Second))
	want(driver.QueuePause{Paused: true, Since: base.Add(time.Second)})
	set(false, base.Add(2*time.Second+1500*time.Microsecond)) // kept to the millisecond
	want(driver.QueuePause{Since: base.Add(2*time.Second + time.Millisecond)})
}

// base is a fixed, millisecond-aligned instant the message tests build on.
var base = time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC)

var idSeq struct {
	sync.Mutex
	last int64
}

// newID returns a fresh version 1 UUID whose time is at (or just after) t,
// distinct from every other id this process makes.
func newID(t time.Time) driver.MessageID {
	const gregorianToUnix = 0x01B21DD213814000
	ts := t.UnixNano()/100 + gregorianToUnix
	idSeq.Lock()
	if ts <= idSeq.last {
		ts = idSeq.last + 1
	}
	idSeq.last = ts
	idSeq.Unlock()
	var id driver.MessageID
	binary.BigEndian.PutUint32(id[0:4], uint32(ts))
	binary.BigEndian.PutUint16(id[4:6], uint16(ts>>32))
	binary.BigEndian.PutUint16(id[6:8], uint16(ts>>48)&0x0fff|0x1000)
	_, _ = rand.Read(id[8:])
	id[8] = id[8]&0x3f | 0x80
	return id
}

// msg is a message due at base+dueOffset in shard 0 with the given body.
func msg(dueOffset time.Duration, at time.Time, body string) driver.Message {
	due := at.Add(dueOffset)
	return driver.Message{
		MessageKey: driver.MessageKey{Shard: 0, Due: due, ID: newID(due)},
		Body:       []byte(body),
		EnqueuedAt: at,
	}
}

func mustPut(t *testing.T, d driver.Driver, queue string, ms ...driver.Message) {
	t.Helper()
	if err := d.PutMessages(ctx(t), &driver.PutMessagesParams{Queue: queue, Messages: ms}); err != nil {
		t.Fatalf("PutMessages(%s, %d messages): %v", queue, len(ms), err)
	}
}

func mustReadMessages(t *testing.T, d driver.Driver, p driver.ReadMessagesParams) *driver.MessagePage {
	t.Helper()
	page, err := d.ReadMessages(ctx(t), &p)
	if err != nil {
		t.Fatalf("ReadMessages(%+v): %v", p, err)
	}
	return page
}

func ids(ms []driver.Message) []driver.MessageID {
	out := make([]driver.MessageID, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// noResurrection checks, after a write that came late for a deleted
// message (what), that queue q's shard 0 holds no message, and that the
// fragments it may hold go when deleted.
func noResurrection(t *testing.T, d driver.Driver, q, what string) {
	t.Helper()
	c := ctx(t)
	all := driver.ReadMessagesParams{Queue: q, From: base.Add(-time.Hour), To: base.Add(time.Hour), Limit: 10, WithBody: true}
	page := mustReadMessages(t, d, all)
	if len(page.Messages) != 0 {
		t.Fatalf("%s resurrected %+v", what, page.Messages)
	}
	if len(page.Fragments) > 0 {
		if err := d.DeleteMessages(c, &driver.DeleteMessagesParams{Queue: q, Keys: page.Fragments}); err != nil {
			t.Fatal(err)
		}
		if page = mustReadMessages(t, d, all); len(page.Messages)+len(page.Fragments) != 0 {
			t.Fatalf("a fragment left by %s survived its delete: %+v", what, page)
		}
	}
}

func sameMessage(t *testing.T, got, want driver.Message, withBody bool) {
	t.Helper()
	if got.MessageKey.ID != want.ID || got.Shard != want.Shard || !got.Due.Equal(want.Due) {
		t.Errorf("key = %+v, want %+v", got.MessageKey, want.MessageKey)
	}
	if withBody && !bytes.Equal(got.Body, want.Body) {
		t.Errorf("message %s: body %q, want %q", want.ID, got.Body, want.Body)
	}
	if !withBody && got.Body != nil {
		t.Errorf("message %s: body %q read without WithBody", want.ID, got.Body)
	}
	if withBody && !maps.Equal(got.Attributes, want.Attributes) {
		t.Errorf("message %s: attributes %v, want %v", want.ID, got.Attributes, want.Attributes)
	}
	if len(got.Attributes) == 0 && got.Attributes != nil {
		t.Errorf("message %s: no attributes read back as an empty map, want nil", want.ID)
	}
	if !got.EnqueuedAt.Equal(want.EnqueuedAt) || got.Deliveries != want.Deliveries ||
		!got.VisibleAt.Equal(want.VisibleAt) || got.LastError != want.LastError {
		t.Errorf("message %s: got enqueued %v deliveries %d visible %v error %q; want %v %d %v %q",
			want.ID, got.EnqueuedAt, got.Deliveries, got.VisibleAt, got.LastError,
			want.EnqueuedAt, want.Deliveries, want.VisibleAt, want.LastError)
	}
}

func exerciseQueueRecords(t *testing.T, d driver.Driver) {
	t.Run("CreateGetList", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		want := driver.Queue{
			Name: unique("q-rec"), Shards: 16, Spread: 1, Priorities: 1, ShardDuration: time.Minute,
			MaxDeliveries: 5, VisibilityTimeout: 30 * time.Second,
			CreatedAt: time.UnixMilli(1_700_000_000_123).UTC(),
		}
		if err := d.CreateQueue(c, &driver.CreateQueueParams{Queue: want}); err != nil {
			t.Fatalf("CreateQueue: %v", err)
		}
		got, err := d.GetQueue(c, &driver.GetQueueParams{Name: want.Name})
		if err != nil {
			t.Fatalf("GetQueue: %v", err)
		}
		wantRecord(t, "GetQueue", got, &got.CreatedAt, want, want.CreatedAt)
		// A spread is kept; a queue created with none reads back as 1.
		spread := want
		spread.Name, spread.Shards, spread.Spread = unique("q-spread"), 32, 8
		none := want
		none.Name, none.Spread = unique("q-nospread"), 0
		for _, q := range []driver.Queue{spread, none} {
			if err := d.CreateQueue(c, &driver.CreateQueueParams{Queue: q}); err != nil {
				t.Fatalf("CreateQueue(%s): %v", q.Name, err)
			}
			got, err := d.GetQueue(c, &driver.GetQueueParams{Name: q.Name})
			if err != nil {
				t.Fatalf("GetQueue(%s): %v", q.Name, err)
			}
			if w := max(q.Spread, 1); got.Spread != w {
				t.Errorf("queue %s created with spread %d reads back spread %d, want %d", q.Name, q.Spread, got.Spread, w)
			}
		}
		// So are priority levels, with and without a spread, and through
		// a delete and the name made again.
		levels := want
		levels.Name, levels.Shards, levels.Spread, levels.Priorities = unique("q-levels"), 32, 8, 3
		if err := d.CreateQueue(c, &driver.CreateQueueParams{Queue: levels}); err != nil {
			t.Fatalf("CreateQueue(%s): %v", levels.Name, err)
		}
		other := levels
		other.Priorities = 2
		if err := d.CreateQueue(c, &driver.CreateQueueParams{Queue: other}); !errors.Is(err, driver.ErrExists) {
			t.Errorf("CreateQueue(%s) with another number of levels = %v, want ErrExists", levels.Name, err)
		}
		got, err = d.GetQueue(c, &driver.GetQueueParams{Name: levels.Name})
		if err != nil || got.Priorities != 3 || got.Spread != 8 {
			t.Fatalf("queue %s created with 3 levels reads back %+v, %v", levels.Name, got, err)
		}
		deleted := *got
		deleted.DeletedAt = levels.CreatedAt.Add(time.Minute)
		if err := d.DeleteQueue(c, &driver.DeleteQueueParams{Name: levels.Name, CreatedAt: got.CreatedAt, At: deleted.DeletedAt}); err != nil {
			t.Fatalf("DeleteQueue(%s): %v", levels.Name, err)
		}
		again := levels
		again.Priorities, again.Generation, again.CreatedAt = 4, 1, levels.CreatedAt.Add(2*time.Minute)
		if err := d.CreateQueue(c, &driver.CreateQueueParams{Queue: again, Replaces: &deleted}); err != nil {
			t.Fatalf("CreateQueue(%s) replacing the deleted record: %v", levels.Name, err)
		}
		if got, err := d.GetQueue(c, &driver.GetQueueParams{Name: levels.Name}); err != nil || got.Priorities != 4 || got.Generation != 1 {
			t.Errorf("queue %s made again with 4 levels reads back %+v, %v", levels.Name, got, err)
		}
		list, err := d.ListQueues(c, &driver.ListQueuesParams{})
		if err != nil {
			t.Fatalf("ListQueues: %v", err)
		}
		found := false
		for i, q := range list {
			if i > 0 && list[i-1].Name >= q.Name {
				t.Errorf("ListQueues not sorted: %q before %q", list[i-1].Name, q.Name)
			}
			found = found || q.Name == want.Name
		}
		if !found {
			t.Errorf("ListQueues misses %q", want.Name)
		}
	})

	t.Run("GetMissing", func(t *testing.T) {
		t.Parallel()
		_, err := d.GetQueue(ctx(t), &driver.GetQueueParams{Name: unique("q-missing")})
		if !errors.Is(err, driver.ErrNotFound) {
			t.Fatalf("GetQueue of a missing queue: got %v, want ErrNotFound", err)
		}
	})

	t.Run("RacingCreatesOneWinner", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		name := unique("q-race")
		const racers = 4
		errs := race(racers, func(i int) error {
			return d.CreateQueue(c, &driver.CreateQueueParams{Queue: driver.Queue{
				Name: name, Shards: 4 + i, ShardDuration: time.Minute, MaxDeliveries: 5,
				VisibilityTimeout: time.Second, CreatedAt: time.UnixMilli(int64(i)).UTC(),
			}})
		})
		winner := oneWinner(t, "creates", errs, driver.ErrExists)
		got, err := d.GetQueue(c, &driver.GetQueueParams{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		if got.Shards != 4+winner {
			t.Errorf("stored %d shards, want the winner's %d", got.Shards, 4+winner)
		}
	})
	t.Run("DeleteAndReplace", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		first := driver.Queue{
			Name: unique("q-del"), Shards: 4, Spread: 1, Priorities: 1, ShardDuration: time.Minute,
			MaxDeliveries: 5, VisibilityTimeout: time.Second,
			CreatedAt: time.UnixMilli(1_700_000_000_000).UTC(),
		}
		if err := d.CreateQueue(c, &driver.CreateQueueParams{Queue: first}); err != nil {
			t.Fatal(err)
		}
		// Only the record made at CreatedAt is deleted.
		other := &driver.DeleteQueueParams{Name: first.Name, CreatedAt: first.CreatedAt.Add(time.Millisecond), At: time.UnixMilli(1_700_000_001_000)}
		if err := d.DeleteQueue(c, other); !errors.Is(err, driver.ErrNotFound) {
			t.Fatalf("DeleteQueue of another creation: got %v, want ErrNotFound", err)
		}
		if err := d.DeleteQueue(c, &driver.DeleteQueueParams{Name: unique("q-del-missing"), CreatedAt: first.CreatedAt, At: time.UnixMilli(1)}); !errors.Is(err, driver.ErrNotFound) {
			t.Fatalf("DeleteQueue of a missing queue: got %v, want ErrNotFound", err)
		}
		deletedAt := time.UnixMilli(1_700_000_002_345).UTC()
		// Racing deletes: exactly one succeeds.
		errs := race(3, func(i int) error {
			return d.DeleteQueue(c, &driver.DeleteQueueParams{Name: first.Name, CreatedAt: first.CreatedAt, At: deletedAt.Add(time.Duration(i) * time.Millisecond)})
		})
		won := oneWinner(t, "deletes", errs, driver.ErrNotFound)
		deletedAt = deletedAt.Add(time.Duration(won) * time.Millisecond)
		got, err := d.GetQueue(c, &driver.GetQueueParams{Name: first.Name})
		if err != nil {
			t.Fatal(err)
		}
		want := first
		want.DeletedAt = deletedAt
		wantRecord(t, "GetQueue after the delete", got, &got.CreatedAt, want, want.CreatedAt)
		if !got.DeletedAt.Equal(deletedAt) || got.Generation != 0 {
			t.Fatalf("deleted record: generation %d, deleted at %v; want 0, %v", got.Generation, got.DeletedAt, deletedAt)
		}
		// The name stays taken for a plain create.
		next := first
		next.Shards, next.Generation, next.CreatedAt = 8, 1, time.UnixMilli(1_700_000_100_000).UTC()
		if err := d.CreateQueue(c, &driver.CreateQueueParams{Queue: driver.Queue{Name: first.Name, Shards: 4, ShardDuration: time.Minute, CreatedAt: next.CreatedAt}}); !errors.Is(err, driver.ErrExists) {
			t.Fatalf("plain CreateQueue over a deleted record: got %v, want ErrExists", err)
		}
		// A replace names the deleted record exactly.
		stale := *got
		stale.DeletedAt = stale.DeletedAt.Add(time.Millisecond)
		if err := d.CreateQueue(c, &driver.CreateQueueParams{Queue: next, Replaces: &stale}); !errors.Is(err, driver.ErrExists) {
			t.Fatalf("CreateQueue replacing another deletion: got %v, want ErrExists", err)
		}
		// Racing replaces: exactly one wins.
		errs = race(3, func(i int) error {
			q := next
			q.Shards = 8 + i
			return d.CreateQueue(c, &driver.CreateQueueParams{Queue: q, Replaces: got})
		})
		won = oneWinner(t, "replaces", errs, driver.ErrExists)
		again, err := d.GetQueue(c, &driver.GetQueueParams{Name: first.Name})
		if err != nil {
			t.Fatal(err)
		}
		if again.Generation != 1 || !again.DeletedAt.IsZero() || again.Shards != 8+won || !again.CreatedAt.Equal(next.CreatedAt) {
			t.Fatalf("replaced record: %+v; want generation 1, live, %d shards, made at %v", again, 8+won, next.CreatedAt)
		}
		// A replace of a live record is refused.
		if err := d.CreateQueue(c, &driver.CreateQueueParams{Queue: next, Replaces: again}); !errors.Is(err, driver.ErrExists) {
			t.Fatalf("CreateQueue replacing a live record: got %v, want ErrExists", err)
		}
		list, err := d.ListQueues(c, &driver.ListQueuesParams{})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range list {
			if q.Name == first.Name && q.Generation != 1 {
				t.Errorf("ListQueues has generation %d, want 1", q.Generation)
			}
		}
	})
}

// oneWinner checks that exactly one of racing calls succeeded and every
// other was refused with refused, and returns the winner's index.
func oneWinner(t *testing.T, what string, errs []error, refused error) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner < 0:
			winner = i
		case err == nil:
			t.Fatalf("racing %s: %d and %d both succeeded", what, winner, i)
		case !errors.Is(err, refused):
			t.Fatalf("racing %s: %d: %v", what, i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("racing %s: none succeeded: %v", what, errs)
	}
	return winner
}

func exerciseMessages(t *testing.T, d driver.Driver) {
	t.Run("PutReadOrderAndRange", func(t *testing.T) {
		t.Parallel()
		q := unique("q-msgs")
		// Put out of order, two with the same due time, one in another
		// shard and one in a queue whose name extends this one's.
		a := msg(3*time.Second, base, "a")
		b := msg(time.Second, base, "b")
		c1 := msg(2*time.Second, base, "c1")
		c2 := msg(2*time.Second, base, "c2")
		other := msg(2*time.Second, base, "other shard")
		other.Shard = 1
		mustPut(t, d, q, a, b, c2)
		mustPut(t, d, q, c1, other)
		mustPut(t, d, q+"x", msg(2*time.Second, base, "other queue"))

		all := mustReadMessages(t, d, driver.ReadMessagesParams{Queue: q, From: base, To: base.Add(time.Hour), Limit: 100, WithBody: true})
		if len(all.Messages) != 4 || len(all.Fragments) != 0 {
			t.Fatalf("read %d messages and %d fragments, want 4 and 0", len(all.Messages), len(all.Fragments))
		}
		// c1 got its id before c2 (newID is monotonic), so ties go c1, c2.
		want := []driver.Message{b, c1, c2, a}
		if !slices.Equal(ids(all.Messages), ids(want)) {
			t.Fatalf("order %v, want %v (due, then id time)", ids(all.Messages), ids(want))
		}
		for i := range want {
			sameMessage(t, all.Messages[i], want[i], true)
		}

		// Both bounds are inclusive.
		part := mustReadMessages(t, d, driver.ReadMessagesParams{Queue: q, From: base.Add(time.Second), To: base.Add(2 * time.Second), Limit: 100})
		if got := ids(part.Messages); !slices.Equal(got, ids(want[:3])) {
			t.Errorf("range [1s, 2s] read %v, want %v", got, ids(want[:3]))
		}
		for _, m := range part.Messages {
			if m.Body != nil {
				t.Errorf("body returned without WithBody")
			}
		}
		lim := mustReadMessages(t, d, driver.ReadMessagesParams{Queue: q, From: base, To: base.Add(time.Hour), Limit: 2})
		if got := ids(lim.Messages); !slices.Equal(got, ids(want[:2])) {
			t.Errorf("limit 2 read %v, want %v", got, ids(want[:2]))
		}
		none := mustReadMessages(t, d, driver.ReadMessagesParams{Queue: q, From: base.Add(4 * time.Second), To: base.Add(time.Hour), Limit: 10})
		if len(none.Messages) != 0 {
			t.Errorf("read %d messages past the last due time", len(none.Messages))
		}
		s1 := mustReadMessages(t, d, driver.ReadMessagesParams{Queue: q, Shard: 1, From: base, To: base.Add(time.Hour), Limit: 10, WithBody: true})
		if len(s1.Messages) != 1 || string(s1.Messages[0].Body) != "other shard" {
			t.Errorf("shard 1 holds %+v, want the one message put there", s1.Messages)
		}
	})

	t.Run("MillisecondsAndEmptyBody", func(t *testing.T) {
		t.Parallel()
		q := unique("q-ms")
		m := msg(0, base.Add(1234567*time.Nanosecond), "")
		m.Body = []byte{}
		mustPut(t, d, q, m)
		page := mustReadMessages(t, d, driver.ReadMessagesParams{Queue: q, From: base, To: base.Add(time.Second), Limit: 10, WithBody: true})
		if len(page.Messages) != 1 {
			t.Fatalf("read %d messages, want 1", len(page.Messages))
		}
		got := page.Messages[0]
		if want := base.Add(time.Millisecond); !got.Due.Equal(want) || !got.EnqueuedAt.Equal(want) {
			t.Errorf("due %v, enqueued %v; want both truncated to %v", got.Due, got.EnqueuedAt, want)
		}
		if got.Body == nil || len(got.Body) != 0 {
			t.Errorf("empty body read back as %#v, want an empty non-nil slice", got.Body)
		}
		if !got.VisibleAt.IsZero() {
			t.Errorf("VisibleAt = %v, want zero", got.VisibleAt)
		}
	})

	t.Run("GetUpdateDelete", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		q := unique("q-upd")
		m := msg(0, base, "payload")
		mustPut(t, d, q, m)
		got, err := d.GetMessage(c, &driver.GetMessageParams{Queue: q, Key: m.MessageKey})
		if err != nil {
			t.Fatalf("GetMessage: %v", err)
		}
		sameMessage(t, *got, m, true)

		u := m
		u.Body = []byte("ignored")
		u.Deliveries, u.VisibleAt, u.LastError = 3, base.Add(time.Minute), "boom"
		if err := d.UpdateMessages(c, &driver.UpdateMessagesParams{Queue: q, Updates: []driver.Message{u}}); err != nil {
			t.Fatalf("UpdateMessages: %v", err)
		}
		got, err = d.GetMessage(c, &driver.GetMessageParams{Queue: q, Key: m.MessageKey})
		if err != nil {
			t.Fatalf("GetMessage after update: %v", err)
		}
		want := m
		want.Deliveries, want.VisibleAt, want.LastError = 3, base.Add(time.Minute), "boom"
		sameMessage(t, *got, want, true)

		// Clearing VisibleAt and LastError works too.
		u.VisibleAt, u.LastError = time.Time{}, ""
		if err := d.UpdateMessages(c, &driver.UpdateMessagesParams{Queue: q, Updates: []driver.Message{u}}); err != nil {
			t.Fatalf("UpdateMessages: %v", err)
		}
		got, _ = d.GetMessage(c, &driver.GetMessageParams{Queue: q, Key: m.MessageKey})
		if got == nil || !got.VisibleAt.IsZero() || got.LastError != "" {
			t.Errorf("after clearing: %+v", got)
		}

		del := &driver.DeleteMessagesParams{Queue: q, Keys: []driver.MessageKey{m.MessageKey}}
		for range 2 { // deleting twice is harmless
			if err := d.DeleteMessages(c, del); err != nil {
				t.Fatalf("DeleteMessages: %v", err)
			}
		}
		if _, err := d.GetMessage(c, &driver.GetMessageParams{Queue: q, Key: m.MessageKey}); !errors.Is(err, driver.ErrNotFound) {
			t.Fatalf("GetMessage after delete: got %v, want ErrNotFound", err)
		}

		// An update that arrives after the delete must not bring the
		// message back (a fragment is allowed, and deleting it clears it).
		if err := d.UpdateMessages(c, &driver.UpdateMessagesParams{Queue: q, Updates: []driver.Message{u}}); err != nil {
			t.Fatalf("UpdateMessages of a deleted message: %v", err)
		}
		noResurrection(t, d, q, "a late update")
		if _, err := d.GetMessage(c, &driver.GetMessageParams{Queue: q, Key: m.MessageKey}); !errors.Is(err, driver.ErrNotFound) {
			t.Fatalf("GetMessage of a fragment: got %v, want ErrNotFound", err)
		}
	})

	t.Run("Attributes", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		q := unique("q-attrs")
		with := msg(0, base, "with")
		with.Attributes = map[string]string{"tenant": "acme", "trace": "", "ünïcode": "välue"}
		without := msg(time.Second, base, "without")
		mustPut(t, d, q, with, without)
		page := mustReadMessages(t, d, driver.ReadMessagesParams{Queue: q, From: base, To: base.Add(time.Hour), Limit: 10, WithBody: true})
		if len(page.Messages) != 2 {
			t.Fatalf("read %d messages, want 2", len(page.Messages))
		}
		sameMessage(t, page.Messages[0], with, true)
		sameMessage(t, page.Messages[1], without, true)

		// A delivery mark keeps them.
		marked := with
		marked.Attributes = nil // updates carry only delivery state
		marked.Deliveries, marked.VisibleAt, marked.LastError = 1, base.Add(time.Minute), "in flight"
		if err := d.UpdateMessages(c, &driver.UpdateMessagesParams{Queue: q, Updates: []driver.Message{marked}}); err != nil {
			t.Fatal(err)
		}
		got, err := d.GetMessage(c, &driver.GetMessageParams{Queue: q, Key: with.MessageKey})
		if err != nil {
			t.Fatal(err)
		}
		want := with
		want.Deliveries, want.VisibleAt, want.LastError = 1, base.Add(time.Minute), "in flight"
		sameMessage(t, *got, want, true)

		// So does a dead letter.
		if err := d.DeadLetter(c, &driver.DeadLetterParams{Queue: q, Letters: []driver.DeadLetter{{Message: want, DiedAt: base}, {Message: without, DiedAt: base}}}); err != nil {
			t.Fatal(err)
		}
		dead, err := d.ListDead(c, &driver.ListDeadParams{Queue: q})
		if err != nil || len(dead) != 2 {
			t.Fatalf("ListDead = %v, %v", dead, err)
		}
		wantDead := want
		wantDead.VisibleAt = time.Time{} // a dead letter is never hidden
		sameMessage(t, dead[0].Message, wantDead, true)
		sameMessage(t, dead[1].Message, without, true)
		one, err := d.ListDead(c, &driver.ListDeadParams{Queue: q, IDs: []driver.MessageID{with.ID}})
		if err != nil || len(one) != 1 || !maps.Equal(one[0].Attributes, with.Attributes) {
			t.Fatalf("ListDead by id = %v, %v", one, err)
		}
		noResurrection(t, d, q, "dead-lettering a message with attributes")

		// De-duplication tells attributes apart.
		dq := unique("q-attrs-dedup")
		first := msg(0, time.Now().UTC().Truncate(time.Millisecond), "same body")
		first.Attributes = map[string]string{"v": "1"}
		put := func(m driver.Message) *driver.PutDedupResult {
			t.Helper()
			r, err := d.PutDedupMessage(c, &driver.PutDedupParams{Queue: dq, DedupID: "d", Window: time.Minute, Message: m})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		if r := put(first); r.Duplicate {
			t.Fatalf("first put = %+v", r)
		}
		again := first
		again.ID = newID(first.Due)
		if r := put(again); !r.Duplicate || !r.SameBody {
			t.Fatalf("the same body and attributes = %+v, want a duplicate with SameBody", r)
		}
		for _, other := range []map[string]string{{"v": "2"}, nil, {"v": "1", "w": ""}} {
			m := first
			m.ID, m.Attributes = newID(first.Due), other
			if r := put(m); !r.Duplicate || r.SameBody {
				t.Fatalf("the same body with attributes %v = %+v, want a duplicate without SameBody", other, r)
			}
		}
		stored := mustReadMessages(t, d, driver.ReadMessagesParams{Queue: dq, From: time.UnixMilli(0), To: time.Now().Add(time.Hour), Limit: 10, WithBody: true})
		if len(stored.Messages) != 1 {
			t.Fatalf("%d messages stored under one dedup id", len(stored.Messages))
		}
		sameMessage(t, stored.Messages[0], first, true)
	})

	t.Run("ExtendVisibility", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		q := unique("q-ext")
		m := msg(0, base, "payload")
		mustPut(t, d, q, m)
		u := m
		u.Deliveries, u.VisibleAt, u.LastError = 2, base.Add(time.Minute), "delivery 2 (consumer x) was not acknowledged"
		if err := d.UpdateMessages(c, &driver.UpdateMessagesParams{Queue: q, Updates: []driver.Message{u}}); err != nil {
			t.Fatal(err)
		}
		wrote, err := d.ExtendVisibility(c, &driver.ExtendVisibilityParams{Queue: q, Key: m.MessageKey, Deliveries: 2, VisibleAt: base.Add(time.Hour)})
		if err != nil || !wrote {
			t.Fatalf("ExtendVisibility: %v, %v", wrote, err)
		}
		got, err := d.GetMessage(c, &driver.GetMessageParams{Queue: q, Key: m.MessageKey})
		if err != nil {
			t.Fatal(err)
		}
		want := u
		want.Body, want.VisibleAt = m.Body, base.Add(time.Hour)
		sameMessage(t, *got, want, true) // every other field as it was

		if err := d.DeleteMessages(c, &driver.DeleteMessagesParams{Queue: q, Keys: []driver.MessageKey{m.MessageKey}}); err != nil {
			t.Fatal(err)
		}
		if _, err := d.ExtendVisibility(c, &driver.ExtendVisibilityParams{Queue: q, Key: m.MessageKey, Deliveries: 2, VisibleAt: base.Add(2 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if _, err := d.GetMessage(c, &driver.GetMessageParams{Queue: q, Key: m.MessageKey}); !errors.Is(err, driver.ErrNotFound) {
			t.Fatalf("an extension after the delete brought the message back: %v", err)
		}
		noResurrection(t, d, q, "a late extension")
	})
	t.Run("QueueShardStats", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		q := unique("q-stats")
		past1, past2, future := msg(-time.Minute, base, "p1"), msg(-time.Second, base, "p2"), msg(time.Hour, base, "f")
		mustPut(t, d, q, past1, past2, future)
		// The older due message was delivered and its visibility ended 10 s
		// ago: it has waited since then, not since it was due. The younger
		// one is in flight and does not wait at all.
		past1.Deliveries, past1.VisibleAt = 1, base.Add(-10*time.Second)
		past2.Deliveries, past2.VisibleAt = 1, base.Add(time.Minute)
		if err := d.UpdateMessages(c, &driver.UpdateMessagesParams{Queue: q, Updates: []driver.Message{past1, past2}}); err != nil {
			t.Fatal(err)
		}
		st, err := d.QueueShardStats(c, &driver.QueueShardStatsParams{Queue: q, Shard: 0, Now: base})
		if err != nil {
			t.Fatalf("QueueShardStats: %v", err)
		}
		if want := base.Add(-10 * time.Second); st.Messages != 3 || st.Due != 2 || st.InFlight != 1 || st.Holder != "" || !st.OldestWaiting.Equal(want) {
			t.Errorf("QueueShardStats = %+v, want 3 messages, 2 due, 1 in flight, no holder, waiting since %v", *st, want)
		}
		empty, err := d.QueueShardStats(c, &driver.QueueShardStatsParams{Queue: q, Shard: 3, Now: base})
		if err != nil || empty.Messages != 0 || empty.Due != 0 || !empty.OldestWaiting.IsZero() {
			t.Errorf("QueueShardStats of an empty shard = %+v, %v", empty, err)
		}
	})
}

func exerciseLeases(t *testing.T, d driver.Driver) {
	lease := func(q, holder string, ttl time.Duration) *driver.LeaseParams {
		return &driver.LeaseParams{Queue: q, Shard: 2, Holder: holder, Since: base, TTL: ttl}
	}
	t.Run("AcquireRenewRelease", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		q := unique("q-lease")
		st, err := d.ReadQueueShard(c, &driver.QueueShardParams{Queue: q, Shard: 2})
		if err != nil || st.Holder != "" || !st.Floor.IsZero() {
			t.Fatalf("ReadQueueShard of a new shard = %+v, %v; want free with no floor", st, err)
		}
		res, err := d.AcquireLease(c, lease(q, "alice", time.Minute))
		if err != nil || !res.Held {
			t.Fatalf("AcquireLease(alice) = %+v, %v; want held", res, err)
		}
		res, err = d.AcquireLease(c, lease(q, "bob", time.Minute))
		if err != nil || res.Held || res.Holder != "alice" {
			t.Fatalf("AcquireLease(bob) = %+v, %v; want refused, held by alice", res, err)
		}
		res, err = d.AcquireLease(c, lease(q, "alice", time.Minute))
		if err != nil || res.Held {
			t.Fatalf("second AcquireLease(alice) = %+v, %v; want refused (renew instead)", res, err)
		}
		st, err = d.ReadQueueShard(c, &driver.QueueShardParams{Queue: q, Shard: 2})
		if err != nil || st.Holder != "alice" || !st.Since.Equal(base) {
			t.Fatalf("ReadQueueShard = %+v, %v; want alice since %v", st, err, base)
		}
		if res, err := d.RenewLease(c, lease(q, "bob", time.Minute)); err != nil || res.Held || res.Holder != "alice" {
			t.Fatalf("RenewLease(bob) = %+v, %v; want refused", res, err)
		}
		if res, err := d.RenewLease(c, lease(q, "alice", time.Minute)); err != nil || !res.Held {
			t.Fatalf("RenewLease(alice) = %+v, %v; want held", res, err)
		}
		if res, err := d.ReleaseLease(c, lease(q, "bob", 0)); err != nil || res.Held {
			t.Fatalf("ReleaseLease(bob) = %+v, %v; want refused", res, err)
		}
		if res, err := d.ReleaseLease(c, lease(q, "alice", 0)); err != nil || !res.Held {
			t.Fatalf("ReleaseLease(alice) = %+v, %v; want released", res, err)
		}
		if res, err := d.RenewLease(c, lease(q, "alice", time.Minute)); err != nil || res.Held {
			t.Fatalf("RenewLease after release = %+v, %v; want refused", res, err)
		}
		if res, err := d.AcquireLease(c, lease(q, "bob", time.Minute)); err != nil || !res.Held {
			t.Fatalf("AcquireLease(bob) after release = %+v, %v; want held", res, err)
		}
		// Another shard of the same queue is independent.
		other := lease(q, "alice", time.Minute)
		other.Shard = 3
		if res, err := d.AcquireLease(c, other); err != nil || !res.Held {
			t.Fatalf("AcquireLease on shard 3 = %+v, %v; want held", res, err)
		}
	})

	t.Run("RacingAcquiresOneWinner", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		q := unique("q-lease-race")
		const racers = 4
		held := make([]bool, racers)
		errs := race(racers, func(i int) error {
			res, err := d.AcquireLease(c, lease(q, fmt.Sprint("c", i), time.Minute))
			held[i] = res.Held
			return err
		})
		winners := 0
		for i := range racers {
			if errs[i] != nil && !errors.Is(errs[i], driver.ErrUnknownOutcome) {
				t.Fatalf("racer %d: %v", i, errs[i])
			}
			if held[i] {
				winners++
			}
		}
		if winners > 1 {
			t.Fatalf("%d racers hold the lease", winners)
		}
		st, err := d.ReadQueueShard(c, &driver.QueueShardParams{Queue: q, Shard: 2})
		if err != nil {
			t.Fatal(err)
		}
		if winners == 1 && st.Holder == "" {
			t.Fatalf("a racer won but the shard is free")
		}
	})

	t.Run("TTLExpires", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		q := unique("q-lease-ttl")
		if res, err := d.AcquireLease(c, lease(q, "crashed", time.Second)); err != nil || !res.Held {
			t.Fatalf("AcquireLease = %+v, %v", res, err)
		}
		// Cassandra expires a TTL at a whole-second boundary, up to a
		// second later than asked.
		deadline := time.Now().Add(5 * time.Second)
		for {
			res, err := d.AcquireLease(c, lease(q, "successor", time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if res.Held {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a 1s lease was still held by %q after 5s", res.Holder)
			}
			time.Sleep(250 * time.Millisecond)
		}
		if res, err := d.RenewLease(c, lease(q, "crashed", time.Second)); err != nil || res.Held {
			t.Fatalf("the expired holder renewed: %+v, %v", res, err)
		}
	})

	t.Run("FloorIsKeptAcrossLeases", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		q := unique("q-floor")
		floor := base.Add(1500 * time.Microsecond)
		if err := d.SetFloor(c, &driver.SetFloorParams{Queue: q, Shard: 2, Floor: floor}); err != nil {
			t.Fatalf("SetFloor: %v", err)
		}
		if res, err := d.AcquireLease(c, lease(q, "h", time.Minute)); err != nil || !res.Held {
			t.Fatalf("AcquireLease = %+v, %v", res, err)
		}
		if res, err := d.ReleaseLease(c, lease(q, "h", 0)); err != nil || !res.Held {
			t.Fatalf("ReleaseLease = %+v, %v", res, err)
		}
		st, err := d.ReadQueueShard(c, &driver.QueueShardParams{Queue: q, Shard: 2})
		if err != nil {
			t.Fatal(err)
		}
		if want := base.Add(time.Millisecond); !st.Floor.Equal(want) || st.Holder != "" {
			t.Fatalf("ReadQueueShard = %+v, want free with floor %v", st, want)
		}
		later := base.Add(time.Hour)
		if err := d.SetFloor(c, &driver.SetFloorParams{Queue: q, Shard: 2, Floor: later}); err != nil {
			t.Fatal(err)
		}
		if st, _ := d.ReadQueueShard(c, &driver.QueueShardParams{Queue: q, Shard: 2}); st == nil || !st.Floor.Equal(later) {
			t.Fatalf("floor not replaced: %+v", st)
		}
	})
}

func exerciseDeadLetters(t *testing.T, d driver.Driver) {
	t.Run("MoveListRequeueDelete", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		q := unique("q-dead")
		m1, m2, keep := msg(0, base, "poison 1"), msg(time.Second, base, "poison 2"), msg(2*time.Second, base, "fine")
		m1.Deliveries, m1.LastError = 5, "handler failed"
		m2.Deliveries, m2.LastError, m2.Shard = 5, "", 1
		mustPut(t, d, q, m1, m2, keep)
		died := base.Add(time.Minute)
		letters := []driver.DeadLetter{{Message: m1, DiedAt: died}, {Message: m2, DiedAt: died}}
		for range 2 { // repeating is harmless
			if err := d.DeadLetter(c, &driver.DeadLetterParams{Queue: q, Letters: letters}); err != nil {
				t.Fatalf("DeadLetter: %v", err)
			}
		}
		for s := range 2 {
			page := mustReadMessages(t, d, driver.ReadMessagesParams{Queue: q, Shard: s, From: base.Add(-time.Hour), To: base.Add(time.Hour), Limit: 10})
			for _, m := range page.Messages {
				if m.ID == m1.ID || m.ID == m2.ID {
					t.Errorf("dead message %s is still queued", m.ID)
				}
			}
		}
		dead, err := d.ListDead(c, &driver.ListDeadParams{Queue: q})
		if err != nil {
			t.Fatalf("ListDead: %v", err)
		}
		if len(dead) != 2 || dead[0].ID != m1.ID || dead[1].ID != m2.ID {
			t.Fatalf("ListDead = %d letters, want m1 then m2", len(dead))
		}
		sameMessage(t, dead[0].Message, m1, true)
		sameMessage(t, dead[1].Message, m2, true)
		if !dead[0].DiedAt.Equal(died) {
			t.Errorf("DiedAt = %v, want %v", dead[0].DiedAt, died)
		}
		one, err := d.ListDead(c, &driver.ListDeadParams{Queue: q, IDs: []driver.MessageID{m2.ID}})
		if err != nil || len(one) != 1 || one[0].ID != m2.ID {
			t.Fatalf("ListDead by id = %v, %v", one, err)
		}
		if lim, err := d.ListDead(c, &driver.ListDeadParams{Queue: q, Limit: 1}); err != nil || len(lim) != 1 {
			t.Fatalf("ListDead with limit 1 = %d letters, %v", len(lim), err)
		}
		if err := d.DeleteDead(c, &driver.DeleteDeadParams{Queue: q, IDs: []driver.MessageID{m1.ID, newID(base)}}); err != nil {
			t.Fatalf("DeleteDead: %v", err)
		}
		left, err := d.ListDead(c, &driver.ListDeadParams{Queue: q})
		if err != nil || len(left) != 1 || left[0].ID != m2.ID {
			t.Fatalf("after DeleteDead: %v, %v", left, err)
		}
		if other, err := d.ListDead(c, &driver.ListDeadParams{Queue: q + "x"}); err != nil || len(other) != 0 {
			t.Fatalf("another queue sees %d dead letters, %v", len(other), err)
		}
	})
}

func exerciseDedup(t *testing.T, d driver.Driver) {
	// A message of shard 0 put now, so that the message it names is the
	// one a window later still finds.
	fresh := func(body string) driver.Message {
		now := time.Now().UTC().Truncate(time.Millisecond)
		return msg(0, now, body)
	}
	put := func(t *testing.T, q, id string, window time.Duration, m driver.Message) *driver.PutDedupResult {
		t.Helper()
		r, err := d.PutDedupMessage(ctx(t), &driver.PutDedupParams{Queue: q, DedupID: id, Window: window, Message: m})
		if err != nil {
			t.Fatalf("PutDedupMessage(%s): %v", id, err)
		}
		return r
	}
	stored := func(t *testing.T, q string) []driver.Message {
		t.Helper()
		return mustReadMessages(t, d, driver.ReadMessagesParams{
			Queue: q, Shard: 0, From: time.UnixMilli(0), To: time.Now().Add(time.Hour), Limit: 100, WithBody: true,
		}).Messages
	}
	t.Run("SecondPutIsADuplicate", func(t *testing.T) {
		t.Parallel()
		q := unique("q-dedup")
		first := fresh("order 17")
		if r := put(t, q, "order-17", time.Minute, first); r.Duplicate || r.Key.ID != first.ID {
			t.Fatalf("first put = %+v, want the message stored under its own key", r)
		}
		again := fresh("order 17")
		r := put(t, q, "order-17", time.Minute, again)
		if !r.Duplicate || !r.SameBody || r.Key.ID != first.ID || !r.Key.Due.Equal(first.Due) || r.Key.Shard != first.Shard {
			t.Fatalf("repeat = %+v, want a duplicate naming %s", r, first.ID)
		}
		other := fresh("order 17, changed")
		if r := put(t, q, "order-17", time.Minute, other); !r.Duplicate || r.SameBody || r.Key.ID != first.ID {
			t.Fatalf("repeat with another body = %+v, want a duplicate with SameBody false", r)
		}
		ms := stored(t, q)
		if len(ms) != 1 {
			t.Fatalf("%d messages stored, want 1: %v", len(ms), ids(ms))
		}
		sameMessage(t, ms[0], first, true)
		if r := put(t, q, "order-18", time.Minute, fresh("order 18")); r.Duplicate {
			t.Fatalf("another id = %+v, want it stored", r)
		}
	})
	t.Run("RepeatAfterDeliveryAndAckChangesNothing", func(t *testing.T) {
		t.Parallel()
		c := ctx(t)
		q := unique("q-dedup-ack")
		m := fresh("pay invoice 9")
		put(t, q, "inv-9", time.Minute, m)
		marked := m
		marked.Deliveries, marked.VisibleAt, marked.LastError = 1, m.Due.Add(30*time.Second), "delivery 1 in flight"
		if err := d.UpdateMessages(c, &driver.UpdateMessagesParams{Queue: q, Updates: []driver.Message{marked}}); err != nil {
			t.Fatal(err)
		}
		put(t, q, "inv-9", time.Minute, fresh("pay invoice 9"))
		got, err := d.GetMessage(c, &driver.GetMessageParams{Queue: q, Key: m.MessageKey})
		if err != nil {
			t.Fatal(err)
		}
		sameMessage(t, *got, marked, true) // the repeat rolled no delivery back
		if err := d.DeleteMessages(c, &driver.DeleteMessagesParams{Queue: q, Keys: []driver.MessageKey{m.MessageKey}}); err != nil {
			t.Fatal(err)
		}
		if r := put(t, q, "inv-9", time.Minute, fresh("pay invoice 9")); !r.Duplicate {
			t.Fatalf("repeat after the ack = %+v, want a duplicate", r)
		}
		if ms := stored(t, q); len(ms) != 0 {
			t.Fatalf("a repeat after the ack brought back %v", ids(ms))
		}
	})
	t.Run("RacingPutsStoreOne", func(t *testing.T) {
		t.Parallel()
		q := unique("q-dedup-race")
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			keys = map[driver.MessageID]int{}
			news int
		)
		for range 6 {
			wg.Go(func() {
				r, err := d.PutDedupMessage(ctx(t), &driver.PutDedupParams{Queue: q, DedupID: "one", Window: time.Minute, Message: fresh("same")})
				if err != nil {
					t.Errorf("racing PutDedupMessage: %v", err)
					return
				}
				mu.Lock()
				keys[r.Key.ID]++
				if !r.Duplicate {
					news++
				}
				mu.Unlock()
			})
		}
		wg.Wait()
		if len(keys) != 1 || news != 1 {
			t.Fatalf("6 racing puts answered keys %v with %d new, want one key and one new", keys, news)
		}
		if ms := stored(t, q); len(ms) != 1 {
			t.Fatalf("%d messages stored, want 1", len(ms))
		}
	})
	t.Run("AfterTheWindowANewMessage", func(t *testing.T) {
		t.Parallel()
		q := unique("q-dedup-window")
		first := fresh("tick")
		put(t, q, "tick", time.Second, first)
		time.Sleep(2100 * time.Millisecond) // Cassandra's TTLs count whole seconds
		if r := put(t, q, "tick", time.Second, fresh("tick")); r.Duplicate {
			t.Fatalf("put after the window = %+v, want a new message", r)
		}
		if ms := stored(t, q); len(ms) != 2 {
			t.Fatalf("%d messages stored, want 2", len(ms))
		}
	})
	t.Run("RefusesBadParams", func(t *testing.T) {
		t.Parallel()
		q := unique("q-dedup-bad")
		for _, p := range []driver.PutDedupParams{
			{Queue: q, DedupID: "", Window: time.Minute, Message: fresh("x")},
			{Queue: q, DedupID: string(make([]byte, driver.MaxDedupIDLen+1)), Window: time.Minute, Message: fresh("x")},
			{Queue: q, DedupID: "w", Window: 0, Message: fresh("x")},
		} {
			if _, err := d.PutDedupMessage(ctx(t), &p); err == nil {
				t.Errorf("PutDedupMessage(id %d bytes, window %v) succeeded", len(p.DedupID), p.Window)
			}
		}
		if ms := stored(t, q); len(ms) != 0 {
			t.Fatalf("refused puts stored %v", ids(ms))
		}
	})
}
