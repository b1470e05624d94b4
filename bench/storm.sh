#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A simulated logon storm: STORM_N logins arrive at once (pamtester under pam_wrapper, against
# a private redis-server on a Unix socket), and each admitted login runs a "heavy start-up" of
# fixed work (CPU, then a file written with fsync) before it counts as done. One run compares
# no gate, a short and a long fixed interval, and pressure= with the short interval, sampling
# /proc/pressure/cpu meanwhile. Writes its raw results into RAWDIR/storm/ (bench/measure.sh
# calls it); bench/storm-report.sh renders its section of BENCHMARKS.md from them. Nothing here
# asserts a time.
#
#   bash bench/storm.sh RAWDIR     (after make)
set -u
. "$(dirname "$0")/../tests/helpers/lib.sh"

[ $# -eq 1 ] || { echo "usage: bench/storm.sh RAWDIR" >&2; exit 2; }
OUT=$1/storm
# QUICK=1 (make bench QUICK=1): a smaller storm, a shorter rest before each, and a pressure
# hold bounded by a shorter max_wait (on a machine loaded by others, it holds till then).
if [ "${QUICK:-0}" = 1 ]; then
	STORM_N=${STORM_N:-4} REST=2 MAX_WAIT=20s
else
	STORM_N=${STORM_N:-20} REST=5 MAX_WAIT=10m
fi
SHORT=${STORM_SHORT:-0.5s}
LONG=${STORM_LONG:-2.5s}
LIMIT=${STORM_LIMIT:-cpu:50}
say() { echo "storm: $*" >&2; }

if [ ! -r /proc/pressure/cpu ]; then
	say "skipped: no /proc/pressure/cpu (a kernel without PSI)"
	exit 0
fi
mkdir -p "$OUT"
start_redis storm || exit 1

# The start-up: fixed work, so that contention shows as a longer start-up. WORK awk iterations
# are calibrated to about 1.5 s of one CPU on this machine when it is otherwise idle-ish.
t=$(date +%s%N)
awk 'BEGIN { for (i = 0; i < 2000000; i++) s += i * i }'
per_m=$((($(date +%s%N) - t) / 2)) # ns per million iterations
WORK=$((1500000000 / per_m * 1000000))
cat > "$TMP/startup.sh" <<-EOS
	printf '%s admit %s\n' "\$(date +%s%N)" "\$PAM_USER" >> "\$1"
	awk 'BEGIN { for (i = 0; i < $WORK; i++) s += i * i }'
	dd if=/dev/zero of="\$1.\$PAM_USER" bs=1M count=16 conv=fsync status=none
	rm -f "\$1.\$PAM_USER"
	printf '%s done %s\n' "\$(date +%s%N)" "\$PAM_USER" >> "\$1"
EOS

# sampler FILE: "ns avg10 total" of cpu's some line every 250 ms, until killed.
sampler() {
	while :; do
		printf '%s %s\n' "$(date +%s%N)" "$(sed -n 's/^some avg10=\([0-9.]*\) .* total=\([0-9]*\)$/\1 \2/p' /proc/pressure/cpu)" >> "$1"
		sleep 0.25
	done
}

VARIANTS="none short long pressure"
printf '%s\n' "STORM_N=$STORM_N" "REST=$REST" "MAX_WAIT=$MAX_WAIT" "SHORT=$SHORT" "LONG=$LONG" "LIMIT=$LIMIT" "NPROC=$(nproc)" \
	"VARIANTS=$VARIANTS" > "$OUT/params"
for v in $VARIANTS; do
	case $v in
	none) gate="" label="no gate" ;;
	short) gate="interval=$SHORT" label="fixed interval=$SHORT" ;;
	long) gate="interval=$LONG" label="fixed interval=$LONG" ;;
	pressure) gate="interval=$SHORT pressure=$LIMIT" label="pressure=$LIMIT interval=$SHORT" ;;
	esac
	line=""
	[ -n "$gate" ] && line="auth requisite @M url=unix://$TMP/storm.sock key=storm:$v state_dir=$TMP/st max_wait=$MAX_WAIT countdown=0 $gate"
	service "storm-$v" ${line:+"$line"} \
		"auth optional @P/pam_exec.so quiet /bin/sh $TMP/startup.sh $TMP/$v.events" \
		"auth required @P/pam_permit.so"
	say "$label: $STORM_N logins at once"
	sleep "$REST" # let the previous variant's pressure die down
	sampler "$TMP/$v.psi" &
	spid=$!
	PIDS="$PIDS $spid"
	t0=$(date +%s%N)
	echo "$t0" > "$TMP/$v.t0"
	logins "s$v" "storm-$v" "$STORM_N"
	t_end=$(date +%s%N)
	kill "$spid"
	wait "$spid" 2> /dev/null
	# The events and samples, in seconds since the logins arrived; the end of the storm.
	awk -v t0="$t0" '{ printf "%s %.3f %s\n", $2, ($1 - t0) / 1e9, $3 }' "$TMP/$v.events" \
		> "$OUT/$v.ev"
	awk -v t0="$t0" -v t1="$t_end" '$1 <= t1 { printf "%.3f %s %s\n", ($1 - t0) / 1e9, $2, $3 }' \
		"$TMP/$v.psi" > "$OUT/$v.ps"
	cat "$TMP"/s"$v"*.err 2> /dev/null | grep -c 'held: ' > "$OUT/$v.held"
done
stop_redis storm
say "done: $OUT"
