#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The section of BENCHMARKS.md on scale, on paper: how many login hosts and waiters one Redis
# carries, and when Redis Cluster is needed and how schedules spread over its masters. It
# measures nothing: it computes from the raw results of measurements 4 (a decision's server
# CPU), 6 (sync_replicas=1) and 8 (waiters renewing) in RAWDIR, and the hash slots of example
# keys. bench/report.sh calls it.
#
#   bench/scale-report.sh RAWDIR
# The numbers it takes from the raw results are read in "The inputs" below, and only there:
# when measurement 4, 6 or 8 changes what it writes, change them there.
# shellcheck disable=SC2153 # TICK, M8_N ...: set by load from the raw results
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

[ $# -eq 1 ] || fail "usage: bench/scale-report.sh RAWDIR"
RAW=$1
load "$RAW/values"

# ---------------------------------------------------------------------------------------------
# The inputs.
# D_US: the redis-server CPU of one decision, a reservation with a connection of its own
# (connect, EVALSHA, close), over TCP loopback (measurement 4, the module's row).
# E_US: the script alone, EVALSHA on kept-open connections (measurement 4, redis-benchmark).
# W_US: the redis-server CPU per second of one waiter, renewing (measurement 8, bench/spread.sh:
# the largest steady queue, leases that fit the wait, the server's CPU less its CPU idle, over
# its waiters); R_US: one renewal with its connection; B_W: the bytes of memory a waiter holds
# (used_memory).
# SYNC_MS: what sync_replicas=1 added to a decision, median (measurement 6).
m4_ticks() { cat "$RAW/m4-$1.ticks"; }
D_US=$(awk -v t="$(m4_ticks tmodule)" -v hz="$TICK" -v n="$(field decisions "$(cat "$RAW/m4-tmodule.out")")" \
	'BEGIN { printf "%.1f", t / hz * 1e6 / n }')
E_US=$(awk -v t="$(m4_ticks evalsha)" -v hz="$TICK" -v n="$M4_EVAL_N" 'BEGIN { printf "%.1f", t / hz * 1e6 / n }')
M8=$(grep '^mode=fit ' "$RAW/spread/rows" | awk '{ n = $2; sub(/n=/, "", n) } n + 0 > best { best = n + 0; row = $0 } END { print row }')
M8_WAITERS=$(field n "$M8")
W_US=$(field cpu_us_per_waiter_s "$M8")
R_US=$(field cpu_us_per_call "$M8")
B_W=$(field bytes_per_waiter "$M8")
M6=$(cat "$RAW/m6.txt")
m6() { field "$2" "$(printf '%s\n' "$M6" | grep "^name=$1 ")"; }
SYNC_MS=$(awk -v a="$(m6 sync1 median_us)" -v b="$(m6 plain median_us)" 'BEGIN { printf "%.3f", (a - b) / 1000 }')

# ---------------------------------------------------------------------------------------------
# The arithmetic. RHO: the share of one core planned for (Redis runs every script on one
# thread; half a core leaves the requests in front of each decision few).
RHO=0.5
calc() { awk "BEGIN { $1 }"; }
DPS=$(calc "printf \"%d\", $RHO * 1e6 / $D_US")
WAITERS=$(calc "printf \"%d\", $RHO * 1e6 / $W_US")
# thousands N: the whole number N, its thousands separated; round N: N to two significant
# digits (from 100 on), so.
thousands() {
	awk -v n="$1" 'BEGIN { s = sprintf("%.0f", n); o = ""
		while (length(s) > 3) { o = "," substr(s, length(s) - 2) o; s = substr(s, 1, length(s) - 3) }
		printf "%s%s", s, o }'
}
round() {
	thousands "$(awk -v n="$1" 'BEGIN { if (n < 100) { printf "%.0f", n; exit }
		p = 1; while (n >= 100 * p) p *= 10; printf "%.0f", int(n / p + 0.5) * p }')"
}
# share CPU_US_PER_S: that much server CPU a second, as a share of one core, or in cores.
share() { calc "c = $1 / 1e6; if (c <= 1) printf \"%.1f%% of one core\", c * 100; else printf \"%.1f cores: more than one Redis\", c"; }
# A fleet in working hours: HOSTS hosts, each with a login a minute; and storms: HOSTS hosts
# whose K logins each arrive at once.
steady_row() {
	local lps
	lps=$(calc "printf \"%.1f\", $1 / 60")
	echo "| $(round "$1") hosts, a login each a minute | $(round "$lps") decisions a second | $(share "$(calc "print $lps * $D_US")") |"
}
storm_row() {
	local n=$(($1 * $2))
	echo "| $(round "$1") hosts × $2 logins | $(round "$n") decisions, $(calc "printf \"%.2f\", $n * $D_US / 1e6") s of server CPU in all; then $(round "$n") waiters | $(share "$(calc "print $n * $W_US")") while all wait |"
}
# Wait bound on one schedule: max_wait / interval × burst places at most (later logins are
# refused at once); the defaults, session phase: 5 m and 7 s.
per_schedule() { calc "printf \"%d\", $1 / $2 * ${3:-1}"; }

# ---------------------------------------------------------------------------------------------
# How schedules spread over a cluster's masters: the hash slot of each example key, as Redis
# computes it (CRC16/XMODEM of the key, or of its {hash tag}, mod 16384), the slots split into
# equal ranges, one a master, as redis-cli --cluster create assigns them.
spread() {
	python3 - "$@" <<-'EOF'
		import sys

		def crc16(data):
		    crc = 0
		    for b in data:
		        crc ^= b << 8
		        for _ in range(8):
		            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
		            crc &= 0xFFFF
		    return crc

		def slot(key):
		    s = key.find("{")
		    if s >= 0:
		        e = key.find("}", s + 1)
		        if e > s + 1:
		            key = key[s + 1:e]
		    return crc16(key.encode()) % 16384

		template, hosts, masters = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
		# The ranges redis-cli --cluster create gives the masters (its alloc_slots).
		lasts, cursor = [], 0.0
		for i in range(masters):
		    last = int(cursor + 16384 / masters - 1 + 0.5)
		    lasts.append(16383 if i == masters - 1 or last > 16383 else last)
		    cursor += 16384 / masters
		load = [0] * masters
		for h in range(1, hosts + 1):
		    s = slot(template.replace("%H", "host-%04d" % h))
		    load[next(i for i, last in enumerate(lasts) if s <= last)] += 1
		print("%d %d %.2f" % (max(load), min(load), max(load) / (hosts / masters)))
	EOF
}
spread_row() {
	local r
	r=$(spread "$1" "$2" "$3") || fail "python3: the hash slots"
	echo "| \`key=$1\` | $(thousands "$2") | $3 | $(thousands "$(calc "print $2 / $3")") | $(thousands "$(n1 "$r" 1)") | $(thousands "$(n1 "$r" 2)") | $(n1 "$r" 3) |"
}

cat <<-EOF
	## Scale on paper: what one Redis carries, and when Cluster is needed

	Nothing here is measured: it is arithmetic on this run's measurements, which change when
	they do. Its inputs, as this run measured them on loopback:

	- **a decision** (a login's reservation, with the connection of its own that each login
	  opens): **$D_US µs** of redis-server CPU (measurement 4, TCP loopback); the script alone,
	  on kept-open connections, $E_US µs. A login admitted at once makes one decision; a
	  refused one also costs one, and so does each retry.
	- **a waiter**: **$W_US µs of CPU per second of waiting** (measurement 8: $M8_WAITERS places renewing on
	  their own cadence, $R_US µs a renewal with its connection, the idle server's CPU
	  taken off), and $B_W bytes of memory.
	- **sync_replicas=1**: $SYNC_MS ms more per decision at the median (measurement 6), the
	  replica's acknowledgement: time the login waits, not the master's CPU.

	Planned for: half of one core ($RHO), since Redis runs every script on one thread and a
	core kept half idle keeps few requests in front of each decision; a saturated core does
	about twice these figures, with longer decisions.

	| at half a core | one Redis carries about |
	|---|---|
	| decisions (logins arriving) | **$(round "$DPS") a second** |
	| waiters, renewing | **$(round "$WAITERS") at once** |
	| memory, at $B_W bytes a waiter | $(calc "printf \"%.0f\", 1e5 * $B_W / 1048576") MiB for 100,000 waiters: memory is not what limits |

	Decisions and waiters share the core: a load of *d* decisions a second and *w* waiters
	needs *d* × $D_US + *w* × $W_US µs of CPU a second.

	**Login hosts.** In working hours the decisions are few:

	| fleet | load | server CPU |
	|---|---|---|
	$(steady_row 1000)
	$(steady_row 10000)
	$(steady_row 100000)

	What sizes the server is a storm: logins that arrive together, after an outage or at the
	start of a class, and then wait. Each is one decision when it arrives and a waiter until its
	turn, and a schedule holds at most *max_wait* ÷ *interval* × *burst* waiters: a login whose
	slot would be later is refused at once (one decision, no waiter). With the defaults in the
	session phase (5 m and 7 s) that is $(per_schedule 300 7) places a schedule; at \`interval=1s
	max_wait=60m\`, $(round "$(per_schedule 3600 1)"). So a fleet on **one shared schedule** (one key for all,
	as the default \`pam_flowslot\`) puts on Redis no more waiters than one schedule holds, however many hosts it
	has; its logins arriving are the decisions. With **a schedule a host** (\`key=flowslot:%H\`),
	every host's storm waits at once, 20 logins a host here (the size of measurement 10's):

	| storm, a schedule a host | decisions, then waiters | server CPU |
	|---|---|---|
	$(storm_row 10 20)
	$(storm_row 100 20)
	$(storm_row 1000 20)

	So one Redis carries the storms of about $(round "$(calc "printf \"%d\", $WAITERS / 20")") hosts at once, 20 logins each, on
	schedules of their own; past that, Cluster (below), or a shared schedule. A storm's
	decisions come as fast as its logins reach PAM (sshd's key exchange and authentication
	spread them somewhat); while they come faster than about $(round "$DPS") a second, they wait
	their turn at the server, each for the others' $D_US µs. Over a network, each decision
	also pays its round trips (a connection, the script; two more for TLS), on the login's
	clock, not the server's.

	**When Cluster is needed.** When the decisions and waiters of all the schedules together
	need more than a core (about $(round "$DPS") decisions a second, or $(round "$WAITERS") waiters, or a mix), and
	not before: a Sentinel pair or a replica adds no capacity (every decision is made on the
	master), and \`sync_replicas=1\` adds time, not load. A schedule is one key, so it lives on one
	master with its hash slot: Cluster cannot split one schedule, and a fleet on one shared
	schedule is carried by one master whatever the cluster's size (its waiters are bounded by
	*max_wait* ÷ *interval*, so it never needs more). Cluster spreads schedules: with
	\`key=flowslot:%H\` each host's schedule goes to the master that owns its key's slot (CRC16
	of the key, mod 16384). For hosts named host-0001, host-0002 ..., over masters that own
	equal ranges of slots:

	| key template | hosts (schedules) | masters | per master, if even | on the busiest master | on the least busy | busiest ÷ even |
	|---|---|---|---|---|---|---|
	$(spread_row 'flowslot:%H' 100 3)
	$(spread_row 'flowslot:%H' 1000 3)
	$(spread_row 'flowslot:%H' 10000 3)
	$(spread_row 'flowslot:%H' 1000 6)
	$(spread_row 'flowslot:{lab}:%H' 1000 3)

	Hashing spreads many schedules nearly evenly (plan for the busiest master, a little over
	the even share; the fewer schedules a master, the larger the excess). A hash tag, \`{...}\` in
	the template, puts every key with that tag on one master: use it to keep schedules together
	(the last row), never to spread them. A group of hosts that must stagger together shares a
	key, and with it one master.
EOF
