package bench

import (
	"context"
	"fmt"
	"strings"
)

// The profiles a report can carry: the durability settings the server reported
// (SHOW fsync, synchronous_commit, full_page_writes), not what the cluster was
// asked to start with.
const (
	// ProfileDurable: all three on, PostgreSQL's defaults (a commit is on disk).
	ProfileDurable = "durable"
	// ProfileFast: all three off (scripts/pgtest.sh's default, for tests).
	ProfileFast = "fast"
	// ProfileUnknown: the run has no database connection (Options.URL).
	ProfileUnknown = "unknown"
)

// durabilitySettings names the settings that decide the profile, in report order.
func durabilitySettings() [3]string {
	return [3]string{"fsync", "synchronous_commit", "full_page_writes"}
}

// profileLabel names the profile of a server from the values of durabilitySettings,
// in that order: durable when all are "on", fast when all are "off", else
// "custom (fsync=…, synchronous_commit=…, full_page_writes=…)". synchronous_commit
// counts as on only when it is "on" (local, remote_write and remote_apply are custom).
func profileLabel(values [3]string) string {
	names := durabilitySettings()
	on, off := 0, 0
	parts := make([]string, len(values))
	for i, v := range values {
		v = strings.ToLower(strings.TrimSpace(v))
		switch v {
		case "on":
			on++
		case "off":
			off++
		}
		parts[i] = names[i] + "=" + v
	}
	switch {
	case on == len(values):
		return ProfileDurable
	case off == len(values):
		return ProfileFast
	}
	return "custom (" + strings.Join(parts, ", ") + ")"
}

// profile reads the durability settings from the server and labels them.
func (d *database) profile(ctx context.Context) (string, error) {
	var values [3]string
	for i, name := range durabilitySettings() {
		// SHOW takes no parameters; the names are constants.
		if err := d.pool.QueryRow(ctx, "SHOW "+name).Scan(&values[i]); err != nil {
			return "", fmt.Errorf("show %s: %w", name, err)
		}
	}
	return profileLabel(values), nil
}
