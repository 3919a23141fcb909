package cellsim_test

import (
	"errors"
	"flag"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/cellsim"
	"github.com/queenmq/queen/internal/proxy/proxytest"
)

var (
	full = flag.Bool("cellsim.full", false, "run the full simulation (12 cells, 1 000 tenants, 50 moves) instead of the short one")
	out  = flag.String("cellsim.out", "", "also write the report's table to this file")
	// Overrides of the chosen form's size; 0 keeps it.
	cells   = flag.Int("cellsim.cells", 0, "number of cells (overrides the form's)")
	tenants = flag.Int("cellsim.tenants", 0, "number of tenants (overrides the form's)")
	moves   = flag.Int("cellsim.moves", -1, "number of moves (overrides the form's; -1 keeps it)")
)

// TestMain runs the tests through proxytest.Main, as every package that starts a
// proxy does.
func TestMain(m *testing.M) { os.Exit(proxytest.Main(m)) }

// TestSimulation runs cells behind one proxy, places tenants through the admin API,
// moves some while producers and consumers run, and requires every message pushed to
// be consumed exactly once by each group, in order, and every tenant's rows to be in
// its own cell alone. It skips, saying why, when the proxy does not serve a route it
// needs; with moves missing it still checks the load first.
func TestSimulation(t *testing.T) {
	cfg := cellsim.Short()
	if *full {
		cfg = cellsim.Full()
	}
	if *cells > 0 {
		cfg.Cells = *cells
	}
	if *tenants > 0 {
		cfg.Tenants = *tenants
	}
	if *moves >= 0 {
		cfg.Moves = *moves
	}
	rep, err := cellsim.Run(t, cfg)
	var missing *cellsim.RouteMissingError
	if errors.As(err, &missing) {
		t.Skipf("cellsim: %v", missing)
	}
	require.NoError(t, err)
	table := rep.Markdown()
	t.Logf("simulation report:\n%s", table)
	if *out != "" {
		require.NoError(t, os.WriteFile(*out, []byte(table), 0o644))
	}
	require.Empty(t, rep.Problems(), "lost: %v", rep.LostExamples)
	require.Equal(t, rep.Counts.Pushed*len(cfg.Groups), rep.Counts.Consumed, "every message consumed by each group")
	require.Positive(t, rep.Counts.Pushed)
	require.Equal(t, cfg.Tenants, rep.Placement.TenantsPerCellTotal(), "every tenant has rows in exactly one cell")
	if len(cfg.Groups) > 0 && cfg.Cells > 1 {
		require.Greater(t, len(rep.PlacedPerCell), 1, "the placement policy spread the tenants: %v", rep.PlacedPerCell)
	}
	if rep.MovesSkipped != "" {
		t.Skipf("cellsim: the load and the checks passed, but no tenant was moved: %s", rep.MovesSkipped)
	}
	require.Equal(t, cfg.Moves, rep.MovesDone())
	require.Equal(t, cfg.Moves, rep.Placement.MovedChecked)
}
