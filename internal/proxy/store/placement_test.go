package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// placed creates a tenant without a cell and returns the one the policy gave it.
func (b *testBundle) placed(t *testing.T, id string) string {
	t.Helper()
	return b.createTenantIn(t, id, "").Cell
}

func TestPlacementPolicy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()

	b.createCell(t, "big", 1000, 0)
	b.createCell(t, "small", 1000, 0)
	b.createCell(t, "free", 0, 0)
	b.createCell(t, "shut", 1_000_000, 0)
	_, err := b.store.CellUpdate(ctx, "shut", func(c *tenant.Cell) error { c.Closed = true; return nil }, actor)
	require.NoError(t, err)
	b.createTenantIn(t, "a1", "big")
	b.createTenantIn(t, "s1", "small")
	b.meter(t, "a1", "r1", 1, 1, 600, 0, 0)
	b.meter(t, "s1", "r1", 1, 1, 200, 0, 0)

	require.Equal(t, "small", b.placed(t, "t1"), "the most headroom: 0.8 against 0.4")
	b.meter(t, "s1", "r1", 0, 1, 950, 0, 0)
	require.Equal(t, "big", b.placed(t, "t2"), "small's latest snapshot leaves it 0.05")

	// Both full: a cell without capacity comes before full ones.
	b.meter(t, "a1", "r1", 0, 1, 1000, 0, 0)
	b.meter(t, "s1", "r1", 0, 1, 2000, 0, 0)
	require.Equal(t, "free", b.placed(t, "t3"))

	// A rate capacity counts as well.
	b.createCell(t, "busy", 0, 10)
	b.createCell(t, "idle", 0, 10)
	b.createTenantIn(t, "r1", "busy")
	b.meter(t, "r1", "r1", 1, 0, 0, 1500, 600) // 7 msg/s of 10
	require.Equal(t, "idle", b.placed(t, "t4"))
	b.meter(t, "t4", "r1", 2, 0, 0, 2400, 0) // 8 msg/s: idle now has less headroom than busy
	require.Equal(t, "busy", b.placed(t, "t5"))

	// Among cells without capacity: fewest stored bytes, then fewest tenants, then name.
	for _, n := range []string{"busy", "idle", "big", "small"} {
		_, err := b.store.CellUpdate(ctx, n, func(c *tenant.Cell) error { c.Closed = true; return nil }, actor)
		require.NoError(t, err)
	}
	b.createCell(t, "free2", 0, 0)
	require.Equal(t, "free2", b.placed(t, "t6"), "free has a tenant, free2 none")
	require.Equal(t, "free", b.placed(t, "t7"), "one tenant each: by name")
	b.meter(t, "t7", "r1", 1, 1, 10, 0, 0)
	require.Equal(t, "free2", b.placed(t, "t8"), "free stores more")

	// A closed cell is never picked, but may be named.
	require.Equal(t, "shut", b.createTenantIn(t, "named", "shut").Cell)
	_, err = b.store.TenantCreate(ctx, &tenant.Tenant{ID: "lost", Name: "lost", Cell: "nowhere"}, actor)
	var verr *tenant.ValidationError
	require.ErrorAs(t, err, &verr)
	require.Equal(t, "cell", verr.Field)

	for _, n := range []string{"free", "free2"} {
		_, err := b.store.CellUpdate(ctx, n, func(c *tenant.Cell) error { c.Closed = true; return nil }, actor)
		require.NoError(t, err)
	}
	_, err = b.store.TenantCreate(ctx, &tenant.Tenant{ID: "late", Name: "late"}, actor)
	require.ErrorIs(t, err, store.ErrNoOpenCell)
	require.ErrorIs(t, err, tenant.ErrConflict)
	_, err = b.store.TenantGet(ctx, "late")
	require.ErrorIs(t, err, tenant.ErrNotFound, "nothing stored")

	cells, err := b.store.TenantCells(ctx)
	require.NoError(t, err)
	require.Equal(t, "small", cells["t1"])
	require.Equal(t, "shut", cells["named"])
}

func TestPlacementWithoutCells(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cell, err := b.store.Place(t.Context())
	require.NoError(t, err)
	require.Equal(t, tenant.DefaultCell, cell, "no cell stored: everything lives in the default cell")
	require.Equal(t, tenant.DefaultCell, b.placed(t, "acme"))
	require.Equal(t, tenant.DefaultCell, b.createTenantIn(t, "beta", tenant.DefaultCell).Cell,
		"the default cell may be named before the proxy stored it")
}
