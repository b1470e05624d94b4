#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Latency as a user feels it (issue 22): `ssh host true`, a publickey login with the real ssh
# client against Debian's sshd on 127.0.0.1, with and without pam_flowslot in sshd's session
# stack, in alternating pairs (bench/pairtime), in the same run. Private sshds, alike but for
# their PAM service (tests/helpers/sshd.sh: a symlink names the service, pam_wrapper reads it from the
# run's temporary directory, /etc/pam.d is untouched): "base" without the module, and "redis"
# with etc/pam.d/sshd-flowslot's lines on a private redis-server on TCP loopback (SSH_WITH=
# "redis local" adds "local", the same lines with url=local). The queue is empty at every login
# (interval=1ms), so each is admitted at once, after the module's whole work: the script call
# on Redis (or the per-host file), and the host's counters in state_dir. Also the server's CPU
# per login, as each sshd sums its reaped processes'. Writes its raw results into RAWDIR/ssh/
# (bench/measure.sh calls it); bench/ssh-report.sh renders its section of BENCHMARKS.md from
# them. Nothing here asserts a time.
#
#   bash bench/ssh.sh RAWDIR     (after make and build/bench/pairtime; QUICK=1 for fewer pairs,
#                                 SSH_PAIRS=N for N)
set -u
# shellcheck source=tests/helpers/lib.sh
. "$(dirname "$0")/../tests/helpers/lib.sh"
# sshd as installed, by a symlink, without tests/helpers/sshd.sh's private /tmp for each connection: its
# extra exec would be timed in both logins of a pair. The logins here never run at once.
SSHD_SHARED_TMP=1
# shellcheck source=tests/helpers/sshd.sh
. "$TOP/tests/helpers/sshd.sh"
# shellcheck source=bench/lib.sh
. "$TOP/bench/lib.sh"
say() { echo "ssh: $*" >&2; }

[ $# -eq 1 ] || { echo "usage: bench/ssh.sh RAWDIR" >&2; exit 2; }
RAW=$1 # for run (bench/lib.sh); absolute, for the clients run from $TMP
case $RAW in /*) ;; *) RAW=$PWD/$RAW ;; esac
OUT=$RAW/ssh
if [ "${QUICK:-0}" = 1 ]; then PAIRS=${SSH_PAIRS:-10}; else PAIRS=${SSH_PAIRS:-200}; fi
# The module's backends measured, each against the base: redis by default, the backend that
# does the most for an admitted login (a connection and a script call, as well as the counters
# file that url=local keeps too); SSH_WITH="... local" adds url=local. "same" is redis's stack
# on one sshd for both logins of a pair, the module skipped for a login from 127.0.0.2: two
# sshds differ by more than the module (a run saw the file's 0.95 × the base's), one does not.
WITH=${SSH_WITH:-same redis}
# Whose logins skip the module on "same": SSH_SKIP_FROM=127.0.0.3 (nobody's) has both logins of
# a pair run it, an A/A check that the two source addresses alone make no difference.
SKIP_FROM=${SSH_SKIP_FROM:-127.0.0.2}
WARMUP=5 # pairs that bench/pairtime runs first and does not count
BIN=$TOP/build/bench
T0=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
command -v sshd > /dev/null || [ -x /usr/sbin/sshd ] || fail "no /usr/sbin/sshd (openssh-server)"
rm -rf "$OUT"
mkdir -p "$OUT" || fail "mkdir $OUT"
put_param() { printf '%s=%s\n' "$1" "$2" >> "$OUT/params"; }

# state_dir (the host's counters; url=local's schedule too) on a tmpfs, as /run normally is.
if STATE=$(mktemp -d /dev/shm/flowslot-bench-ssh.XXXXXX 2> /dev/null); then
	trap 'cleanup; rm -rf "$STATE"' EXIT
	put_param STATE_FS "a tmpfs (\`/dev/shm\`), as \`/run\` normally is"
else
	STATE=$TMP/state
	mkdir -m 0700 "$STATE"
	put_param STATE_FS "$(df --output=fstype "$TMP" | tail -n 1) (no \`/dev/shm\` here)"
fi

start_tcp_redis ssh || fail "redis-server"
REDIS_PORT=$PORT # set by start_tcp_redis
sshd_keys || fail "ssh-keygen"

# The stacks. A publickey login runs account and session, and pam_setcred on auth (which
# pam_deny refuses; sshd goes on, as no PAM authentication was done). The module's lines are
# the example's (the sudo group's skip, then the bracketed module line), with these options.
GATE="key=bench:ssh interval=1ms fallback=closed state_dir=$STATE"
mapfile -t WITH_REDIS < <(example sshd-flowslot "redis://127.0.0.1:$REDIS_PORT/0" "$GATE")
mapfile -t WITH_LOCAL < <(example sshd-flowslot local "$GATE")
HEAD=("auth required @P/pam_deny.so" "account required @P/pam_permit.so")
TAIL=("session required @P/pam_permit.so")
service sshd-base "${HEAD[@]}" "${TAIL[@]}"
service sshd-redis "${HEAD[@]}" "${WITH_REDIS[@]}" "${TAIL[@]}"
service sshd-local "${HEAD[@]}" "${WITH_LOCAL[@]}" "${TAIL[@]}"
service sshd-same "${HEAD[@]}" \
	"session [success=${#WITH_REDIS[@]} default=ignore] @P/pam_succeed_if.so quiet rhost = $SKIP_FROM" \
	"${WITH_REDIS[@]}" "${TAIL[@]}"
for s in base $WITH; do cp "$TMP/svc/sshd-$s" "$OUT/stack-$s"; done
sed -i "s|$TMP|\$TMP|g; s|$STATE|\$STATE|g" "$OUT"/stack-*

# The same config for all three: keys only (pam_deny would refuse a password anyway); the
# session's HOME an empty directory of the run's, and no ~/.ssh/rc, so that nothing of this
# machine's root account runs in it (Debian's bash reads ~/.bashrc for an ssh command: here
# that alone took longer than the rest of the login); and pam_wrapper's warnings and errors
# only, so that the module's complaints show in NAME.err.
mkdir -m 0755 "$TMP/home"
SSHD_CONF=("PasswordAuthentication no" "KbdInteractiveAuthentication no" "SetEnv HOME=$TMP/home"
	"PermitUserRC no")
export SSHD_PAM_DEBUGLEVEL=1
declare -A SSHD_PORTS SSHD_PIDS
for s in base $WITH; do
	sshd_start "sshd-$s" 120 "${SSHD_CONF[@]}" || fail "sshd-$s"
	SSHD_PORTS[$s]=$SSHD_PORT
	SSHD_PIDS[$s]=$SSHD_PID
done

# ssh_args NAME [FROM]: in SSH_ARGS, `ssh host true` to that sshd from 127.0.0.1 (or FROM):
# no config file (-F none: nothing of the invoking user's, no ControlMaster), the run's key, a
# new connection each time.
ssh_args() {
	SSH_ARGS=(ssh -F none "${SSH_KEY_OPTS[@]}" -o LogLevel=ERROR -b "${2:-127.0.0.1}"
		-p "${SSHD_PORTS[$1]}" root@127.0.0.1 true)
}
# Each works before it is timed.
for s in base $WITH; do
	ssh_args "$s"
	"${SSH_ARGS[@]}" > "$TMP/first-$s.log" 2>&1 < /dev/null ||
		fail "the first ssh login to sshd-$s: $(tail -n 3 "$TMP/first-$s.log" "$TMP/sshd-$s.log" "$TMP/sshd-$s.err")"
done
rcli ssh config resetstat > /dev/null

# sshd_cpu PID: the CPU time, user and system, of the sshd's reaped processes, in clock ticks:
# a login's processes on the server (the connection's sshd, its privilege-separated child, the
# session's command) are all waited for, and their time adds up in the listener's.
sshd_cpu() { awk '{ print $16 + $17 }' "/proc/$1/stat"; }
# The pairs: base (A) against each of the others (B), one pairtime run after the other.
for s in $WITH; do
	say "ssh host true: sshd without the module against sshd with it (url=$s), $PAIRS pairs"
	if [ "$s" = same ]; then
		ssh_args same 127.0.0.2
	else
		ssh_args base
	fi
	base_args=("${SSH_ARGS[@]}")
	ssh_args "$s"
	c0_base=$(sshd_cpu "${SSHD_PIDS[base]}")
	c0_with=$(sshd_cpu "${SSHD_PIDS[$s]}")
	line=$(cd "$TMP" && run "$BIN/pairtime" "$PAIRS" "$TMP/$s.raw" "$TMP/base-$s.log" \
		"$TMP/$s.log" -- "${base_args[@]}" -- "${SSH_ARGS[@]}")
	put_param "CPU_TICKS_BASE_${s^^}" $(($(sshd_cpu "${SSHD_PIDS[base]}") - c0_base))
	put_param "CPU_TICKS_${s^^}" $(($(sshd_cpu "${SSHD_PIDS[$s]}") - c0_with))
	# A login that failed is counted, and why kept (the report leaves its pair out).
	case $line in pairs=*) ;; *) fail "pairtime $s: $line" ;; esac
	cp "$TMP/$s.raw" "$OUT/" || fail "$s.raw"
	echo "$line" > "$OUT/$s.txt"
	grep -h '^pairtime: ' "$TMP/base-$s.log" "$TMP/$s.log" | sort | uniq -c > "$OUT/$s.failures"
done

# That the module did its work in every "with" login: the script calls Redis ran (none else
# reach this server), and the logins the host's counters hold, by result; the module's own
# log lines in sshd's stderr (pam_wrapper passes LOG_WARNING and worse).
put_param SCRIPT_CALLS "$(rcli ssh info commandstats |
	awk -F'[=,:]' '/^cmdstat_eval(sha)?:/ { s += $3 } END { print s + 0 }')"
"$TOP/flowslotctl" "state_dir=$STATE" metrics > "$TMP/metrics" 2> "$TMP/metrics.err" ||
	fail "flowslotctl metrics: $(cat "$TMP/metrics.err")"
grep '^flowslot_logins_total{' "$TMP/metrics" > "$OUT/counters"
for s in base $WITH; do
	put_param "COMPLAINTS_${s^^}" "$(grep -ac 'pam_flowslot' "$TMP/sshd-$s.err")"
	sshd_stop "${SSHD_PIDS[$s]}"
done
stop_redis ssh
put_param PAIRS "$PAIRS"
put_param WITH "$WITH"
put_param SKIP_FROM "$SKIP_FROM"
put_param WARMUP "$WARMUP"
put_param TICK "$(getconf CLK_TCK)"
put_param GATE "${GATE//$STATE/\$STATE}"
put_param DATE "$(date -u '+%Y-%m-%d at %H:%M UTC')"
put_param REV "$(git -C "$TOP" describe --always --dirty 2> /dev/null || echo "not a git tree")"
put_param OPENSSH_V "$(dpkg-query -W -f='${Version}' openssh-server 2> /dev/null)"
put_param REDIS_V "$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')"
put_param NPROC "$(nproc)"
put_param LOAD "$LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
put_param ELAPSED "$(($(date +%s) - T0))"
say "done in $(($(date +%s) - T0)) s: $OUT"
