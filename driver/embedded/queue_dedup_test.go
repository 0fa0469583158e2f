package embedded

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/abacusdb/abacus/driver"
)

// Expired dedup records are deleted by later puts a few at a time, so the
// store holds about a window's worth, without any put scanning them all.
func TestExpiredDedupRecordsArePurged(t *testing.T) {
	d := openMem(t)
	ctx := context.Background()
	seq := byte(0)
	put := func(id string, window time.Duration) {
		t.Helper()
		seq++
		now := time.Now().UTC().Truncate(time.Millisecond)
		m := driver.Message{MessageKey: driver.MessageKey{Due: now, ID: driver.MessageID{0x42, seq, 6: 0x11, 8: 0x80}}, Body: []byte(id), EnqueuedAt: now}
		if _, err := d.PutDedupMessage(ctx, &driver.PutDedupParams{Queue: "q", DedupID: id, Window: window, Message: m}); err != nil {
			t.Fatal(err)
		}
	}
	records := func() int {
		t.Helper()
		return countKeys(t, d, appendComponent([]byte{tableQueueDedup}, "q"), nil)
	}
	for i := range 20 {
		put(fmt.Sprintf("short-%02d", i), time.Millisecond)
	}
	time.Sleep(5 * time.Millisecond)
	for i := range 10 {
		put(fmt.Sprintf("long-%02d", i), time.Hour)
	}
	// 10 puts examined 40 records, enough to walk past all 20 expired
	// ones whatever the walk's starting point.
	if n := records(); n != 10 {
		t.Fatalf("%d dedup records left, want the 10 live ones", n)
	}
}
