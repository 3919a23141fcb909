package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/proxy/tenant"
)

const keyColumns = `id, tenant_id, name, scope, queues, created_at, expires_at, revoked_at, last_used_at`

func scanKey(row pgx.Row, extra ...any) (*tenant.Key, error) {
	k := &tenant.Key{}
	var scope string
	dest := append([]any{&k.ID, &k.Tenant, &k.Name, &scope, &k.Queues, &k.CreatedAt, &k.ExpiresAt, &k.RevokedAt, &k.LastUsedAt}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	k.Scope = tenant.Scope(scope)
	return k, nil
}

// NewKey is what KeyCreate stores: the record and the hash of the key text.
type NewKey struct {
	Key  tenant.Key
	Hash []byte
}

// KeyCreate stores a key of an active or suspended tenant (ErrNotFound for none,
// ErrTenantDeleted for a deleted one).
func (s *Store) KeyCreate(ctx context.Context, nk NewKey, actor string) (*tenant.Key, error) {
	var out *tenant.Key
	err := s.inTx(ctx, func(tx pgx.Tx) (err error) {
		if err := lockLiveTenant(ctx, tx, nk.Key.Tenant); err != nil {
			return err
		}
		out, err = insertKey(ctx, tx, nk, "")
		if err != nil {
			return err
		}
		return audit(ctx, tx, actor, "key.create", out.ID, map[string]any{"tenant": out.Tenant, "scope": out.Scope, "queues": out.Queues})
	})
	return out, err
}

// lockLiveTenant holds tenant id (in share mode) for a change that adds to it: a key
// or a user. A deleted tenant is shown by the admin API with its status, so adding to
// it is a conflict (ErrTenantDeleted), not a tenant that is not there.
func lockLiveTenant(ctx context.Context, tx pgx.Tx, id string) error {
	var status string
	if err := tx.QueryRow(ctx, `SELECT status FROM queen_proxy.tenants WHERE id = $1 FOR SHARE`, id).Scan(&status); err != nil {
		return err
	}
	if status == string(tenant.StatusDeleted) {
		return ErrTenantDeleted
	}
	return nil
}

func insertKey(ctx context.Context, tx pgx.Tx, nk NewKey, rotatedFrom string) (*tenant.Key, error) {
	k := nk.Key
	queues := k.Queues
	if len(queues) == 0 {
		queues = []string{"*"}
	}
	return scanKey(tx.QueryRow(ctx, `INSERT INTO queen_proxy.api_keys (id, tenant_id, name, scope, queues, key_hash, expires_at, rotated_from)
		VALUES ($1, $2, $3, $4, $5, $6, $7, NULLIF($8, '')) RETURNING `+keyColumns,
		k.ID, k.Tenant, k.Name, string(k.Scope), queues, nk.Hash, k.ExpiresAt, rotatedFrom))
}

// KeyList returns a tenant's keys, newest first.
func (s *Store) KeyList(ctx context.Context, tenantID string) ([]*tenant.Key, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+keyColumns+` FROM queen_proxy.api_keys WHERE tenant_id = $1
		ORDER BY created_at DESC, id`, tenantID)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := []*tenant.Key{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, interpretError(err)
		}
		out = append(out, k)
	}
	return out, interpretError(rows.Err())
}

// Credential is what authentication needs of a key id: the record, its hash and
// its tenant.
type Credential struct {
	Key    *tenant.Key
	Hash   []byte
	Tenant *tenant.Tenant
}

// KeyLookup returns the credential of a key id; ErrNotFound when there is none.
func (s *Store) KeyLookup(ctx context.Context, id string) (*Credential, error) {
	c := &Credential{Tenant: &tenant.Tenant{}}
	var status string
	k, err := scanKey(s.pool.QueryRow(ctx, `SELECT k.id, k.tenant_id, k.name, k.scope, k.queues, k.created_at, k.expires_at,
			k.revoked_at, k.last_used_at, k.key_hash, t.id, t.name, t.status, t.limits, t.quotas, t.created_at, t.updated_at,
			coalesce(t.cell, '`+tenant.DefaultCell+`')
		FROM queen_proxy.api_keys k JOIN queen_proxy.tenants t ON t.id = k.tenant_id WHERE k.id = $1`, id),
		&c.Hash, &c.Tenant.ID, &c.Tenant.Name, &status, &c.Tenant.Limits, &c.Tenant.Quotas, &c.Tenant.CreatedAt, &c.Tenant.UpdatedAt,
		&c.Tenant.Cell)
	if err != nil {
		return nil, interpretError(err)
	}
	c.Key, c.Tenant.Status = k, tenant.Status(status)
	return c, nil
}

// KeyRevoke sets revokedAt (kept from an earlier revoke: it is idempotent) and
// notifies the replicas.
func (s *Store) KeyRevoke(ctx context.Context, id, actor string) (*tenant.Key, error) {
	var out *tenant.Key
	err := s.inTx(ctx, func(tx pgx.Tx) (err error) {
		out, err = scanKey(tx.QueryRow(ctx, `UPDATE queen_proxy.api_keys SET revoked_at = coalesce(revoked_at, now())
			WHERE id = $1 RETURNING `+keyColumns, id))
		if err != nil {
			return err
		}
		if err := notify(ctx, tx, "key:"+id); err != nil {
			return err
		}
		return audit(ctx, tx, actor, "key.revoke", id, nil)
	})
	return out, err
}

// KeyRotate stores nk as the successor of the key oldID (same tenant, scope and
// allowlist, which nk must carry) and makes the old key expire after grace, unless
// it expires sooner. A revoked or expired old key is ErrConflict.
func (s *Store) KeyRotate(ctx context.Context, oldID string, grace time.Duration, nk NewKey, actor string) (*tenant.Key, error) {
	var out *tenant.Key
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		old, err := scanKey(tx.QueryRow(ctx, `SELECT `+keyColumns+` FROM queen_proxy.api_keys WHERE id = $1 FOR UPDATE`, oldID))
		if err != nil {
			return err
		}
		var now time.Time
		if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
			return err
		}
		if !old.UsableAt(now) {
			return tenant.ErrConflict
		}
		if err := lockLiveTenant(ctx, tx, old.Tenant); err != nil {
			return err
		}
		nk.Key.Tenant, nk.Key.Scope, nk.Key.Queues = old.Tenant, old.Scope, old.Queues
		if nk.Key.Name == "" {
			nk.Key.Name = old.Name
		}
		nk.Key.ExpiresAt = old.ExpiresAt
		if out, err = insertKey(ctx, tx, nk, oldID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE queen_proxy.api_keys SET expires_at = least(expires_at, now() + $2::interval)
			WHERE id = $1`, oldID, grace); err != nil {
			return err
		}
		if err := notify(ctx, tx, "key:"+oldID); err != nil {
			return err
		}
		return audit(ctx, tx, actor, "key.rotate", oldID, map[string]any{"newKey": out.ID, "graceSeconds": int(grace.Seconds())})
	})
	return out, err
}

// KeyTouch records that the keys were used at (at most one write per key).
func (s *Store) KeyTouch(ctx context.Context, ids []string, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `UPDATE queen_proxy.api_keys SET last_used_at = $2
		WHERE id = ANY($1) AND (last_used_at IS NULL OR last_used_at < $2)`, ids, at)
	return interpretError(err)
}
