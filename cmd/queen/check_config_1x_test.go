package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckConfigOn1xEnvFile runs `queen -check-config` on the environment of a Queen
// 1.x deployment (internal/config/testdata/queen-1x.env, every variable the 1.x broker
// reads): it passes, and each variable that is not one of queen's settings is named in
// a warning of its output.
func TestCheckConfigOn1xEnvFile(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../internal/config/testdata/queen-1x.env")
	require.NoError(t, err)
	var environ, names []string
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		name, value, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		environ = append(environ, name+"="+strings.Trim(value, `"`))
		names = append(names, name)
	}
	// The file's WEBAPP_ROOT names a directory of its own host; this one gets a real one
	// (the first of duplicates wins).
	webapp := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(webapp, "index.html"), []byte("<!doctype html>"), 0o644))
	environ = append([]string{"WEBAPP_ROOT=" + webapp}, environ...)
	var stdout, stderr bytes.Buffer
	code := realMain([]string{"-check-config"}, environ, &stdout, &stderr)
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", &stdout, &stderr)
	out := stdout.String()
	require.Contains(t, out, "configuration OK")
	var printed bytes.Buffer
	require.Equal(t, exitOK, realMain([]string{"-print-config"}, environ, &printed, &bytes.Buffer{}))
	for _, n := range names {
		if strings.Contains(printed.String(), "\n"+n+"=") || strings.HasPrefix(printed.String(), n+"=") {
			continue // a setting queen read
		}
		require.Contains(t, out, "warning: "+n+"=", "%s is neither a setting nor named in a warning", n)
	}
	require.Contains(t, out, "QUEEN_TENANCY_HEADER=true is read as the Queen 1.x boolean")
}
