// Package meter counts each tenant's activity per UTC minute in memory and flushes
// the counts to the proxy database with replace semantics: a replica writes its whole
// count of a minute each time, under a replica id new per process, so a re-flush or a
// retried commit never double counts. Minutes that cannot be flushed wait in memory
// for up to 60 minutes and are then dropped with an Error log. The same loop runs the
// leader-gated hourly rollup.
package meter
