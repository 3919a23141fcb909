package doclinks

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// page is what the test needs of one Markdown file: the anchors of its headings and
// the destinations of its links and images, each with its line.
type page struct {
	anchors map[string]bool
	links   []link
}

type link struct {
	dest string
	line int
}

var scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

func TestRelativeLinksResolve(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	files := markdownFiles(t, root)
	require.Contains(t, files, "docs/api.md", "the walk missed docs/")
	pages := map[string]*page{}
	for _, f := range files {
		pages[f] = readPage(t, root, f)
	}
	checked := 0
	for _, f := range files {
		for _, l := range pages[f].links {
			if scheme.MatchString(l.dest) {
				continue
			}
			checked++
			path, fragment, _ := strings.Cut(l.dest, "#")
			target := f
			if path != "" {
				target = filepath.ToSlash(filepath.Join(filepath.Dir(f), path))
			}
			if _, err := os.Stat(filepath.Join(root, target)); err != nil {
				t.Errorf("%s:%d: link %q: no file %s", f, l.line, l.dest, target)
				continue
			}
			if fragment == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			p, ok := pages[target]
			if !ok { // below a directory the walk leaves out
				p = readPage(t, root, target)
			}
			if !p.anchors[fragment] {
				t.Errorf("%s:%d: link %q: %s has no heading with the anchor #%s", f, l.line, l.dest, target, fragment)
			}
		}
	}
	require.Positive(t, checked, "no relative link found: the walk is broken")
}

// TestAnchorsFollowGitHub pins the anchor rules the check relies on to headings of
// the shapes the docs use.
func TestAnchorsFollowGitHub(t *testing.T) {
	t.Parallel()
	src := "# Queen's `QUEEN_PUSH_*` settings\n\n## Push b1, 4 producers: ≥ 0.8?\n\n" +
		"## Ünïcode and [a link](x.md)\n\n## Twice\n\n## Twice\n\n```\n# not a heading\n```\n"
	p := parsePage([]byte(src))
	for _, want := range []string{"queens-queen_push_-settings", "push-b1-4-producers--08",
		"ünïcode-and-a-link", "twice", "twice-1"} {
		require.True(t, p.anchors[want], "anchor %q missing from %v", want, p.anchors)
	}
	require.Len(t, p.anchors, 5)
	require.Equal(t, []link{{dest: "x.md", line: 5}}, p.links)
}

// repoRoot is the directory of go.mod above the test's own, so that the test needs
// no git (make test runs from a release's source archive too).
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod above the test's directory")
		dir = parent
	}
}

// markdownFiles lists the Markdown files below root, relative to it, leaving out
// hidden directories and node_modules.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	require.NoError(t, err)
	return files
}

func readPage(t *testing.T, root, file string) *page {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, file))
	require.NoError(t, err)
	return parsePage(src)
}

func parsePage(src []byte) *page {
	md := goldmark.New(goldmark.WithExtensions(extension.GFM))
	doc := md.Parser().Parse(text.NewReader(src))
	p := &page{anchors: map[string]bool{}}
	seen := map[string]int{}
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			a := anchor(plainText(n, src))
			if k := seen[a]; k > 0 {
				p.anchors[a+"-"+strconv.Itoa(k)] = true
			} else {
				p.anchors[a] = true
			}
			seen[a]++
		case *ast.Link:
			p.links = append(p.links, link{dest: string(n.Destination), line: lineOf(n, src)})
		case *ast.Image:
			p.links = append(p.links, link{dest: string(n.Destination), line: lineOf(n, src)})
		}
		return ast.WalkContinue, nil
	})
	return p
}

// plainText is the text of n's inline children, code spans and link texts included.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if t, ok := c.(*ast.Text); ok && entering {
			b.Write(t.Value(src))
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// anchor is GitHub's anchor of a heading's text: lower case, every character but
// letters, digits, spaces, hyphens and underscores dropped, spaces made hyphens.
func anchor(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// lineOf is the 1-based line of the first text inside n (links and images keep no
// position of their own).
func lineOf(n ast.Node, src []byte) int {
	for c := n; c != nil; c = c.FirstChild() {
		if t, ok := c.(*ast.Text); ok {
			return bytes.Count(src[:t.Segment.Start], []byte("\n")) + 1
		}
	}
	for p := n.Parent(); p != nil; p = p.Parent() {
		if p.Type() == ast.TypeBlock && p.Lines().Len() > 0 {
			return bytes.Count(src[:p.Lines().At(0).Start], []byte("\n")) + 1
		}
	}
	return 0
}
