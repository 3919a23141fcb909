#!/usr/bin/env bash
# repo.sh: install from the signed repositories, as a user does, in a disposable
# systemd. Run inside the box by scripts/systemd-test.sh with /mnt/share/repo-v1 and
# /mnt/share/repo-v2 (the layout of `make release`, see repo-build.sh), the tampered
# copies /mnt/share/repo-bad-* and /mnt/share/versions.
#
# apt: the repository served over HTTP on loopback (python3 -m http.server, a
# transient unit), one sources entry `signed-by=` the release keyring and no
# trusted=yes, apt reading no other source → apt-get update, apt-get install queen →
# queen.socket listening, a push and a pop served. Then a Release whose signed text
# was changed by one byte, and a Packages file that no longer matches the signed
# Release's hash: apt-get update refuses each (the error says why), and apt-get
# upgrade installs nothing new. Last, an honest upgrade from the repository.
# dnf: a .repo file with gpgcheck=1 and repo_gpgcheck=1 and gpgkey= the armored key;
# dnf verifies repomd.xml.asc and the rpm's header signature and installs queen into
# the box's rpm database (a stub package declares the dependencies Debian's packages
# fill, as the rpm database knows none of them); then a metadata file changed by one
# byte, and an rpm changed by one byte, are refused.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC1091
. "$SHARE/versions"
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/repo-lib.sh"

no_policy_rc_d
pg_setup
log "PostgreSQL ready ($PG_UNIT)"
repo_serve v1
check "repository served on loopback" curl -fs -o /dev/null "$REPO_URL/apt/dists/stable/InRelease"
apt_setup v1
expect_eq "sources entry: signed-by, no trusted=yes" \
	"deb [signed-by=/usr/share/keyrings/queen-archive-keyring.gpg] $REPO_URL/apt stable main" "$(cat "$APT_SOURCES")"

# --- apt: install from the signed repository -----------------------------------------
out=$(apt_get update 2>&1)
rc=$?
expect_eq "apt-get update (signature checked)" 0 "$rc"
if grep -Eq '^(W|E):' <<<"$out"; then fail "apt-get update without warnings" "$out"; else pass "apt-get update without warnings"; fi
expect_match "apt sees queen $V1-1 from the repository" "Candidate: ${V1//+/\\+}-1" "$(apt_cache policy queen 2>&1)"
check "apt-get install -y queen" apt_get install -y queen
expect_eq "installed version" "$V1-1" "$(dpkg-query -W -f='${Version}' queen 2>&1)"
expect_eq "queen.socket enabled and listening" "enabled active" \
	"$(systemctl is-enabled queen.socket) $(systemctl is-active queen.socket)"
queen_env
serves apt "apt-installed queen"

# --- apt: tampered metadata is refused ------------------------------------------------
repo_serve bad-inrelease
out=$(apt_get update 2>&1)
rc=$?
log "apt-get update against a changed InRelease exited $rc"
expect_match "changed InRelease: apt-get update says the signature is bad" \
	'BADSIG|signatures were invalid|not signed|NO_PUBKEY' "$out"
# With index files from an earlier update apt keeps them and warns (exit 0); it
# would fail without any.
expect_match "changed InRelease: apt-get update refuses the new index" \
	'repository is not updated and the previous index files will be used|is not signed' "$out"
out=$(apt_get upgrade -y 2>&1)
expect_eq "changed InRelease: nothing new installed" "$V1-1" "$(dpkg-query -W -f='${Version}' queen 2>&1)"
if apt_cache policy queen 2>&1 | grep -F "$V2" >/dev/null; then
	fail "changed InRelease: apt does not offer $V2" "$(apt_cache policy queen 2>&1)"
else
	pass "changed InRelease: apt does not offer $V2"
fi

repo_serve bad-packages
out=$(apt_get update 2>&1)
rc=$?
log "apt-get update against a changed Packages exited $rc"
expect_match "changed Packages: apt-get update says the hash does not match" 'Hash Sum mismatch|File has unexpected size' "$out"
expect_match "changed Packages: apt-get update fails" '^E: ' "$out"
apt_get upgrade -y >/dev/null 2>&1
expect_eq "changed Packages: nothing new installed" "$V1-1" "$(dpkg-query -W -f='${Version}' queen 2>&1)"

repo_serve v2
check "apt-get update against the honest $V2 repository" apt_get update
check "apt-get upgrade -y" apt_get upgrade -y
expect_eq "upgraded from the repository" "$V2-1" "$(dpkg-query -W -f='${Version}' queen 2>&1)"
read -r code body <<<"$(http GET /health)"
expect_match "serving version $V2" "\"version\":\"${V2//+/\\+}\"" "$body"

# --- dnf: install from the signed repository -----------------------------------------
if command -v dnf >/dev/null 2>&1 && command -v rpmbuild >/dev/null 2>&1; then
	check "apt-get purge queen (the rpm takes over)" apt_get purge -y queen
	repo_serve v1
	dnf_setup
	check "stub package for the dependencies Debian's packages provide" rpm -i --nodeps "$RPM_STUB"
	out=$(dnf_ install -y queen 2>&1)
	rc=$?
	expect_eq "dnf install queen (gpgcheck=1, repo_gpgcheck=1)" 0 "$rc"
	[ "$rc" = 0 ] || printf '%s\n' "$out" | tail -20 | sed 's/^/       | /'
	expect_match "dnf imported the repository key" 'Importing GPG key|imported successfully' "$out"
	expect_eq "rpm -q queen" "queen-$V1-1.x86_64" "$(rpm -q queen 2>/dev/null)"
	expect_match "rpm -q: the installed header signature is the release key's" "Key ID $REPO_KEYID" \
		"$(rpm -q --qf '%{RSAHEADER:pgpsig}\n' queen 2>/dev/null)"
	expect_eq "queen.socket enabled and listening (rpm scriptlets)" "enabled active" \
		"$(systemctl is-enabled queen.socket) $(systemctl is-active queen.socket)"
	queen_env
	serves dnf "dnf-installed queen"

	repo_serve bad-repomd
	out=$(dnf_ upgrade -y --refresh queen 2>&1)
	rc=$?
	expect_match "changed repomd.xml: dnf says the signature is bad" 'repomd.xml GPG signature verification error|Bad GPG signature|BAD signature' "$out"
	expect_eq "changed repomd.xml: nothing new installed" "queen-$V1-1.x86_64" "$(rpm -q queen 2>/dev/null)"

	repo_serve bad-rpm
	out=$(dnf_ upgrade -y --refresh queen 2>&1)
	rc=$?
	log "dnf upgrade against a changed rpm exited $rc"
	expect_match "changed rpm: dnf refuses it" 'checksum doesn.t match|Checksum mismatch|GPG check FAILED|signature.*(BAD|bad)|Downloading successful, but checksum' "$out"
	expect_eq "changed rpm: nothing new installed" "queen-$V1-1.x86_64" "$(rpm -q queen 2>/dev/null)"
	expect_match "changed rpm: rpmkeys -K says it is bad" 'BAD|NOT OK|DIGESTS SIGNATURES NOT OK' \
		"$(rpmkeys -K "$SHARE/repo-bad-rpm/rpm/queen-$V2-1.x86_64.rpm" 2>&1)"
	check "rpm -e queen" rpm -e queen
else
	fail "dnf and rpmbuild installed in the box (scripts/systemd-test.sh installs them)"
fi

finish
