// Command release builds a signed release of queen (`make release`): the deb and rpm
// packages for each architecture, a signed apt repository and a signed dnf
// repository of them, the container image per architecture as an OCI archive with an
// SPDX SBOM of the binaries' Go modules, SHA256SUMS with its signature, and the
// public key. docs/releasing.md is the procedure; the layout it writes is
//
//	dist/release/                                  ($RELEASE_OUT overrides)
//	  apt/dists/stable/{InRelease,Release,Release.gpg}
//	  apt/dists/stable/main/binary-<arch>/Packages(.gz)
//	  apt/pool/main/q/queen/queen_<version>-1_<arch>.deb
//	  rpm/queen-<version>-1.<x86_64|aarch64>.rpm     (header-signed)
//	  rpm/repodata/repomd.xml, repomd.xml.asc
//	  oci/queen-<version>-<arch>.oci.tar, oci/queen-<version>.spdx.json
//	  SHA256SUMS, SHA256SUMS.asc
//	  queen-archive-keyring.gpg, queen-archive-keyring.asc
//
// The environment:
//
//	RELEASE_VERSION   the version (default: from git, as scripts/packages computes it)
//	RELEASE_ARCH      comma-separated GOARCH values (default amd64,arm64)
//	RELEASE_IMAGE=0   no container images (the SBOM is still written)
//	QUEEN_RELEASE_KEY the armored secret key file, QUEEN_RELEASE_KEY_PASSPHRASE its passphrase
//	QUEEN_RELEASE_GNUPGHOME  or an existing GnuPG home (QUEEN_RELEASE_KEY_ID picks the key)
//	RELEASE_UNSIGNED=1  a local trial without a key: nothing signed, said loudly
//	SOURCE_DATE_EPOCH the time stamped into everything (default: the commit's)
//
// The packages come from scripts/packages, built with their signing off (the rpm is
// signed here with rpmsign); the images from packaging/container/build.sh via
// scripts/release-image.sh, skipped with the reason where podman cannot build. After
// writing, it checks every signature with the exported public key alone (gpgv,
// rpmkeys -K in a throwaway rpm database), as an operator would.
package main

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// config is what the environment asks of the release.
type config struct {
	out      string
	version  string
	arches   []string
	image    bool
	unsigned bool
	key      keySource
}

func configFromEnv() config {
	c := config{
		out:      cmp.Or(os.Getenv("RELEASE_OUT"), "dist/release"),
		version:  os.Getenv("RELEASE_VERSION"),
		arches:   strings.Split(cmp.Or(os.Getenv("RELEASE_ARCH"), "amd64,arm64"), ","),
		image:    os.Getenv("RELEASE_IMAGE") != "0",
		unsigned: os.Getenv("RELEASE_UNSIGNED") == "1",
		key: keySource{
			keyFile:    os.Getenv("QUEEN_RELEASE_KEY"),
			passphrase: os.Getenv("QUEEN_RELEASE_KEY_PASSPHRASE"),
			gnupgHome:  os.Getenv("QUEEN_RELEASE_GNUPGHOME"),
			keyID:      os.Getenv("QUEEN_RELEASE_KEY_ID"),
		},
	}
	return c
}

func main() {
	if err := run(configFromEnv()); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) { fmt.Fprintf(os.Stderr, "release: "+format+"\n", args...) }

const unsignedBanner = "*** UNSIGNED: RELEASE_UNSIGNED=1 was set; nothing in %s is signed. This is a local trial, not a release. ***"

func run(c config) error {
	if _, err := os.Stat("packaging/nfpm.yaml"); err != nil {
		return fmt.Errorf("run from the repository root: %w", err)
	}
	var sg *signer
	switch {
	case c.key.empty() && !c.unsigned:
		return errors.New("no release key: set QUEEN_RELEASE_KEY (an armored secret key file; " +
			"QUEEN_RELEASE_KEY_PASSPHRASE its passphrase) or QUEEN_RELEASE_GNUPGHOME (QUEEN_RELEASE_KEY_ID picks the key); " +
			"an unsigned release is not a release (RELEASE_UNSIGNED=1 builds one for a local trial): see docs/releasing.md")
	case c.key.empty():
		say(unsignedBanner, c.out)
	default:
		var err error
		if sg, err = openSigner(c.key); err != nil {
			return err
		}
		defer sg.close()
		say("signing with key %s", sg.fpr)
	}
	if err := checkTools(); err != nil {
		return err
	}
	sde, err := sourceDateEpoch()
	if err != nil {
		return err
	}
	if err := clearOut(c.out); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "queen-release.")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	b, err := buildPackages(c, work, sde)
	if err != nil {
		return err
	}
	say("version %s, architectures %s", b.version, strings.Join(c.arches, " "))
	if err := aptRepository(c.out, b.debs, c.arches, sg); err != nil {
		return fmt.Errorf("apt repository: %w", err)
	}
	if err := rpmRepository(c.out, b.rpms, sde, sg); err != nil {
		return fmt.Errorf("rpm repository: %w", err)
	}
	if err := writeSBOM(filepath.Join(c.out, "oci", "queen-"+b.version+".spdx.json"), b.version, sde, b.binaries); err != nil {
		return fmt.Errorf("SBOM: %w", err)
	}
	if c.image {
		for _, arch := range c.arches {
			if err := buildImage(arch, b.version, filepath.Join(c.out, "oci", "queen-"+b.version+"-"+arch+".oci.tar"), sde); err != nil {
				return err
			}
		}
	} else {
		say("container images not built (RELEASE_IMAGE=0)")
	}
	if sg != nil {
		if err := sg.exportPublic(filepath.Join(c.out, keyringName+".gpg"), false); err != nil {
			return err
		}
		if err := sg.exportPublic(filepath.Join(c.out, keyringName+".asc"), true); err != nil {
			return err
		}
	}
	if err := writeSums(c.out); err != nil {
		return err
	}
	if sg == nil {
		say(unsignedBanner, c.out)
		return nil
	}
	if err := sg.detachSign(filepath.Join(c.out, "SHA256SUMS"), filepath.Join(c.out, "SHA256SUMS.asc")); err != nil {
		return err
	}
	if err := verify(c.out); err != nil {
		return fmt.Errorf("the release does not verify with its own public key: %w", err)
	}
	say("%s: signed with %s and verified with %s.gpg", c.out, sg.fpr, keyringName)
	return nil
}

// keyringName is the public key's file name, without its extension.
const keyringName = "queen-archive-keyring"

// checkTools names every missing program at once.
func checkTools() error {
	var missing []string
	for _, t := range [][2]string{
		{"go", "golang"}, {"git", "git"}, {"apt-ftparchive", "apt-utils"}, {"createrepo_c", "createrepo-c"},
		{"gpg", "gnupg"}, {"gpgv", "gpgv"}, {"rpmsign", "rpm"}, {"rpmkeys", "rpm"},
	} {
		if _, err := exec.LookPath(t[0]); err != nil {
			missing = append(missing, t[0]+" (Debian package "+t[1]+")")
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s: as root, scripts/ensure-release-tools.sh (run by make release) installs them",
			strings.Join(missing, ", "))
	}
	return nil
}

// sourceDateEpoch is $SOURCE_DATE_EPOCH, else HEAD's commit time.
func sourceDateEpoch() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		out, err := exec.Command("git", "log", "-1", "--format=%ct").Output()
		if err != nil {
			return time.Time{}, fmt.Errorf("the commit time comes from git (or set SOURCE_DATE_EPOCH): %w", err)
		}
		s = strings.TrimSpace(string(out))
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// clearOut empties the output directory: absent, empty or an earlier release
// (it has SHA256SUMS or apt/), never anything else.
func clearOut(out string) error {
	entries, err := os.ReadDir(out)
	if os.IsNotExist(err) {
		return os.MkdirAll(out, 0o755)
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		_, sums := os.Stat(filepath.Join(out, "SHA256SUMS"))
		_, apt := os.Stat(filepath.Join(out, "apt"))
		if sums != nil && apt != nil {
			return fmt.Errorf("%s is not empty and holds no earlier release: not removing it (set RELEASE_OUT)", out)
		}
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	return os.MkdirAll(out, 0o755)
}

// built is what buildPackages made.
type built struct {
	version  string
	debs     map[string]string // arch → path
	rpms     []string
	binaries []binary
}

// debNameRE parses the version out of scripts/packages' deb name.
var debNameRE = regexp.MustCompile(`^queen_(.+)-1_[a-z0-9]+\.deb$`)

// buildPackages runs scripts/packages once per architecture (unsigned: the rpm is
// signed here) and reads the binaries it staged for the SBOM before the next
// architecture replaces them.
func buildPackages(c config, work string, sde time.Time) (built, error) {
	b := built{version: c.version, debs: map[string]string{}}
	tool := filepath.Join(work, "packages")
	if err := runCmd(nil, "go", "build", "-o", tool, "./scripts/packages"); err != nil {
		return b, err
	}
	env := append(os.Environ(), "SOURCE_DATE_EPOCH="+strconv.FormatInt(sde.Unix(), 10),
		"QUEEN_PKG_SIGNING_KEY=", "QUEEN_PKG_VERSION=")
	for _, arch := range c.arches {
		args := []string{"-arch", arch, "-formats", "deb,rpm", "-out", filepath.Join(work, "packages.out")}
		if b.version != "" {
			args = append(args, "-version", b.version)
		}
		say("building the packages for %s", arch)
		cmd := exec.Command(tool, args...)
		cmd.Env, cmd.Stderr = env, os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return b, fmt.Errorf("scripts/packages -arch %s: %w", arch, err)
		}
		for _, p := range strings.Fields(string(out)) {
			if m := debNameRE.FindStringSubmatch(filepath.Base(p)); m != nil {
				b.debs[arch], b.version = p, m[1]
			} else if strings.HasSuffix(p, ".rpm") {
				b.rpms = append(b.rpms, p)
			}
		}
		if b.debs[arch] == "" || len(b.rpms) == 0 {
			return b, fmt.Errorf("scripts/packages -arch %s made no deb or rpm: %q", arch, out)
		}
		for _, name := range []string{"queen", "queen-proxy", "queenctl"} {
			bin, err := readBinary(filepath.Join("dist", "stage", name), arch)
			if err != nil {
				return b, err
			}
			b.binaries = append(b.binaries, bin)
		}
	}
	return b, nil
}

// writeSums writes SHA256SUMS: every file of the release but the sums and their
// signature, sorted by path, in sha256sum's format (`sha256sum -c SHA256SUMS`).
func writeSums(out string) error {
	var lines []string
	err := filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(out, path)
		if rel == "SHA256SUMS" || rel == "SHA256SUMS.asc" {
			return nil
		}
		sum, err := fileSHA256(path)
		if err != nil {
			return err
		}
		lines = append(lines, sum+"  "+filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(lines, func(a, b string) int { return strings.Compare(a[66:], b[66:]) })
	return os.WriteFile(filepath.Join(out, "SHA256SUMS"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// copyFile copies src to dst (created 0644, directories as needed).
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// runCmd runs a program with its output on stderr (env nil: this process's).
func runCmd(env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}
