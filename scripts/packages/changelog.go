package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// changelogPath is the project's changelog (Keep a Changelog style), from which the
// packages' changelogs are made.
const changelogPath = "CHANGELOG.md"

// noteWidth is the longest note line: the deb changelog indents notes by four
// columns and lintian wants its lines under 80.
const noteWidth = 76

// release is one released version's section of CHANGELOG.md.
type release struct {
	version string    // 1.2.3
	date    time.Time // the section's date, midnight UTC
	notes   []string  // its bullets as plain text, wrapped to noteWidth
}

// headingRE matches a version heading: "## [1.2.3] - 2026-01-02".
var headingRE = regexp.MustCompile(`^## \[(\d+\.\d+\.\d+)\]\s+-\s+(\d{4}-\d{2}-\d{2})\s*$`)

// parseChangelog returns the released sections of a Keep a Changelog file, in file
// order (newest first). "## [Unreleased]" and the "### Added"-style group headings
// are skipped; a bullet's indented continuation lines join it.
func parseChangelog(md []byte) ([]release, error) {
	var out []release
	var cur *release
	var bullet []string
	flush := func() {
		if cur != nil && len(bullet) > 0 {
			cur.notes = append(cur.notes, wrapNote(plainText(strings.Join(bullet, " ")), noteWidth))
		}
		bullet = nil
	}
	sc := bufio.NewScanner(bytes.NewReader(md))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			flush()
			cur = nil
			m := headingRE.FindStringSubmatch(line)
			if m == nil {
				if !strings.HasPrefix(line, "## [Unreleased]") {
					return nil, fmt.Errorf("%s:%d: want \"## [X.Y.Z] - YYYY-MM-DD\" or \"## [Unreleased]\", got %q", changelogPath, n, line)
				}
				continue
			}
			date, err := time.Parse(time.DateOnly, m[2])
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", changelogPath, n, err)
			}
			out = append(out, release{version: m[1], date: date})
			cur = &out[len(out)-1]
		case strings.HasPrefix(line, "- ") || strings.HasPrefix(line, "* "):
			flush()
			bullet = []string{strings.TrimSpace(line[2:])}
		case bullet != nil && strings.HasPrefix(line, "  ") && strings.TrimSpace(line) != "":
			bullet = append(bullet, strings.TrimSpace(line))
		default:
			flush()
		}
	}
	flush()
	return out, sc.Err()
}

var (
	linkRE     = regexp.MustCompile(`\[([^\]]+)\]\([^)]*\)`)
	emphasisRE = regexp.MustCompile("\\*\\*|__|`")
)

// plainText drops the Markdown a package changelog cannot show: links keep their
// text, code spans and bold lose their marks.
func plainText(s string) string {
	return emphasisRE.ReplaceAllString(linkRE.ReplaceAllString(s, "$1"), "")
}

// wrapNote breaks s at spaces into lines of at most width columns.
func wrapNote(s string, width int) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return strings.Join(append(lines, line), "\n")
}

// readChangelog parses CHANGELOG.md; a missing file is no release.
func readChangelog() ([]release, error) {
	b, err := os.ReadFile(changelogPath)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseChangelog(b)
}

// semverLess compares two X.Y.Z versions by number; anything after the third number
// ("+git5…") is ignored, so a dev build sorts with the release it follows.
func semverLess(a, b string) bool {
	pa, pb := semverParts(a), semverParts(b)
	for i := range pa {
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return false
}

func semverParts(v string) [3]int {
	var p [3]int
	core, _, _ := strings.Cut(v, "+")
	for i, s := range strings.SplitN(core, ".", 3) {
		p[i], _ = strconv.Atoi(s)
	}
	return p
}
