package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// signer signs with the release key inside a private, temporary GnuPG home: the
// key from $QUEEN_RELEASE_KEY imported there, or a copy of $QUEEN_RELEASE_GNUPGHOME.
// The user's own ~/.gnupg is never read. close kills the home's gpg-agent and wipes
// the home.
type signer struct {
	home     string // the private GNUPGHOME
	fpr      string // the signing key's fingerprint
	passFile string // the passphrase, in a 0600 file of the home ("" for none)
}

// keySource is where the release key comes from, as the environment gives it.
type keySource struct {
	keyFile    string // QUEEN_RELEASE_KEY: an armored (or binary) secret key
	passphrase string // QUEEN_RELEASE_KEY_PASSPHRASE
	gnupgHome  string // QUEEN_RELEASE_GNUPGHOME: an existing GnuPG home
	keyID      string // QUEEN_RELEASE_KEY_ID: which key of the home (or of the file)
}

func (k keySource) empty() bool { return k.keyFile == "" && k.gnupgHome == "" }

// openSigner makes the private home and puts the release key in it.
func openSigner(k keySource) (*signer, error) {
	if k.keyFile != "" && k.gnupgHome != "" {
		return nil, errors.New("set QUEEN_RELEASE_KEY or QUEEN_RELEASE_GNUPGHOME, not both")
	}
	if _, err := exec.LookPath("gpg"); err != nil {
		return nil, errors.New("gpg is not installed (Debian: apt-get install gnupg; make release installs it as root)")
	}
	// A short path: gpg-agent's socket lives in the home and socket paths are short.
	home, err := os.MkdirTemp("/tmp", "queen-release-gnupg.")
	if err != nil {
		return nil, err
	}
	s := &signer{home: home}
	if err := s.load(k); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *signer) load(k keySource) error {
	if k.passphrase != "" {
		s.passFile = filepath.Join(s.home, "passphrase")
		if err := os.WriteFile(s.passFile, []byte(k.passphrase), 0o600); err != nil {
			return err
		}
	}
	if k.keyFile != "" {
		if _, err := s.gpg(nil, "--import", k.keyFile); err != nil {
			return fmt.Errorf("QUEEN_RELEASE_KEY %s: %w", k.keyFile, err)
		}
	} else if err := copyGnuPGHome(k.gnupgHome, s.home); err != nil {
		return fmt.Errorf("QUEEN_RELEASE_GNUPGHOME %s: %w", k.gnupgHome, err)
	}
	args := []string{"--list-secret-keys", "--with-colons"}
	if k.keyID != "" {
		args = append(args, k.keyID)
	}
	out, err := s.gpg(nil, args...)
	if err != nil {
		return fmt.Errorf("no secret key %q in the release key: %w", k.keyID, err)
	}
	fprs := secretFingerprints(string(out))
	switch {
	case len(fprs) == 0:
		return errors.New("the release key holds no secret key: sign with a secret key (gpg --export-secret-keys --armor)")
	case len(fprs) > 1:
		return fmt.Errorf("several secret keys (%s): pick one with QUEEN_RELEASE_KEY_ID", strings.Join(fprs, ", "))
	}
	s.fpr = fprs[0]
	// Fail now, not after the build, when the passphrase is wrong or missing.
	probe := filepath.Join(s.home, "probe")
	if err := os.WriteFile(probe, []byte("probe\n"), 0o600); err != nil {
		return err
	}
	if err := s.detachSign(probe, probe+".asc"); err != nil {
		return fmt.Errorf("cannot sign with key %s (passphrase in QUEEN_RELEASE_KEY_PASSPHRASE?): %w", s.fpr, err)
	}
	return nil
}

// secretFingerprints reads the fingerprints of the primary secret keys from
// `gpg --list-secret-keys --with-colons`: each "sec" record's first "fpr" record.
func secretFingerprints(colons string) []string {
	var fprs []string
	wantFpr := false
	for line := range strings.SplitSeq(colons, "\n") {
		f := strings.Split(line, ":")
		switch {
		case f[0] == "sec":
			wantFpr = true
		case f[0] == "fpr" && wantFpr && len(f) > 9:
			fprs = append(fprs, f[9])
			wantFpr = false
		case f[0] == "ssb":
			wantFpr = false
		}
	}
	return fprs
}

// copyGnuPGHome copies a GnuPG home's key material into dst (its keyrings, trust
// database and private keys), leaving out sockets, lock files and gpg-agent.conf (a
// pinentry setting there would break the batch signing).
func copyGnuPGHome(src, dst string) error {
	if st, err := os.Stat(src); err != nil || !st.IsDir() {
		return fmt.Errorf("not a directory: %w", err)
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		name := d.Name()
		switch {
		case rel == ".":
			return nil
		case d.IsDir():
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		case !d.Type().IsRegular(), strings.HasPrefix(name, "S."), strings.HasPrefix(name, ".#lk"),
			strings.HasSuffix(name, ".lock"), name == "gpg-agent.conf", name == "random_seed":
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
}

// gpg runs gpg in the private home, in batch mode, with the passphrase (if any)
// given by loopback; stdin feeds it when not nil.
func (s *signer) gpg(stdin []byte, args ...string) ([]byte, error) {
	base := []string{"--homedir", s.home, "--batch", "--no-tty", "--pinentry-mode", "loopback"}
	if s.passFile != "" {
		base = append(base, "--passphrase-file", s.passFile)
	}
	cmd := exec.Command("gpg", append(base, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("gpg %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// signArgs are the options of every signature: the release key, SHA-512 (apt
// refuses SHA-1).
func (s *signer) signArgs() []string {
	return []string{"--local-user", s.fpr + "!", "--digest-algo", "SHA512", "--yes"}
}

// clearsign writes in's cleartext signature to out (apt's InRelease).
func (s *signer) clearsign(in, out string) error {
	_, err := s.gpg(nil, append(s.signArgs(), "--output", out, "--clearsign", in)...)
	return err
}

// detachSign writes in's armored detached signature to out.
func (s *signer) detachSign(in, out string) error {
	_, err := s.gpg(nil, append(s.signArgs(), "--armor", "--output", out, "--detach-sign", in)...)
	return err
}

// exportPublic writes the public key alone (no other signatures on it), binary for
// apt's signed-by= or armored for dnf's gpgkey=.
func (s *signer) exportPublic(out string, armor bool) error {
	args := []string{"--export-options", "export-minimal", "--output", out}
	if armor {
		args = append(args, "--armor")
	}
	_, err := s.gpg(nil, append(args, "--yes", "--export", s.fpr)...)
	return err
}

// rpmsign puts the release key's OpenPGP signature into an rpm's header (rpmsign
// --addsign, which runs gpg in the private home).
func (s *signer) rpmsign(path string) error {
	extra := "--batch --no-tty --pinentry-mode loopback"
	if s.passFile != "" {
		extra += " --passphrase-file " + s.passFile
	}
	gpg, err := exec.LookPath("gpg")
	if err != nil {
		return err
	}
	cmd := exec.Command("rpmsign", "--addsign",
		"--define", "__gpg "+gpg,
		"--define", "_gpg_path "+s.home,
		"--define", "_gpg_name "+s.fpr,
		"--define", "_gpg_digest_algo sha256",
		"--define", "_gpg_sign_cmd_extra_args "+extra,
		path)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("rpmsign --addsign %s: %w: %s", filepath.Base(path), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// close stops the private home's gpg-agent and deletes the home, key and
// passphrase with it.
func (s *signer) close() {
	if s == nil {
		return
	}
	_ = exec.Command("gpgconf", "--homedir", s.home, "--kill", "all").Run()
	os.RemoveAll(s.home)
}
