// Package bench measures queen against the PostgreSQL it runs on (issue 9,
// docs/benchmarks.md). One run creates a scratch database on the given cluster, starts
// bin/queen on it as a child process, and measures:
//
//  1. raw ceilings, with the broker idle (each right before its broker case): multi-row inserts of message rows shaped like
//     push_q2's (same table, same indexes, same casts), and a one-statement
//     claim→read→advance cycle over the same cursor and lookup tables that pop_q1 uses;
//  2. the broker through HTTP: push, pop+ack in queue mode, fan-out to consumer groups,
//     long-poll wake-up latency, and its own footprint read from /proc.
//
// Every throughput is paired with the raw ceiling measured with the same batch size,
// the same number of concurrent clients and the same partition layout, so the ratio
// says how much of what PostgreSQL allows the broker delivers. Absolute numbers depend
// on the machine; ratios travel.
//
// The package is a tool, not part of the daemon: it is the one place outside store,
// schema and pgtest allowed to speak pgx (the ceilings need raw SQL), and it never
// reads the environment itself (cmd/queen-bench passes it in).
package bench
