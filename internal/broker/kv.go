package broker

import (
	"context"
	"time"

	"github.com/queenmq/queen/internal/queue"
)

// KV runs a validated batch of KV ops (queue.ParseKVOps) in sc's KV rows, in one
// database transaction at the broker's now. A required op's lost precondition rolls
// the batch back and comes back as the outcome's Failed.
func (b *Broker) KV(ctx context.Context, sc queue.Scope, ops []queue.KVOp) (queue.KVOutcome, error) {
	if len(ops) == 0 {
		return queue.KVOutcome{Results: []queue.KVResult{}}, nil
	}
	return b.store.KVApply(ctx, sc.Tenant, time.Now(), ops)
}

// KVNamespaces lists sc's KV namespaces with their row counts, in byte order.
func (b *Broker) KVNamespaces(ctx context.Context, sc queue.Scope) ([]queue.KVNamespace, error) {
	return b.store.KVNamespaces(ctx, sc.Tenant)
}

// KVList returns a console page of one of sc's KV namespaces.
func (b *Broker) KVList(ctx context.Context, sc queue.Scope, req queue.KVListRequest) (queue.KVListPage, error) {
	return b.store.KVList(ctx, sc.Tenant, time.Now(), req)
}
