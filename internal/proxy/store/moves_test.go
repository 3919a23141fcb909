package store_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// movable is a store with cells c1 and c2 and the tenant acme in c1.
// claimedMove is acme's move to c2, claimed by replica r1.
func claimedMove(t *testing.T, b *testBundle) *tenant.Move {
	t.Helper()
	m, err := b.store.MoveCreate(t.Context(), "acme", "c2", actor)
	require.NoError(t, err)
	_, err = b.store.MoveClaim(t.Context(), "r1", time.Minute)
	require.NoError(t, err)
	return m
}

func movable(t *testing.T) *testBundle {
	t.Helper()
	b := setup(t)
	b.createCell(t, "c1", 0, 0)
	b.createCell(t, "c2", 0, 0)
	b.createTenantIn(t, "acme", "c1")
	return b
}

func TestMoveCreateValidations(t *testing.T) {
	t.Parallel()
	b := movable(t)
	ctx := t.Context()
	conn := b.listen(t)

	_, err := b.store.MoveCreate(ctx, "nobody", "c2", actor)
	require.ErrorIs(t, err, tenant.ErrNotFound)
	_, err = b.store.MoveCreate(ctx, "acme", "c9", actor)
	var verr *tenant.ValidationError
	require.ErrorAs(t, err, &verr)
	require.Equal(t, "cell", verr.Field)
	_, err = b.store.MoveCreate(ctx, "acme", "c1", actor)
	require.ErrorIs(t, err, store.ErrAlreadyInCell)
	_, err = b.store.TenantUpdate(ctx, "acme", func(tn *tenant.Tenant) error { tn.Status = tenant.StatusSuspended; return nil }, actor)
	require.NoError(t, err)
	_, err = b.store.MoveCreate(ctx, "acme", "c2", actor)
	require.ErrorIs(t, err, store.ErrTenantNotActive)
	_, err = b.store.TenantUpdate(ctx, "acme", func(tn *tenant.Tenant) error { tn.Status = tenant.StatusActive; return nil }, actor)
	require.NoError(t, err)
	_ = notifications(t, conn)

	m, err := b.store.MoveCreate(ctx, "acme", "c2", actor)
	require.NoError(t, err)
	require.Equal(t, tenant.Move{ID: m.ID, Tenant: "acme", From: "c1", To: "c2", Phase: tenant.MoveCopying,
		Progress: json.RawMessage(`{}`), CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}, *m)
	require.Equal(t, []string{"placement:acme"}, notifications(t, conn))
	_, err = b.store.MoveCreate(ctx, "acme", "c2", actor)
	require.ErrorIs(t, err, store.ErrMoveLive)
	require.Contains(t, b.auditActions(t, "acme"), "tenant.move")

	got, err := b.store.TenantMove(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, m.ID, got.ID)
	live, err := b.store.MovesLive(ctx)
	require.NoError(t, err)
	require.Len(t, live, 1)
	_, err = b.store.MoveGet(ctx, m.ID+100)
	require.ErrorIs(t, err, tenant.ErrNotFound)
}

// Two creates at once: exactly one move goes live.
func TestMoveCreateOneLive(t *testing.T) {
	t.Parallel()
	b := movable(t)
	b.createCell(t, "c3", 0, 0)
	for round := range 5 {
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, to := range []string{"c2", "c3"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = b.store.MoveCreate(t.Context(), "acme", to, actor)
			}()
		}
		close(start)
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else {
				require.ErrorIs(t, err, store.ErrMoveLive, "round %d", round)
			}
		}
		require.Equal(t, 1, ok, "round %d: %v", round, errs)
		live, err := b.store.MovesLive(t.Context())
		require.NoError(t, err)
		require.Len(t, live, 1)
		_, err = b.pool.Exec(t.Context(), `UPDATE queen_proxy.tenant_moves SET finished_at = now(), phase = 'failed'`)
		require.NoError(t, err)
	}
	all, err := b.store.MoveList(t.Context(), "acme", 100)
	require.NoError(t, err)
	require.Len(t, all, 5)
	require.Greater(t, all[0].ID, all[4].ID, "latest first")
	some, err := b.store.MoveList(t.Context(), "", 2)
	require.NoError(t, err)
	require.Len(t, some, 2)
}

func TestMoveLease(t *testing.T) {
	t.Parallel()
	b := movable(t)
	ctx := t.Context()
	m, err := b.store.MoveCreate(ctx, "acme", "c2", actor)
	require.NoError(t, err)

	got, err := b.store.MoveClaim(ctx, "r1", time.Minute)
	require.NoError(t, err)
	require.Equal(t, m.ID, got.ID)
	require.Equal(t, "r1", got.Owner)
	require.NotNil(t, got.OwnerUntil)
	none, err := b.store.MoveClaim(ctx, "r2", time.Minute)
	require.NoError(t, err)
	require.Nil(t, none, "r1 holds it")
	again, err := b.store.MoveClaim(ctx, "r1", time.Minute)
	require.NoError(t, err)
	require.Equal(t, m.ID, again.ID, "a replica gets its own move back")

	ok, err := b.store.MoveRenew(ctx, m.ID, "r1", 300*time.Millisecond)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = b.store.MoveRenew(ctx, m.ID, "r2", time.Minute)
	require.NoError(t, err)
	require.False(t, ok, "only the owner renews")
	require.ErrorIs(t, b.store.MoveUpdate(ctx, m.ID, "r2", tenant.MoveCopying, nil, ""), store.ErrNotMoveOwner)

	// Once r1's short lease runs out, r2 takes the move over.
	var stolen *tenant.Move
	require.Eventually(t, func() bool {
		stolen, err = b.store.MoveClaim(ctx, "r2", time.Minute)
		require.NoError(t, err)
		return stolen != nil
	}, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, "r2", stolen.Owner)
	ok, err = b.store.MoveRenew(ctx, m.ID, "r1", time.Minute)
	require.NoError(t, err)
	require.False(t, ok, "r1 learns it lost the move")
	require.ErrorIs(t, b.store.MoveUpdate(ctx, m.ID, "r1", tenant.MoveCopying, nil, ""), store.ErrNotMoveOwner)

	require.NoError(t, b.store.MoveUpdate(ctx, m.ID, "r2", tenant.MoveCopying, json.RawMessage(`{"rounds":2}`), "slow"))
	cur, err := b.store.MoveGet(ctx, m.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"rounds":2}`, string(cur.Progress))
	require.Equal(t, "slow", cur.Error)
	require.NoError(t, b.store.MoveUpdate(ctx, m.ID, "r2", tenant.MoveCopying, nil, ""))
	cur, err = b.store.MoveGet(ctx, m.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"rounds":2}`, string(cur.Progress), "nil progress keeps it")
	require.Empty(t, cur.Error)
	require.ErrorIs(t, b.store.MoveUpdate(ctx, m.ID, "r2", tenant.MoveSwitched, nil, ""), store.ErrMovePhase)
	require.ErrorIs(t, b.store.MoveUpdate(ctx, m.ID, "r2", tenant.MoveCleaning, nil, ""), store.ErrMovePhase,
		"no cleaning before the switch")
}

func TestMovePause(t *testing.T) {
	t.Parallel()
	b := movable(t)
	ctx := t.Context()
	m := claimedMove(t, b)

	_, err := b.store.MovePause(ctx, m.ID, "r2")
	require.ErrorIs(t, err, store.ErrNotMoveOwner)
	epoch, err := b.store.MovePause(ctx, m.ID, "r1")
	require.NoError(t, err)
	require.Equal(t, 1, epoch)
	cur, err := b.store.MoveGet(ctx, m.ID)
	require.NoError(t, err)
	require.Equal(t, tenant.MovePausing, cur.Phase)
	require.NotNil(t, cur.PausedAt)
	epoch, err = b.store.MovePause(ctx, m.ID, "r1")
	require.NoError(t, err)
	require.Equal(t, 2, epoch, "every pause counts")
}

func TestMoveSwitchAndFinish(t *testing.T) {
	t.Parallel()
	b := movable(t)
	ctx := t.Context()
	m := claimedMove(t, b)

	require.ErrorIs(t, b.store.MoveSwitch(ctx, m.ID, "r1", 12), store.ErrMovePhase, "no switch before final")
	require.ErrorIs(t, b.store.MoveFinish(ctx, m.ID, "r1", tenant.MoveDone, ""), store.ErrMovePhase)
	require.NoError(t, b.store.MoveUpdate(ctx, m.ID, "r1", tenant.MoveFinal, nil, ""))
	require.ErrorIs(t, b.store.MoveSwitch(ctx, m.ID, "r2", 12), store.ErrNotMoveOwner)

	conn := b.listen(t)
	require.NoError(t, b.store.MoveSwitch(ctx, m.ID, "r1", 12.5))
	require.Equal(t, []string{"placement:acme", "tenant:acme"}, notifications(t, conn))
	tn, err := b.store.TenantGet(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, "c2", tn.Cell, "the switch changed the tenant's cell")
	cur, err := b.store.MoveGet(ctx, m.ID)
	require.NoError(t, err)
	require.Equal(t, tenant.MoveSwitched, cur.Phase)
	require.NotNil(t, cur.PauseMs)
	require.InDelta(t, 12.5, *cur.PauseMs, 1e-9)
	require.NoError(t, b.store.MoveSwitch(ctx, m.ID, "r1", 99), "a switch again (a resumed move) changes nothing")
	cur, err = b.store.MoveGet(ctx, m.ID)
	require.NoError(t, err)
	require.InDelta(t, 12.5, *cur.PauseMs, 1e-9)

	_, err = b.store.MoveCancel(ctx, m.ID, actor)
	require.ErrorIs(t, err, store.ErrMoveSwitched, "too late to cancel")
	require.ErrorIs(t, b.store.MoveFinish(ctx, m.ID, "r1", tenant.MoveFailed, "x"), store.ErrMoveSwitched)
	require.NoError(t, b.store.MoveUpdate(ctx, m.ID, "r1", tenant.MoveCleaning, nil, ""))
	require.NoError(t, b.store.MoveFinish(ctx, m.ID, "r1", tenant.MoveDone, ""))
	cur, err = b.store.MoveGet(ctx, m.ID)
	require.NoError(t, err)
	require.Equal(t, tenant.MoveDone, cur.Phase)
	require.NotNil(t, cur.FinishedAt)
	require.ErrorIs(t, b.store.MoveUpdate(ctx, m.ID, "r1", tenant.MoveCleaning, nil, ""), store.ErrMoveFinished)
	live, err := b.store.TenantMove(ctx, "acme")
	require.NoError(t, err)
	require.Nil(t, live)
	require.Equal(t, []string{"tenant.create", "tenant.move", "move.switch", "move.done"}, b.auditActions(t, "acme"))

	back, err := b.store.MoveCreate(ctx, "acme", "c1", actor)
	require.NoError(t, err, "a finished move leaves room for the next")
	require.Equal(t, "c2", back.From)
}

func TestMoveCancel(t *testing.T) {
	t.Parallel()
	b := movable(t)
	ctx := t.Context()
	m := claimedMove(t, b)
	require.NoError(t, b.store.MoveUpdate(ctx, m.ID, "r1", tenant.MoveFinal, nil, ""))

	c, err := b.store.MoveCancel(ctx, m.ID, actor)
	require.NoError(t, err)
	require.True(t, c.CancelRequested)
	_, err = b.store.MoveCancel(ctx, m.ID, actor)
	require.NoError(t, err, "cancelling twice is fine")
	require.ErrorIs(t, b.store.MoveSwitch(ctx, m.ID, "r1", 1), store.ErrMoveCancelled)
	require.NoError(t, b.store.MoveFinish(ctx, m.ID, "r1", tenant.MoveFailed, "cancelled"))
	tn, err := b.store.TenantGet(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, "c1", tn.Cell, "the tenant stays where it was")
	cur, err := b.store.MoveGet(ctx, m.ID)
	require.NoError(t, err)
	require.Equal(t, tenant.MoveFailed, cur.Phase)
	require.Equal(t, "cancelled", cur.Error)
	_, err = b.store.MoveCancel(ctx, m.ID, actor)
	require.ErrorIs(t, err, store.ErrMoveFinished)
	none, err := b.store.MoveClaim(ctx, "r2", time.Minute)
	require.NoError(t, err)
	require.Nil(t, none, "a finished move is never claimed")
}
