package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCloneBuildsTheDashboardIn: a fresh clone of the repository, built with nothing
// but the go tool on PATH (no Node, no npm, no network), gives a binary that serves
// the dashboard and its assets. It proves the app's files are committed, not made by a
// build step.
func TestCloneBuildsTheDashboardIn(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a clone of the repository")
	}
	root := moduleRoot(t)
	gitTool, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	if out, err := exec.Command(gitTool, "-C", root, "rev-parse", "--git-dir").CombinedOutput(); err != nil {
		t.Skipf("not a git checkout: %s", out)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	out, err := exec.Command(gitTool, "clone", "--quiet", "--depth=1", "file://"+root, clone).CombinedOutput()
	require.NoError(t, err, "git clone:\n%s", out)

	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the go tool must be on PATH")
	bin := filepath.Join(t.TempDir(), "queen")
	build := exec.Command(goTool, "build", "-trimpath", "-o", bin, "./cmd/queen")
	build.Dir = clone
	build.Env = append(withoutPath(os.Environ()), "PATH="+filepath.Dir(goTool), "CGO_ENABLED=0", "GOPROXY=off")
	out, err = build.CombinedOutput()
	require.NoError(t, err, "go build in the clone with only go on PATH:\n%s", out)

	p := startBinary(t, bin)
	index := get(t, p.base+"/")
	require.Contains(t, index, `<meta name="queen-auth" content="none">`)
	assets := regexp.MustCompile(`(?:src|href)="(/assets/[^"]+)"`).FindAllStringSubmatch(index, -1)
	require.NotEmpty(t, assets, "index.html references its assets")
	for _, m := range assets {
		require.NotEmpty(t, get(t, p.base+m[1]), m[1])
	}
}

// withoutPath is environ without its PATH.
func withoutPath(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "PATH=") {
			out = append(out, kv)
		}
	}
	return out
}

// get fetches url, requires a 200 and returns the body.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", url, body)
	return string(body)
}
