package tenantid_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/tenantid"
)

func TestCheck(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		id   string
		want error
	}{
		{"ab", nil},
		{"acme", nil},
		{"a1", nil},
		{"team-7", nil},
		{"a-b-c", nil},
		{"a" + strings.Repeat("b", 31), nil},
		{"", tenantid.ErrMalformed},
		{"a", tenantid.ErrMalformed},
		{"a" + strings.Repeat("b", 32), tenantid.ErrMalformed},
		{"Acme", tenantid.ErrMalformed},
		{"1acme", tenantid.ErrMalformed},
		{"-acme", tenantid.ErrMalformed},
		{"acme-", tenantid.ErrMalformed},
		{"ac_me", tenantid.ErrMalformed},
		{"ac.me", tenantid.ErrMalformed},
		{"ac:me", tenantid.ErrMalformed},
		{"ac me", tenantid.ErrMalformed},
		{"acme\n", tenantid.ErrMalformed},
		{"äcme", tenantid.ErrMalformed},
		{"queen", tenantid.ErrReserved},
		{"system", tenantid.ErrReserved},
		{"admin", tenantid.ErrReserved},
		{"internal", tenantid.ErrReserved},
		{"proxy", tenantid.ErrReserved},
		{"proxy-1", nil},
	} {
		t.Run(tc.id, func(t *testing.T) {
			t.Parallel()
			err := tenantid.Check(tc.id)
			if tc.want == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.want)
			}
			require.Equal(t, tc.want == nil, tenantid.Valid(tc.id))
		})
	}
}
