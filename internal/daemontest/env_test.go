package daemontest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/daemontest"
)

func TestPGEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, url string
		want      []string
	}{
		{"TestCluster", "postgres://postgres@127.0.0.1:5433/queen_t_ab12?sslmode=disable",
			[]string{"PG_HOST=127.0.0.1", "PG_PORT=5433", "PG_DB=queen_t_ab12", "PG_USER=postgres"}},
		{"DefaultPortPasswordAndTLS", "postgresql://queen:s3cret@db.example/queen?sslmode=require",
			[]string{"PG_HOST=db.example", "PG_PORT=5432", "PG_DB=queen", "PG_USER=queen", "PG_PASSWORD=s3cret", "PG_USE_SSL=true",
				"PG_SSL_REJECT_UNAUTHORIZED=false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, daemontest.PGEnv(t, tc.url))
		})
	}
}
