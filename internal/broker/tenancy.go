package broker

import (
	"context"

	"github.com/queenmq/queen/internal/queue"
)

// TenantUsage returns every tenant's usage as the tenancy_usage maintenance job last
// computed it; queue.ErrNotFound when it never ran.
func (b *Broker) TenantUsage(ctx context.Context) (queue.TenantUsageReport, error) {
	return b.store.TenantUsageGet(ctx)
}
