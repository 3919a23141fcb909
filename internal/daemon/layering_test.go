package daemon_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/queenmq/queen"

// TestPackageLayering enforces the package map (which package may import what) on non-test
// code: which packages may import pgx, chi and each other.
func TestPackageLayering(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"/...").CombinedOutput()
	require.NoError(t, err, string(out))

	allowed := map[string]func(pkg string) bool{
		"github.com/jackc/pgx/": func(p string) bool {
			// internal/bench measures PostgreSQL's raw ceilings next to the broker's
			// numbers, so it talks to PostgreSQL directly; nothing in the daemon imports it.
			return in(p, "internal/store", "internal/schema", "internal/pgtest", "internal/bench")
		},
		"github.com/go-chi/chi/":    func(p string) bool { return in(p, "internal/httpapi") },
		"github.com/golang-jwt/":    func(p string) bool { return in(p, "internal/auth") },
		module + "/internal/daemon": func(p string) bool { return in(p, "cmd/queen") },
		module + "/internal/pgtest": func(p string) bool { return false },
		module + "/internal/bench":  func(p string) bool { return in(p, "cmd/queen-bench") },
	}
	// queenctl talks HTTP only: it may not reach into the broker's internals.
	for _, banned := range []string{"/internal/broker", "/internal/store", "/internal/httpapi", "/internal/daemon"} {
		allowed[module+banned] = wrapDeny(allowed[module+banned], "internal/cli")
	}
	leaves := []string{"internal/queue", "internal/api", "internal/buildinfo"}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		for _, imp := range imports {
			for prefix, ok := range allowed {
				if strings.HasPrefix(imp, prefix) && !ok(pkg) {
					t.Errorf("%s must not import %s", pkg, imp)
				}
			}
			if in(pkg, leaves...) && strings.Contains(imp, ".") {
				t.Errorf("%s is a leaf package (stdlib only) but imports %s", pkg, imp)
			}
		}
	}
}

// TestEnvironmentIsReadOnlyInConfig enforces "os.Getenv only in config": the daemon
// gets its settings through config.Load, never from the environment directly.
func TestEnvironmentIsReadOnlyInConfig(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../internal/*/*.go")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || in(filepath.ToSlash(f), "internal/config/", "internal/pgtest/") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "os" {
				switch sel.Sel.Name {
				case "Getenv", "LookupEnv", "Environ", "Setenv":
					t.Errorf("%s: os.%s outside internal/config", fset.Position(sel.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
}

func in(pkg string, parts ...string) bool {
	for _, p := range parts {
		if strings.Contains(pkg, p) {
			return true
		}
	}
	return false
}

// wrapDeny returns a rule that refuses importers matching deny and otherwise defers to
// prev (nil = allowed).
func wrapDeny(prev func(string) bool, deny string) func(string) bool {
	return func(p string) bool {
		if in(p, deny) {
			return false
		}
		return prev == nil || prev(p)
	}
}
