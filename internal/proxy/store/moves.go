package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queenmq/queen/internal/proxy/tenant"
)

// Refusals of moves; each wraps tenant.ErrConflict.
var (
	// ErrMoveLive is a second move of a tenant while one is live.
	ErrMoveLive = fmt.Errorf("%w: a move of this tenant is live", tenant.ErrConflict)
	// ErrAlreadyInCell is a move of a tenant to the cell it lives in.
	ErrAlreadyInCell = fmt.Errorf("%w: the tenant already lives in that cell", tenant.ErrConflict)
	// ErrTenantNotActive is a move of a suspended or deleted tenant.
	ErrTenantNotActive = fmt.Errorf("%w: only an active tenant moves", tenant.ErrConflict)
	// ErrMoveSwitched is a cancel of a move at or past its switch, or a failure
	// recorded there.
	ErrMoveSwitched = fmt.Errorf("%w: the move has switched the tenant already", tenant.ErrConflict)
	// ErrMoveFinished is a change of a finished move.
	ErrMoveFinished = fmt.Errorf("%w: the move is finished", tenant.ErrConflict)
	// ErrMoveCancelled is a switch of a move an operator cancelled.
	ErrMoveCancelled = fmt.Errorf("%w: the move was cancelled", tenant.ErrConflict)
	// ErrNotMoveOwner is a change by a replica that does not hold the move's lease
	// (another took it over).
	ErrNotMoveOwner = fmt.Errorf("%w: this replica does not own the move", tenant.ErrConflict)
	// ErrMovePhase is a phase a function does not set, or a step out of order.
	ErrMovePhase = fmt.Errorf("%w: not a step this move can take", tenant.ErrConflict)
)

const moveColumns = `id, tenant_id, from_cell, to_cell, phase, progress, coalesce(error, ''), coalesce(owner, ''),
	owner_until, pause_epoch, paused_at, pause_ms, cancel_requested, created_at, updated_at, finished_at`

func scanMove(row pgx.Row) (*tenant.Move, error) {
	m := &tenant.Move{}
	var phase string
	if err := row.Scan(&m.ID, &m.Tenant, &m.From, &m.To, &phase, &m.Progress, &m.Error, &m.Owner, &m.OwnerUntil,
		&m.PauseEpoch, &m.PausedAt, &m.PauseMs, &m.CancelRequested, &m.CreatedAt, &m.UpdatedAt, &m.FinishedAt); err != nil {
		return nil, err
	}
	m.Phase = tenant.MovePhase(phase)
	return m, nil
}

func collectMoves(rows pgx.Rows, err error) ([]*tenant.Move, error) {
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*tenant.Move, error) { return scanMove(r) })
	if out == nil {
		out = []*tenant.Move{}
	}
	return out, interpretError(err)
}

// MoveCreate starts a move of an active tenant to the cell toCell, in phase
// copying. An unknown tenant is ErrNotFound, an unknown cell a
// *tenant.ValidationError of field "cell"; a tenant not active, already in toCell or
// with a live move is refused (ErrTenantNotActive, ErrAlreadyInCell, ErrMoveLive).
func (s *Store) MoveCreate(ctx context.Context, tenantID, toCell, actor string) (*tenant.Move, error) {
	var out *tenant.Move
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var status, from string
		if err := tx.QueryRow(ctx, `SELECT status, coalesce(cell, '`+tenant.DefaultCell+`') FROM queen_proxy.tenants
			WHERE id = $1 FOR UPDATE`, tenantID).Scan(&status, &from); err != nil {
			return err
		}
		var cell string
		err := tx.QueryRow(ctx, `SELECT name FROM queen_proxy.cells WHERE name = $1 FOR SHARE`, toCell).Scan(&cell)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return &tenant.ValidationError{Field: "cell", Msg: "unknown cell " + quoteName(toCell)}
		case err != nil:
			return err
		case status == string(tenant.StatusDeleted):
			return tenant.ErrNotFound
		case status != string(tenant.StatusActive):
			return ErrTenantNotActive
		case from == toCell:
			return ErrAlreadyInCell
		}
		var live bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM queen_proxy.tenant_moves
			WHERE tenant_id = $1 AND finished_at IS NULL)`, tenantID).Scan(&live); err != nil {
			return err
		}
		if live {
			return ErrMoveLive
		}
		out, err = scanMove(tx.QueryRow(ctx, `INSERT INTO queen_proxy.tenant_moves (tenant_id, from_cell, to_cell, phase)
			VALUES ($1, $2, $3, $4) RETURNING `+moveColumns, tenantID, from, toCell, string(tenant.MoveCopying)))
		if err != nil {
			return err
		}
		if err := notify(ctx, tx, "placement:"+tenantID); err != nil {
			return err
		}
		return audit(ctx, tx, actor, "tenant.move", tenantID, map[string]any{"move": out.ID, "from": from, "to": toCell})
	})
	if errors.Is(err, tenant.ErrAlreadyExists) { // the live-move index: a create that raced this one
		return nil, ErrMoveLive
	}
	return out, err
}

// MoveGet returns one move.
func (s *Store) MoveGet(ctx context.Context, id int64) (*tenant.Move, error) {
	m, err := scanMove(s.pool.QueryRow(ctx, `SELECT `+moveColumns+` FROM queen_proxy.tenant_moves WHERE id = $1`, id))
	return m, interpretError(err)
}

// MoveList returns the latest limit moves, of one tenant or (tenantID "") of all,
// latest first.
func (s *Store) MoveList(ctx context.Context, tenantID string, limit int) ([]*tenant.Move, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+moveColumns+` FROM queen_proxy.tenant_moves
		WHERE $1 = '' OR tenant_id = $1 ORDER BY id DESC LIMIT $2`, tenantID, limit)
	return collectMoves(rows, err)
}

// MovesLive returns the moves not finished, oldest first.
func (s *Store) MovesLive(ctx context.Context) ([]*tenant.Move, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+moveColumns+` FROM queen_proxy.tenant_moves
		WHERE finished_at IS NULL ORDER BY id`)
	return collectMoves(rows, err)
}

// TenantMove returns the tenant's live move, nil when none.
func (s *Store) TenantMove(ctx context.Context, tenantID string) (*tenant.Move, error) {
	m, err := scanMove(s.pool.QueryRow(ctx, `SELECT `+moveColumns+` FROM queen_proxy.tenant_moves
		WHERE tenant_id = $1 AND finished_at IS NULL`, tenantID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return m, interpretError(err)
}

// MoveCancel asks for the cancel of a live move before its switch: its owner undoes
// it and finishes it as failed. At or past the switch it is ErrMoveSwitched; a
// finished move is ErrMoveFinished. Cancelling twice is not an error.
func (s *Store) MoveCancel(ctx context.Context, id int64, actor string) (*tenant.Move, error) {
	var out *tenant.Move
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		m, err := scanMove(tx.QueryRow(ctx, `SELECT `+moveColumns+` FROM queen_proxy.tenant_moves WHERE id = $1 FOR UPDATE`, id))
		switch {
		case err != nil:
			return err
		case m.FinishedAt != nil:
			return ErrMoveFinished
		case !m.Phase.BeforeSwitch():
			return ErrMoveSwitched
		}
		if out, err = scanMove(tx.QueryRow(ctx, `UPDATE queen_proxy.tenant_moves SET cancel_requested = true,
			updated_at = now() WHERE id = $1 RETURNING `+moveColumns, id)); err != nil {
			return err
		}
		if err := notify(ctx, tx, "placement:"+m.Tenant); err != nil {
			return err
		}
		return audit(ctx, tx, actor, "move.cancel", m.Tenant, map[string]any{"move": id})
	})
	return out, err
}

// MoveClaim takes one live move whose lease is free, run out or already
// replicaID's, oldest first, skipping those another claim has locked, and holds it
// for lease. It returns nil when there is none.
func (s *Store) MoveClaim(ctx context.Context, replicaID string, lease time.Duration) (*tenant.Move, error) {
	var out *tenant.Move
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		m, err := scanMove(tx.QueryRow(ctx, `UPDATE queen_proxy.tenant_moves SET owner = $1, owner_until = now() + $2::interval
			WHERE id = (SELECT id FROM queen_proxy.tenant_moves WHERE finished_at IS NULL
				AND (owner IS NULL OR owner_until IS NULL OR owner_until < now() OR owner = $1)
				ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
			RETURNING `+moveColumns, replicaID, lease))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		out = m
		return notify(ctx, tx, "placement:"+m.Tenant)
	})
	return out, err
}

// MoveRenew extends replicaID's lease of a live move; false when the replica no
// longer owns it (another took it over, or it finished). It notifies nobody: a
// renewal changes nothing the replicas route by.
func (s *Store) MoveRenew(ctx context.Context, id int64, replicaID string, lease time.Duration) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE queen_proxy.tenant_moves SET owner_until = now() + $3::interval
		WHERE id = $1 AND owner = $2 AND finished_at IS NULL`, id, replicaID, lease)
	if err != nil {
		return false, interpretError(err)
	}
	return tag.RowsAffected() == 1, nil
}

// ownedMove locks a live move that replicaID owns.
func ownedMove(ctx context.Context, tx pgx.Tx, id int64, replicaID string) (*tenant.Move, error) {
	m, err := scanMove(tx.QueryRow(ctx, `SELECT `+moveColumns+` FROM queen_proxy.tenant_moves WHERE id = $1 FOR UPDATE`, id))
	switch {
	case err != nil:
		return nil, err
	case m.FinishedAt != nil:
		return nil, ErrMoveFinished
	case m.Owner != replicaID:
		return nil, ErrNotMoveOwner
	}
	return m, nil
}

// MoveUpdate records the owner's phase (copying, pausing, final or cleaning; the
// switch and the end have their own functions), progress (nil keeps it) and error
// ("" clears it). Another replica's change is ErrNotMoveOwner.
func (s *Store) MoveUpdate(ctx context.Context, id int64, replicaID string, phase tenant.MovePhase, progress json.RawMessage, errText string) error {
	switch phase {
	case tenant.MoveCopying, tenant.MovePausing, tenant.MoveFinal, tenant.MoveCleaning:
	default:
		return fmt.Errorf("%w: MoveUpdate does not set phase %q", ErrMovePhase, phase)
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		m, err := ownedMove(ctx, tx, id, replicaID)
		if err != nil {
			return err
		}
		if phase.BeforeSwitch() != m.Phase.BeforeSwitch() {
			return fmt.Errorf("%w: from %s to %s", ErrMovePhase, m.Phase, phase)
		}
		if _, err := tx.Exec(ctx, `UPDATE queen_proxy.tenant_moves SET phase = $2, progress = coalesce($3, progress),
			error = NULLIF($4, ''), updated_at = now() WHERE id = $1`, id, string(phase), progress, errText); err != nil {
			return err
		}
		return notify(ctx, tx, "placement:"+m.Tenant)
	})
}

// MovePause starts a new pause of the owner's move: phase pausing, the epoch one
// more, paused_at now, the acks of older epochs forgotten. It returns the new epoch.
func (s *Store) MovePause(ctx context.Context, id int64, replicaID string) (int, error) {
	epoch := 0
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		m, err := ownedMove(ctx, tx, id, replicaID)
		if err != nil {
			return err
		}
		if !m.Phase.BeforeSwitch() {
			return fmt.Errorf("%w: pause in phase %s", ErrMovePhase, m.Phase)
		}
		if err := tx.QueryRow(ctx, `UPDATE queen_proxy.tenant_moves SET phase = $2, pause_epoch = pause_epoch + 1,
			paused_at = now(), updated_at = now() WHERE id = $1 RETURNING pause_epoch`, id, string(tenant.MovePausing)).Scan(&epoch); err != nil {
			return err
		}
		return notify(ctx, tx, "placement:"+m.Tenant)
	})
	return epoch, err
}

// MoveSwitch makes the move's target the tenant's cell, in one transaction with the
// move's phase switched and pauseMs, and notifies the replicas. Only the owner
// switches, from phase final (a move already switched is left as it is); a
// cancelled move is ErrMoveCancelled.
func (s *Store) MoveSwitch(ctx context.Context, id int64, replicaID string, pauseMs float64) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		m, err := ownedMove(ctx, tx, id, replicaID)
		switch {
		case err != nil:
			return err
		case m.Phase == tenant.MoveSwitched:
			return nil
		case m.CancelRequested:
			return ErrMoveCancelled
		case m.Phase != tenant.MoveFinal:
			return fmt.Errorf("%w: switch in phase %s", ErrMovePhase, m.Phase)
		}
		if _, err := tx.Exec(ctx, `UPDATE queen_proxy.tenants SET cell = $2, updated_at = now() WHERE id = $1`,
			m.Tenant, m.To); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE queen_proxy.tenant_moves SET phase = $2, pause_ms = $3,
			updated_at = now() WHERE id = $1`, id, string(tenant.MoveSwitched), pauseMs); err != nil {
			return err
		}
		for _, p := range []string{"placement:" + m.Tenant, "tenant:" + m.Tenant} {
			if err := notify(ctx, tx, p); err != nil {
				return err
			}
		}
		return audit(ctx, tx, "move:"+replicaID, "move.switch", m.Tenant,
			map[string]any{"move": id, "from": m.From, "to": m.To, "pauseMs": pauseMs})
	})
}

// MoveFinish ends the owner's move: done (after the switch) or failed (before it,
// the tenant staying where it was), with errText for a failure.
func (s *Store) MoveFinish(ctx context.Context, id int64, replicaID string, phase tenant.MovePhase, errText string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		m, err := ownedMove(ctx, tx, id, replicaID)
		if err != nil {
			return err
		}
		switch {
		case phase == tenant.MoveDone && m.Phase.BeforeSwitch():
			return fmt.Errorf("%w: done before the switch", ErrMovePhase)
		case phase == tenant.MoveFailed && !m.Phase.BeforeSwitch():
			return ErrMoveSwitched
		case phase != tenant.MoveDone && phase != tenant.MoveFailed:
			return fmt.Errorf("%w: MoveFinish does not set phase %q", ErrMovePhase, phase)
		}
		if _, err := tx.Exec(ctx, `UPDATE queen_proxy.tenant_moves SET phase = $2, error = NULLIF($3, ''),
			finished_at = now(), updated_at = now() WHERE id = $1`, id, string(phase), errText); err != nil {
			return err
		}
		if err := notify(ctx, tx, "placement:"+m.Tenant); err != nil {
			return err
		}
		return audit(ctx, tx, "move:"+replicaID, "move."+string(phase), m.Tenant, map[string]any{"move": id, "error": errText})
	})
}
