// Command packages builds queen's deb and rpm packages with nfpm used as a library
// (`make packages`, `make deb`, `make rpm`).
//
//	go run ./scripts/packages [-version V] [-arch amd64,arm64] [-formats deb,rpm] [-out dist]
//
// For each architecture it cross-compiles the binaries (CGO_ENABLED=0, -trimpath,
// version, commit and date stamped like `make build`) into dist/stage/, renders what
// the packages carry besides them (see stage.go: the manual pages queen(8),
// queen-proxy(8) and queenctl(1) from the programs' own -man output, queenctl's
// bash, zsh and fish completions, and a changelog entry for the version), then
// packages it all with packaging/nfpm.yaml into
//
//	dist/queen_<version>-<release>_<arch>.deb   (arch: amd64, arm64)
//	dist/queen-<version>-<release>.<arch>.rpm   (arch: x86_64, aarch64)
//
// and prints one path per line (release: nfpm.yaml's, 1). The version comes from git
// (see versionFromDescribe) unless -version or $QUEEN_PKG_VERSION gives one.
//
// The packages are reproducible: a rebuild of the same commit, in another directory,
// at another time, on another host, gives byte-identical binaries, debs and rpms
// (`make test-reproducible` proves it). File dates, the binaries' build date and the
// packages' own dates are the commit's time ($SOURCE_DATE_EPOCH when set); the
// binaries are built with -trimpath and an empty build id, the environment's GOFLAGS
// ignored; nfpm writes sorted archive members owned by root:root, gzip without names
// or times, and the rpm's build host is "reproducible". The changelog comes from
// CHANGELOG.md (changelog.go).
//
// With $QUEEN_PKG_SIGNING_KEY (an OpenPGP secret key file, armored or not; its
// passphrase in $QUEEN_PKG_SIGNING_PASSPHRASE) the rpm is signed (rpm -K checks
// it). The deb is not: Debian signs repositories, not packages, and lintian rejects
// a signature member in a deb.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the rpm packager
)

const (
	module     = "github.com/queenmq/queen"
	configPath = "packaging/nfpm.yaml"
	stageDir   = "dist/stage" // nfpm.yaml's src paths point here
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "packages:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("packages", flag.ContinueOnError)
	version := fs.String("version", os.Getenv("QUEEN_PKG_VERSION"), "package version (default: from git)")
	arches := fs.String("arch", "amd64,arm64", "comma-separated GOARCH values")
	formats := fs.String("formats", "deb,rpm", "comma-separated package formats")
	out := fs.String("out", "dist", "output directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if _, err := os.Stat(configPath); err != nil {
		return fmt.Errorf("run from the repository root: %w", err)
	}
	commit, mtime, err := gitCommit()
	if err != nil {
		return err
	}
	if *version == "" {
		desc, _ := git("describe", "--tags", "--match", "v[0-9]*", "--long", "--dirty")
		*version = versionFromDescribe(desc, commit, mtime)
	}
	if !validVersion(*version) {
		return fmt.Errorf("version %q is not usable for deb and rpm (want digits first, then [0-9A-Za-z.+~])", *version)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	signing := signingKey{file: os.Getenv("QUEEN_PKG_SIGNING_KEY"), passphrase: os.Getenv("QUEEN_PKG_SIGNING_PASSPHRASE")}
	for _, arch := range strings.Split(*arches, ",") {
		if err := build(arch, *version, commit, mtime); err != nil {
			return err
		}
		if err := stage(*version, commit, mtime); err != nil {
			return err
		}
		for _, format := range strings.Split(*formats, ",") {
			path, err := pack(format, arch, *version, mtime, signing, *out)
			if err != nil {
				return fmt.Errorf("%s %s: %w", format, arch, err)
			}
			fmt.Println(path)
		}
	}
	return nil
}

// build cross-compiles the binaries of one architecture into stageDir.
func build(arch, version, commit string, mtime time.Time) error {
	if err := os.RemoveAll(stageDir); err != nil {
		return err
	}
	return goBuild(stageDir, []string{"GOOS=linux", "GOARCH=" + arch}, version, commit, mtime)
}

// goBuild compiles the binaries into dir for the GOOS and GOARCH in env ("" for
// the machine's own), stamped with the version, commit and date.
func goBuild(dir string, env []string, version, commit string, mtime time.Time) error {
	ldflags := strings.Join([]string{
		"-s -w -buildid=",
		"-X " + module + "/internal/buildinfo.Version=" + version,
		"-X " + module + "/internal/buildinfo.Commit=" + commit,
		"-X " + module + "/internal/buildinfo.Date=" + mtime.UTC().Format(time.RFC3339),
	}, " ")
	for _, name := range binaries() {
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags,
			"-o", filepath.Join(dir, name), "./cmd/"+name)
		// What the environment may change in a binary is pinned: a rebuild of the
		// commit anywhere gives the same bytes (GOAMD64 and GOARM64 at Go's defaults).
		cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOAMD64=v1", "GOARM64=v8.0"), env...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build ./cmd/%s (%s): %w", name, strings.Join(env, " "), err)
		}
	}
	return nil
}

// binaries are the commands the packages ship (packaging/nfpm.yaml places them).
func binaries() []string { return []string{"queen", "queen-proxy", "queenctl"} }

// signingKey is the OpenPGP key that signs the rpm; an empty file signs nothing.
type signingKey struct{ file, passphrase string }

// pack writes one package from the staged files and returns its path.
func pack(format, arch, version string, mtime time.Time, key signingKey, out string) (string, error) {
	cfg, err := nfpm.ParseFileWithEnvMapping(configPath, func(name string) string {
		switch name {
		case "QUEEN_PKG_VERSION":
			return version
		case "QUEEN_PKG_ARCH":
			return arch
		}
		return os.Getenv(name)
	})
	if err != nil {
		return "", err
	}
	info, err := cfg.Get(format)
	if err != nil {
		return "", err
	}
	if info.Contents, err = docContents(info.Contents, format); err != nil {
		return "", err
	}
	if key.file != "" {
		info.RPM.Signature.PackageSignature = nfpm.PackageSignature{KeyFile: key.file, KeyPassphrase: key.passphrase}
	}
	info.MTime = mtime
	// The rpm header records a build host: a fixed name, not this machine's, so
	// that a rebuild elsewhere is byte-identical (rpm's own %_buildhost convention).
	info.RPM.BuildHost = "reproducible"
	info = nfpm.WithDefaults(info)
	if err := nfpm.Validate(info); err != nil {
		return "", err
	}
	packager, err := nfpm.Get(format)
	if err != nil {
		return "", err
	}
	path := filepath.Join(out, fileName(format, arch, version+"-"+info.Release))
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if err := packager.Package(info, f); err != nil {
		f.Close()
		os.Remove(path)
		return "", err
	}
	return path, f.Close()
}

// fileName is queen_<version-release>_<arch>.deb or queen-<version-release>.<rpm
// arch>.rpm: the names dpkg-name and rpmbuild give.
func fileName(format, arch, version string) string {
	if format == "rpm" {
		rpmArch := map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "i386"}[arch]
		if rpmArch == "" {
			rpmArch = arch
		}
		return fmt.Sprintf("queen-%s.%s.rpm", version, rpmArch)
	}
	return fmt.Sprintf("queen_%s_%s.%s", version, arch, format)
}

// describeRE parses `git describe --tags --long --dirty`: v1.2.3-5-gabc1234[-dirty].
var describeRE = regexp.MustCompile(`^v(\d+\.\d+\.\d+)-(\d+)-g([0-9a-f]+)(-dirty)?$`)

// versionFromDescribe turns git's description into a version that sorts right for
// both dpkg and rpm:
//
//	v1.2.3 exactly               1.2.3
//	5 commits after v1.2.3       1.2.3+git5.20260102T030405.abc1234   (> 1.2.3, < 1.2.4)
//	no release tag               0.0.0+git20260102T030405.abc1234     (commit time: later commits sort later)
//	uncommitted changes          the above + ".dirty"
func versionFromDescribe(describe, commit string, commitTime time.Time) string {
	stamp := commitTime.UTC().Format("20060102T150405")
	var v string
	m := describeRE.FindStringSubmatch(strings.TrimSpace(describe))
	switch {
	case m == nil:
		v = fmt.Sprintf("0.0.0+git%s.%s", stamp, commit)
		if strings.HasSuffix(strings.TrimSpace(describe), "-dirty") || dirty() {
			v += ".dirty"
		}
		return v
	case m[2] == "0" && m[4] == "":
		return m[1]
	case m[2] == "0":
		v = m[1] + "+git0." + stamp + "." + commit
	default:
		v = fmt.Sprintf("%s+git%s.%s.%s", m[1], m[2], stamp, commit)
	}
	if m[4] != "" {
		v += ".dirty"
	}
	return v
}

var versionRE = regexp.MustCompile(`^[0-9][0-9A-Za-z.+~]*$`)

func validVersion(v string) bool { return versionRE.MatchString(v) }

// gitCommit returns HEAD's short hash and commit time, or $SOURCE_DATE_EPOCH when
// it is set (the reproducible-builds convention; `make release` sets it to the
// commit time).
func gitCommit() (string, time.Time, error) {
	commit, err := git("rev-parse", "--short=12", "HEAD")
	if err != nil {
		return "", time.Time{}, fmt.Errorf("the version comes from git; give -version outside a git checkout: %w", err)
	}
	ct := os.Getenv("SOURCE_DATE_EPOCH")
	if ct == "" {
		if ct, err = git("log", "-1", "--format=%ct"); err != nil {
			return "", time.Time{}, err
		}
	}
	sec, err := strconv.ParseInt(ct, 10, 64)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("commit time %q: %w", ct, err)
	}
	return commit, time.Unix(sec, 0), nil
}

// dirty reports uncommitted changes to tracked files.
func dirty() bool {
	out, err := git("status", "--porcelain", "--untracked-files=no")
	return err == nil && out != ""
}

func git(args ...string) (string, error) {
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, ee.Stderr)
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// docContents prepares the doc entries (type: doc: the manual pages, docs/*.md):
// their globs are expanded, one entry per file into the destination directory
// (nfpm leaves that to the packager, and its rpm packager does not), and for the deb,
// which knows no doc flag (nfpm's deb packager would drop them), they become plain
// files.
func docContents(contents files.Contents, format string) (files.Contents, error) {
	out := make(files.Contents, 0, len(contents))
	for _, c := range contents {
		if c.Type != files.TypeRPMDoc {
			out = append(out, c)
			continue
		}
		if format == "deb" {
			c.Type = files.TypeFile
		}
		if !strings.ContainsAny(c.Source, "*?[") {
			out = append(out, c)
			continue
		}
		matches, err := filepath.Glob(c.Source)
		if err != nil || len(matches) == 0 {
			return nil, fmt.Errorf("doc glob %s matches no file", c.Source)
		}
		for _, m := range matches {
			e := *c
			e.Source, e.Destination = m, strings.TrimSuffix(c.Destination, "/")+"/"+filepath.Base(m)
			out = append(out, &e)
		}
	}
	return out, nil
}
