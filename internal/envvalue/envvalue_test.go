package envvalue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queenmq/queen/internal/envvalue"
)

func TestParseBoolTakesSystemdWordsOnly(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]bool{"true": true, "YES": true, "On": true, "1": true, "false": false, "no": false, "OFF": false, "0": false} {
		b, ok := envvalue.ParseBool(raw)
		require.True(t, ok, raw)
		require.Equal(t, want, b, raw)
	}
	for _, raw := range []string{"", "ture", "enabled", "yes # comment", " true"} {
		_, ok := envvalue.ParseBool(raw)
		require.False(t, ok, raw)
	}
}

func TestParseIntErrorsAreTyped(t *testing.T) {
	t.Parallel()
	n, err := envvalue.ParseInt("42", 1, 65535)
	require.NoError(t, err)
	require.EqualValues(t, 42, n)

	for _, raw := range []string{"12abc", " 1", "", "99999999999999999999"} {
		_, err := envvalue.ParseInt(raw, 1, 65535)
		var syntax *envvalue.SyntaxError
		require.True(t, errors.As(err, &syntax), raw)
		require.Equal(t, "integer", syntax.Kind)
	}

	_, err = envvalue.ParseInt("70000", 1, 65535)
	var bounds *envvalue.RangeError
	require.True(t, errors.As(err, &bounds))
	require.Equal(t, envvalue.RangeError{Got: "70000", Min: "1", Max: "65535"}, envvalue.RangeError{Got: bounds.Got, Min: bounds.Min, Max: bounds.Max})
	require.EqualError(t, err, "must be between 1 and 65535")

	_, err = envvalue.ParseInt("0", 1, envvalue.NoMax)
	require.EqualError(t, err, "must be ≥ 1")
	_, err = envvalue.ParseInt("3000000000", 1, envvalue.NoMax)
	require.EqualError(t, err, "must be between 1 and 2147483647", "above an unstated max, the max is stated")
}

func TestValuesLeaveTheFieldOnError(t *testing.T) {
	t.Parallel()
	d := 5 * time.Second
	for _, tc := range []struct {
		v   envvalue.Value
		out string
	}{
		{envvalue.Range{P: &d, Min: time.Second, Max: time.Minute}, "2h"},
		{envvalue.Duration{P: &d, Min: time.Second}, "500ms"},
		{envvalue.Limit{P: &d, Min: time.Second}, "500ms"},
		{envvalue.Unit{P: &d, Unit: time.Millisecond, Min: 1, Max: 3_600_000}, "3600001"},
	} {
		require.Error(t, tc.v.Set(tc.out), tc.v.Kind())
		require.Error(t, tc.v.Set("x"), tc.v.Kind())
		require.Equal(t, 5*time.Second, d, tc.v.Kind())
	}
}

func TestDurationKindsReportBounds(t *testing.T) {
	t.Parallel()
	var d time.Duration
	err := envvalue.Range{P: &d, Min: time.Minute, Max: time.Hour}.Set("2h")
	var bounds *envvalue.RangeError
	require.True(t, errors.As(err, &bounds))
	require.Equal(t, []string{"2h0m0s", "1m0s", "1h0m0s"}, []string{bounds.Got, bounds.Min, bounds.Max})
	require.EqualError(t, err, "must be from 1m0s to 1h0m0s")

	err = envvalue.Range{P: &d, Min: time.Minute, Max: time.Hour}.Set("5")
	var syntax *envvalue.SyntaxError
	require.True(t, errors.As(err, &syntax))
	require.Equal(t, "duration", syntax.Kind)

	unit := envvalue.Unit{P: &d, Unit: time.Millisecond, Min: 1, Max: 3_600_000}
	require.NoError(t, unit.Set("2000"))
	require.Equal(t, 2*time.Second, d)
	require.Equal(t, "2000", unit.Get())
	require.Equal(t, "milliseconds between 1 and 3600000", unit.Kind())
	require.Equal(t, "seconds ≥ 0", envvalue.Unit{P: &d, Unit: time.Second}.Kind())
}

func TestListTrimsAndDropsEmptyEntries(t *testing.T) {
	t.Parallel()
	l := []string{"stale"}
	require.NoError(t, envvalue.List{P: &l}.Set(" a, ,b ,"))
	require.Equal(t, []string{"a", "b"}, l)
	require.NoError(t, envvalue.List{P: &l}.Set(""))
	require.Nil(t, l)
	refuse := errors.New("refused")
	err := envvalue.List{P: &l, Check: func(string) error { return refuse }}.Set("x")
	require.ErrorIs(t, err, refuse)
}

func TestPairsDecodeTheOpenTelemetryFormat(t *testing.T) {
	t.Parallel()
	var m map[string]string
	v := envvalue.Pairs{P: &m}
	require.NoError(t, v.Set(" authorization = Bearer%20abc , x-tenant=a%3Db ,"))
	require.Equal(t, map[string]string{"authorization": "Bearer abc", "x-tenant": "a=b"}, m)
	require.Equal(t, "authorization=Bearer%20abc,x-tenant=a=b", v.Get())
	for _, bad := range []string{"novalue", "=v", "k=%zz"} {
		require.Error(t, v.Set(bad), bad)
	}
	require.Equal(t, "Bearer abc", m["authorization"], "a failed Set leaves the field")
	require.NoError(t, v.Set(""))
	require.Nil(t, m)
}

func TestFloatWithAnUpperBound(t *testing.T) {
	t.Parallel()
	f := 0.5
	v := envvalue.Float{P: &f, Min: 0, Max: 1}
	require.NoError(t, v.Set("0.01"))
	require.Equal(t, 0.01, f)
	require.EqualError(t, v.Set("1.5"), "must be between 0 and 1")
	require.Equal(t, "number between 0 and 1", v.Kind())
	require.Equal(t, 0.01, f)
	unbounded := envvalue.Float{P: &f, Min: 1}
	require.NoError(t, unbounded.Set("1e6"))
	require.Equal(t, "number ≥ 1", unbounded.Kind())
}
