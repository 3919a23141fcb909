package bench

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProfileLabel(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name   string
		values [3]string
		want   string
	}{
		{name: "AllOnIsDurable", values: [3]string{"on", "on", "on"}, want: ProfileDurable},
		{name: "AllOffIsFast", values: [3]string{"off", "off", "off"}, want: ProfileFast},
		{name: "CaseAndSpaceDoNotMatter", values: [3]string{"ON", " on", "On "}, want: ProfileDurable},
		{name: "OnlySynchronousCommitOff", values: [3]string{"on", "off", "on"},
			want: "custom (fsync=on, synchronous_commit=off, full_page_writes=on)"},
		{name: "OnlyFsyncOff", values: [3]string{"off", "on", "on"},
			want: "custom (fsync=off, synchronous_commit=on, full_page_writes=on)"},
		{name: "SynchronousCommitLocalIsNotOn", values: [3]string{"on", "local", "on"},
			want: "custom (fsync=on, synchronous_commit=local, full_page_writes=on)"},
		{name: "RemoteApplyWithTheRestOffIsNotFast", values: [3]string{"off", "remote_apply", "off"},
			want: "custom (fsync=off, synchronous_commit=remote_apply, full_page_writes=off)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, profileLabel(tc.values))
		})
	}
}
