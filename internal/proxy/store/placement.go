package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/proxy/tenant"
)

// ErrNoOpenCell is a tenant to place when every cell is closed; it wraps
// tenant.ErrConflict.
var ErrNoOpenCell = fmt.Errorf("%w: no open cell", tenant.ErrConflict)

// cellStatsSQL computes every cell's tenants, storage, rates and headroom from the
// metering tables. Stored* sum each live tenant's latest snapshot (the gauges of its
// latest metered minute, the largest a replica wrote); the rates are the messages
// in and out over the last five whole minutes, per second. Headroom is the smallest
// spare share over the capacities set (least() skips the NULL of one not set),
// clamped to 0..1, NULL when none is set.
const cellStatsSQL = `WITH tc AS (
		SELECT id, coalesce(cell, '` + tenant.DefaultCell + `') AS cell FROM queen_proxy.tenants WHERE status <> 'deleted'
	), latest AS (
		SELECT DISTINCT ON (u.tenant_id) u.tenant_id, u.minute FROM queen_proxy.usage_minute u
		JOIN tc ON tc.id = u.tenant_id ORDER BY u.tenant_id, u.minute DESC
	), snap AS (
		SELECT u.tenant_id, max(u.stored_messages) AS sm, max(u.stored_bytes) AS sb
		FROM queen_proxy.usage_minute u JOIN latest l ON l.tenant_id = u.tenant_id AND l.minute = u.minute
		GROUP BY u.tenant_id
	), rate AS (
		SELECT tenant_id, sum(messages_in) AS mi, sum(messages_out) AS mo FROM queen_proxy.usage_minute
		WHERE minute >= date_trunc('minute', now()) - interval '5 minutes' AND minute < date_trunc('minute', now())
		GROUP BY tenant_id
	), per_cell AS (
		SELECT tc.cell, count(*) AS tenants, sum(coalesce(snap.sm, 0)) AS sm, sum(coalesce(snap.sb, 0)) AS sb,
			sum(coalesce(rate.mi, 0)) / 300.0 AS push_rate, sum(coalesce(rate.mo, 0)) / 300.0 AS pop_rate
		FROM tc LEFT JOIN snap ON snap.tenant_id = tc.id LEFT JOIN rate ON rate.tenant_id = tc.id
		GROUP BY tc.cell
	), stats AS (
		SELECT c.name, c.upstreams, c.capacity_bytes, c.capacity_messages_per_second, c.closed, c.created_at, c.updated_at,
			coalesce(p.tenants, 0)::int AS tenants, coalesce(p.sm, 0)::bigint AS stored_messages,
			coalesce(p.sb, 0)::bigint AS stored_bytes, coalesce(p.push_rate, 0)::float8 AS push_rate,
			coalesce(p.pop_rate, 0)::float8 AS pop_rate,
			CASE WHEN c.capacity_bytes > 0 OR c.capacity_messages_per_second > 0 THEN greatest(0, least(1,
				CASE WHEN c.capacity_bytes > 0 THEN 1 - coalesce(p.sb, 0)::float8 / c.capacity_bytes END,
				CASE WHEN c.capacity_messages_per_second > 0
					THEN 1 - (coalesce(p.push_rate, 0) + coalesce(p.pop_rate, 0))::float8 / c.capacity_messages_per_second END
			)) END::float8 AS headroom
		FROM queen_proxy.cells c LEFT JOIN per_cell p ON p.cell = c.name
	)
	SELECT name, upstreams, capacity_bytes, capacity_messages_per_second, closed, created_at, updated_at,
		tenants, stored_messages, stored_bytes, push_rate, pop_rate, headroom FROM stats`

// placementOrder ranks the open cells: those with headroom left by most headroom,
// then those with no capacity set, then the full ones; ties by fewest stored bytes,
// fewest tenants, name.
const placementOrder = ` WHERE NOT closed ORDER BY
	CASE WHEN headroom > 0 THEN 0 WHEN headroom IS NULL THEN 1 ELSE 2 END, headroom DESC NULLS LAST,
	stored_bytes, tenants, name`

// Place returns the cell the placement policy picks for a new tenant now (see
// placeIn), without placing anything.
func (s *Store) Place(ctx context.Context) (string, error) {
	var cell string
	err := s.inTx(ctx, func(tx pgx.Tx) (err error) {
		cell, err = placeIn(ctx, tx, "")
		return err
	})
	if cell == "" && err == nil {
		cell = tenant.DefaultCell
	}
	return cell, err
}

// placeIn is the cell to store for a new tenant, its row share-locked against a
// concurrent delete: named when given (a *tenant.ValidationError of field "cell"
// when no such cell exists; a closed one is the operator's choice), else the open
// cell ranked first by placementOrder. With no cell stored at all it is "" (the
// tenant lives in the default cell); with cells but none open, ErrNoOpenCell.
func placeIn(ctx context.Context, tx pgx.Tx, named string) (string, error) {
	if named != "" {
		var name string
		err := tx.QueryRow(ctx, `SELECT name FROM queen_proxy.cells WHERE name = $1 FOR SHARE`, named).Scan(&name)
		switch {
		case errors.Is(err, pgx.ErrNoRows) && named == tenant.DefaultCell:
			return "", nil // the default cell exists even before the proxy has stored it
		case errors.Is(err, pgx.ErrNoRows):
			return "", &tenant.ValidationError{Field: "cell", Msg: "unknown cell " + quoteName(named)}
		}
		return name, err
	}
	pick := func() ([]string, error) {
		rows, err := tx.Query(ctx, `SELECT name FROM (`+cellStatsSQL+`) s`+placementOrder+` LIMIT 1`)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, pgx.RowTo[string])
	}
	names, err := pick()
	if err != nil {
		return "", err
	}
	if len(names) == 0 {
		var cells bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM queen_proxy.cells)`).Scan(&cells); err != nil || !cells {
			return "", err
		}
		// Each statement reads anew: the first cell (default, recorded at the proxy's
		// start) may have appeared between the two. Pick once more before refusing.
		if names, err = pick(); err != nil {
			return "", err
		}
		if len(names) == 0 {
			return "", ErrNoOpenCell
		}
	}
	name := names[0]
	// Share-lock the pick: a cell being deleted waits for this tenant (and then sees it).
	if err := tx.QueryRow(ctx, `SELECT name FROM queen_proxy.cells WHERE name = $1 FOR SHARE`, name).Scan(&name); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return "", fmt.Errorf("%w: the cell picked was deleted meanwhile, retry", tenant.ErrConflict)
		}
		return "", err
	}
	return name, nil
}

func quoteName(s string) string { return `"` + s + `"` }
