package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/proxy/tenant"
)

// Refusals of cell changes; each wraps tenant.ErrConflict.
var (
	// ErrCellConfigOwned is a change of the default cell's upstreams, or its delete,
	// while the configuration owns them.
	ErrCellConfigOwned = fmt.Errorf("%w: the cell %q is QUEEN_PROXY_UPSTREAMS: change the configuration", tenant.ErrConflict, tenant.DefaultCell)
	// ErrCellInUse is the delete of a cell where a tenant lives or that a live move names.
	ErrCellInUse = fmt.Errorf("%w: tenants live in the cell or a move names it", tenant.ErrConflict)
)

const cellColumns = `name, upstreams, capacity_bytes, capacity_messages_per_second, closed, created_at, updated_at`

func cellDest(c *tenant.Cell) []any {
	return []any{&c.Name, &c.Upstreams, &c.CapacityBytes, &c.CapacityMessagesPerSecond, &c.Closed, &c.CreatedAt, &c.UpdatedAt}
}

func scanCell(row pgx.Row) (*tenant.Cell, error) {
	c := &tenant.Cell{}
	if err := row.Scan(cellDest(c)...); err != nil {
		return nil, err
	}
	return c, nil
}

func scanCellStats(row pgx.Row) (*tenant.CellStats, error) {
	c := &tenant.CellStats{}
	dest := append(cellDest(&c.Cell), &c.Tenants, &c.StoredMessages, &c.StoredBytes, &c.PushRate, &c.PopRate, &c.Headroom)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	return c, nil
}

// CellEnsureDefault stores the default cell with upstreams, the configuration's
// (QUEEN_PROXY_UPSTREAMS), which win over what was stored, and marks it owned by the
// configuration. An empty list does nothing.
func (s *Store) CellEnsureDefault(ctx context.Context, upstreams []string) error {
	if len(upstreams) == 0 {
		return nil
	}
	s.defaultCellOwned.Store(true)
	return s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `INSERT INTO queen_proxy.cells (name, upstreams) VALUES ($1, $2)
			ON CONFLICT (name) DO UPDATE SET upstreams = excluded.upstreams, updated_at = now()
			WHERE cells.upstreams IS DISTINCT FROM excluded.upstreams RETURNING name`, tenant.DefaultCell, upstreams)
		if err != nil {
			return err
		}
		changed, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(changed) == 0 {
			return err
		}
		return notify(ctx, tx, "cell:"+tenant.DefaultCell)
	})
}

// CellCreate stores a new cell (validated); a name in use is ErrAlreadyExists.
func (s *Store) CellCreate(ctx context.Context, c *tenant.Cell, actor string) (*tenant.Cell, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var out *tenant.Cell
	err := s.inTx(ctx, func(tx pgx.Tx) (err error) {
		out, err = scanCell(tx.QueryRow(ctx, `INSERT INTO queen_proxy.cells (name, upstreams, capacity_bytes,
			capacity_messages_per_second, closed) VALUES ($1, $2, $3, $4, $5) RETURNING `+cellColumns,
			c.Name, c.Upstreams, c.CapacityBytes, c.CapacityMessagesPerSecond, c.Closed))
		if err != nil {
			return err
		}
		if err := notify(ctx, tx, "cell:"+c.Name); err != nil {
			return err
		}
		return audit(ctx, tx, actor, "cell.create", c.Name, cellDetail(out))
	})
	return out, err
}

func cellDetail(c *tenant.Cell) map[string]any {
	return map[string]any{"upstreams": c.Upstreams, "capacityBytes": c.CapacityBytes,
		"capacityMessagesPerSecond": c.CapacityMessagesPerSecond, "closed": c.Closed}
}

// CellGet returns one cell with its figures.
func (s *Store) CellGet(ctx context.Context, name string) (*tenant.CellStats, error) {
	c, err := scanCellStats(s.pool.QueryRow(ctx, cellStatsSQL+` WHERE name = $1`, name))
	return c, interpretError(err)
}

// CellList returns every cell with its figures, by name.
func (s *Store) CellList(ctx context.Context) ([]*tenant.CellStats, error) {
	rows, err := s.pool.Query(ctx, cellStatsSQL+` ORDER BY name`)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := []*tenant.CellStats{}
	for rows.Next() {
		c, err := scanCellStats(rows)
		if err != nil {
			return nil, interpretError(err)
		}
		out = append(out, c)
	}
	return out, interpretError(rows.Err())
}

// CellsAll returns every cell without figures, by name: what the gateway routes by.
func (s *Store) CellsAll(ctx context.Context) ([]*tenant.Cell, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+cellColumns+` FROM queen_proxy.cells ORDER BY name`)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*tenant.Cell, error) { return scanCell(r) })
	return out, interpretError(err)
}

// TenantCells maps every tenant not deleted to its cell (DefaultCell for one stored
// without).
func (s *Store) TenantCells(ctx context.Context) (map[string]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, coalesce(cell, '`+tenant.DefaultCell+`') FROM queen_proxy.tenants
		WHERE status <> 'deleted'`)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, cell string
		if err := rows.Scan(&id, &cell); err != nil {
			return nil, interpretError(err)
		}
		out[id] = cell
	}
	return out, interpretError(rows.Err())
}

// CellUpdate applies change to the cell under a row lock and stores the result
// (validated), notifying the replicas. The default cell's upstreams cannot change
// while the configuration owns them (ErrCellConfigOwned); its capacities and
// closed flag can.
func (s *Store) CellUpdate(ctx context.Context, name string, change func(*tenant.Cell) error, actor string) (*tenant.Cell, error) {
	var out *tenant.Cell
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		c, err := scanCell(tx.QueryRow(ctx, `SELECT `+cellColumns+` FROM queen_proxy.cells WHERE name = $1 FOR UPDATE`, name))
		if err != nil {
			return err
		}
		before := slices.Clone(c.Upstreams)
		if err := change(c); err != nil {
			return err
		}
		c.Name = name
		if name == tenant.DefaultCell && s.defaultCellOwned.Load() && !slices.Equal(before, c.Upstreams) {
			return ErrCellConfigOwned
		}
		if err := c.Validate(); err != nil {
			return err
		}
		out, err = scanCell(tx.QueryRow(ctx, `UPDATE queen_proxy.cells SET upstreams = $2, capacity_bytes = $3,
			capacity_messages_per_second = $4, closed = $5, updated_at = now() WHERE name = $1 RETURNING `+cellColumns,
			name, c.Upstreams, c.CapacityBytes, c.CapacityMessagesPerSecond, c.Closed))
		if err != nil {
			return err
		}
		if err := notify(ctx, tx, "cell:"+name); err != nil {
			return err
		}
		return audit(ctx, tx, actor, "cell.update", name, cellDetail(out))
	})
	return out, err
}

// CellDelete deletes a cell where no tenant (deleted ones aside) lives and that no
// live move names (ErrCellInUse); the default cell is refused while the
// configuration owns it (ErrCellConfigOwned).
func (s *Store) CellDelete(ctx context.Context, name, actor string) error {
	if name == tenant.DefaultCell && s.defaultCellOwned.Load() {
		return ErrCellConfigOwned
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var locked string
		if err := tx.QueryRow(ctx, `SELECT name FROM queen_proxy.cells WHERE name = $1 FOR UPDATE`, name).Scan(&locked); err != nil {
			return err
		}
		var inUse bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM queen_proxy.tenants
				WHERE status <> 'deleted' AND coalesce(cell, '`+tenant.DefaultCell+`') = $1)
			OR EXISTS (SELECT 1 FROM queen_proxy.tenant_moves WHERE finished_at IS NULL AND (from_cell = $1 OR to_cell = $1))`,
			name).Scan(&inUse); err != nil {
			return err
		}
		if inUse {
			return ErrCellInUse
		}
		if _, err := tx.Exec(ctx, `DELETE FROM queen_proxy.cells WHERE name = $1`, name); err != nil {
			return err
		}
		if err := notify(ctx, tx, "cell:"+name); err != nil {
			return err
		}
		return audit(ctx, tx, actor, "cell.delete", name, nil)
	})
}
