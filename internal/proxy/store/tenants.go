package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/proxy/tenant"
)

// tenantColumns are a tenant's columns; a tenant stored without a cell lives in the
// default cell.
const tenantColumns = `id, name, status, limits, quotas, created_at, updated_at, coalesce(cell, '` + tenant.DefaultCell + `')`

func scanTenant(row pgx.Row) (*tenant.Tenant, error) {
	t := &tenant.Tenant{}
	var status string
	if err := row.Scan(&t.ID, &t.Name, &status, &t.Limits, &t.Quotas, &t.CreatedAt, &t.UpdatedAt, &t.Cell); err != nil {
		return nil, err
	}
	t.Status = tenant.Status(status)
	return t, nil
}

// TenantCreate stores a new tenant in the cell t.Cell, or with t.Cell "" in the one
// the placement policy picks in the same transaction (see Place). A cell that does
// not exist is a *tenant.ValidationError of field "cell"; no open cell is
// ErrNoOpenCell. An id in use, or once used, is tenant.ErrIDNeverReused.
func (s *Store) TenantCreate(ctx context.Context, t *tenant.Tenant, actor string) (*tenant.Tenant, error) {
	var out *tenant.Tenant
	err := s.inTx(ctx, func(tx pgx.Tx) (err error) {
		cell, err := placeIn(ctx, tx, t.Cell)
		if err != nil {
			return err
		}
		out, err = scanTenant(tx.QueryRow(ctx, `INSERT INTO queen_proxy.tenants (id, name, status, limits, quotas, cell)
			VALUES ($1, $2, 'active', $3, $4, NULLIF($5, '')) RETURNING `+tenantColumns, t.ID, t.Name, t.Limits, t.Quotas, cell))
		if err != nil {
			return err
		}
		if err := notify(ctx, tx, "placement:"+t.ID); err != nil {
			return err
		}
		return audit(ctx, tx, actor, "tenant.create", t.ID, map[string]any{"limits": t.Limits, "quotas": t.Quotas, "cell": out.Cell})
	})
	if errors.Is(err, tenant.ErrAlreadyExists) {
		return nil, tenant.ErrIDNeverReused
	}
	return out, err
}

// TenantGet returns a tenant, tombstones included.
func (s *Store) TenantGet(ctx context.Context, id string) (*tenant.Tenant, error) {
	t, err := scanTenant(s.pool.QueryRow(ctx, `SELECT `+tenantColumns+` FROM queen_proxy.tenants WHERE id = $1`, id))
	return t, interpretError(err)
}

// TenantList returns one page of tenants ordered by id, with the total count;
// status "" lists every status but deleted.
func (s *Store) TenantList(ctx context.Context, status string, limit, offset int) ([]*tenant.Tenant, int, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+tenantColumns+`, count(*) OVER () FROM queen_proxy.tenants
		WHERE ($1 = '' AND status <> 'deleted') OR status = $1 ORDER BY id LIMIT $2 OFFSET $3`, status, limit, offset)
	if err != nil {
		return nil, 0, interpretError(err)
	}
	defer rows.Close()
	var out []*tenant.Tenant
	total := 0
	for rows.Next() {
		t := &tenant.Tenant{}
		var st string
		if err := rows.Scan(&t.ID, &t.Name, &st, &t.Limits, &t.Quotas, &t.CreatedAt, &t.UpdatedAt, &t.Cell, &total); err != nil {
			return nil, 0, interpretError(err)
		}
		t.Status = tenant.Status(st)
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, interpretError(err)
	}
	if len(out) == 0 && offset > 0 {
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM queen_proxy.tenants
			WHERE ($1 = '' AND status <> 'deleted') OR status = $1`, status).Scan(&total); err != nil {
			return nil, 0, interpretError(err)
		}
	}
	return out, total, nil
}

// ErrTenantDeleted is a change to a deleted tenant; it wraps tenant.ErrConflict.
var ErrTenantDeleted = fmt.Errorf("%w: the tenant is deleted", tenant.ErrConflict)

// TenantUpdate applies change to the tenant under a row lock and stores the result,
// notifying the replicas. A deleted tenant cannot change (ErrTenantDeleted).
func (s *Store) TenantUpdate(ctx context.Context, id string, change func(*tenant.Tenant) error, actor string) (*tenant.Tenant, error) {
	var out *tenant.Tenant
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		t, err := scanTenant(tx.QueryRow(ctx, `SELECT `+tenantColumns+` FROM queen_proxy.tenants WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return err
		}
		if t.Status == tenant.StatusDeleted {
			return ErrTenantDeleted
		}
		if err := change(t); err != nil {
			return err
		}
		out, err = scanTenant(tx.QueryRow(ctx, `UPDATE queen_proxy.tenants SET name = $2, status = $3, limits = $4,
			quotas = $5, updated_at = now() WHERE id = $1 RETURNING `+tenantColumns, id, t.Name, string(t.Status), t.Limits, t.Quotas))
		if err != nil {
			return err
		}
		if err := notify(ctx, tx, "tenant:"+id); err != nil {
			return err
		}
		return audit(ctx, tx, actor, "tenant.update", id, map[string]any{"name": out.Name, "status": out.Status,
			"limits": out.Limits, "quotas": out.Quotas})
	})
	return out, err
}

// TenantDelete turns the tenant into a tombstone and revokes its keys, returning how
// many it revoked. Deleting a deleted tenant is ErrNotFound.
func (s *Store) TenantDelete(ctx context.Context, id, actor string) (int, error) {
	revoked := 0
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE queen_proxy.tenants SET status = 'deleted', updated_at = now()
			WHERE id = $1 AND status <> 'deleted'`, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return tenant.ErrNotFound
		}
		rows, err := tx.Query(ctx, `UPDATE queen_proxy.api_keys SET revoked_at = now()
			WHERE tenant_id = $1 AND revoked_at IS NULL RETURNING id`, id)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		revoked = len(ids)
		for _, k := range ids {
			if err := notify(ctx, tx, "key:"+k); err != nil {
				return err
			}
		}
		if err := notify(ctx, tx, "tenant:"+id); err != nil {
			return err
		}
		return audit(ctx, tx, actor, "tenant.delete", id, map[string]any{"keysRevoked": revoked})
	})
	return revoked, err
}

// TenantPurged records in the audit log that a purge deleted queuesDeleted of the
// tenant's queues at the brokers, and whether it finished (one that fails midway
// leaves the rest for the next).
func (s *Store) TenantPurged(ctx context.Context, id, actor string, queuesDeleted int, complete bool) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		return audit(ctx, tx, actor, "tenant.purge", id, map[string]any{"queuesDeleted": queuesDeleted, "complete": complete})
	})
}
