package api

import (
	"encoding/json"
	"time"
)

// The bodies of queen-proxy's admin API for cells (the queen deployments tenants
// live in) and for moves of tenants between them.

// ProxyCellUpstream is one broker of a cell and its state from the proxy's health
// checks: up, down, misconfigured, or unknown.
type ProxyCellUpstream struct {
	URL   string `json:"url"`
	State string `json:"state"`
}

// ProxyCell is one cell: the answer of GET, POST and PATCH on /admin/v1/cells[/{name}].
type ProxyCell struct {
	Name      string              `json:"name"`
	Upstreams []ProxyCellUpstream `json:"upstreams"`
	// CapacityBytes and CapacityMessagesPerSecond are 0 when not set.
	CapacityBytes             int64   `json:"capacityBytes"`
	CapacityMessagesPerSecond float64 `json:"capacityMessagesPerSecond"`
	// Closed cells get no new tenants from the placement policy.
	Closed bool `json:"closed"`
	// Tenants counts the tenants living in the cell, deleted ones aside.
	Tenants int `json:"tenants"`
	// StoredMessages and StoredBytes sum the tenants' latest usage snapshots.
	StoredMessages int64 `json:"storedMessages"`
	StoredBytes    int64 `json:"storedBytes"`
	// PushRate and PopRate are messages per second over the last 5 minutes of metering.
	PushRate float64 `json:"pushRate"`
	PopRate  float64 `json:"popRate"`
	// Headroom is 0..1, null when the cell has no capacity set.
	Headroom  *float64  `json:"headroom"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// ProxyCellList is the answer of GET /admin/v1/cells, by name.
type ProxyCellList struct {
	Cells []ProxyCell `json:"cells"`
}

// ProxyCellCreate is the body of POST /admin/v1/cells.
type ProxyCellCreate struct {
	Name                      string   `json:"name"`
	Upstreams                 []string `json:"upstreams"`
	CapacityBytes             *int64   `json:"capacityBytes,omitempty"`
	CapacityMessagesPerSecond *float64 `json:"capacityMessagesPerSecond,omitempty"`
	Closed                    *bool    `json:"closed,omitempty"`
}

// ProxyCellChange is the body of PATCH /admin/v1/cells/{name}: absent fields stay.
type ProxyCellChange struct {
	Upstreams                 []string `json:"upstreams,omitempty"`
	CapacityBytes             *int64   `json:"capacityBytes,omitempty"`
	CapacityMessagesPerSecond *float64 `json:"capacityMessagesPerSecond,omitempty"`
	Closed                    *bool    `json:"closed,omitempty"`
}

// ProxyCellDeleted is the answer of DELETE /admin/v1/cells/{name}.
type ProxyCellDeleted struct {
	Deleted bool `json:"deleted"`
}

// ProxyMove is one move of a tenant between cells: the answer of POST
// /admin/v1/tenants/{id}/move and GET /admin/v1/moves/{id}.
type ProxyMove struct {
	ID     int64  `json:"id"`
	Tenant string `json:"tenant"`
	From   string `json:"from"`
	To     string `json:"to"`
	// Phase is copying, pausing, final, switched, cleaning, done or failed.
	Phase string `json:"phase"`
	// Progress is the mover's account of the move.
	Progress json.RawMessage `json:"progress"`
	// Error says why the move failed (or last retried); null otherwise.
	Error *string `json:"error"`
	// CancelRequested says an operator cancelled the move before its switch.
	CancelRequested bool `json:"cancelRequested"`
	// PauseMs is how long the tenant's requests were held, once switched.
	PauseMs    *float64   `json:"pauseMs"`
	CreatedAt  time.Time  `json:"createdAt"`
	UpdatedAt  time.Time  `json:"updatedAt"`
	FinishedAt *time.Time `json:"finishedAt"`
}

// ProxyMoveList is the answer of GET /admin/v1/moves, latest first.
type ProxyMoveList struct {
	Moves []ProxyMove `json:"moves"`
}

// ProxyMoveCreate is the body of POST /admin/v1/tenants/{id}/move.
type ProxyMoveCreate struct {
	Cell string `json:"cell"`
}
