// Package analytics records what this broker process does and builds the status and
// analytics reports of the HTTP API from it.
//
// A [Service] has three parts. The recorder counts requests per minute under one
// mutex and never runs SQL: the broker calls its Record methods on the request paths.
// The loop started by [Service.Run] samples process gauges (parked long-polls, the
// connection pool, scheduler delay, CPU and memory) every second and writes each
// closed minute to the analytics tables (queue_activity, worker_activity,
// queue_parked_activity, system_activity), adding to what other processes wrote for
// the same minute; with a FlushInterval under a minute it also writes the open
// minute's counts so far every interval, and the parts add up to the same rows. The
// report methods read those tables and the live status queries through the store and
// render the api wire types; that rendering happens here and nowhere else.
//
// It imports api, queue and store; the SQL stays in store.
package analytics
