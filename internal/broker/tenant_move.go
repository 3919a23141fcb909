package broker

import (
	"context"
	"encoding/json"
)

// The tenant move routes (a tenant copied to another cell by queen-proxy) read and
// write the tenant's rows as the store has them; docs/api.md, "Tenant export, import
// and fences", says what each does.

// TenantFenceSet records the tenant's fence (fenced) or lifts it.
func (b *Broker) TenantFenceSet(ctx context.Context, tenant string, fenced bool) error {
	return b.store.TenantFenceSet(ctx, tenant, fenced)
}

// TenantFenceList returns the fenced tenants.
func (b *Broker) TenantFenceList(ctx context.Context) ([]string, error) {
	return b.store.TenantFenceList(ctx)
}

// TenantExportHeads returns each of the tenant's partitions with its message count
// and newest message.
func (b *Broker) TenantExportHeads(ctx context.Context, tenant string) (json.RawMessage, error) {
	return b.store.TenantExportHeads(ctx, tenant)
}

// TenantExportMessages returns a page of the tenant's messages in (partition,
// created_at, id) order.
func (b *Broker) TenantExportMessages(ctx context.Context, tenant string, since json.RawMessage,
	afterPartition, afterCreatedAt, afterID string, limit int) ([]json.RawMessage, error) {
	return b.store.TenantExportMessages(ctx, tenant, since, afterPartition, afterCreatedAt, afterID, limit)
}

// TenantExportIDs returns every message id of one of the tenant's partitions.
func (b *Broker) TenantExportIDs(ctx context.Context, tenant, partitionID string) ([]string, error) {
	return b.store.TenantExportIDs(ctx, tenant, partitionID)
}

// TenantExportState returns every row of the tenant but its messages, by state key.
func (b *Broker) TenantExportState(ctx context.Context, tenant string) (json.RawMessage, error) {
	return b.store.TenantExportState(ctx, tenant)
}

// TenantImportState imports a tenant's state: its structure or all of it.
func (b *Broker) TenantImportState(ctx context.Context, tenant, mode string, state map[string]json.RawMessage) error {
	return b.store.TenantImportState(ctx, tenant, mode, state)
}

// TenantImportMessages inserts message rows, skipping the ids already stored.
func (b *Broker) TenantImportMessages(ctx context.Context, tenant string, rows json.RawMessage) (int64, error) {
	return b.store.TenantImportMessages(ctx, tenant, rows)
}

// TenantImportPrune deletes the partition's messages whose ids are not in keep.
func (b *Broker) TenantImportPrune(ctx context.Context, tenant, partitionID string, keep []string) (int64, error) {
	return b.store.TenantImportPrune(ctx, tenant, partitionID, keep)
}

// TenantDrop deletes every row of the tenant but its fence, counted by state key.
func (b *Broker) TenantDrop(ctx context.Context, tenant string) (map[string]int64, error) {
	return b.store.TenantDrop(ctx, tenant)
}
