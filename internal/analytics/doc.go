// Package analytics records what this broker process does and builds the status and
// analytics reports of the HTTP API from it.
//
// A [Service] has three parts. The recorder counts requests per bucket (a minute, or
// Config.Bucket: QUEEN_ANALYTICS_BUCKET) under one mutex and never runs SQL: the broker
// calls its Record methods on the request paths. The loop started by [Service.Run]
// samples process gauges (parked long-polls, the connection pool, scheduler delay, CPU
// and memory) every second and writes each closed bucket to the analytics tables
// (queue_activity, worker_activity, queue_parked_activity, system_activity), adding to
// what other processes wrote for the same bucket; with a FlushInterval under the bucket
// width it also writes the open bucket's counts so far every interval, and the parts
// add up to the same rows. The series views of windows up to an hour use the bucket
// width too; wider windows sum its rows into 5, 15, 60 or 360 minutes. The
// report methods read those tables and the live status queries through the store and
// render the api wire types; that rendering happens here and nowhere else. The status,
// overview and queue reports also serve a tenant scope (Filter.Scope): they count the
// tenant's queues only, in SQL, answer relative names, and leave the per-broker parts
// (workers, process gauges, replicas) empty or zero in the same wire shape.
//
// [Service.Flushes] counts the flushes that succeeded, once their rows are written:
// tests wait on it (progress.Signal.WaitFor) rather than poll the reports.
//
// It imports api, progress, queue and store; the SQL stays in store.
package analytics
