#!/usr/bin/env bash
# bench-alternate.sh: this tree's broker against an earlier build's, alternated on one
# cluster (the one in QUEEN_TEST_DATABASE_URL; make bench-alternate runs it under
# scripts/pgtest.sh, durable profile). BASE is a git revision (default 48feb17, the
# build of the side-by-side run with the original broker); it is built in a temporary
# worktree. Each of ROUNDS rounds (default 3) runs queen-bench's CASES against BASE's
# broker, then against this tree's (bin/queen, from make build), for DURATION each; a
# run that fails is run once more. Prints each case's runs for both builds, their
# medians and the ratio of the medians, and the host's steal per run. Rates of one
# build move by a tenth or more between runs on a shared machine: alternating the two
# builds on one cluster is how docs/benchmarks.md compares builds.
set -euo pipefail

: "${QUEEN_TEST_DATABASE_URL:?run under scripts/pgtest.sh run (make bench-alternate)}"
BASE=${BASE:-48feb17}
ROUNDS=${ROUNDS:-3}
CASES=${CASES:-push_b1,push_b10,push_b100,push_b10_p10000,mixed_b10_p100,mixed_b10_p10000}
DURATION=${DURATION:-6s}
work=$(mktemp -d)
cleanup() {
	git worktree remove --force "$work/base" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "bench-alternate: building $BASE" >&2
git worktree add --detach "$work/base" "$BASE" >/dev/null
(cd "$work/base" && go build -o "$work/queen-base" ./cmd/queen)
cp bin/queen "$work/queen-this"

# run BUILD ROUND: one queen-bench run, its table in $work/BUILD-ROUND.txt.
run() {
	local out="$work/$1-$2"
	for attempt in 1 2; do
		if bin/queen-bench -queen "$work/queen-$1" -only "$CASES" -duration "$DURATION" >"$out.txt" 2>"$out.log"; then
			return 0
		fi
		echo "bench-alternate: round $2, $1: attempt $attempt failed:" >&2
		tail -5 "$out.log" >&2
	done
	return 1
}
for r in $(seq "$ROUNDS"); do
	for b in base this; do
		echo "bench-alternate: round $r of $ROUNDS: $b" >&2
		run "$b" "$r"
	done
done

# values BUILD NAME: the NAME row's value of each of BUILD's runs, one per line.
values() { for r in $(seq "$ROUNDS"); do awk -v n="$2" '$1 == n { print $2 }' "$work/$1-$r.txt"; done; }
# oneline: the lines of stdin joined by spaces.
oneline() { paste -sd ' ' -; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
echo "# $BASE against this tree ($(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ', modified')): $ROUNDS rounds of $DURATION windows"
printf '%-20s %-30s %-30s %s\n' case "$BASE" "this tree" "ratio of medians"
IFS=, read -ra cases <<<"$CASES"
for c in "${cases[@]}"; do
	b=$(values base "$c")
	t=$(values this "$c")
	mb=$(median <<<"$b")
	mt=$(median <<<"$t")
	ratio=$(awk -v b="$mb" -v t="$mt" 'BEGIN { if (b > 0) printf "%.2f", t / b; else print "-" }')
	printf '%-20s %-30s %-30s %s\n' "$c" "$(oneline <<<"$b")" "$(oneline <<<"$t")" "$ratio"
done
printf '%-20s %-30s %-30s\n' host_steal_pct "$(values base host_steal_pct | oneline)" "$(values this host_steal_pct | oneline)"
