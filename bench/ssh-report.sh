#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The section of BENCHMARKS.md on a real ssh login with and without the module, rendered from
# the raw results bench/ssh.sh wrote into RAWDIR/ssh/ alone. bench/report.sh calls it (PNG and
# LINK are taken and ignored: no picture).
#
#   bench/ssh-report.sh RAWDIR [PNG [LINK]]
# shellcheck disable=SC2154 # PAIRS, WITH, GATE ...: set by load from the raw results
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

if [ $# -lt 1 ] || [ $# -gt 3 ]; then
	fail "usage: bench/ssh-report.sh RAWDIR [PNG [LINK]]"
fi
RAW=$1/ssh
[ -f "$RAW/params" ] || fail "$RAW/params: no raw results of the ssh measurement (bench/ssh.sh writes them)"
load "$RAW/params"
for s in base $WITH; do
	[ -f "$RAW/stack-$s" ] || fail "$RAW/stack-$s: missing"
done
for s in $WITH; do
	for f in "$s.raw" "$s.txt" "$s.failures"; do
		[ -f "$RAW/$f" ] || fail "$RAW/$f: missing"
	done
done
[ -f "$RAW/counters" ] || fail "$RAW/counters: missing"

# pairs FILE: pair_stats (bench/lib.sh) of FILE in the raw results.
pairs() { pair_stats "$RAW/$1"; }
# counted RESULT: the logins the host's counters hold with that result, all keys.
counted() { awk -v r="result=\"$1\"}" '$1 ~ r { s += $2 } END { print s + 0 }' "$RAW/counters"; }
# The stack's lines, the module's options as bench/ssh.sh wrote them, the module by name.
stack() { sed -E 's|^auth |auth    |; s|[^ ]*/([^/ ]*\.so)|\1|g' "$RAW/stack-$1"; }
# goal RATIO LOW HIGH: what this run says of the goal, at most 1.02 ×.
goal() { ratio_goal "$1" "$2" "$3" 1.02; }
# cpu NAME: the server's CPU per login, in ms, for sshd NAME's ticks (CPU_TICKS_...).
cpu() {
	local v=CPU_TICKS_$1
	awk -v t="${!v}" -v hz="$TICK" -v n=$((PAIRS + WARMUP)) 'BEGIN { printf "%.1f", t / hz * 1000 / n }'
}

name_of() {
	case $1 in
	redis) echo "Redis on TCP loopback (\`url=redis://127.0.0.1:PORT/0\`)" ;;
	local) echo "the per-host file (\`url=local\`)" ;;
	same) echo "Redis on TCP loopback, one sshd for both (the module skipped from ${SKIP_FROM:-127.0.0.2})" ;;
	*) echo "$1" ;;
	esac
}

expected=0
for s in $WITH; do expected=$((expected + PAIRS + WARMUP + 1)); done

echo "## 13. Latency as a user feels it: a real ssh login"
echo
echo "\`ssh host true\`, timed from spawn to exit by \`bench/pairtime\`: the ssh client (Debian"
echo "OpenSSH $OPENSSH_V, its default algorithms, \`-F none\`, a new connection each time) logs in"
echo "with a key to Debian's sshd on 127.0.0.1, runs \`true\` and leaves. Two sshds run side by"
echo "side (\`bench/ssh.sh\`, set up as \`tests/e2e/e2e-ssh.sh\` does, by \`tests/helpers/sshd.sh\`): each with its"
echo "own port, config, host key and \`authorized_keys\` in the run's temporary directory, and its"
echo "own PAM service through pam_wrapper (a symlink to \`/usr/sbin/sshd\` names the service; the"
echo "host's \`/etc/pam.d\` is not read). They differ only in the session stack, where a publickey"
echo "login meets the module (it never calls \`pam_authenticate\`): the second has"
echo "\`etc/pam.d/sshd-flowslot\`'s two lines, as an administrator adds them, with"
echo "\`$GATE\` (\`state_dir\` on $STATE_FS). The pairs alternate which"
echo "login goes first, $PAIRS pairs after $WARMUP not counted; the session's \`HOME\` is an empty"
echo "directory, so that root's own \`~/.bashrc\` (which Debian's bash reads for an ssh command)"
echo "is not part of the login."
case " $WITH " in *" same "*)
	echo "Two sshds may differ by more than the module (one run saw the per-host file's at 0.95 ×"
	echo "the base's), so \"same\" runs both logins of a pair on one sshd, with the module's stack:"
	echo "the login from 127.0.0.2 (\`ssh -b\`) skips the module's two lines, the one from 127.0.0.1"
	echo "runs them. That one sshd's CPU is both logins', so its row is not in the CPU table." ;;
esac
echo
echo '```'
echo "# without the module"
stack base
for s in $WITH; do
	echo "# with the module: $s"
	stack "$s"
done
echo '```'
echo
echo "The module does its whole job in every login with it: an empty queue (\`interval=1ms\`;"
echo "the logins come one at a time) admits each at once, after its reservation on the"
echo "schedule, and counts it in the host's counters; \`fallback=closed\` would fail the login"
echo "rather than let it in unqueued if the schedule could not be reached."
echo
echo "| sshd's session stack | pairs (both logins in) | without, median ms | without, p90 ms | with, median ms | with, p90 ms | with ÷ without per pair: median (95% interval) | per pair: quartiles; 10th to 90th percentile | with − without per pair: median ms (95% interval) |"
echo "|---|---|---|---|---|---|---|---|---|"
for s in $WITH; do
	st=$(pairs "$s.raw")
	echo "| with the module on $(name_of "$s") | $(field n "$st") of $PAIRS | $(field a_med "$st") | $(field a_p90 "$st") | $(field b_med "$st") | $(field b_p90 "$st") | **$(field r_med "$st")** ($(field r_lo "$st") to $(field r_hi "$st")) | $(field r_p25 "$st") to $(field r_p75 "$st"); $(field r_p10 "$st") to $(field r_p90 "$st") | $(field d_med "$st") ($(field d_lo "$st") to $(field d_hi "$st")) |"
done
echo
for s in $WITH; do
	st=$(pairs "$s.raw")
	echo "**With the module on $(name_of "$s"), an ssh login took $(field r_med "$st") × as long"
	echo "as without it** (median of the per-pair ratios), $(goal "$(field r_med "$st")" "$(field r_lo "$st")" "$(field r_hi "$st")")"
	echo
done
echo "What the server spends: the CPU time (user and system) of all the processes of its logins,"
echo "summed by each sshd as it reaps them (\`/proc/PID/stat\`, in ticks of 1/$TICK s), over"
echo "the $((PAIRS + WARMUP)) logins to each in the pairs, warm-up included:"
echo
echo "| sshd's session stack | server CPU per login without the module, ms | with it, ms | with ÷ without | with − without, ms |"
echo "|---|---|---|---|---|"
for s in $WITH; do
	[ "$s" = same ] && continue
	b=$(cpu "BASE_${s^^}")
	w=$(cpu "${s^^}")
	echo "| with the module on $(name_of "$s") | $b | $w | $(ratio "$w" "$b") | $(awk -v a="$w" -v b="$b" 'BEGIN { printf "%+.1f", a - b }') |"
done
echo
echo "The interval of a median is read off the sorted pairs (ranks n/2 ± 1.96 √n / 2), with no"
echo "assumption about their distribution; the quartiles show the spread of single pairs, which"
echo "is mostly the machine's: the key exchange's CPU, other processes on the same $NPROC cores."
echo "The server's CPU is a total over the run, with no spread to show, and moves less with other"
echo "processes' load than the time waited. Measurement 2 gives the module's own cost, in a"
echo "smaller login."
echo
on_redis=0
for s in $WITH; do case $s in redis | same) on_redis=$((on_redis + PAIRS + WARMUP)) ;; esac; done
echo "Checks that the module did its work: Redis ran $SCRIPT_CALLS script calls, one for each of"
echo "the $on_redis timed and warm-up logins with the module on it$([ "$on_redis" = 0 ] && echo " (none here: no login used Redis)"); the host's"
echo "counters held $(counted admitted) logins admitted at once, for $expected such logins (the first of each"
echo "sshd's, untimed, included), $(counted waited) that waited, $(counted refused) refused and $(counted unavailable) unavailable; the module"
echo "logged $(for s in base $WITH; do printf '%s ' "$(v=COMPLAINTS_${s^^}; echo "${!v}")"; done | sed 's/ $//; s/ /, /g') line(s) in the sshds' logs (base first)."
for s in $WITH; do
	if [ -s "$RAW/$s.failures" ]; then
		echo
		echo "**Logins that failed** (left out of the pairs above), with $s:"
		echo
		echo '```'
		cat "$RAW/$s.failures"
		echo '```'
	fi
done
echo
if [ -f "$1/machine" ] && [ "$(sed -n 's/^REV=//p' "$1/machine")" != "$REV" ]; then
	# bench/ssh.sh run again into the raw results, on another tree than the rest.
	echo "Measured by \`bench/ssh.sh\` on its own, into this run's raw results, on $DATE, tree"
	echo "\`$REV\`, in $ELAPSED s (load average $LOAD)."
elif [ -f "$1/machine" ]; then
	echo "Measured by \`bench/ssh.sh\` in $ELAPSED s of this run (load average $LOAD)."
else
	echo "Measured on its own, apart from the rest of this file: \`bash bench/ssh.sh RAWDIR\`, then"
	echo "\`bash bench/ssh-report.sh RAWDIR\`, on $DATE, tree \`$REV\`, $NPROC CPUs, redis-server"
	echo "$REDIS_V, in $ELAPSED s (load average $LOAD)."
fi
