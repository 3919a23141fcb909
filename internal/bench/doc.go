// Package bench measures queen against the PostgreSQL it runs on (docs/benchmarks.md).
// One run creates a scratch database on the given cluster, starts bin/queen on it as a
// child process, labels the report with the server's durability profile (durable,
// fast or custom, read with SHOW, see profileLabel), and measures:
//
//  1. raw ceilings, with the broker idle, each right before its broker case: multi-row
//     inserts of message rows shaped like push_q2's (same table, indexes, casts), and
//     claim cycles over the same cursor and lookup tables that pop_q1 uses: the
//     two-commit cycle (claim with a lease and read, commit; advance, commit), the
//     ceiling of every pop+ack case, and the one-statement cycle as a reference. All
//     their SQL is in raw.go; choosing the partition is one constant there;
//  2. the broker through HTTP: push and pop+ack at several batch sizes and partition
//     counts (the partition axis, 100 to 100 000), fan-out to consumer groups, mixed
//     sustained load with end-to-end latency (flat out, then paced), long-poll wake-up
//     latency, and its own footprint read from /proc.
//
// Every throughput is paired with the raw ceiling measured with the same batch size,
// the same number of concurrent clients and the same partition layout, so the ratio
// says how much of what PostgreSQL allows the broker delivers. Absolute numbers depend
// on the machine; ratios travel.
//
// With Options.URL the run measures a broker someone else started, through HTTP only:
// no database, no raw ceilings, no footprint, a queue of its own per case (deleted at
// the end when the broker can).
//
// The package is a tool, not part of the daemon: it is the one place outside store,
// schema and pgtest allowed to speak pgx (the ceilings need raw SQL), and it never
// reads the environment itself (cmd/queen-bench passes it in).
package bench
