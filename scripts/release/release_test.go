package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// -release.full is `make test-reproducible`: both architectures, the container
// images, and a fresh Go build cache for the second build (so no compiled object is
// shared between the two). Without it (make test): amd64, no image, one cache.
var full = flag.Bool("release.full", false, "both architectures, images, a fresh Go cache for the second build")

func TestSecretFingerprints(t *testing.T) {
	t.Parallel()
	colons := `sec:u:3072:1:5C82FDE08437CA33:1764700000:::u:::scESC:::+:::23::0:
fpr:::::::::27A32AB3DC9942772F7B2E6E5C82FDE08437CA33:
grp:::::::::AAAA:
uid:u::::1764700000::HASH::queen test <test@queen.invalid>::::::::::0:
ssb:u:3072:1:1111:1764700000::::::e:::+:::23:
fpr:::::::::1111111111111111111111111111111111111111:
sec:u:255:22:2222:1764700000:::u:::scESC:::+:::ed25519:::0:
fpr:::::::::2222222222222222222222222222222222222222:
`
	require.Equal(t, []string{"27A32AB3DC9942772F7B2E6E5C82FDE08437CA33", "2222222222222222222222222222222222222222"},
		secretFingerprints(colons), "primary keys only, not the subkey")
}

// TestSBOMOfARealBinary: the SBOM of a real program (queenctl, built here) names
// exactly the modules `go version -m` reads from it, each with its purl and go.sum
// hash linked from the program, and is the same bytes for the same input.
func TestSBOMOfARealBinary(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "queenctl")
	cmd := exec.Command("go", "build", "-trimpath", "-o", path, "./cmd/queenctl")
	cmd.Dir = "../.."
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	bin, err := readBinary(path, runtime.GOARCH)
	require.NoError(t, err)
	sde := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	doc := sbom("1.2.3", sde, []binary{bin})
	require.Equal(t, "SPDX-2.3", doc.SPDXVersion)
	require.Equal(t, "2026-01-02T03:04:05Z", doc.CreationInfo.Created)
	require.Regexp(t, `^https://github\.com/queenmq/queen/spdx/queen-1\.2\.3-[0-9a-f]{16}$`, doc.DocumentNamespace)

	// `go version -m` lines: "\tdep\tPATH\tVERSION\tSUM" (or "=>" for a replacement).
	out, err := exec.Command("go", "version", "-m", path).Output()
	require.NoError(t, err)
	want := map[string]string{}
	for line := range strings.SplitSeq(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(line), "\t")
		if (f[0] == "dep" || f[0] == "=>") && len(f) >= 4 {
			want[f[1]+"@"+f[2]] = f[3]
		}
	}
	require.NotEmpty(t, want, "queenctl links modules besides its own: %s", out)
	self := doc.Packages[0]
	require.Equal(t, "queenctl", self.Name)
	require.Equal(t, bin.sha256, self.Checksums[0].ChecksumValue)
	require.Contains(t, doc.Relationships, spdxRelationship{"SPDXRef-DOCUMENT", "DESCRIBES", self.SPDXID})
	got := map[string]string{}
	for _, p := range doc.Packages {
		if p.PrimaryPackagePurpose != "LIBRARY" || p.Name == "stdlib" {
			continue
		}
		require.Equal(t, "pkg:golang/"+p.Name+"@"+p.VersionInfo, p.ExternalRefs[0].ReferenceLocator)
		require.Contains(t, doc.Relationships, spdxRelationship{self.SPDXID, "STATIC_LINK", p.SPDXID})
		got[p.Name+"@"+p.VersionInfo] = strings.TrimPrefix(p.Comment, "go.sum ")
	}
	require.Equal(t, want, got, "the SBOM's modules are the binary's")

	a, err := json.Marshal(sbom("1.2.3", sde, []binary{bin}))
	require.NoError(t, err)
	c, err := json.Marshal(doc)
	require.NoError(t, err)
	require.Equal(t, string(a), string(c), "one input, one document")
	require.NotEqual(t, doc.DocumentNamespace, sbom("1.2.4", sde, []binary{bin}).DocumentNamespace)
}

// TestReleaseRefusesWithoutAKey: no key and no RELEASE_UNSIGNED=1 is an error that
// says what to set, before anything is built.
func TestReleaseRefusesWithoutAKey(t *testing.T) {
	t.Chdir("../..")
	out := filepath.Join(t.TempDir(), "out")
	err := run(config{out: out, arches: []string{"amd64"}})
	require.ErrorContains(t, err, "no release key: set QUEEN_RELEASE_KEY")
	require.ErrorContains(t, err, "RELEASE_UNSIGNED=1")
	_, statErr := os.Stat(out)
	require.True(t, os.IsNotExist(statErr), "nothing written")
}

// TestReproducibleRelease builds a signed release twice, in two clean clones of one
// commit, at two times, with two time zones and umasks and the key given both ways
// (a key file with its passphrase; a GnuPG home), then checks:
//   - each release's signatures verify with its shipped public key alone (gpgv on
//     InRelease, Release.gpg, repomd.xml.asc, SHA256SUMS.asc; rpmkeys -K), and a
//     tampered Release does not;
//   - the layout is the documented one;
//   - the binaries, debs, rpms (compared after rpmsign --delsign on copies: the
//     header signature records its signing time), apt indexes, SBOM and keyrings
//     are byte-identical, diffoscope showing where when not;
//   - no artifact holds the clone's path or this host's name.
func TestReproducibleRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two releases (about a minute); not with -short")
	}
	for _, tool := range []string{"make", "git", "gpg", "gpgv", "apt-ftparchive", "createrepo_c", "rpmsign", "rpmkeys", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: scripts/ensure-release-tools.sh installs the release tools as root (make test runs it)", tool)
		}
	}
	tmp := t.TempDir()
	src := sourceRepo(t, tmp)
	keyFile, keyHome := throwawayKey(t, tmp)
	arches := "amd64"
	if *full {
		arches = "amd64,arm64"
	}

	outs := [2]string{filepath.Join(tmp, "out-a"), filepath.Join(tmp, "out-b")}
	clones := [2]string{filepath.Join(tmp, "clone-a"), filepath.Join(tmp, "clone-b")}
	for i := range 2 {
		gitRun(t, "", "clone", "--quiet", "--no-local", src, clones[i])
		env := append(os.Environ(), "RELEASE_OUT="+outs[i], "RELEASE_ARCH="+arches, "QUEEN_RELEASE_KEY_PASSPHRASE=test passphrase",
			"RELEASE_IMAGE=0", "RELEASE_UNSIGNED=", "RELEASE_VERSION=", "SOURCE_DATE_EPOCH=", "QUEEN_RELEASE_KEY_ID=")
		umask := "022"
		if i == 0 {
			env = append(env, "QUEEN_RELEASE_KEY="+keyFile, "QUEEN_RELEASE_GNUPGHOME=", "TZ=UTC")
		} else {
			env = append(env, "QUEEN_RELEASE_GNUPGHOME="+keyHome, "QUEEN_RELEASE_KEY=", "TZ=Pacific/Kiritimati")
			umask = "077"
			if *full {
				env = append(env, "GOCACHE="+filepath.Join(tmp, "gocache-b"))
			}
		}
		if *full {
			env = append(env, "RELEASE_IMAGE=1")
		}
		start := time.Now()
		cmd := exec.Command("bash", "-c", "umask "+umask+" && exec make --no-print-directory release")
		cmd.Dir, cmd.Env = clones[i], env
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "make release in %s:\n%s", clones[i], b)
		t.Logf("release %d built in %s", i+1, time.Since(start).Round(time.Second))
		checkRelease(t, outs[i], strings.Split(arches, ","))
	}
	compareReleases(t, tmp, outs)
	noBuildPathOrHost(t, tmp, outs[0], clones[0])
}

// sourceRepo is what the clones are made from: this repository when its work tree
// is clean; else a one-commit snapshot of the work tree (tracked and untracked,
// unignored files; HEAD's commit time), so that a developer's edits are tested too.
func sourceRepo(t *testing.T, tmp string) string {
	top := strings.TrimSpace(gitOut(t, "", "rev-parse", "--show-toplevel"))
	if gitOut(t, top, "status", "--porcelain") == "" {
		return top
	}
	t.Log("the work tree has changes: the clones are made from a snapshot commit of it")
	snap := filepath.Join(tmp, "snapshot")
	files := strings.Split(strings.TrimRight(gitOut(t, top, "ls-files", "-co", "--exclude-standard", "-z"), "\x00"), "\x00")
	for _, f := range files {
		st, err := os.Lstat(filepath.Join(top, f))
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the work tree, or not a file
		}
		b, err := os.ReadFile(filepath.Join(top, f))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(snap, f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(snap, f), b, st.Mode().Perm()))
	}
	when := strings.TrimSpace(gitOut(t, top, "log", "-1", "--format=%cI"))
	gitRun(t, snap, "init", "--quiet")
	gitRun(t, snap, "add", "-A")
	cmd := exec.Command("git", "-c", "user.name=queen test", "-c", "user.email=test@queen.invalid",
		"commit", "--quiet", "--no-gpg-sign", "-m", "snapshot of the work tree")
	cmd.Dir = snap
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE="+when, "GIT_COMMITTER_DATE="+when)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	return snap
}

// throwawayKey makes an RSA signing key protected by a passphrase in a GnuPG home
// of the test, and exports it armored: the two ways make release takes a key.
func throwawayKey(t *testing.T, tmp string) (keyFile, home string) {
	home = filepath.Join(tmp, "gnupg")
	require.NoError(t, os.Mkdir(home, 0o700))
	t.Cleanup(func() { _ = exec.Command("gpgconf", "--homedir", home, "--kill", "all").Run() })
	gpg := func(args ...string) []byte {
		cmd := exec.Command("gpg", append([]string{"--homedir", home, "--batch", "--pinentry-mode", "loopback",
			"--passphrase", "test passphrase"}, args...)...)
		out, err := cmd.Output()
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		require.NoError(t, err, "gpg %v: %s", args, stderr)
		return out
	}
	gpg("--quick-gen-key", "queen release test <release-test@queen.invalid>", "rsa3072", "sign", "never")
	keyFile = filepath.Join(tmp, "release-key.asc")
	require.NoError(t, os.WriteFile(keyFile, gpg("--armor", "--export-secret-keys"), 0o600))
	return keyFile, home
}

// checkRelease verifies one release as an operator would, with its public key alone.
func checkRelease(t *testing.T, out string, arches []string) {
	t.Helper()
	sums := readSums(t, out)
	want := []string{
		"apt/dists/stable/InRelease", "apt/dists/stable/Release", "apt/dists/stable/Release.gpg",
		"rpm/repodata/repomd.xml", "rpm/repodata/repomd.xml.asc",
		"queen-archive-keyring.gpg", "queen-archive-keyring.asc",
	}
	version := ""
	for p := range sums {
		if m := regexp.MustCompile(`^oci/queen-(.+)\.spdx\.json$`).FindStringSubmatch(p); m != nil {
			version = m[1]
		}
	}
	require.NotEmpty(t, version, "no SBOM in SHA256SUMS: %v", sums)
	rpmArch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}
	for _, a := range arches {
		want = append(want, "apt/dists/stable/main/binary-"+a+"/Packages", "apt/dists/stable/main/binary-"+a+"/Packages.gz",
			"apt/pool/main/q/queen/queen_"+version+"-1_"+a+".deb", "rpm/queen-"+version+"-1."+rpmArch[a]+".rpm")
	}
	for _, p := range want {
		require.Contains(t, sums, p, "SHA256SUMS lists every file of the layout")
	}
	for _, p := range []string{"SHA256SUMS", "SHA256SUMS.asc"} {
		require.FileExists(t, filepath.Join(out, p))
	}
	release, err := os.ReadFile(filepath.Join(out, "apt/dists/stable/Release"))
	require.NoError(t, err)
	for _, line := range []string{"Origin: queen", "Label: queen", "Suite: stable", "Codename: stable",
		"Components: main", "Architectures: " + strings.Join(arches, " ")} {
		require.Contains(t, string(release), line+"\n")
	}

	gnupg := t.TempDir() // gpgv reads no keyring of the user's
	keyring := filepath.Join(out, "queen-archive-keyring.gpg")
	gpgv := func(args ...string) (string, error) {
		cmd := exec.Command("gpgv", append([]string{"--keyring", keyring}, args...)...)
		cmd.Env = append(os.Environ(), "GNUPGHOME="+gnupg)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	d := filepath.Join(out, "apt/dists/stable")
	for _, sig := range [][]string{
		{filepath.Join(d, "InRelease")},
		{filepath.Join(d, "Release.gpg"), filepath.Join(d, "Release")},
		{filepath.Join(out, "rpm/repodata/repomd.xml.asc"), filepath.Join(out, "rpm/repodata/repomd.xml")},
		{filepath.Join(out, "SHA256SUMS.asc"), filepath.Join(out, "SHA256SUMS")},
	} {
		msg, err := gpgv(sig...)
		require.NoError(t, err, "gpgv %v: %s", sig, msg)
	}
	tampered := filepath.Join(t.TempDir(), "Release")
	require.NoError(t, os.WriteFile(tampered, bytes.Replace(release, []byte("Suite: stable"), []byte("Suite: stablf"), 1), 0o644))
	msg, err := gpgv(filepath.Join(d, "Release.gpg"), tampered)
	require.Error(t, err, "a tampered Release must not verify")
	require.Contains(t, msg, "BAD signature")

	root := t.TempDir()
	b, err := exec.Command("rpmkeys", "--root", root, "--import", filepath.Join(out, "queen-archive-keyring.asc")).CombinedOutput()
	require.NoError(t, err, "%s", b)
	for _, a := range arches {
		p := filepath.Join(out, "rpm/queen-"+version+"-1."+rpmArch[a]+".rpm")
		b, err := exec.Command("rpmkeys", "--root", root, "-K", p).CombinedOutput()
		require.NoError(t, err, "%s", b)
		require.Contains(t, string(b), "signatures OK", "the rpm header carries a signature by the release key")
	}
}

// readSums reads SHA256SUMS: path → sha256.
func readSums(t *testing.T, out string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(out, "SHA256SUMS"))
	require.NoError(t, err)
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, path, ok := strings.Cut(sc.Text(), "  ")
		require.True(t, ok, "SHA256SUMS line %q", sc.Text())
		sums[path] = sum
	}
	require.NoError(t, sc.Err())
	return sums
}

// signedOrDated are the files that differ between two builds by design: they are,
// or hold, a signature or a time of signing (Release's Date), or index such files.
var signedOrDated = regexp.MustCompile(`^(apt/dists/stable/(InRelease|Release|Release\.gpg)|rpm/repodata/.*|rpm/.*\.rpm)$`)

// compareReleases requires the two releases to have the same files, the same bytes
// for all but signedOrDated, the same rpms once their signatures are deleted, and
// the same binaries in their debs.
func compareReleases(t *testing.T, tmp string, outs [2]string) {
	a, b := readSums(t, outs[0]), readSums(t, outs[1])
	var pa, pb []string
	for p := range a {
		if !strings.HasPrefix(p, "rpm/repodata/") {
			pa = append(pa, p)
		}
	}
	for p := range b {
		if !strings.HasPrefix(p, "rpm/repodata/") {
			pb = append(pb, p)
		}
	}
	sort.Strings(pa)
	sort.Strings(pb)
	require.Equal(t, pa, pb, "the two releases have the same files")
	compared := 0
	for _, p := range pa {
		x, y := filepath.Join(outs[0], p), filepath.Join(outs[1], p)
		switch {
		case strings.HasSuffix(p, ".rpm"):
			x, y = delsign(t, tmp, x, "a"), delsign(t, tmp, y, "b")
		case signedOrDated.MatchString(p):
			continue
		}
		if sum, same := sameFile(t, x, y); same {
			t.Logf("identical %s  %s", sum, p) // the evidence, listed
		} else {
			t.Errorf("%s differs between the two builds%s", p, diffoscope(x, y))
		}
		compared++
		if strings.HasSuffix(p, ".deb") {
			compared += compareBinaries(t, tmp, x, y)
		}
	}
	t.Logf("%d artifacts byte-identical across the two builds", compared)
}

// delsign copies an rpm and deletes its signature (rpmsign --delsign): what is left
// is what was signed, the header and payload as scripts/packages made them.
func delsign(t *testing.T, tmp, rpm, side string) string {
	dir := filepath.Join(tmp, "delsign-"+side)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	dst := filepath.Join(dir, filepath.Base(rpm))
	require.NoError(t, copyFile(rpm, dst))
	b, err := exec.Command("rpmsign", "--delsign", dst).CombinedOutput()
	require.NoError(t, err, "rpmsign --delsign: %s", b)
	return dst
}

// compareBinaries extracts two debs and compares the programs in /usr/bin.
func compareBinaries(t *testing.T, tmp, x, y string) int {
	n := 0
	dirs := [2]string{}
	for i, deb := range []string{x, y} {
		dirs[i] = filepath.Join(tmp, "deb-"+filepath.Base(deb)+"-"+string(rune('a'+i)))
		b, err := exec.Command("dpkg-deb", "-x", deb, dirs[i]).CombinedOutput()
		require.NoError(t, err, "%s", b)
	}
	for _, name := range []string{"queen", "queen-proxy", "queenctl"} {
		p, q := filepath.Join(dirs[0], "usr/bin", name), filepath.Join(dirs[1], "usr/bin", name)
		if sum, same := sameFile(t, p, q); same {
			t.Logf("identical %s  %s:/usr/bin/%s", sum, filepath.Base(x), name)
		} else {
			t.Errorf("/usr/bin/%s in %s differs between the two builds%s", name, filepath.Base(x), diffoscope(p, q))
		}
		n++
	}
	return n
}

// sameFile reports whether x and y have the same bytes, and x's sha256.
func sameFile(t *testing.T, x, y string) (string, bool) {
	sx, err := fileSHA256(x)
	require.NoError(t, err)
	sy, err := fileSHA256(y)
	require.NoError(t, err)
	return sx, sx == sy
}

// diffoscope says where two files differ (its first 150 lines), or why it cannot.
func diffoscope(x, y string) string {
	if _, err := exec.LookPath("diffoscope"); err != nil {
		return " (diffoscope is not installed: apt-get install diffoscope-minimal)"
	}
	b, _ := exec.Command("diffoscope", "--no-progress", x, y).CombinedOutput()
	lines := strings.Split(string(b), "\n")
	if len(lines) > 150 {
		lines = append(lines[:150], "… (cut)")
	}
	return ":\n" + strings.Join(lines, "\n")
}

// noBuildPathOrHost: neither the clone's directory nor this host's name appears in
// the release's files or in the binaries and files inside its debs.
func noBuildPathOrHost(t *testing.T, tmp, out, clone string) {
	host, _ := os.Hostname()
	needles := [][]byte{[]byte(clone), []byte(tmp)}
	if len(host) >= 6 && host != "localhost" {
		needles = append(needles, []byte(host))
	}
	extracted := filepath.Join(tmp, "extracted")
	require.NoError(t, os.MkdirAll(extracted, 0o755))
	debs, _ := filepath.Glob(filepath.Join(out, "apt/pool/main/q/queen/*.deb"))
	for _, deb := range debs {
		b, err := exec.Command("dpkg-deb", "-R", deb, filepath.Join(extracted, filepath.Base(deb))).CombinedOutput()
		require.NoError(t, err, "%s", b)
	}
	checked := 0
	for _, root := range []string{out, extracted} {
		require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, n := range needles {
				require.False(t, bytes.Contains(b, n), "%s holds %q", p, n)
			}
			checked++
			return nil
		}))
	}
	rpms, _ := filepath.Glob(filepath.Join(out, "rpm/*.rpm"))
	for _, p := range rpms {
		b, err := exec.Command("rpm", "-qp", "--nosignature", "--qf", "%{BUILDHOST}", p).Output()
		require.NoError(t, err)
		require.Equal(t, "reproducible", string(b), "the rpm's build host is fixed")
	}
	t.Logf("%d files hold neither the build path nor the host name", checked)
}

func gitRun(t *testing.T, dir string, args ...string) { gitOut(t, dir, args...) }

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "git %v: %s", args, &stderr)
	return string(out)
}
