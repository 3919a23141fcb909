package manage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/queenmq/queen/internal/proxy/session"
	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// Manager runs the operations on one store.
type Manager struct {
	store *store.Store
	now   func() time.Time
	cost  int
}

// New returns a manager over st. passwordCost is the bcrypt cost of new password
// hashes: 0 is session.Cost (12), what the proxy uses; tests go lower.
func New(st *store.Store, now func() time.Time, passwordCost int) *Manager {
	return &Manager{store: st, now: now, cost: passwordCost}
}

func invalid(field, msg string) error { return &tenant.ValidationError{Field: field, Msg: msg} }

// TenantSpec is a new tenant: limits and quotas are JSON objects merged over the
// defaults (nil keeps them); with no cell the placement policy picks one.
type TenantSpec struct {
	ID     string
	Name   string
	Limits json.RawMessage
	Quotas json.RawMessage
	Cell   string
}

// CreateTenant validates and stores a new tenant. Ids are never reused: an id in
// use or once used is tenant.ErrAlreadyExists.
func (m *Manager) CreateTenant(ctx context.Context, spec TenantSpec, actor string) (*tenant.Tenant, error) {
	if err := tenant.ValidateID(spec.ID); err != nil {
		return nil, err
	}
	if spec.Cell != "" {
		if err := tenant.ValidateCellName(spec.Cell); err != nil {
			return nil, invalid("cell", "unknown cell")
		}
	}
	if err := tenant.ValidateDisplayName("name", spec.Name); err != nil {
		return nil, err
	}
	t := &tenant.Tenant{ID: spec.ID, Name: spec.Name, Limits: tenant.DefaultLimits(), Quotas: tenant.DefaultQuotas(), Cell: spec.Cell}
	if t.Name == "" {
		t.Name = t.ID
	}
	var err error
	if spec.Limits != nil {
		if t.Limits, err = tenant.MergeLimits(t.Limits, spec.Limits); err != nil {
			return nil, err
		}
	}
	if spec.Quotas != nil {
		if t.Quotas, err = tenant.MergeQuotas(t.Quotas, spec.Quotas); err != nil {
			return nil, err
		}
	}
	return m.store.TenantCreate(ctx, t, actor)
}

// TenantChange is a partial update: nil fields stay, an empty name is the id (as at
// creation); limits and quotas merge, and a JSON null resets them, or one of their
// fields, to the defaults.
type TenantChange struct {
	Name   *string
	Status *string
	Limits json.RawMessage
	Quotas json.RawMessage
}

// UpdateTenant applies ch to the tenant id. Only active and suspended are statuses
// to set (DeleteTenant deletes).
func (m *Manager) UpdateTenant(ctx context.Context, id string, ch TenantChange, actor string) (*tenant.Tenant, error) {
	return m.store.TenantUpdate(ctx, id, func(t *tenant.Tenant) (err error) {
		if ch.Name != nil {
			if err := tenant.ValidateDisplayName("name", *ch.Name); err != nil {
				return err
			}
			t.Name = *ch.Name
			if t.Name == "" {
				t.Name = t.ID // as a tenant created without a name
			}
		}
		if ch.Status != nil {
			switch st := tenant.Status(*ch.Status); st {
			case tenant.StatusActive, tenant.StatusSuspended:
				t.Status = st
			default:
				return invalid("status", "must be active or suspended (delete deletes)")
			}
		}
		if ch.Limits != nil {
			if t.Limits, err = tenant.MergeLimits(t.Limits, ch.Limits); err != nil {
				return err
			}
		}
		if ch.Quotas != nil {
			t.Quotas, err = tenant.MergeQuotas(t.Quotas, ch.Quotas)
		}
		return err
	}, actor)
}

// SetStatus suspends or resumes a tenant.
func (m *Manager) SetStatus(ctx context.Context, id string, st tenant.Status, actor string) (*tenant.Tenant, error) {
	s := string(st)
	return m.UpdateTenant(ctx, id, TenantChange{Status: &s}, actor)
}

// Tenant returns a tenant, tombstones included.
func (m *Manager) Tenant(ctx context.Context, id string) (*tenant.Tenant, error) {
	return m.store.TenantGet(ctx, id)
}

// Page bounds of ListTenants.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// ListTenants returns one page of tenants of a status ("" = all but deleted) and
// the total.
func (m *Manager) ListTenants(ctx context.Context, status string, limit, offset int) ([]*tenant.Tenant, int, error) {
	switch tenant.Status(status) {
	case "", tenant.StatusActive, tenant.StatusSuspended, tenant.StatusDeleted:
	default:
		return nil, 0, invalid("status", "must be active, suspended or deleted")
	}
	if limit < 1 || limit > MaxPageSize {
		return nil, 0, invalid("limit", "must be 1..1000")
	}
	if offset < 0 {
		return nil, 0, invalid("offset", "must be >= 0")
	}
	ts, total, err := m.store.TenantList(ctx, status, limit, offset)
	if ts == nil {
		ts = []*tenant.Tenant{}
	}
	return ts, total, err
}

// DeleteTenant makes the tenant a tombstone and revokes its keys; it returns how
// many keys it revoked.
func (m *Manager) DeleteTenant(ctx context.Context, id, actor string) (int, error) {
	return m.store.TenantDelete(ctx, id, actor)
}

// ErrTenantActive refuses the purge of an active tenant; it wraps tenant.ErrConflict.
var ErrTenantActive = fmt.Errorf("%w: suspend or delete the tenant before purging it", tenant.ErrConflict)

// PurgeFunc deletes a tenant's queues at the brokers and returns how many it deleted,
// those deleted before a failure included.
type PurgeFunc func(ctx context.Context, tenantID string) (int, error)

// PurgeTenant deletes the broker queues of a suspended or deleted tenant with purge,
// and records the purge in the audit log (action tenant.purge, with queuesDeleted
// and complete), one that failed midway included; one that deleted nothing before
// failing changed nothing and is not recorded. An active tenant is ErrTenantActive.
func (m *Manager) PurgeTenant(ctx context.Context, id string, purge PurgeFunc, actor string) (int, error) {
	t, err := m.store.TenantGet(ctx, id)
	if err != nil {
		return 0, err
	}
	if t.Status == tenant.StatusActive {
		return 0, ErrTenantActive
	}
	n, err := purge(ctx, t.ID)
	if n == 0 && err != nil {
		return 0, err
	}
	// The queues are gone: record it even when the caller has gone away meanwhile.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
	defer cancel()
	if aerr := m.store.TenantPurged(actx, t.ID, actor, n, err == nil); aerr != nil {
		return n, errors.Join(err, fmt.Errorf("%d queues purged, but the audit log entry failed: %w", n, aerr))
	}
	return n, err
}

// auditTimeout bounds the audit log write that follows a purge.
const auditTimeout = 10 * time.Second

// KeySpec is a new API key.
type KeySpec struct {
	Name      string
	Scope     string
	Queues    []string
	ExpiresAt *time.Time
}

// NewKey is a created key: the record and its text, shown once.
type NewKey struct {
	*tenant.Key
	Secret string
}

// CreateKey mints a key for the tenant.
func (m *Manager) CreateKey(ctx context.Context, tenantID string, spec KeySpec, actor string) (*NewKey, error) {
	scope, err := tenant.ParseScope(spec.Scope)
	if err != nil {
		return nil, err
	}
	if err := tenant.ValidateQueuePatterns(spec.Queues); err != nil {
		return nil, err
	}
	if err := tenant.ValidateDisplayName("name", spec.Name); err != nil {
		return nil, err
	}
	if spec.ExpiresAt != nil && !spec.ExpiresAt.After(m.now()) {
		return nil, invalid("expiresAt", "must be in the future")
	}
	id, text := tenant.NewKey()
	k, err := m.store.KeyCreate(ctx, store.NewKey{Hash: tenant.HashKey(text), Key: tenant.Key{
		ID: id, Tenant: tenantID, Name: spec.Name, Scope: scope, Queues: spec.Queues, ExpiresAt: spec.ExpiresAt,
	}}, actor)
	if err != nil {
		return nil, err
	}
	return &NewKey{Key: k, Secret: text}, nil
}

// Rotation grace: the old key keeps working this long (default 24 h, at most 7 d).
const (
	DefaultGrace = 24 * time.Hour
	MaxGrace     = 7 * 24 * time.Hour
)

// RotateKey mints the successor of key id (same tenant, scope and allowlist); the
// old key expires after grace (nil: DefaultGrace).
func (m *Manager) RotateKey(ctx context.Context, id string, grace *time.Duration, actor string) (*NewKey, error) {
	g := DefaultGrace
	if grace != nil {
		if *grace < 0 || *grace > MaxGrace {
			return nil, invalid("graceSeconds", "must be 0..604800")
		}
		g = *grace
	}
	newID, text := tenant.NewKey()
	k, err := m.store.KeyRotate(ctx, id, g, store.NewKey{Hash: tenant.HashKey(text), Key: tenant.Key{ID: newID}}, actor)
	if err != nil {
		return nil, err
	}
	return &NewKey{Key: k, Secret: text}, nil
}

// Keys lists a tenant's keys, newest first (tenant.ErrNotFound for no tenant).
func (m *Manager) Keys(ctx context.Context, tenantID string) ([]*tenant.Key, error) {
	if _, err := m.store.TenantGet(ctx, tenantID); err != nil {
		return nil, err
	}
	return m.store.KeyList(ctx, tenantID)
}

// RevokeKey revokes a key; revoking twice is not an error.
func (m *Manager) RevokeKey(ctx context.Context, id, actor string) (*tenant.Key, error) {
	return m.store.KeyRevoke(ctx, id, actor)
}

// UserSpec is a new login user: no tenant makes an operator.
type UserSpec struct {
	Username string
	Password string
	Role     string
	Tenant   *string
}

// CreateUser validates and stores a user with a bcrypt hash of the password.
func (m *Manager) CreateUser(ctx context.Context, spec UserSpec, actor string) (*tenant.User, error) {
	if err := tenant.ValidateUsername(spec.Username); err != nil {
		return nil, err
	}
	if _, err := tenant.RoleScope(spec.Role); err != nil {
		return nil, err
	}
	if spec.Tenant != nil && *spec.Tenant == "" {
		spec.Tenant = nil
	}
	if err := tenant.ValidatePassword(spec.Password); err != nil {
		return nil, err
	}
	hash, err := session.HashPassword(spec.Password, m.cost)
	if err != nil {
		return nil, err
	}
	return m.store.UserCreate(ctx, store.NewUser{PasswordHash: hash,
		User: tenant.User{Username: spec.Username, Role: spec.Role, Tenant: spec.Tenant}}, actor)
}

// SetPassword replaces a user's password; the user's sessions end.
func (m *Manager) SetPassword(ctx context.Context, username, password, actor string) (*tenant.User, error) {
	if err := tenant.ValidatePassword(password); err != nil {
		return nil, err
	}
	hash, err := session.HashPassword(password, m.cost)
	if err != nil {
		return nil, err
	}
	return m.store.UserSetPassword(ctx, username, hash, actor)
}

// Users lists the users (of one tenant, or all with "").
func (m *Manager) Users(ctx context.Context, tenantID string) ([]*tenant.User, error) {
	return m.store.UserList(ctx, tenantID)
}

// User returns one user.
func (m *Manager) User(ctx context.Context, username string) (*tenant.User, error) {
	return m.store.UserGet(ctx, username)
}

// DeleteUser deletes a user and its sessions.
func (m *Manager) DeleteUser(ctx context.Context, username, actor string) error {
	return m.store.UserDelete(ctx, username, actor)
}
