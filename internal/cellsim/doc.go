// Package cellsim simulates queen at a scale of cells on one machine: N cells, each a
// small private PostgreSQL cluster of its own (pgtest.StartCluster, shared_buffers
// 16 MB, fsync off as in every test cluster here) with one lightweight broker
// (tenancy header on, a small pool) run in the test process, and one queen-proxy in
// front of them, every cell registered over the proxy's admin API
// (POST /admin/v1/cells). It is a test-only package: never import it from non-test
// code.
//
// [Run] places [Config.Tenants] tenants through the admin API (POST
// /admin/v1/tenants without a cell, so the proxy's placement policy picks one), gives
// each an API key, and runs a load through the proxy's public port with those keys:
// producers push to two partitions of one queue per tenant, every message carrying
// (tenant, partition, sequence) in its payload and a transaction id made of the same
// three, and consumers in two consumer groups pop and ack. While the load runs it
// moves [Config.Moves] tenants to another cell (POST /admin/v1/tenants/{id}/move) and
// waits for each move (GET /admin/v1/moves/{id}) until it is done or failed.
//
// The checker ([History]) is fed every push answer, delivery and ack answer and
// counts, per tenant and per (partition, consumer group):
//
//   - lost: a message whose push was answered queued (or duplicate, on a retry) that
//     no consumer of the group acked by the end;
//   - duplicated: a delivery of a message the group had already acked;
//   - redelivered: a delivery of a message the group had received but not acked (its
//     ack failed, its answer was lost, or its lease expired): allowed, counted apart;
//   - out of order: a first delivery to a group of a message while an older one of
//     the same partition had not yet been delivered to it (producers push one
//     partition's messages one request after the other, so sequence order is commit
//     order);
//   - foreign: a delivery to one tenant's consumer of another tenant's message.
//
// At the end the cells' databases are queried directly: every tenant's queues,
// partitions, consumer cursors and messages must exist in exactly one cell, the one
// the proxy says it lives in, and the load queue there must hold each pushed message
// once. The routing overhead is measured in the same run: the same one-message push,
// alternately through the proxy (with the tenant's key) and straight to the tenant's
// broker (with the tenancy header), p50 and p99 of each.
//
// A route the simulation needs that answers 404 or 405 (the cells API, the move
// routes) is reported, not failed: [Run] returns a [*RouteMissingError] when cells
// cannot be registered, and a report whose MovesSkipped says why when moves cannot be
// started; everything else still runs and is checked.
package cellsim
