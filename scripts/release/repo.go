package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The apt repository's names: one suite, one component.
const (
	aptSuite     = "stable"
	aptComponent = "main"
	aptPool      = "pool/main/q/queen"
)

// aptRepository lays out the apt repository under out/apt with Debian's
// apt-ftparchive: the debs in the pool, a Packages index per architecture (and its
// gzip), the suite's Release, then InRelease and Release.gpg signed by sg (nil:
// unsigned).
func aptRepository(out string, debs map[string]string, arches []string, sg *signer) error {
	root := filepath.Join(out, "apt")
	for _, arch := range arches {
		if err := copyFile(debs[arch], filepath.Join(root, aptPool, filepath.Base(debs[arch]))); err != nil {
			return err
		}
	}
	suite := filepath.Join(root, "dists", aptSuite)
	for _, arch := range arches {
		cmd := exec.Command("apt-ftparchive", "--arch", arch, "packages", "pool/"+aptComponent)
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		idx, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("apt-ftparchive packages (%s): %w: %s", arch, err, &stderr)
		}
		if !bytes.Contains(idx, []byte("\nArchitecture: "+arch+"\n")) {
			return fmt.Errorf("apt-ftparchive found no %s package in the pool", arch)
		}
		dir := filepath.Join(suite, aptComponent, "binary-"+arch)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "Packages"), idx, 0o644); err != nil {
			return err
		}
		// gzip -n: no name and no time stamp, so the same index gives the same bytes.
		zip := exec.Command("gzip", "-9nc")
		zip.Stdin = bytes.NewReader(idx)
		gz, err := zip.Output()
		if err != nil {
			return fmt.Errorf("gzip Packages (%s): %w", arch, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "Packages.gz"), gz, 0o644); err != nil {
			return err
		}
	}
	opt := func(k, v string) []string { return []string{"-o", "APT::FTPArchive::Release::" + k + "=" + v} }
	args := [][]string{
		opt("Origin", "queen"), opt("Label", "queen"), opt("Suite", aptSuite), opt("Codename", aptSuite),
		opt("Architectures", strings.Join(arches, " ")), opt("Components", aptComponent),
		opt("Description", "queen message broker"),
	}
	cmd := exec.Command("apt-ftparchive", append(concat(args), "release", "dists/"+aptSuite)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	rel, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("apt-ftparchive release: %w: %s", err, &stderr)
	}
	release := filepath.Join(suite, "Release")
	if err := os.WriteFile(release, rel, 0o644); err != nil {
		return err
	}
	if sg == nil {
		return nil
	}
	if err := sg.clearsign(release, filepath.Join(suite, "InRelease")); err != nil {
		return err
	}
	return sg.detachSign(release, filepath.Join(suite, "Release.gpg"))
}

func concat(parts [][]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// rpmRepository lays out the dnf repository under out/rpm: the rpms, each
// header-signed with rpmsign, then createrepo_c's repodata (its time stamps fixed to
// sde, no sqlite databases) and repomd.xml.asc.
func rpmRepository(out string, rpms []string, sde time.Time, sg *signer) error {
	root := filepath.Join(out, "rpm")
	for _, p := range rpms {
		dst := filepath.Join(root, filepath.Base(p))
		if err := copyFile(p, dst); err != nil {
			return err
		}
		if sg != nil {
			if err := sg.rpmsign(dst); err != nil {
				return err
			}
		}
	}
	rev := strconv.FormatInt(sde.Unix(), 10)
	if err := runCmd(nil, "createrepo_c", "--quiet", "--no-database", "--revision", rev,
		"--set-timestamp-to-revision", root); err != nil {
		return err
	}
	if sg == nil {
		return nil
	}
	repomd := filepath.Join(root, "repodata", "repomd.xml")
	return sg.detachSign(repomd, repomd+".asc")
}

// verify checks every signature of the release with its public key alone, in a
// throwaway GnuPG home and rpm database, as an operator's apt and dnf would: gpgv
// on InRelease, Release.gpg, repomd.xml.asc and SHA256SUMS.asc; rpmkeys -K on each
// rpm; SHA256SUMS against the files.
func verify(out string) error {
	out, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "queen-release-verify.")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	keyring := filepath.Join(out, keyringName+".gpg")
	env := append(os.Environ(), "GNUPGHOME="+tmp)
	suite := filepath.Join(out, "apt", "dists", aptSuite)
	for _, sig := range [][]string{
		{filepath.Join(suite, "InRelease")},
		{filepath.Join(suite, "Release.gpg"), filepath.Join(suite, "Release")},
		{filepath.Join(out, "rpm", "repodata", "repomd.xml.asc"), filepath.Join(out, "rpm", "repodata", "repomd.xml")},
		{filepath.Join(out, "SHA256SUMS.asc"), filepath.Join(out, "SHA256SUMS")},
	} {
		cmd := exec.Command("gpgv", append([]string{"--keyring", keyring}, sig...)...)
		cmd.Env = env
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("gpgv %s: %w: %s", filepath.Base(sig[0]), err, b)
		}
	}
	rpmRoot := filepath.Join(tmp, "rpmroot")
	if b, err := exec.Command("rpmkeys", "--root", rpmRoot, "--import", filepath.Join(out, keyringName+".asc")).CombinedOutput(); err != nil {
		return fmt.Errorf("rpmkeys --import: %w: %s", err, b)
	}
	rpms, _ := filepath.Glob(filepath.Join(out, "rpm", "*.rpm"))
	if len(rpms) == 0 {
		return errors.New("no rpm in the release")
	}
	for _, p := range rpms {
		b, err := exec.Command("rpmkeys", "--root", rpmRoot, "-K", p).CombinedOutput()
		if err != nil || !strings.Contains(string(b), "signatures OK") {
			return fmt.Errorf("rpmkeys -K %s: %v: %s", filepath.Base(p), err, b)
		}
	}
	cmd := exec.Command("sha256sum", "--quiet", "--strict", "-c", "SHA256SUMS")
	cmd.Dir = out
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("sha256sum -c SHA256SUMS: %w: %s", err, b)
	}
	return nil
}

// buildImage builds the container image of one architecture and saves it as an
// OCI archive (scripts/release-image.sh); where podman cannot build here it says
// why and the release goes on without it.
func buildImage(arch, version, dst string, sde time.Time) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	say("building the container image for %s", arch)
	cmd := exec.Command("scripts/release-image.sh", arch, version, dst)
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH="+strconv.FormatInt(sde.Unix(), 10))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		say("SKIPPED the %s container image: %s", arch, strings.TrimSpace(string(out)))
		return nil
	}
	if err != nil {
		return fmt.Errorf("scripts/release-image.sh %s: %w", arch, err)
	}
	return nil
}
