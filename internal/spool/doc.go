// Package spool is queen's disk spool (upstream's "file buffer"): an append-only,
// fsynced, CRC-framed log of push items, written while PostgreSQL cannot take them
// (an outage, or push maintenance mode) and replayed by the broker's drainer when it
// can. It knows nothing of SQL.
//
// # Directory (FILE_BUFFER_DIR)
//
//	.lock                          flock held by the owning process (one process per directory)
//	segment-<seq, 16 hex>.spool    segments, replayed in seq order; appends go to the newest
//	drain.pos                      {"file","offset"}: how far the drainer got in the oldest file
//	dead/quarantine-<time>.spool   records the database refused (same framing, "error" key added)
//	dead/<segment>.corrupt         drained segments that had corrupt regions, kept for inspection
//	failover_*.buf[.tmp], failed/failover_*.buf[.tmp]
//	                               upstream Queen's files, replayed first, then deleted
//
// # Segment format (version 1)
//
//	header   "QSPL" 01 00 00 00                       8 bytes
//	record   F5 'Q' 'S' 01 | len u32 LE | crc u32 LE | body (len bytes)
//	record   ...
//
// crc is CRC-32C (Castagnoli) over the 4 length bytes followed by the body. The body
// is upstream's failover event JSON ({queue, partition, payload, failover,
// transactionId, traceId?, producerSub?}) plus queen's spooledAt (Unix ms), so one
// decoder serves both formats. Upstream's own files (a bare 4-byte length and the
// JSON, no checksum) are recognised by name and read with upstream's rules; queen
// never writes that format.
//
// The marker's first byte, 0xF5, never occurs in UTF-8 and so never inside a body:
// when a record fails its checks (torn write, flipped bit, garbage) the reader
// reports the bytes up to the next intact record as one corrupt region and goes on,
// so a damaged record in the middle of a file costs that record only, and a torn
// tail costs the tail only. Corrupt regions are logged and counted in [Stats].
//
// # Durability
//
// Append writes a request's records with one write and returns after fsync;
// concurrent appends share one fsync (group commit). A failed write or fsync is cut
// back (truncate), so a record is replayed only if its Append returned nil. New
// segments are fsynced with their directory entry before the first record goes in.
// The drain position is written after every commit but not fsynced: after a crash
// the drainer may replay some records again, which the broker makes harmless by
// deduplicating on the transaction id.
package spool
