# shellcheck shell=bash
# Helpers for the box scenarios that install queen from its repositories (repo.sh,
# upgrade.sh). Sourced after lib.sh, inside the box. $SHARE/repo-NAME are
# repositories in the layout of `make release` (see repo-build.sh).
#
# apt and dnf read only the repository on loopback: apt a private sources file
# (Dir::Etc::sourcelist, no sourceparts), dnf a private repos directory. The box has
# no network but its own loopback anyway.

REPO_URL=http://127.0.0.1:8080
APT_SOURCES=/etc/apt/queen-test.list
APT_KEYRING=/usr/share/keyrings/queen-archive-keyring.gpg
DNF_REPOS=/etc/queen-test.repos.d
# shellcheck disable=SC2034 # used by repo.sh
RPM_STUB=$SHARE/queen-test-deps.noarch.rpm

# repo_serve NAME: serve $SHARE/repo-NAME at $REPO_URL (a transient unit running
# python3 -m http.server, started on first use; later calls switch the directory).
# Every repository is also served at its own URL, $REPO_URL/releases/NAME/, as a
# release's repository kept for pinning and downgrades.
repo_serve() {
	local r
	mkdir -p /srv/queen-repo/releases
	for r in "$SHARE"/repo-*; do ln -sfn "$r" "/srv/queen-repo/releases/${r##*/repo-}"; done
	ln -sfn "$SHARE/repo-$1/apt" /srv/queen-repo/apt
	ln -sfn "$SHARE/repo-$1/rpm" /srv/queen-repo/rpm
	ln -sfn "$SHARE/repo-$1/queen-archive-keyring.asc" /srv/queen-repo/queen-archive-keyring.asc
	if ! systemctl is-active --quiet queen-test-repo.service; then
		systemd-run --quiet --unit=queen-test-repo --property=WorkingDirectory=/srv/queen-repo \
			/usr/bin/python3 -m http.server --bind 127.0.0.1 8080 --directory /srv/queen-repo
		wait_until 20 curl -fs -o /dev/null "$REPO_URL/queen-archive-keyring.asc" ||
			fail "repository server on $REPO_URL" "$(journalctl -u queen-test-repo -o cat --no-pager | tail -20)"
	fi
	log "repository: $1"
}

# apt_setup NAME [URL]: the keyring of repo-NAME (what an operator downloads) and
# the one sources entry, signed-by that keyring, for the repository at URL (default
# $REPO_URL/apt).
apt_setup() {
	install -m 0644 "$SHARE/repo-$1/queen-archive-keyring.gpg" "$APT_KEYRING"
	echo "deb [signed-by=$APT_KEYRING] ${2:-$REPO_URL/apt} stable main" >"$APT_SOURCES"
}

# apt_get ARGS...: apt-get reading only $APT_SOURCES, non-interactive, keeping an
# edited conffile.
apt_get() {
	DEBIAN_FRONTEND=noninteractive apt-get -q -o Dir::Etc::sourcelist="$APT_SOURCES" -o Dir::Etc::sourceparts=- \
		-o APT::Get::List-Cleanup=0 -o Dpkg::Options::=--force-confold -o DPkg::Lock::Timeout=60 "$@"
}

# apt_cache ARGS...: apt-cache on the same sources.
apt_cache() { apt-cache -o Dir::Etc::sourcelist="$APT_SOURCES" -o Dir::Etc::sourceparts=- "$@"; }

# dnf_setup: a .repo file as an operator writes it: both signature checks on, the
# armored key by URL.
dnf_setup() {
	mkdir -p "$DNF_REPOS"
	cat >"$DNF_REPOS/queen.repo" <<REPO
[queen]
name=queen
baseurl=$REPO_URL/rpm
enabled=1
gpgcheck=1
repo_gpgcheck=1
gpgkey=$REPO_URL/queen-archive-keyring.asc
REPO
	# shellcheck disable=SC2034 # used by repo.sh
	REPO_KEYID=$(gpg --batch --with-colons --show-keys "$SHARE/repo-v1/queen-archive-keyring.asc" 2>/dev/null |
		awk -F: '$1 == "pub" {print tolower($5); exit}')
}

# dnf_ ARGS...: dnf on the box's rpm database, reading only $DNF_REPOS, metadata
# fetched anew each time (the repository behind the URL changes between calls).
dnf_() {
	dnf -q -y --releasever=1 --setopt=reposdir="$DNF_REPOS" --setopt=metadata_expire=0 clean all >/dev/null 2>&1
	dnf --releasever=1 --setopt=reposdir="$DNF_REPOS" --setopt=metadata_expire=0 "$@"
}

# serves FROM LABEL: a push to queue repo through queen.socket is answered 201 and
# the next pop returns it (FROM tells the two installs' messages apart).
serves() {
	local code body
	read -r code body <<<"$(http POST /api/v1/push '{"items":[{"queue":"repo","payload":{"from":"'"$1"'"}}]}')"
	expect_eq "$2: push 201" 201 "$code"
	read -r code body <<<"$(http GET '/api/v1/pop/queue/repo?autoAck=true')"
	expect_match "$2: pop returns it" "\"from\":\"$1\"" "$body"
}
