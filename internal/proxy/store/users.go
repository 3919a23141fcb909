package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/proxy/tenant"
)

const userColumns = `id, username, role, tenant_id, created_at, updated_at`

func scanUser(row pgx.Row, extra ...any) (*tenant.User, error) {
	u := &tenant.User{}
	if err := row.Scan(append([]any{&u.ID, &u.Username, &u.Role, &u.Tenant, &u.CreatedAt, &u.UpdatedAt}, extra...)...); err != nil {
		return nil, err
	}
	return u, nil
}

// NewUser is what UserCreate stores: the record and the bcrypt hash of the password.
type NewUser struct {
	User         tenant.User
	PasswordHash string
}

// UserCreate stores a user. A tenant user's tenant must exist (ErrNotFound) and not
// be deleted (ErrTenantDeleted); a username in use is ErrAlreadyExists.
func (s *Store) UserCreate(ctx context.Context, nu NewUser, actor string) (*tenant.User, error) {
	var out *tenant.User
	err := s.inTx(ctx, func(tx pgx.Tx) (err error) {
		if nu.User.Tenant != nil {
			if err := lockLiveTenant(ctx, tx, *nu.User.Tenant); err != nil {
				return err
			}
		}
		out, err = scanUser(tx.QueryRow(ctx, `INSERT INTO queen_proxy.users (username, password_hash, role, tenant_id)
			VALUES ($1, $2, $3, $4) RETURNING `+userColumns, nu.User.Username, nu.PasswordHash, nu.User.Role, nu.User.Tenant))
		if err != nil {
			return err
		}
		return audit(ctx, tx, actor, "user.create", out.Username, map[string]any{"role": out.Role, "tenant": out.Tenant})
	})
	return out, err
}

// UserGet returns a user by name.
func (s *Store) UserGet(ctx context.Context, username string) (*tenant.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userColumns+` FROM queen_proxy.users WHERE username = $1`, username))
	return u, interpretError(err)
}

// UserList returns the users ordered by name; tenantID "" lists them all.
func (s *Store) UserList(ctx context.Context, tenantID string) ([]*tenant.User, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+userColumns+` FROM queen_proxy.users
		WHERE $1 = '' OR tenant_id = $1 ORDER BY username`, tenantID)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := []*tenant.User{}
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, interpretError(err)
		}
		out = append(out, u)
	}
	return out, interpretError(rows.Err())
}

// UserDelete deletes a user and, by cascade, its sessions, and notifies the replicas.
func (s *Store) UserDelete(ctx context.Context, username, actor string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM queen_proxy.users WHERE username = $1`, username)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return tenant.ErrNotFound
		}
		if err := notify(ctx, tx, "user:"+username); err != nil {
			return err
		}
		return audit(ctx, tx, actor, "user.delete", username, nil)
	})
}

// UserSetPassword replaces a user's password hash and ends its sessions: whoever
// knew the old password is logged out everywhere.
func (s *Store) UserSetPassword(ctx context.Context, username, hash, actor string) (*tenant.User, error) {
	var out *tenant.User
	err := s.inTx(ctx, func(tx pgx.Tx) (err error) {
		out, err = scanUser(tx.QueryRow(ctx, `UPDATE queen_proxy.users SET password_hash = $2, updated_at = now()
			WHERE username = $1 RETURNING `+userColumns, username, hash))
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM queen_proxy.sessions WHERE user_id = $1`, out.ID); err != nil {
			return err
		}
		if err := notify(ctx, tx, "user:"+username); err != nil {
			return err
		}
		return audit(ctx, tx, actor, "user.passwd", username, nil)
	})
	return out, err
}

// UserCredential is what a login checks: the user, its password hash and, for a
// tenant user, the tenant.
type UserCredential struct {
	User         *tenant.User
	PasswordHash string
	Tenant       *tenant.Tenant
}

// UserLookup returns the login credential of a username; ErrNotFound when there
// is none.
func (s *Store) UserLookup(ctx context.Context, username string) (*UserCredential, error) {
	c := &UserCredential{}
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userColumns+`, password_hash FROM queen_proxy.users WHERE username = $1`,
		username), &c.PasswordHash)
	if err != nil {
		return nil, interpretError(err)
	}
	c.User = u
	if u.Tenant != nil {
		if c.Tenant, err = s.TenantGet(ctx, *u.Tenant); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Session is a live login session: its id (the token's jti), the user and, for a
// tenant user, the tenant.
type Session struct {
	ID        string
	ExpiresAt time.Time
	User      *tenant.User
	Tenant    *tenant.Tenant
}

// SessionCreate stores a session of the user until expiresAt, and deletes up to
// 100 expired sessions on the way, so that the table stays bounded without a job
// of its own.
func (s *Store) SessionCreate(ctx context.Context, id string, userID int64, expiresAt time.Time) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM queen_proxy.sessions WHERE id IN (
			SELECT id FROM queen_proxy.sessions WHERE expires_at < now() LIMIT 100)`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO queen_proxy.sessions (id, user_id, expires_at) VALUES ($1, $2, $3)`,
			id, userID, expiresAt)
		return err
	})
}

// SessionLookup returns a session that exists and has not expired at now;
// ErrNotFound otherwise.
func (s *Store) SessionLookup(ctx context.Context, id string, now time.Time) (*Session, error) {
	ses := &Session{ID: id}
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT u.id, u.username, u.role, u.tenant_id, u.created_at, u.updated_at, s.expires_at
		FROM queen_proxy.sessions s JOIN queen_proxy.users u ON u.id = s.user_id WHERE s.id = $1 AND s.expires_at > $2`, id, now),
		&ses.ExpiresAt)
	if err != nil {
		return nil, interpretError(err)
	}
	ses.User = u
	if u.Tenant != nil {
		if ses.Tenant, err = s.TenantGet(ctx, *u.Tenant); err != nil {
			return nil, err
		}
	}
	return ses, nil
}

// SessionDelete deletes a session (logout) and notifies the replicas; deleting a
// session that is gone is not an error.
func (s *Store) SessionDelete(ctx context.Context, id string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM queen_proxy.sessions WHERE id = $1`, id); err != nil {
			return err
		}
		return notify(ctx, tx, "session:"+id)
	})
}
