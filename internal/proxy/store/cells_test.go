package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/proxy/store"
	"github.com/queenmq/queen/internal/proxy/tenant"
)

// createCell stores an open cell with one broker and the given capacities.
func (b *testBundle) createCell(t *testing.T, name string, capBytes int64, capRate float64) *tenant.Cell {
	t.Helper()
	c, err := b.store.CellCreate(t.Context(), &tenant.Cell{Name: name, Upstreams: []string{"http://" + name + ".test:6632"},
		CapacityBytes: capBytes, CapacityMessagesPerSecond: capRate}, actor)
	require.NoError(t, err)
	return c
}

// createTenantIn stores an active tenant in the cell named.
func (b *testBundle) createTenantIn(t *testing.T, id, cell string) *tenant.Tenant {
	t.Helper()
	tn, err := b.store.TenantCreate(t.Context(), &tenant.Tenant{ID: id, Name: id, Cell: cell,
		Limits: tenant.DefaultLimits(), Quotas: tenant.DefaultQuotas()}, actor)
	require.NoError(t, err)
	return tn
}

// meter writes (or rewrites) one replica's metered minute of the tenant, minutesAgo whole minutes
// before the current one.
func (b *testBundle) meter(t *testing.T, tenantID, replica string, minutesAgo int, storedMessages, storedBytes, in, out int64) {
	t.Helper()
	_, err := b.pool.Exec(t.Context(), `INSERT INTO queen_proxy.usage_minute (tenant_id, minute, replica_id,
			stored_messages, stored_bytes, messages_in, messages_out)
		VALUES ($1, date_trunc('minute', now()) - make_interval(mins => $3), $2, $4, $5, $6, $7)
		ON CONFLICT (tenant_id, minute, replica_id) DO UPDATE SET stored_messages = excluded.stored_messages,
			stored_bytes = excluded.stored_bytes, messages_in = excluded.messages_in, messages_out = excluded.messages_out`,
		tenantID, replica, minutesAgo, storedMessages, storedBytes, in, out)
	require.NoError(t, err)
}

// listen returns a connection listening on the auth channel.
func (b *testBundle) listen(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), b.dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	_, err = conn.Exec(t.Context(), "LISTEN "+store.AuthChannel)
	require.NoError(t, err)
	return conn
}

// notifications reads the payloads sent so far (waiting up to a second for each).
func notifications(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	var out []string
	for {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		n, err := conn.WaitForNotification(ctx)
		cancel()
		if err != nil {
			return out
		}
		out = append(out, n.Payload)
	}
}

func TestCellCRUD(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	conn := b.listen(t)

	c := b.createCell(t, "eu-1", 1<<30, 500)
	require.Equal(t, []string{"http://eu-1.test:6632"}, c.Upstreams)
	_, err := b.store.CellCreate(ctx, &tenant.Cell{Name: "eu-1", Upstreams: []string{"http://x:1"}}, actor)
	require.ErrorIs(t, err, tenant.ErrAlreadyExists)

	for _, tc := range []struct {
		cell  tenant.Cell
		field string
	}{
		{tenant.Cell{Name: "Bad", Upstreams: []string{"http://x:1"}}, "name"},
		{tenant.Cell{Name: "-x", Upstreams: []string{"http://x:1"}}, "name"},
		{tenant.Cell{Name: "x"}, "upstreams"},
		{tenant.Cell{Name: "x", Upstreams: []string{"http://a", "http://b", "http://c", "http://d"}}, "upstreams"},
		{tenant.Cell{Name: "x", Upstreams: []string{"ftp://a"}}, "upstreams"},
		{tenant.Cell{Name: "x", Upstreams: []string{"http://a/?q=1"}}, "upstreams"},
		{tenant.Cell{Name: "x", Upstreams: []string{"http://a/#f"}}, "upstreams"},
		{tenant.Cell{Name: "x", Upstreams: []string{"http://u:p@a"}}, "upstreams"},
		{tenant.Cell{Name: "x", Upstreams: []string{"http://a", "http://a"}}, "upstreams"},
		{tenant.Cell{Name: "x", Upstreams: []string{"http://a"}, CapacityBytes: -1}, "capacityBytes"},
		{tenant.Cell{Name: "x", Upstreams: []string{"http://a"}, CapacityMessagesPerSecond: -1}, "capacityMessagesPerSecond"},
	} {
		_, err := b.store.CellCreate(ctx, &tc.cell, actor)
		var verr *tenant.ValidationError
		require.ErrorAs(t, err, &verr, "%+v", tc.cell)
		require.Equal(t, tc.field, verr.Field, "%+v", tc.cell)
	}

	up, err := b.store.CellUpdate(ctx, "eu-1", func(c *tenant.Cell) error {
		c.Closed, c.Upstreams = true, []string{"http://a:1", "https://b:2"}
		return nil
	}, actor)
	require.NoError(t, err)
	require.True(t, up.Closed)
	got, err := b.store.CellGet(ctx, "eu-1")
	require.NoError(t, err)
	require.Equal(t, []string{"http://a:1", "https://b:2"}, got.Upstreams)
	require.Equal(t, int64(1<<30), got.CapacityBytes, "what the change left alone stays")
	_, err = b.store.CellUpdate(ctx, "eu-1", func(c *tenant.Cell) error { c.Upstreams = nil; return nil }, actor)
	var verr *tenant.ValidationError
	require.ErrorAs(t, err, &verr, "an update is validated too")
	_, err = b.store.CellGet(ctx, "nope")
	require.ErrorIs(t, err, tenant.ErrNotFound)

	all, err := b.store.CellsAll(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	require.NoError(t, b.store.CellDelete(ctx, "eu-1", actor))
	require.ErrorIs(t, b.store.CellDelete(ctx, "eu-1", actor), tenant.ErrNotFound)
	require.Equal(t, []string{"cell.create", "cell.update", "cell.delete"}, b.auditActions(t, "eu-1"))
	require.Equal(t, []string{"cell:eu-1", "cell:eu-1", "cell:eu-1"}, notifications(t, conn),
		"every change of a cell is announced; the refused ones are not")
}

func TestCellDeleteRefusedWhileInUse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	b.createCell(t, "c1", 0, 0)
	b.createCell(t, "c2", 0, 0)
	b.createTenantIn(t, "acme", "c1")

	require.ErrorIs(t, b.store.CellDelete(ctx, "c1", actor), store.ErrCellInUse, "a tenant lives there")
	_, err := b.store.MoveCreate(ctx, "acme", "c2", actor)
	require.NoError(t, err)
	require.ErrorIs(t, b.store.CellDelete(ctx, "c2", actor), store.ErrCellInUse, "a live move names it")

	_, err = b.store.TenantDelete(ctx, "acme", actor)
	require.NoError(t, err)
	require.ErrorIs(t, b.store.CellDelete(ctx, "c1", actor), store.ErrCellInUse, "the live move still names it")
	_, err = b.pool.Exec(ctx, `UPDATE queen_proxy.tenant_moves SET finished_at = now(), phase = 'failed'`)
	require.NoError(t, err)
	require.NoError(t, b.store.CellDelete(ctx, "c1", actor), "a deleted tenant and a finished move hold nothing")
	require.NoError(t, b.store.CellDelete(ctx, "c2", actor))
}

func TestDefaultCellIsTheConfigurations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()

	// A tenant stored before any cell lives in the default one.
	b.createTenant(t, "old")
	got, err := b.store.TenantGet(ctx, "old")
	require.NoError(t, err)
	require.Equal(t, tenant.DefaultCell, got.Cell)

	require.NoError(t, b.store.CellEnsureDefault(ctx, nil), "no upstreams: nothing to do")
	all, err := b.store.CellsAll(ctx)
	require.NoError(t, err)
	require.Empty(t, all)

	conn := b.listen(t)
	require.NoError(t, b.store.CellEnsureDefault(ctx, []string{"http://b1:6632", "http://b2:6632"}))
	require.NoError(t, b.store.CellEnsureDefault(ctx, []string{"http://b1:6632", "http://b2:6632"}))
	require.Equal(t, []string{"cell:default"}, notifications(t, conn), "an unchanged upsert is silent")
	def, err := b.store.CellGet(ctx, tenant.DefaultCell)
	require.NoError(t, err)
	require.Equal(t, []string{"http://b1:6632", "http://b2:6632"}, def.Upstreams)
	require.Equal(t, 1, def.Tenants, "the tenant stored without a cell counts there")

	_, err = b.store.CellUpdate(ctx, tenant.DefaultCell, func(c *tenant.Cell) error {
		c.Upstreams = []string{"http://elsewhere:1"}
		return nil
	}, actor)
	require.ErrorIs(t, err, store.ErrCellConfigOwned)
	closed, err := b.store.CellUpdate(ctx, tenant.DefaultCell, func(c *tenant.Cell) error {
		c.Closed, c.CapacityBytes = true, 100
		return nil
	}, actor)
	require.NoError(t, err, "its capacities and closed flag are the operator's")
	require.True(t, closed.Closed)
	require.ErrorIs(t, b.store.CellDelete(ctx, tenant.DefaultCell, actor), store.ErrCellConfigOwned)

	// The configuration wins at the next start.
	require.NoError(t, b.store.CellEnsureDefault(ctx, []string{"http://b3:6632"}))
	def, err = b.store.CellGet(ctx, tenant.DefaultCell)
	require.NoError(t, err)
	require.Equal(t, []string{"http://b3:6632"}, def.Upstreams)
	require.True(t, def.Closed, "the operator's flag survives the upsert")

	// A store not told the configuration owns it lets the operator change it.
	other, err := store.Open(store.Options{ConnString: b.dbURL, MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(other.Close)
	_, err = other.CellUpdate(ctx, tenant.DefaultCell, func(c *tenant.Cell) error {
		c.Upstreams = []string{"http://b4:6632"}
		return nil
	}, actor)
	require.NoError(t, err)

	cells, err := b.store.TenantCells(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"old": tenant.DefaultCell}, cells)
}

func TestCellFigures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	b.createCell(t, "c1", 1000, 10)
	b.createCell(t, "c2", 0, 0)
	b.createTenantIn(t, "acme", "c1")
	b.createTenantIn(t, "beta", "c1")
	b.createTenantIn(t, "gone", "c1")
	_, err := b.store.TenantDelete(ctx, "gone", actor)
	require.NoError(t, err)

	// acme's latest snapshot is the larger of two replicas' at its latest minute;
	// an older, larger one does not count.
	b.meter(t, "acme", "r1", 9, 90, 900, 0, 0)
	b.meter(t, "acme", "r1", 1, 10, 100, 600, 300)
	b.meter(t, "acme", "r2", 1, 20, 200, 300, 0)
	b.meter(t, "beta", "r1", 3, 5, 50, 0, 300)
	b.meter(t, "beta", "r1", 7, 0, 0, 3000, 3000) // outside the rate's five minutes
	b.meter(t, "gone", "r1", 1, 1000, 1000, 1000, 1000)

	c1, err := b.store.CellGet(ctx, "c1")
	require.NoError(t, err)
	require.Equal(t, 2, c1.Tenants, "the deleted tenant is not counted")
	require.Equal(t, int64(25), c1.StoredMessages)
	require.Equal(t, int64(250), c1.StoredBytes)
	require.InDelta(t, 900.0/300, c1.PushRate, 1e-9)
	require.InDelta(t, 600.0/300, c1.PopRate, 1e-9)
	require.NotNil(t, c1.Headroom)
	// bytes: 1 - 250/1000 = 0.75; rate: 1 - 5/10 = 0.5; the smaller wins.
	require.InDelta(t, 0.5, *c1.Headroom, 1e-9)

	list, err := b.store.CellList(ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "c2", list[1].Name)
	require.Nil(t, list[1].Headroom, "no capacity set: no headroom")
	require.Zero(t, list[1].Tenants)
}
