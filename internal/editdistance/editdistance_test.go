package editdistance_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/editdistance"
)

func TestBetween(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "abc", 3}, {"kitten", "sitting", 3},
		{"QUEEN_LOG_FROMAT", "QUEEN_LOG_FORMAT", 2}, {"PORT", "PORT", 0},
		{"flaw", "lawn", 2}, {"push", "pop", 3}, {"abc", "abd", 1},
	} {
		t.Run(tc.a+"To"+tc.b, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, editdistance.Between(tc.a, tc.b))
			require.Equal(t, tc.want, editdistance.Between(tc.b, tc.a), "symmetric")
		})
	}
}
