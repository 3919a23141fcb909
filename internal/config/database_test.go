package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPGDatabase(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name    string
		env     []string
		want    string
		warning string // "": no warning about the database
	}{
		{name: "Neither", want: "postgres"},
		{name: "LegacyAlone", env: []string{"PG_DB=legacy"}, want: "legacy"},
		{name: "DatabaseAlone", env: []string{"PG_DATABASE=x"}, want: "x"},
		{name: "BothSetDatabaseWins", env: []string{"PG_DB=legacy", "PG_DATABASE=x"}, want: "x",
			warning: `PG_DATABASE="x" and PG_DB="legacy" are both set; PG_DATABASE wins: the broker connects to database "x"`},
		{name: "BothSetEqual", env: []string{"PG_DATABASE=same", "PG_DB=same"}, want: "same",
			warning: `PG_DATABASE="same" and PG_DB="same" are both set`},
		{name: "EmptyDatabaseIsUnset", env: []string{"PG_DATABASE=", "PG_DB=legacy"}, want: "legacy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := mustLoad(t, tc.env...)
			require.Equal(t, tc.want, c.PGDB)
			require.Contains(t, c.PGConnString(), "dbname="+tc.want+" ")
			w := strings.Join(c.Warnings(), "\n")
			if tc.warning == "" {
				require.NotContains(t, w, "PG_DATABASE")
			} else {
				require.Contains(t, w, tc.warning)
			}
			require.Empty(t, c.UnknownVariables())
		})
	}
}

func TestPGDatabasePrintsEachVariableAsGiven(t *testing.T) {
	t.Parallel()

	c := mustLoad(t, "PG_DB=legacy", "PG_DATABASE=x")
	var b strings.Builder
	c.Print(&b)
	require.Contains(t, b.String(), "PG_DB=legacy  # env\n")
	require.Contains(t, b.String(), "PG_DATABASE=x  # env\n")
	require.Equal(t, SourceDefault, mustLoad(t, "PG_DATABASE=x").Source("PG_DB"))
}

func TestPGDatabaseFromAnEnvFile(t *testing.T) {
	t.Parallel()

	// An env file written for a Queen 1.x broker.
	environ := parseEnvFile("PG_HOST=db.example\nPG_DATABASE=x\nQUEEN_APPLY_SCHEMA=0\n")
	c := mustLoad(t, environ...)
	require.Contains(t, c.PGConnString(), "dbname=x ")
	require.False(t, c.ApplySchema)
	require.Empty(t, c.UnknownVariables(), "QUEEN_APPLY_SCHEMA is a setting, not an unknown variable")
}

func TestApplySchema(t *testing.T) {
	t.Parallel()

	require.True(t, mustLoad(t).ApplySchema, "applied by default")
	for _, raw := range []string{"0", "false", "no", "off", "FALSE"} {
		require.False(t, mustLoad(t, "QUEEN_APPLY_SCHEMA="+raw).ApplySchema, raw)
	}
	for _, raw := range []string{"1", "true", "yes", "On"} {
		require.True(t, mustLoad(t, "QUEEN_APPLY_SCHEMA="+raw).ApplySchema, raw)
	}
	require.Contains(t, loadErr(t, "QUEEN_APPLY_SCHEMA=never"),
		`QUEEN_APPLY_SCHEMA="never": not a boolean`)
}

func TestQueen1xNamesWarn(t *testing.T) {
	t.Parallel()

	c := mustLoad(t, "QUEEN_POP_AUTOPILOT_BATCH=150", "JWT_ROLE_WRITE_ONLY=writer", "QUEEN_KV_TRUSTED_PROXY=true",
		"QUEEN_SDK_POP_AUTOPILOT=off", "DEFAULT_SUBSCRIPTION_MODE=all", "JWT_ENABLED=true", "JWT_SECRET=s")
	w := c.Warnings()
	require.Len(t, w, 1, strings.Join(w, "\n"))
	require.Equal(t, 150, c.PopAutopilotBatch, "QUEEN_POP_AUTOPILOT_BATCH is a setting")
	require.Equal(t, "writer", c.JWTRoleWriteOnly, "JWT_ROLE_WRITE_ONLY is a setting")
	require.Contains(t, strings.Join(w, "\n"), `QUEEN_KV_TRUSTED_PROXY="true" is accepted but unused`)
	require.Empty(t, c.UnknownVariables(), "an SDK's variable is neither a warning nor unknown")
}
