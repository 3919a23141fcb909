package manage

import (
	"context"
	"strconv"

	"github.com/queenmq/queen/internal/proxy/tenant"
)

// CellSpec is a new cell: nil capacities are 0 (not set), nil Closed is open.
type CellSpec struct {
	Name                      string
	Upstreams                 []string
	CapacityBytes             *int64
	CapacityMessagesPerSecond *float64
	Closed                    *bool
}

// CreateCell validates and stores a new cell.
func (m *Manager) CreateCell(ctx context.Context, spec CellSpec, actor string) (*tenant.CellStats, error) {
	c := &tenant.Cell{Name: spec.Name, Upstreams: spec.Upstreams}
	if spec.CapacityBytes != nil {
		c.CapacityBytes = *spec.CapacityBytes
	}
	if spec.CapacityMessagesPerSecond != nil {
		c.CapacityMessagesPerSecond = *spec.CapacityMessagesPerSecond
	}
	if spec.Closed != nil {
		c.Closed = *spec.Closed
	}
	if _, err := m.store.CellCreate(ctx, c, actor); err != nil {
		return nil, err
	}
	return m.store.CellGet(ctx, c.Name)
}

// CellChange is a partial update of a cell: nil fields stay.
type CellChange struct {
	Upstreams                 []string
	CapacityBytes             *int64
	CapacityMessagesPerSecond *float64
	Closed                    *bool
}

// UpdateCell applies ch to the cell name. The default cell's upstreams belong to
// the configuration while it owns them (store.ErrCellConfigOwned).
func (m *Manager) UpdateCell(ctx context.Context, name string, ch CellChange, actor string) (*tenant.CellStats, error) {
	if _, err := m.store.CellUpdate(ctx, name, func(c *tenant.Cell) error {
		if ch.Upstreams != nil {
			c.Upstreams = ch.Upstreams
		}
		if ch.CapacityBytes != nil {
			c.CapacityBytes = *ch.CapacityBytes
		}
		if ch.CapacityMessagesPerSecond != nil {
			c.CapacityMessagesPerSecond = *ch.CapacityMessagesPerSecond
		}
		if ch.Closed != nil {
			c.Closed = *ch.Closed
		}
		return nil
	}, actor); err != nil {
		return nil, err
	}
	return m.store.CellGet(ctx, name)
}

// SetCellClosed closes a cell to new tenants, or opens it again.
func (m *Manager) SetCellClosed(ctx context.Context, name string, closed bool, actor string) (*tenant.CellStats, error) {
	return m.UpdateCell(ctx, name, CellChange{Closed: &closed}, actor)
}

// Cell returns one cell with its figures.
func (m *Manager) Cell(ctx context.Context, name string) (*tenant.CellStats, error) {
	return m.store.CellGet(ctx, name)
}

// Cells returns every cell with its figures, by name.
func (m *Manager) Cells(ctx context.Context) ([]*tenant.CellStats, error) {
	return m.store.CellList(ctx)
}

// DeleteCell deletes a cell no tenant lives in and no live move names.
func (m *Manager) DeleteCell(ctx context.Context, name, actor string) error {
	return m.store.CellDelete(ctx, name, actor)
}

// MoveTenant starts the move of a tenant to the cell named; a replica's mover runs it.
func (m *Manager) MoveTenant(ctx context.Context, tenantID, cell, actor string) (*tenant.Move, error) {
	if cell == "" {
		return nil, invalid("cell", "is required")
	}
	return m.store.MoveCreate(ctx, tenantID, cell, actor)
}

// Bounds of Moves' page.
const (
	DefaultMovePage = 100
	MaxMovePage     = 1000
)

// Moves returns the latest moves of a tenant (or of all with ""), latest first.
func (m *Manager) Moves(ctx context.Context, tenantID string, limit int) ([]*tenant.Move, error) {
	if limit < 1 || limit > MaxMovePage {
		return nil, invalid("limit", "must be 1..1000")
	}
	return m.store.MoveList(ctx, tenantID, limit)
}

// Move returns one move by its id (a decimal number).
func (m *Manager) Move(ctx context.Context, id string) (*tenant.Move, error) {
	n, err := ParseMoveID(id)
	if err != nil {
		return nil, err
	}
	return m.store.MoveGet(ctx, n)
}

// CancelMove cancels a move before its switch; its mover undoes it.
func (m *Manager) CancelMove(ctx context.Context, id, actor string) (*tenant.Move, error) {
	n, err := ParseMoveID(id)
	if err != nil {
		return nil, err
	}
	return m.store.MoveCancel(ctx, n, actor)
}

// TenantMove returns the tenant's live move, nil when none.
func (m *Manager) TenantMove(ctx context.Context, tenantID string) (*tenant.Move, error) {
	return m.store.TenantMove(ctx, tenantID)
}

// LiveMoves returns the moves not finished, by tenant.
func (m *Manager) LiveMoves(ctx context.Context) (map[string]*tenant.Move, error) {
	ms, err := m.store.MovesLive(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*tenant.Move, len(ms))
	for _, mv := range ms {
		out[mv.Tenant] = mv
	}
	return out, nil
}

// ParseMoveID reads a move's id; a malformed one is tenant.ErrNotFound (no move has it).
func ParseMoveID(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, tenant.ErrNotFound
	}
	return n, nil
}
