package tenant

import (
	"encoding/json"
	"net/url"
	"regexp"
	"strconv"
	"time"
)

// DefaultCell is the cell of a tenant stored without one: the proxy's own upstreams
// (QUEEN_PROXY_UPSTREAMS).
const DefaultCell = "default"

// MaxCellUpstreams is how many brokers one cell may have.
const MaxCellUpstreams = 3

// cellName is the grammar of a cell's name.
var cellName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// Cell is one queen deployment (1–3 brokers on one PostgreSQL) that tenants live in.
type Cell struct {
	Name string
	// Upstreams are the brokers' base URLs.
	Upstreams []string
	// CapacityBytes is how much the cell should store; 0 = not set.
	CapacityBytes int64
	// CapacityMessagesPerSecond is the message rate (in + out) it should carry; 0 = not set.
	CapacityMessagesPerSecond float64
	// Closed cells get no new tenants from the placement policy.
	Closed    bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

// CellStats is a cell with what its tenants store and do, as the store computes it
// from the metering tables.
type CellStats struct {
	Cell
	// Tenants is how many tenants (deleted ones aside) live in the cell.
	Tenants int
	// StoredMessages and StoredBytes sum each tenant's latest usage snapshot.
	StoredMessages int64
	StoredBytes    int64
	// PushRate and PopRate are messages per second over the last 5 minutes of metering.
	PushRate float64
	PopRate  float64
	// Headroom is 0..1 (the smallest spare share of the capacities set), nil when
	// no capacity is set.
	Headroom *float64
}

// ValidateCellName checks a cell's name: 1–63 lowercase letters, digits and dashes,
// starting with a letter or digit.
func ValidateCellName(name string) error {
	if !cellName.MatchString(name) {
		return invalid("name", "must be 1-63 of a-z, 0-9 and '-', starting with a letter or digit")
	}
	return nil
}

// Validate checks the whole cell: its name, 1–3 upstreams and non-negative capacities.
func (c *Cell) Validate() error {
	if err := ValidateCellName(c.Name); err != nil {
		return err
	}
	if err := ValidateUpstreams(c.Upstreams); err != nil {
		return err
	}
	if c.CapacityBytes < 0 {
		return invalid("capacityBytes", "must be >= 0 (0 = not set)")
	}
	if c.CapacityMessagesPerSecond < 0 {
		return invalid("capacityMessagesPerSecond", "must be >= 0 (0 = not set)")
	}
	return nil
}

// ValidateUpstreams checks a cell's broker URLs: 1–3 distinct absolute http(s) URLs
// with a host and no credentials, query or fragment.
func ValidateUpstreams(us []string) error {
	if len(us) < 1 || len(us) > MaxCellUpstreams {
		return invalid("upstreams", "must list 1 to 3 broker URLs")
	}
	seen := map[string]bool{}
	for _, s := range us {
		u, err := url.Parse(s)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			return invalid("upstreams", "must be http(s) URLs with a host: "+quote(s))
		case u.User != nil:
			return invalid("upstreams", "must carry no credentials: "+quote(s))
		case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.RawFragment != "":
			return invalid("upstreams", "must have no query or fragment: "+quote(s))
		case !validPort(u.Port()):
			return invalid("upstreams", "must have a port from 1 to 65535, or none: "+quote(s))
		case seen[s]:
			return invalid("upstreams", "lists "+quote(s)+" twice")
		}
		seen[s] = true
	}
	return nil
}

// validPort reports whether p, a URL's port, is absent or 1–65535.
func validPort(p string) bool {
	if p == "" {
		return true
	}
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// MovePhase is where a move of a tenant between cells is.
type MovePhase string

// The phases of a move, in order; done and failed are final.
const (
	// MoveCopying copies the tenant's messages while it stays live.
	MoveCopying MovePhase = "copying"
	// MovePausing holds the tenant's requests at every replica.
	MovePausing MovePhase = "pausing"
	// MoveFinal fences the source and copies the last delta and the state.
	MoveFinal MovePhase = "final"
	// MoveSwitched has the tenant served by the target cell.
	MoveSwitched MovePhase = "switched"
	// MoveCleaning drops the tenant's rows at the source.
	MoveCleaning MovePhase = "cleaning"
	// MoveDone is a finished move.
	MoveDone MovePhase = "done"
	// MoveFailed is a move given up (or cancelled) before the switch.
	MoveFailed MovePhase = "failed"
)

// Finished says whether p is a final phase.
func (p MovePhase) Finished() bool { return p == MoveDone || p == MoveFailed }

// BeforeSwitch says whether the tenant is still served by the source cell in p.
func (p MovePhase) BeforeSwitch() bool {
	return p == MoveCopying || p == MovePausing || p == MoveFinal
}

// Valid says whether p is one of the phases.
func (p MovePhase) Valid() bool {
	switch p {
	case MoveCopying, MovePausing, MoveFinal, MoveSwitched, MoveCleaning, MoveDone, MoveFailed:
		return true
	}
	return false
}

// Move is one move of a tenant from a cell to another.
type Move struct {
	ID     int64
	Tenant string
	From   string
	To     string
	Phase  MovePhase
	// Progress is the mover's own account (a JSON object).
	Progress json.RawMessage
	// Error says why the move failed; "" otherwise.
	Error string
	// Owner is the replica running the move and OwnerUntil its lease.
	Owner      string
	OwnerUntil *time.Time
	// PauseEpoch counts the pauses; PausedAt is when the latest began.
	PauseEpoch int
	PausedAt   *time.Time
	// PauseMs is how long the tenant was held, set at the switch.
	PauseMs *float64
	// CancelRequested says an operator cancelled the move: its owner undoes it and
	// finishes it as failed.
	CancelRequested bool
	CreatedAt       time.Time
	UpdatedAt       time.Time
	FinishedAt      *time.Time
}
