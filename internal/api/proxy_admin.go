package api

import (
	"encoding/json"
	"time"
)

// The bodies of queen-proxy's admin API (/admin/v1 on its admin listener), shared by
// the proxy that answers them and by queenctl proxy, which sends and reads them. Their
// field order is the order of the answer's keys.

// ProxyLimits are a tenant's admission limits; 0 means unlimited.
type ProxyLimits struct {
	RequestsPerSecond float64 `json:"requestsPerSecond"`
	RequestsBurst     float64 `json:"requestsBurst"`
	MessagesPerSecond float64 `json:"messagesPerSecond"`
	MessagesBurst     float64 `json:"messagesBurst"`
	MaxConcurrent     int     `json:"maxConcurrent"`
	MaxRequestBytes   int64   `json:"maxRequestBytes"`
}

// ProxyQuotas bound what a tenant stores at the brokers; 0 means unlimited.
type ProxyQuotas struct {
	MaxMessages int64 `json:"maxMessages"`
	MaxBytes    int64 `json:"maxBytes"`
	MaxQueues   int64 `json:"maxQueues"`
}

// ProxyStored is a tenant's storage as its quotas see it: the brokers' last snapshot
// plus what the answering replica admitted since.
type ProxyStored struct {
	Messages int64 `json:"messages"`
	Bytes    int64 `json:"bytes"`
	Queues   int64 `json:"queues"`
	// ComputedAt is the snapshot's time; nil before the first.
	ComputedAt *time.Time `json:"computedAt"`
}

// ProxyTenant is one tenant: the answer of GET, POST and PATCH on
// /admin/v1/tenants[/{id}].
type ProxyTenant struct {
	ID string `json:"id"`
	// Name is the display name; the id when none was given.
	Name string `json:"name"`
	// Status is active, suspended or deleted.
	Status string `json:"status"`
	// Cell is the cell the tenant lives in.
	Cell      string       `json:"cell"`
	CreatedAt time.Time    `json:"createdAt"`
	UpdatedAt time.Time    `json:"updatedAt"`
	Limits    ProxyLimits  `json:"limits"`
	Quotas    ProxyQuotas  `json:"quotas"`
	Usage     *ProxyStored `json:"usage,omitempty"`
	// Move is the tenant's live move between cells, absent when none.
	Move *ProxyMove `json:"move,omitempty"`
}

// ProxyTenantList is the answer of GET /admin/v1/tenants: one page of tenants and
// how many match in all.
type ProxyTenantList struct {
	Tenants []ProxyTenant `json:"tenants"`
	Total   int           `json:"total"`
}

// ProxyTenantCreate is the body of POST /admin/v1/tenants: limits and quotas are
// JSON objects merged over the defaults (absent keeps them, null resets them).
type ProxyTenantCreate struct {
	ID     string          `json:"id"`
	Name   string          `json:"name,omitempty"`
	Limits json.RawMessage `json:"limits,omitempty"`
	Quotas json.RawMessage `json:"quotas,omitempty"`
	// Cell is where the tenant lives; absent, the placement policy picks one.
	Cell string `json:"cell,omitempty"`
}

// ProxyTenantChange is the body of PATCH /admin/v1/tenants/{id}: absent fields stay;
// limits and quotas merge, and a JSON null resets them to the defaults.
type ProxyTenantChange struct {
	Name *string `json:"name,omitempty"`
	// Status is active or suspended.
	Status *string         `json:"status,omitempty"`
	Limits json.RawMessage `json:"limits,omitempty"`
	Quotas json.RawMessage `json:"quotas,omitempty"`
}

// ProxyTenantDeleted is the answer of DELETE /admin/v1/tenants/{id}.
type ProxyTenantDeleted struct {
	Deleted     bool `json:"deleted"`
	KeysRevoked int  `json:"keysRevoked"`
}

// ProxyPurged is the answer of POST /admin/v1/tenants/{id}/purge.
type ProxyPurged struct {
	QueuesDeleted int `json:"queuesDeleted"`
}

// ProxyKey is an API key's record, without its text: the answer of DELETE
// /admin/v1/keys/{id}.
type ProxyKey struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	Name   string `json:"name"`
	// Scope is push, read, write or admin.
	Scope string `json:"scope"`
	// Queues is the allowlist: names, or prefixes ending in '*'.
	Queues     []string   `json:"queues"`
	CreatedAt  time.Time  `json:"createdAt"`
	ExpiresAt  *time.Time `json:"expiresAt"`
	RevokedAt  *time.Time `json:"revokedAt"`
	LastUsedAt *time.Time `json:"lastUsedAt"`
}

// ProxyNewKey is a minted key, its text shown this once: the answer of POST
// /admin/v1/tenants/{id}/keys and /admin/v1/keys/{id}/rotate.
type ProxyNewKey struct {
	ProxyKey
	Key string `json:"key"`
}

// ProxyKeyList is the answer of GET /admin/v1/tenants/{id}/keys, newest first.
type ProxyKeyList struct {
	Keys []ProxyKey `json:"keys"`
}

// ProxyKeyCreate is the body of POST /admin/v1/tenants/{id}/keys.
type ProxyKeyCreate struct {
	Name string `json:"name"`
	// Scope is push, read, write or admin.
	Scope string `json:"scope"`
	// Queues is the allowlist; none admits every queue.
	Queues    []string   `json:"queues,omitempty"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// ProxyKeyRotate is the body of POST /admin/v1/keys/{id}/rotate, which may be absent.
type ProxyKeyRotate struct {
	// GraceSeconds is how long the old key keeps working; nil is the default (24 h).
	GraceSeconds *int64 `json:"graceSeconds,omitempty"`
}

// ProxyUser is a login user: the answer of GET /admin/v1/users/{name}, of its
// creation and of a password change.
type ProxyUser struct {
	Username string `json:"username"`
	// Role is admin, read-write or read-only.
	Role string `json:"role"`
	// Tenant is the user's tenant; nil for an operator.
	Tenant    *string   `json:"tenant"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// ProxyUserList is the answer of GET /admin/v1/users.
type ProxyUserList struct {
	Users []ProxyUser `json:"users"`
}

// ProxyUserCreate is the body of POST /admin/v1/users: no tenant makes an operator.
type ProxyUserCreate struct {
	Username string  `json:"username"`
	Password string  `json:"password"`
	Role     string  `json:"role"`
	Tenant   *string `json:"tenant,omitempty"`
}

// ProxyPassword is the body of POST /admin/v1/users/{name}/password.
type ProxyPassword struct {
	Password string `json:"password"`
}

// ProxyUserDeleted is the answer of DELETE /admin/v1/users/{name}.
type ProxyUserDeleted struct {
	Deleted bool `json:"deleted"`
}

// ProxyUsage is a tenant's metered activity over a span. StoredMessages, StoredBytes
// and Queues are gauges (the latest snapshot); the rest are counters.
type ProxyUsage struct {
	Requests       int64 `json:"requests"`
	PushRequests   int64 `json:"pushRequests"`
	MessagesIn     int64 `json:"messagesIn"`
	DuplicatesIn   int64 `json:"duplicatesIn"`
	FailedIn       int64 `json:"failedIn"`
	BytesIn        int64 `json:"bytesIn"`
	BytesOut       int64 `json:"bytesOut"`
	PopRequests    int64 `json:"popRequests"`
	EmptyPops      int64 `json:"emptyPops"`
	MessagesOut    int64 `json:"messagesOut"`
	Acks           int64 `json:"acks"`
	RejectedRate   int64 `json:"rejectedRate"`
	RejectedQuota  int64 `json:"rejectedQuota"`
	UpstreamErrors int64 `json:"upstreamErrors"`
	StoredMessages int64 `json:"storedMessages"`
	StoredBytes    int64 `json:"storedBytes"`
	Queues         int64 `json:"queues"`
}

// ProxyUsagePoint is one bucket of a usage series.
type ProxyUsagePoint struct {
	Start time.Time `json:"start"`
	ProxyUsage
}

// ProxyUsageReport is the answer of GET /admin/v1/tenants/{id}/usage: the series
// over [From, To) and its totals.
type ProxyUsageReport struct {
	Tenant string `json:"tenant"`
	// Granularity is minute, hour or day.
	Granularity string            `json:"granularity"`
	From        time.Time         `json:"from"`
	To          time.Time         `json:"to"`
	Series      []ProxyUsagePoint `json:"series"`
	Totals      ProxyUsage        `json:"totals"`
}

// ProxyTenantTotal is one tenant's totals in a ProxyUsageTotals.
type ProxyTenantTotal struct {
	Tenant string     `json:"tenant"`
	Totals ProxyUsage `json:"totals"`
}

// ProxyUsageTotals is the answer of GET /admin/v1/usage: every tenant's totals over
// [From, To), by tenant id.
type ProxyUsageTotals struct {
	Granularity string             `json:"granularity"`
	From        time.Time          `json:"from"`
	To          time.Time          `json:"to"`
	Tenants     []ProxyTenantTotal `json:"tenants"`
}

// ProxyUpstream is one broker of the proxy's pool.
type ProxyUpstream struct {
	// State is up, down or misconfigured.
	State string `json:"state"`
	URL   string `json:"url"`
	// Cell is the cell the broker serves.
	Cell string `json:"cell,omitempty"`
}

// ProxyUpstreams is the answer of GET /admin/v1/upstreams.
type ProxyUpstreams struct {
	Upstreams []ProxyUpstream `json:"upstreams"`
}

// ProxyReplica is one live proxy process.
type ProxyReplica struct {
	ID          string    `json:"id"`
	Instance    string    `json:"instance"`
	StartedAt   time.Time `json:"startedAt"`
	HeartbeatAt time.Time `json:"heartbeatAt"`
}

// ProxyReplicas is the answer of GET /admin/v1/replicas.
type ProxyReplicas struct {
	Replicas []ProxyReplica `json:"replicas"`
}

// ProxyHealth is the answer of the admin listener's GET /health.
type ProxyHealth struct {
	Status string `json:"status"`
}
