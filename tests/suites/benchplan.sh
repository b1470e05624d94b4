#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# make bench from a tree without the git history (a release tarball): it runs every measurement
# and leaves out only the comparisons with older code that come from git, saying which and why
# (bench/lib.sh, past). Measures nothing: the run's own decisions, through make bench-plan
# (bench/run.sh plan) and past itself, in copies of this tree's files: one with no .git at all,
# one a shallow clone, and one with an older module built by an earlier run. A few seconds.
set -u
. "$(dirname "$0")/../helpers/lib.sh"
same_when_sanitized "make bench's plan"

cd "$TOP" || exit 1
COMPARISONS="m2-store m3-before decide-old tls-old"

# tree_copy DIR: this tree's files, as a release tarball has them (no .git, no build/).
tree_copy() {
	mkdir -p "$1"
	if git rev-parse --git-dir > /dev/null 2>&1; then
		git ls-files -z --cached --others --exclude-standard |
			tar -c --null -T - --ignore-failed-read 2> /dev/null | tar -x -C "$1"
	else
		tar -c --exclude=./build --exclude=./.git . | tar -x -C "$1"
	fi
}
# plan DIR [VAR=VALUE...]: make bench-plan there, its output in $TMP/plan.out; its exit status.
plan() {
	local dir=$1
	shift
	env "$@" make --no-print-directory -C "$dir" bench-plan > "$TMP/plan.out" 2>&1
}
# past_list_rev NAME: that comparison's commit, from bench/lib.sh's list.
past_list_rev() { (. bench/lib.sh && past_rev "$1"); }
# planned NAME WORD: the plan's line for that comparison starts with WORD ("made" or "left out").
planned() { grep -q "^$2: $1 (" "$TMP/plan.out"; }

# A release tarball: no .git anywhere above it ($TMP is under /var/tmp).
TAR=$TMP/tarball
tree_copy "$TAR"
check "the copy has no git history" sh -c "! git -C '$TAR' rev-parse --git-dir > /dev/null 2>&1"
plan "$TAR"
rc=$?
check "make bench-plan without the history exits 0 (rc $rc)" [ "$rc" = 0 ]
check "... says every measurement runs" grep -q 'runs every measurement, 1 to 13' "$TMP/plan.out"
for name in $COMPARISONS; do
	rev=$(past_list_rev "$name")
	check "... leaves out $name, for want of the history that holds $rev" \
		sh -c "grep '^left out: $name (' '$TMP/plan.out' | grep -q 'no git history.*commit $rev'"
done
check "... wrote nothing into the tree" [ ! -e "$TAR/build" ]

# What the run does with the same decision: past records it for the report, and says it.
mkdir "$TMP/raw"
# shellcheck disable=SC2016 # expanded by the inner shell
(cd "$TAR" && TOP=$TAR RAW=$TMP/raw bash -c '. bench/lib.sh
	for n in $1; do past "$n" && echo "$n" >> "$RAW/made"; done' sh "$COMPARISONS") 2> "$TMP/past.err"
got=$(cut -f1 "$TMP/raw/left-out" 2> /dev/null | paste -sd ' ')
check "past leaves each one out, in left-out for the report ($got)" \
	[ ! -e "$TMP/raw/made" -a "$got" = "$COMPARISONS" ]
check "... and says so, with why ($(head -n 1 "$TMP/past.err"))" \
	[ "$(grep -c '^bench: left out: measurement [0-9]*: .*: this tree has no git history' "$TMP/past.err")" = 4 ]

# A module an earlier run built serves without the history: that comparison is made.
mkdir -p "$TAR/build/bench/module-20bae10"
: > "$TAR/build/bench/module-20bae10/pam_flowslot.so"
plan "$TAR"
check "an older module already built is used without the history (m2-store made, tls-old left out)" \
	sh -c "grep -q '^made: m2-store (' '$TMP/plan.out' && grep -q '^left out: tls-old (' '$TMP/plan.out'"

if git rev-parse --git-dir > /dev/null 2>&1 && git cat-file -e '20bae10^{commit}' 2> /dev/null; then
	# This checkout, with its history: every comparison is made, and QUICK=1 leaves out the
	# older script's profile, as it always did.
	plan "$TOP"
	made=0
	for name in $COMPARISONS; do planned "$name" made && made=$((made + 1)); done
	check "with the history, all four comparisons are made ($made)" [ "$made" = 4 ]
	plan "$TOP" QUICK=1
	check "... QUICK=1 leaves out the older script's profile, and says why" \
		sh -c "grep '^left out: decide-old (' '$TMP/plan.out' | grep -q 'QUICK=1'"

	# A shallow clone has a .git but not the commits: each one is named as missing from it.
	git clone -q --depth 1 "file://$(git rev-parse --show-toplevel)" "$TMP/shallow" 2> /dev/null
	tree_copy "$TMP/shallow"
	plan "$TMP/shallow"
	rc=$?
	missing=0
	for name in $COMPARISONS; do
		grep "^left out: $name (" "$TMP/plan.out" | grep -q "not in this clone's history" &&
			missing=$((missing + 1))
	done
	check "a shallow clone: exit 0 (rc $rc), all four left out as not in its history ($missing)" \
		[ "$rc" = 0 -a "$missing" = 4 ]
else
	echo "# skipped the checks with the history: this tree has none"
fi

finish
