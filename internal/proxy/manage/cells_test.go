package manage_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/proxy/manage"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

func ptr[T any](v T) *T { return &v }

func TestCellsAndMoves(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()

	c, err := b.manager.CreateCell(ctx, manage.CellSpec{Name: "c1", Upstreams: []string{"http://b1:6632"},
		CapacityBytes: ptr(int64(10)), Closed: ptr(true)}, actor)
	require.NoError(t, err)
	require.EqualValues(t, 10, c.CapacityBytes)
	require.True(t, c.Closed)
	require.Zero(t, c.Tenants)
	_, err = b.manager.CreateCell(ctx, manage.CellSpec{Name: "c2", Upstreams: []string{"http://b2:6632"}}, actor)
	require.NoError(t, err)

	c, err = b.manager.UpdateCell(ctx, "c1", manage.CellChange{CapacityMessagesPerSecond: ptr(5.0)}, actor)
	require.NoError(t, err)
	require.InDelta(t, 5.0, c.CapacityMessagesPerSecond, 1e-9)
	require.EqualValues(t, 10, c.CapacityBytes, "what the change omits stays")
	require.True(t, c.Closed)
	c, err = b.manager.SetCellClosed(ctx, "c1", false, actor)
	require.NoError(t, err)
	require.False(t, c.Closed)

	// A tenant named into a cell; a cell name off the grammar is an unknown cell.
	tn, err := b.manager.CreateTenant(ctx, manage.TenantSpec{ID: "acme", Cell: "c1"}, actor)
	require.NoError(t, err)
	require.Equal(t, "c1", tn.Cell)
	_, err = b.manager.CreateTenant(ctx, manage.TenantSpec{ID: "beta", Cell: "Not A Cell"}, actor)
	requireInvalid(t, err, "cell")

	_, err = b.manager.MoveTenant(ctx, "acme", "", actor)
	requireInvalid(t, err, "cell")
	m, err := b.manager.MoveTenant(ctx, "acme", "c2", actor)
	require.NoError(t, err)
	live, err := b.manager.LiveMoves(ctx)
	require.NoError(t, err)
	require.Equal(t, m.ID, live["acme"].ID)
	got, err := b.manager.Move(ctx, "1")
	require.NoError(t, err)
	require.Equal(t, m.ID, got.ID)
	_, err = b.manager.Move(ctx, "x1")
	require.ErrorIs(t, err, tenant.ErrNotFound)
	_, err = b.manager.Moves(ctx, "", 0)
	requireInvalid(t, err, "limit")
	ms, err := b.manager.Moves(ctx, "acme", manage.DefaultMovePage)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	cancelled, err := b.manager.CancelMove(ctx, "1", actor)
	require.NoError(t, err)
	require.True(t, cancelled.CancelRequested)

	cs, err := b.manager.Cells(ctx)
	require.NoError(t, err)
	require.Len(t, cs, 2)
	require.Equal(t, 1, cs[0].Tenants)
	require.ErrorIs(t, b.manager.DeleteCell(ctx, "c2", actor), tenant.ErrConflict, "the live move names it")
}
