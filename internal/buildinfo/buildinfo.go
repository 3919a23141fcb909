// Package buildinfo holds the version, commit and build date stamped into the binary
// by the linker:
//
//	go build -ldflags "-X github.com/queenmq/queen/internal/buildinfo.Version=1.2.3 \
//	  -X github.com/queenmq/queen/internal/buildinfo.Commit=$(git rev-parse --short HEAD) \
//	  -X github.com/queenmq/queen/internal/buildinfo.Date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
//
// These three variables are the only package variables in queen that are meant to
// change, and only at link time; nothing assigns them at run time.
package buildinfo

import (
	"fmt"
	"runtime"
)

// Version is the release version, "dev" for a build without -ldflags.
var Version = "dev"

// Commit is the VCS revision the binary was built from, "unknown" when not stamped.
var Commit = "unknown"

// Date is the build time (RFC 3339, UTC), "unknown" when not stamped.
var Date = "unknown"

// GoVersion is the Go toolchain that built the binary, as reported by the runtime.
func GoVersion() string {
	return runtime.Version()
}

// String returns a one-line summary such as
// "queen 1.2.3 (commit abc1234, built 2025-01-02T03:04:05Z, go1.26.8 linux/amd64)".
func String() string {
	return fmt.Sprintf("queen %s (commit %s, built %s, %s %s/%s)",
		Version, Commit, Date, GoVersion(), runtime.GOOS, runtime.GOARCH)
}
