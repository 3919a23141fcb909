package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/config"
)

func TestDefaultsIsAnEmptyEnvironment(t *testing.T) {
	t.Parallel()
	loaded, err := config.Load(nil)
	require.NoError(t, err)
	d := config.Defaults()
	require.Equal(t, loaded.String(), d.String())
	require.Equal(t, 30*time.Second, d.DefaultTimeout, "DEFAULT_TIMEOUT's default")
	require.Equal(t, config.SourceDefault, d.Source("DEFAULT_TIMEOUT"))
	require.NotSame(t, d, config.Defaults(), "each call returns its own copy")
}
