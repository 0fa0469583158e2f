// Package shard is the queue's shard math: which shard a point in time
// belongs to, which shard producers write and which one consumers read. It
// is pure arithmetic on time.Time values, with no I/O, so it is easy to test
// at awkward instants (midnight, New Year, leap days).
//
// # Buckets and shards
//
// Time is cut into windows of one shard duration (a minute by default),
// counted from the Unix epoch: window k covers [k·d, (k+1)·d). A window's
// shard is k mod N, so consecutive windows use consecutive shards and every
// shard comes round again after N windows (one rotation).
//
// The original design numbers minutes as YYYYdddHHMM (year, day of year, hour,
// minute) and takes that number mod N. Those stamps skip values at the end
// of every hour, day and year (…59 is followed by …00 of the next hour, 41
// numbers on), so consecutive minutes do not land on consecutive shards
// there, and for some N the consumer's shard two minutes back collides with
// the producers' current one. Counting windows from the epoch keeps the
// rotation regular at every boundary; SeedStamp keeps the design's numbering
// for comparison (the tests show the collision) and Label prints a window in
// the design's readable form.
//
// # Producers and consumers
//
// Producers write into the shard of the current window. Consumers work the
// shard Lag (two) windows back: with clocks up to one window apart, a
// producer and a consumer still never meet in the same shard, which is why
// a queue needs at least MinShards (four) shards — Lag windows of distance
// in both directions.
//
// # Spread
//
// A queue may give each window several shards (a spread S): the N shards
// form N/S groups of S consecutive shards, window k writes group k mod
// (N/S), and each put picks one shard of the group. Groups rotate as
// single shards do with spread 1, which is the layout above, so a queue
// needs MinShards groups. ShardOf, Producer and Consumer name a window's
// first shard; WindowShards names them all.
package shard
