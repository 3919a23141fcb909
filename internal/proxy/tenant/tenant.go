package tenant

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/queenmq/queen/internal/tenantid"
)

// Status is a tenant's lifecycle state.
type Status string

// Tenant states. A deleted tenant is a tombstone: its id is never reused.
const (
	StatusActive    Status = "active"
	StatusSuspended Status = "suspended"
	StatusDeleted   Status = "deleted"
)

// ValidateID checks a tenant id against the grammar the broker scopes by (package
// tenantid): 2–32 characters of lowercase letters, digits and dashes, starting with
// a letter and not ending with a dash, and not reserved.
func ValidateID(id string) error {
	switch err := tenantid.Check(id); {
	case errors.Is(err, tenantid.ErrReserved):
		return invalid("id", "is reserved")
	case err != nil:
		return invalid("id", "must be "+tenantid.Grammar)
	}
	return nil
}

// Limits are a tenant's admission limits; 0 means unlimited. Their JSON form is
// what the tenants table stores and what a change merges over (the admin API's
// body has the same fields, tied by a Go conversion).
type Limits struct {
	RequestsPerSecond float64 `json:"requestsPerSecond"`
	RequestsBurst     float64 `json:"requestsBurst"`
	MessagesPerSecond float64 `json:"messagesPerSecond"`
	MessagesBurst     float64 `json:"messagesBurst"`
	MaxConcurrent     int     `json:"maxConcurrent"`
	MaxRequestBytes   int64   `json:"maxRequestBytes"`
}

// Quotas bound what a tenant stores at the brokers; 0 means unlimited. Their JSON
// form is stored and merged as the limits' is.
type Quotas struct {
	MaxMessages int64 `json:"maxMessages"`
	MaxBytes    int64 `json:"maxBytes"`
	MaxQueues   int64 `json:"maxQueues"`
}

// DefaultLimits are the limits of a tenant created without any.
func DefaultLimits() Limits {
	return Limits{
		RequestsPerSecond: 100, RequestsBurst: 200,
		MessagesPerSecond: 1000, MessagesBurst: 5000,
		MaxConcurrent: 100, MaxRequestBytes: 16 << 20,
	}
}

// DefaultQuotas are the quotas of a tenant created without any.
func DefaultQuotas() Quotas {
	return Quotas{MaxMessages: 1_000_000, MaxBytes: 1 << 30, MaxQueues: 100}
}

// Validate rejects negative values.
func (l Limits) Validate() error {
	return nonNegative("limits", []namedValue{
		{"requestsPerSecond", l.RequestsPerSecond}, {"requestsBurst", l.RequestsBurst},
		{"messagesPerSecond", l.MessagesPerSecond}, {"messagesBurst", l.MessagesBurst},
		{"maxConcurrent", float64(l.MaxConcurrent)}, {"maxRequestBytes", float64(l.MaxRequestBytes)},
	})
}

// namedValue is one field of limits or quotas, by its JSON name.
type namedValue struct {
	name  string
	value float64
}

// nonNegative refuses the first negative value, naming it below field.
func nonNegative(field string, values []namedValue) error {
	for _, v := range values {
		if v.value < 0 {
			return invalid(field+"."+v.name, "must be 0 or more (0 = unlimited)")
		}
	}
	return nil
}

// Validate rejects negative values.
func (q Quotas) Validate() error {
	return nonNegative("quotas", []namedValue{
		{"maxMessages", float64(q.MaxMessages)}, {"maxBytes", float64(q.MaxBytes)}, {"maxQueues", float64(q.MaxQueues)},
	})
}

// MergeLimits overlays the fields present in the JSON object raw onto base; a JSON
// null resets to the defaults, the whole object or one field. Unknown fields are
// refused.
func MergeLimits(base Limits, raw json.RawMessage) (Limits, error) {
	if isNull(raw) {
		return DefaultLimits(), nil
	}
	if err := strictMerge(raw, &base, DefaultLimits(), "limits"); err != nil {
		return base, err
	}
	return base, base.Validate()
}

// MergeQuotas is MergeLimits for quotas.
func MergeQuotas(base Quotas, raw json.RawMessage) (Quotas, error) {
	if isNull(raw) {
		return DefaultQuotas(), nil
	}
	if err := strictMerge(raw, &base, DefaultQuotas(), "quotas"); err != nil {
		return base, err
	}
	return base, base.Validate()
}

// Tenant is one customer of the gateway.
type Tenant struct {
	ID        string
	Name      string
	Status    Status
	CreatedAt time.Time
	UpdatedAt time.Time
	Limits    Limits
	Quotas    Quotas
	// Cell is the cell the tenant lives in; "" when not chosen yet (a new tenant:
	// the placement policy chooses), read back as DefaultCell for a tenant stored
	// without one.
	Cell string
}
