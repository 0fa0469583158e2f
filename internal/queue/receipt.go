package queue

import (
	"strconv"
	"strings"
	"time"

	"github.com/abacusdb/abacus/driver"
	"github.com/abacusdb/abacus/internal/queue/shard"
)

// A receipt names one delivery of one message, so that whoever handled it
// can acknowledge it later, from any process: it carries the message's key
// (shard, due time, id) and the delivery's number. It is plain text,
//
//	1.<shard>.<due, Unix ms>.<id>.<delivery number>
//
// for example 1.7.1700000000123.6ba7b810-9dad-11d1-80b4-00c04fd430c8.2.
// Receipts come back from clients, so decoding is strict: one spelling per
// receipt, and anything else is refused.
type receipt struct {
	Key        driver.MessageKey
	Deliveries int
}

const receiptVersion = "1"

func (r receipt) String() string {
	var b strings.Builder
	b.WriteString(receiptVersion)
	b.WriteByte('.')
	b.WriteString(strconv.Itoa(r.Key.Shard))
	b.WriteByte('.')
	b.WriteString(strconv.FormatInt(r.Key.Due.UnixMilli(), 10))
	b.WriteByte('.')
	b.WriteString(r.Key.ID.String())
	b.WriteByte('.')
	b.WriteString(strconv.Itoa(r.Deliveries))
	return b.String()
}

// parseReceipt decodes a receipt, refusing anything String would not have
// written.
func parseReceipt(s string) (receipt, error) {
	var r receipt
	parts := strings.Split(s, ".")
	if len(parts) != 5 || parts[0] != receiptVersion {
		return r, invalidf("receipt %q is not a receipt of this version", clip(s))
	}
	shardN, err := strconv.Atoi(parts[1])
	if err != nil || shardN < 0 || shardN >= shard.MaxShards || strconv.Itoa(shardN) != parts[1] {
		return r, invalidf("receipt %q has a bad shard", clip(s))
	}
	dueMS, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || strconv.FormatInt(dueMS, 10) != parts[2] {
		return r, invalidf("receipt %q has a bad due time", clip(s))
	}
	id, err := driver.ParseMessageID(parts[3])
	if err != nil || id.String() != parts[3] {
		return r, invalidf("receipt %q has a bad message id", clip(s))
	}
	n, err := strconv.Atoi(parts[4])
	if err != nil || n < 1 || strconv.Itoa(n) != parts[4] {
		return r, invalidf("receipt %q has a bad delivery number", clip(s))
	}
	r.Key = driver.MessageKey{Shard: shardN, Due: time.UnixMilli(dueMS).UTC(), ID: id}
	r.Deliveries = n
	return r, nil
}

// clip shortens untrusted text quoted in error messages.
func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}
