package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// TenantFenceSet fences tenant (a row in queen.tenant_fences, kept with its first
// since when it exists) or lifts its fence (the row deleted).
func (s *Store) TenantFenceSet(ctx context.Context, tenant string, fenced bool) error {
	sql := `DELETE FROM queen.tenant_fences WHERE tenant = $1`
	if fenced {
		sql = `INSERT INTO queen.tenant_fences (tenant) VALUES ($1) ON CONFLICT (tenant) DO NOTHING`
	}
	if _, err := s.pool.Exec(ctx, sql, tenant); err != nil {
		return fmt.Errorf("store: tenant fence set: %w", interpretError(err))
	}
	return nil
}

// TenantFenceList returns every fenced tenant, sorted.
func (s *Store) TenantFenceList(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT tenant FROM queen.tenant_fences ORDER BY tenant`)
	if err != nil {
		return nil, fmt.Errorf("store: tenant fence list: %w", interpretError(err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: tenant fence list: %w", interpretError(err))
	}
	return out, nil
}
