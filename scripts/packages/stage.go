package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// maintainer is the packages' maintainer and the changelog's author; nfpm.yaml
// names the same.
const maintainer = "queen maintainers <maintainers@queen.invalid>"

// manPages are the pages the packages install: program, section.
func manPages() [][2]string {
	return [][2]string{{"queen", "8"}, {"queen-proxy", "8"}, {"queenctl", "1"}}
}

// completions are queenctl's completion scripts: shell, staged file name.
func completions() [][2]string {
	return [][2]string{{"bash", "queenctl.bash"}, {"zsh", "_queenctl"}, {"fish", "queenctl.fish"}}
}

// stage renders into stageDir what nfpm.yaml packs besides the binaries: the
// changelog entry of the version, and the manual pages and completion scripts,
// written by the programs themselves (built for this machine into stageDir/host)
// from their own flag, command and settings tables, so that they cannot drift.
func stage(version, commit string, mtime time.Time) error {
	host := filepath.Join(stageDir, "host")
	if err := goBuild(host, nil, version, commit, mtime); err != nil {
		return err
	}
	releases, err := readChangelog()
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(stageDir, "changelog.yml"), changelog(version+"-1", commit, mtime, releases)); err != nil {
		return err
	}
	for _, p := range manPages() {
		roff, err := output(filepath.Join(host, p[0]), "-man")
		if err != nil {
			return err
		}
		gz, err := gzipped(roff)
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(stageDir, "man", p[0]+"."+p[1]+".gz"), gz); err != nil {
			return err
		}
	}
	for _, c := range completions() {
		script, err := output(filepath.Join(host, "queenctl"), "completion", c[0])
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(stageDir, "completion", c[1]), script); err != nil {
			return err
		}
	}
	return nil
}

// changelog is the chglog file nfpm turns into the deb's changelog.Debian.gz and
// the rpm's %changelog, newest first: this build, named by its full version, with
// its section of CHANGELOG.md when the version is a release listed there (else one
// line naming the commit: a dev build); then the older releases CHANGELOG.md lists;
// then the first packaging of queen (the commit that added packaging/nfpm.yaml, as
// 0.0.0-0), which is the history this changelog starts from.
func changelog(fullVersion, commit string, mtime time.Time, releases []release) []byte {
	version, release, _ := strings.Cut(fullVersion, "-")
	var b []byte
	for _, r := range releases {
		if r.version == version {
			b = changelogEntry(b, fullVersion, commit, mtime, r.notes)
		}
	}
	if b == nil {
		// The entry's line stays under lintian's 80 columns: the version is in its header.
		b = changelogEntry(nil, fullVersion, commit, mtime, []string{"Build of commit " + commit + "."})
	}
	for _, r := range releases {
		if r.version != version && !semverLess(version, r.version) {
			b = changelogEntry(b, r.version+"-"+release, "v"+r.version, r.date, r.notes)
		}
	}
	if first, at, ok := firstPackaging(); ok {
		b = changelogEntry(b, "0.0.0-0", first, at, []string{"Initial packaging: queen as a systemd service in a deb and an rpm."})
	}
	return b
}

// changelogEntry appends one chglog entry: a version, its date and its notes, each
// note one change.
func changelogEntry(b []byte, fullVersion, commit string, at time.Time, notes []string) []byte {
	b = fmt.Appendf(b, `- semver: %q
  date: %s
  packager: %q
  deb:
    urgency: medium
    distributions: [stable]
  changes:
`, fullVersion, at.UTC().Format(time.RFC3339), maintainer)
	for _, n := range notes {
		b = fmt.Appendf(b, "    - commit: %q\n      note: %q\n", commit, n)
	}
	return b
}

// firstPackaging is the commit that added packaging/nfpm.yaml and its time; not ok
// outside a git checkout.
func firstPackaging() (string, time.Time, bool) {
	out, err := git("log", "--diff-filter=A", "--format=%H %ct", "--", ":/"+configPath)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	hash, ct, ok := strings.Cut(lines[len(lines)-1], " ")
	if err != nil || !ok {
		return "", time.Time{}, false
	}
	sec, err := strconv.ParseInt(ct, 10, 64)
	if err != nil {
		return "", time.Time{}, false
	}
	return hash, time.Unix(sec, 0), true
}

// gzipped is data compressed as `gzip -9n` would: maximum compression, no name and
// no time stamp, so the same input gives the same bytes.
func gzipped(data []byte) ([]byte, error) {
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// output runs a staged program and returns its standard output.
func output(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", filepath.Base(name), strings.Join(args, " "), err, &stderr)
	}
	return out, nil
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
