#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The fault campaign (issue 19, part 3; tests/campaign/CONTRACT.md): many logins through the
# real module while a fault is injected, each recorded on one observer clock; then
# tests/campaign/check.py holds every fault's records to P1-P8 (docs/MODEL.md) within the
# bounds the fault states, and writes build/faults/REPORT.md.
#
#   bash tests/campaign/run.sh short|long [FAULT...]
#
# FAULT... defaults to every registered fault; "none", the baseline that epsilon is measured
# from, always runs first. FAULTS_OUT (default build/faults) is where the records and the report
# go; FAULTS_MODULE another build of pam_flowslot.so to hold to the same bounds (for example the
# parent of issue 18's fixes), FAULTS_BENCH a file that gets the report too (make faults:
# bench/faults.md), FLOWSLOT_KEEP=1 keeps the temporary directory.
set -u
MODE=${1:-short}
[ $# -gt 0 ] && shift
case $MODE in short | long) ;; *) echo "usage: run.sh short|long [FAULT...]" >&2; exit 2 ;; esac
LIB_TOP=$(cd "$(dirname "$0")/../.." && pwd)
LIB_TMP_NAME=flowslot-campaign
# shellcheck source=tests/helpers/lib.sh
. "$LIB_TOP/tests/helpers/lib.sh"
# shellcheck source=tests/campaign/lib.sh
. "$TOP/tests/campaign/lib.sh"
for f in "$TOP"/tests/campaign/local.sh "$TOP"/tests/campaign/ha.sh; do
	# shellcheck disable=SC1090
	[ -e "$f" ] && . "$f"
done
[ "$(id -u)" = 0 ] || skip_all "the campaign needs root (mounts, network namespaces)"
MODULE=${FAULTS_MODULE:-$MODULE}
[ -e "$MODULE" ] || { echo "no module at $MODULE: make first" >&2; exit 1; }
# Logins get a private /tmp (tests/helpers/lib.sh), in which only this checkout stays in sight: a
# module elsewhere under /tmp is out of it.
case $(cd "$(dirname "$MODULE")" && pwd -P)/ in
"$(cd "$TOP" && pwd -P)"/*) ;;
/tmp/*) echo "FAULTS_MODULE under /tmp is out of the logins' sight: put it elsewhere" >&2; exit 1 ;;
esac
OUT=${FAULTS_OUT:-$TOP/build/faults}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd -P)
# Stack lines split on blanks: the records' directory by a path without any.
ln -s "$OUT" "$TMP/out"

# The run's size: logins per fault, one every FAULT_GAP_MS, and how often the fault is injected.
if [ "$MODE" = long ]; then
	CAMPAIGN_LOGINS=60 CAMPAIGN_ROUNDS=3
else
	CAMPAIGN_LOGINS=16 CAMPAIGN_ROUNDS=1
fi
CAMPAIGN_LOGINS=${FAULTS_LOGINS:-$CAMPAIGN_LOGINS}
CAMPAIGN_ROUNDS=${FAULTS_ROUNDS:-$CAMPAIGN_ROUNDS}
# The remote hosts logins come from: addresses on loopback, each with a hang-up listener.
CAMPAIGN_RHOSTS="127.0.0.2 127.0.0.3 127.0.0.4"

# What a fault's teardown may leave behind on a failure: mounts (campaign_mount) and network
# namespaces, undone here whatever happened.
CAMPAIGN_MOUNTS=""
CAMPAIGN_NETNS=""
# shellcheck disable=SC2317 # called by the trap
campaign_cleanup() {
	local m n
	[ -n "${FAULT_DIR:-}" ] && campaign_deadline_kill > /dev/null 2>&1
	for m in $CAMPAIGN_MOUNTS; do
		umount "$m" 2> /dev/null || umount -l "$m" 2> /dev/null
	done
	for n in $CAMPAIGN_NETNS; do
		ip netns del "$n" 2> /dev/null
	done
	cleanup
}
trap campaign_cleanup EXIT

# campaign_deadline_kill: the logins still running past the run's deadline, stopped by pid, each
# recorded as hung (a P8 violation the checker counts).
campaign_deadline_kill() {
	local f id pid
	for f in "$FAULT_DIR"/l/*.pid; do
		id=${f##*/}
		id=${id%.pid}
		[ -e "$FAULT_DIR/l/$id.done" ] && continue
		pid=$(cat "$f")
		campaign_event hung "$id"
		kill -CONT "$pid" 2> /dev/null
		kill -KILL "$pid" 2> /dev/null
	done
}

# campaign_all_done: every login launched has ended.
campaign_all_done() {
	local f
	[ "$(find "$FAULT_DIR/l" -name '*.pid' | wc -l)" -ge "$FAULT_LOGINS" ] || return 1
	for f in "$FAULT_DIR"/l/*.pid; do
		[ -e "${f%.pid}.done" ] || return 1
	done
}

# campaign_run NAME: one fault, from setup to teardown, its records in $OUT/NAME. (Not "name":
# tests/helpers/lib.sh's start_redis sets that.)
campaign_run() {
	local fault=$1 fn=${1//-/_} arrivals start deadline r at desc waiters last
	desc="FAULT_DESC_$fn"
	FAULT_DIR=$OUT/$fault
	rm -rf "$FAULT_DIR"
	mkdir -p "$FAULT_DIR/l"
	: > "$FAULT_DIR/events.tsv"
	: > "$FAULT_DIR/starts"
	: > "$FAULT_DIR/admits"
	# The defaults a fault's setup may change.
	FAULT_URL="" FAULT_OPTS="" FAULT_HOSTS=local
	FAULT_LOGINS=$CAMPAIGN_LOGINS FAULT_GAP_MS=500 FAULT_ROUNDS=$CAMPAIGN_ROUNDS
	FAULT_INTERVAL_MS=1000 FAULT_BURST=1 FAULT_MAX_WAIT_MS=4000 FAULT_TIMEOUT_MS=500
	FAULT_PER_HOST=0 FAULT_RHOSTS=3 FAULT_WAITERS=2 FAULT_HOLD_MS=2000
	FAULT_STATE_DIR=$TMP/st-$fault
	FAULT_SERVICE=c-$fault
	mkdir -p "$FAULT_STATE_DIR"
	chmod 0700 "$FAULT_STATE_DIR"
	echo "# $fault: ${!desc}"
	if ! "fault_${fn}_setup"; then
		echo "setup failed" > "$FAULT_DIR/failed"
		"fault_${fn}_teardown"
		return 1
	fi
	"fault_${fn}_bounds" > "$FAULT_DIR/bounds"
	service "$FAULT_SERVICE" \
		"auth optional @P/pam_exec.so quiet /bin/sh $TREE/tests/helpers/stamp.sh $TMP/out/$fault/starts" \
		"auth requisite @M url=$FAULT_URL key=campaign interval=${FAULT_INTERVAL_MS}ms burst=$FAULT_BURST max_wait=${FAULT_MAX_WAIT_MS}ms timeout=${FAULT_TIMEOUT_MS}ms per_host=$FAULT_PER_HOST state_dir=$FAULT_STATE_DIR countdown=0 debug $FAULT_OPTS" \
		"auth optional @P/pam_exec.so quiet /bin/sh $TREE/tests/helpers/stamp.sh $TMP/out/$fault/admits" \
		"auth required @P/pam_permit.so"
	{
		echo "name=$fault"
		echo "description=${!desc}"
		echo "mode=$MODE"
		echo "url=$FAULT_URL"
		echo "options=$FAULT_OPTS"
		echo "interval_ms=$FAULT_INTERVAL_MS"
		echo "burst=$FAULT_BURST"
		echo "max_wait_ms=$FAULT_MAX_WAIT_MS"
		echo "timeout_ms=$FAULT_TIMEOUT_MS"
		echo "per_host=$FAULT_PER_HOST"
		echo "logins=$FAULT_LOGINS"
		echo "gap_ms=$FAULT_GAP_MS"
		echo "rounds=$FAULT_ROUNDS"
		echo "hold_ms=$FAULT_HOLD_MS"
		echo "hosts=$FAULT_HOSTS"
		echo "module=$MODULE"
	} > "$FAULT_DIR/meta"
	start=$(campaign_now)
	campaign_arrivals &
	arrivals=$!
	# Each round: once FAULT_WAITERS logins wait (10 s at most), at its share of the arrivals.
	for r in $(seq "$FAULT_ROUNDS"); do
		at=$((start + (r - 1) * FAULT_LOGINS * FAULT_GAP_MS * 1000 / FAULT_ROUNDS))
		while [ "$(campaign_now)" -lt "$at" ]; do sleep 0.1; done
		wait_for 10 campaign_waiting "$FAULT_WAITERS"
		# How many, and who: a fault that did not happen names the logins it met.
		waiters=$(campaign_waiters | paste -sd ' ' -)
		campaign_event waiting "$(wc -w <<< "$waiters") $waiters"
		campaign_event inject "$r"
		"fault_${fn}_inject"
		campaign_event injected "$r"
		sleep "$(awk -v ms="$FAULT_HOLD_MS" 'BEGIN { print ms / 1000 }')"
		campaign_event heal "$r"
		"fault_${fn}_heal"
		campaign_event healed "$r"
	done
	: > "$FAULT_DIR/healed" # the arrivals past FAULT_LOGINS stop (campaign_arrivals)
	# Every login ends by its arrival, max_wait and a few calls' timeouts; past a generous
	# deadline the rest are killed and counted as hung. The last arrival: the last of
	# FAULT_LOGINS, or now, should the arrivals have run on until the heal.
	last=$((start + FAULT_LOGINS * FAULT_GAP_MS * 1000))
	[ "$(campaign_now)" -le "$last" ] || last=$(campaign_now)
	deadline=$((last + (FAULT_GAP_MS + FAULT_MAX_WAIT_MS + 20 * FAULT_TIMEOUT_MS + FAULT_ROUNDS * FAULT_HOLD_MS + 30000) * 1000))
	while kill -0 "$arrivals" 2> /dev/null || ! campaign_all_done; do
		if [ "$(campaign_now)" -gt "$deadline" ]; then
			campaign_deadline_kill
			break
		fi
		sleep 0.2
	done
	wait "$arrivals"
	"fault_${fn}_teardown"
	/usr/bin/python3 "$TOP/tests/campaign/check.py" collect "$FAULT_DIR"
}

campaign_hupd_start || exit 1
faults=${*:-$CAMPAIGN_FAULTS}
# The baseline first, once.
# shellcheck disable=SC2086 # a list of names
faults="none $(printf '%s\n' $faults | grep -vx none | tr '\n' ' ')"
rm -f "$OUT/REPORT.md"
status=0
for f in $faults; do
	if ! declare -F "fault_${f//-/_}_setup" > /dev/null; then
		echo "no fault named $f (registered:$CAMPAIGN_FAULTS)" >&2
		exit 2
	fi
done
for f in $faults; do
	campaign_run "$f" || status=1
done
# shellcheck disable=SC2086
/usr/bin/python3 "$TOP/tests/campaign/check.py" report "$OUT" $faults \
	${FAULTS_BENCH:+--bench "$FAULTS_BENCH"} || status=1
exit $status
