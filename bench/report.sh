#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# make bench, the report: renders BENCHMARKS.md on stdout from the raw results that
# bench/measure.sh wrote into RAWDIR, and from them alone (no server, no git). With PNG, also
# draws the admission timeline of measurement 3 from RAWDIR/timeline.csv into PNG (with
# gnuplot), linked in the text as LINK (default: PNG as given).
#
#   bench/report.sh RAWDIR [PNG [LINK]] > BENCHMARKS.md
# Most variables come from the raw results (load, below), which shellcheck cannot follow:
# shellcheck disable=SC2153
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)

if [ $# -lt 1 ] || [ $# -gt 3 ]; then
	fail "usage: bench/report.sh RAWDIR [PNG [LINK]] > BENCHMARKS.md"
fi
RAW=$1
PNG=${2:-}
PNG_LINK=${3:-$PNG}
if [ ! -f "$RAW/values" ] || [ ! -f "$RAW/machine" ]; then
	fail "$RAW: no raw results (make bench writes them)"
fi
# The run's parameters and single values (M5_N, M5_MEM0 ...), and the machine (NPROC, REV ...).
load "$RAW/values"
load "$RAW/machine"

# ---------------------------------------------------------------------------------------------
# 1. Commands per login, from m1.txt.

# m1_row N MODE BASE: one table row, averaged over the runs.
m1_row() {
	awk -v n="$1" -v mode="$2" -v reps="$M1_REPS" -v base="$3" '
	function f(name,   i, kv) {
		for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == name) return kv[2] }
	}
	f("mode") == mode && f("n") == n {
		a = f("admitted"); runs++; adm += a
		if (a == 0) a = 1 # no login admitted: per-login figures are per attempted login
		per = f("sent") / a; sum += per
		if (runs == 1 || per < lo) lo = per
		if (runs == 1 || per > hi) hi = per
		rt += f("round_trips") / a; srv += f("server_calls") / a
		scl += f("server_client_calls") / a
		if (f("attempts_max") > amax) amax = f("attempts_max")
		sh += f("shared_slot"); if (f("shared_slot") > shmax) shmax = f("shared_slot")
		if (f("largest_group") > lg) lg = f("largest_group")
	}
	END {
		name = mode == "flowslot" ? "pam_flowslot (rslot_call, queue_wait)" : mode == "watch" ? "WATCH/MULTI/EXEC, retried" : "naive GET then SET"
		mean = sum / runs
		range = reps > 1 ? sprintf(" (%.2f to %.2f)", lo, hi) : ""
		ratio = base > 0 ? sprintf("%.1f", mean / base) : "1"
		tries = mode == "watch" ? amax : (mode == "flowslot" ? "1" : "n/a")
		printf "| %d | %s | %d of %d | %.2f%s | %s | %.2f | %.2f | %.2f | %s | %.1f (max %d) | %d |\n",
			n, name, adm, n * runs, mean, range, ratio, rt / runs, scl / runs, srv / runs,
			tries, sh / runs, shmax, lg
		printf "%.4f\n", mean > "/dev/stderr"
	}' "$RAW/m1.txt"
}
M1_TABLE=""
for n in $M1_NS; do
	base=$(m1_row "$n" flowslot 0 2>&1 >/dev/null)
	for mode in flowslot watch naive; do
		M1_TABLE="$M1_TABLE$(m1_row "$n" $mode "$base" 2>/dev/null)
"
	done
done
watch_per_login() { awk -v n="$1" '$1 == "mode=watch" && $2 == "n=" n { split($7, kv, "="); split($4, a, "="); s += kv[2] / a[2]; r++ } END { printf "%.0f", s / r }' "$RAW/m1.txt"; }
# The two largest N of the run (50 and 200; QUICK=1 runs fewer).
M1_NA=$(echo "$M1_NS" | awk '{ print $(NF > 1 ? NF - 1 : NF) }')
M1_NB=$(echo "$M1_NS" | awk '{ print $NF }')
M1_WA=$(watch_per_login "$M1_NA")
M1_WB=$(watch_per_login "$M1_NB")
# flowslot_renewals N: renewals per admitted pam_flowslot login, mean and most by one login.
flowslot_renewals() { awk -v n="$1" '$1 == "mode=flowslot" && $2 == "n=" n { for (i = 3; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } s += v["renewals"] / (v["admitted"] > 0 ? v["admitted"] : 1); if (v["renewals_max"] > m) m = v["renewals_max"]; r++ } END { printf "%.2f (at most %d)", s / r, m }' "$RAW/m1.txt"; }
M1_R_TEXT=""
for n in $M1_NS; do
	M1_R_TEXT="$M1_R_TEXT N = $n: $(flowslot_renewals "$n");"
done

# ---------------------------------------------------------------------------------------------
# 2. Added latency, from m2-ROW.txt (pairtime's summary line; its pairs in m2-ROW.raw).
M2_TABLE=""
for t in tcp unix local loaded; do
	line=$(cat "$RAW/m2-$t.txt")
	case $t in
	tcp) what="Redis over TCP loopback" ;;
	unix) what="Redis over a Unix socket" ;;
	local) what="url=local (file under flock)" ;;
	loaded) what="loaded, never called (in the account stack only)" ;;
	esac
	M2_TABLE="$M2_TABLE| $what | $(field pairs "$line") | $(ms "$(field a_median_us "$line")") | $(ms "$(field b_median_us "$line")") | $(field ratio_median "$line") | $(ms "$(field diff_median_us "$line")") | $(ms "$(field diff_p99_us "$line")") | $(ms "$(field diff_min_us "$line")") to $(ms "$(field diff_max_us "$line")") | $(ms "$(field cpu_diff_median_us "$line")") | $(field waited "$line") | $(field complaints "$line") |
"
done
# m2 ROW FIELD: a field of that row's line.
m2() { field "$2" "$(cat "$RAW/m2-$1.txt")"; }
# m2_cost ROW PLACES FIELD: a field of lstorecost's line for that row and store size ("-" for
# a row of Lua alone).
m2_cost() {
	local pat="^row=$1 "
	[ "$2" = - ] || pat="^row=$1 places=$2 "
	field "$3" "$(grep "$pat" "$RAW/m2-cost.txt" | head -n 1)"
}
# us1 NS: nanoseconds as whole microseconds.
us1() { awk -v ns="$1" 'BEGIN { printf "%.0f", ns / 1000 }'; }
# The table of one call's cost, a row per store size.
M2_COST_TABLE=""
for n in 0 10 100 1000; do
	steps=$(m2_cost plain "$n" steps)
	[ "$steps" = 0 ] && steps="under 1,000"
	M2_COST_TABLE="$M2_COST_TABLE| $n | $(m2_cost plain "$n" members) | $(m2_cost plain "$n" verdict | sed 's/^1$/admitted/; s/^2$/queued/') | $(m2_cost plain "$n" text_bytes) | $(m2_cost plain "$n" store_bytes) | $(m2_cost plain "$n" write_buf_bytes) | **$(m2_cost plain "$n" memory_peak)** | $steps | **$(us1 "$(m2_cost plain "$n" cpu_ns_median)")** ($(us1 "$(m2_cost plain "$n" cpu_ns_p90)")) | $(us1 "$(m2_cost host "$n" cpu_ns_median)") | $(us1 "$(m2_cost plain "$n" store_ns_median)") |
"
done
M2_COMPILE_US=$(us1 "$(m2_cost compile - load_ns_median)")
M2_LOAD_US=$(us1 "$(m2_cost load - load_ns_median)")
M2_CALL_US=$(us1 "$(m2_cost plain 0 cpu_ns_median)")
M2_LOAD_SHARE=$(awk -v c="$(m2_cost load - load_ns_median)" -v r="$(m2_cost plain 0 cpu_ns_median)" 'BEGIN { printf "%.0f", 100 * c / r }')
M2_STATE_US=$(us1 "$(m2_cost state - cpu_ns_median)")
M2_SCRIPT_MEM=$(($(m2_cost load - memory_peak) - $(m2_cost load - memory_libs)))
M2_COMPILE_MEM=$(($(m2_cost compile - memory_peak) - $(m2_cost compile - memory_libs)))
M2_DL_FIRST=$(ms "$(us1 "$(m2_cost libcrypto - first_dl_ns)")")
M2_CALL_CPU=$(awk -v a="$(m2 unix cpu_diff_median_us)" -v b="$(m2 loaded cpu_diff_median_us)" 'BEGIN { printf "%.2f", (a - b) / 1000 }')

# ---------------------------------------------------------------------------------------------
# 3. Stagger precision, from m3.txt and timeline.csv.
M3=$(cat "$RAW/m3.txt")
M3_N=$(field n "$M3")
S_ARR=$(awk '!/^#/ { print $2 * 1000 }' "$RAW/timeline.csv" | stats)
S_DEC=$(awk '!/^#/ { print ($3 - $2) * 1000 }' "$RAW/timeline.csv" | stats)
# gp_str TEXT: TEXT as a gnuplot string in single quotes (in which '' stands for ').
gp_str() { printf "'%s'" "${1//\'/\'\'}"; }
if [ -z "$PNG" ]; then
	PNG_NOTE="**Not drawn:** this report was rendered without the timeline picture."
elif command -v gnuplot > /dev/null; then
	gnuplot <<-EOF || fail "gnuplot"
		set terminal pngcairo size 1000,640 font 'DejaVu Sans,10'
		set output $(gp_str "$PNG")
		set termoption noenhanced
		set title "pam_flowslot: $M3_N logins started at the same instant, interval=100ms (Redis on a Unix socket)"
		set xlabel 'seconds since the common start'
		set ylabel 'login, in order of admission'
		set key bottom right box opaque
		set grid
		set yrange [0:$((M3_N + 1))]
		set xrange [-0.1:*]
		plot $(gp_str "$RAW/timeline.csv") using (\$2/1000):1:((\$5-\$2)/1000):(0) with vectors nohead lc rgb '#c0c0c0' title 'waiting (countdown_wait)', \
		     '' using (\$2/1000):1 with points pt 7 ps 0.7 lc rgb '#1f77b4' title 'arrived: reservation sent', \
		     '' using (\$5/1000):1 with points pt 5 ps 0.7 lc rgb '#d62728' title 'admitted: woke at its slot'
	EOF
	PNG_NOTE="![Admission timeline]($PNG_LINK)

[\`$PNG_LINK\`]($PNG_LINK): each row is a login; the blue dot is when it sent its reservation,
the red square when it woke at its slot and was admitted, the grey line the wait between."
	say "drew $PNG"
else
	PNG_NOTE="**Not drawn:** gnuplot is not installed (Debian package gnuplot-nox), so there is no
timeline picture in this run."
fi

# ---------------------------------------------------------------------------------------------
# 4. Decision capacity, from m4-PHASE.out, .cpu and .ticks.
rb_rps() { tail -n 1 "$RAW/m4-$1.out" | cut -d, -f2 | tr -d '"'; }
# m4_cpu_us NAME REQUESTS: the server's CPU time per request in phase NAME, in µs.
m4_cpu_us() { awk -v c="$(cat "$RAW/m4-$1.ticks")" -v hz="$TICK" -v n="$2" 'BEGIN { printf "%.1f", c / hz * 1e6 / n }'; }
M4_MOD=$(cat "$RAW/m4-module.out")
M4_GET1=$(rb_rps get1)
M4_GET2=$(rb_rps get2)
M4_GET=$(awk -v a="$M4_GET1" -v b="$M4_GET2" 'BEGIN { printf "%.0f", (a + b) / 2 }')
M4_EVAL=$(rb_rps evalsha)
M4_MODPS=$(field per_second "$M4_MOD")
M4_TMOD=$(cat "$RAW/m4-tmodule.out")
M4_TGET1=$(rb_rps tget1)
M4_TGET2=$(rb_rps tget2)
M4_TGET=$(awk -v a="$M4_TGET1" -v b="$M4_TGET2" 'BEGIN { printf "%.0f", (a + b) / 2 }')
M4_TMODPS=$(field per_second "$M4_TMOD")
# The server's CPU per decision over TCP: what one of its cores would decide per second with
# nothing else to do, an estimate.
M4_TCPU_US=$(m4_cpu_us tmodule "$(field decisions "$M4_TMOD")")
M4_TCEIL=$(awk -v us="$M4_TCPU_US" 'BEGIN { printf "%.0f", (us > 0) ? 1e6 / us : 0 }')

# ---------------------------------------------------------------------------------------------
# 5. The cost of waiting, from the M5_* values and the per-process numbers.
M5_CPU=$(stats < "$RAW/m5-cpu-us")
M5_CPU_SUM=$(awk '{ s += $1 } END { printf "%.0f", s }' "$RAW/m5-cpu-us")
M5_RSS=$(stats < "$RAW/m5-rss")
M5_PSS=$(stats < "$RAW/m5-pss")
M5_PSS_SUM=$(awk '{ s += $1 } END { printf "%.0f", s / 1024 }' "$RAW/m5-pss")
M5_BRSS=$(stats < "$RAW/m5-base-rss")
M5_BPSS=$(stats < "$RAW/m5-base-pss")
M5_WHY=$(cat "$RAW/m5-why")

# ---------------------------------------------------------------------------------------------
# 6. sync_replicas=1 and Sentinel, from m6.txt.
M6=$(cat "$RAW/m6.txt")
# m6 NAME FIELD: a field of configuration NAME's line.
m6() { field "$2" "$(printf '%s\n' "$M6" | grep "^name=$1 ")"; }
# m6_row NAME DESCRIPTION: one table row, against the baseline "plain".
m6_row() {
	awk -v d="$2" -v n="$(m6 "$1" rounds)" -v a="$(($(m6 "$1" admit) + $(m6 "$1" queued)))" -v c="$(m6 "$1" connections)" \
		-v k="$(m6 "$1" commands)" -v m="$(m6 "$1" median_us)" -v p="$(m6 "$1" p99_us)" \
		-v bm="$(m6 plain median_us)" -v bp="$(m6 plain p99_us)" -v base="$([ "$1" = plain ] && echo 1)" 'BEGIN {
		printf "| %s | %d of %d | %.2f | %.2f | %.3f | %.3f | %s | %s | %s | %s |\n", d, a, n, c / n,
			k / n, m / 1000, p / 1000, base ? "1" : sprintf("%.3f", m / bm),
			base ? "1" : sprintf("%.3f", p / bp),
			base ? "" : sprintf("%+.3f", (m - bm) / 1000), base ? "" : sprintf("%+.3f", (p - bp) / 1000)
	}'
}
# m6_added NAME PERCENTILE: the time that configuration NAME added to the baseline, in ms.
m6_added() { awk -v a="$(m6 "$1" "$2"_us)" -v b="$(m6 plain "$2"_us)" 'BEGIN { printf "%.3f", (a - b) / 1000 }'; }
m6_ratio() { ratio "$(m6 "$1" "$2"_us)" "$(m6 plain "$2"_us)"; }

# ---------------------------------------------------------------------------------------------
# 7 and 9, from queuecost's output: m7.out, m9q.out and m9f.out (8: bench/spread-report.sh).
M7_TOTAL=$(grep '^total ' "$RAW/m7.out")
# m7_rows: one table row per login: its wait, and its script calls.
m7_rows() {
	awk '/^wait_s=/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		per = v["waited_s"] > 0 ? sprintf("%.2f", (v["calls"] - 1) / v["waited_s"]) : ""
		printf "| %d | %.3f | %.3f | %d | %d | %s |\n", v["wait_s"], v["promised_s"],
			v["waited_s"], v["calls"], v["calls"] - 1, per }' "$RAW/m7.out"
}
# The least-squares line through (waited, calls) of the logins that waited past the commit
# window: "intercept slope".
M7_FIT=$(awk '/^wait_s=/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	if (v["waited_s"] > 2.5) { n++; x = v["waited_s"]; y = v["calls"]; sx += x; sy += y; sxx += x * x; sxy += x * y } }
	END { if (n < 2) { print "n/a n/a"; exit } b = (n * sxy - sx * sy) / (n * sxx - sx * sx)
		printf "%.2f %.3f\n", (sy - b * sx) / n, b }' "$RAW/m7.out")
M9Q=$(cat "$RAW/m9q.out")
M9F=$(cat "$RAW/m9f.out")

# ---------------------------------------------------------------------------------------------
# The sections, from the machine table on, are rendered into BODY first, so that the glance
# above them links to their headings as rendered.
BODY=$(mktemp) || fail "mktemp"
trap 'rm -f "$BODY"' EXIT
{
cat <<-EOF
	## The run

	| machine | |
	|---|---|
	| CPU | $NPROC cores ($CPU_MODEL), $MEM_GIB GiB |
	| system | $OS, kernel $KERNEL |
	| Redis | redis-server $REDIS_V (Debian), private instances started by the run |
	| libraries | hiredis $HIREDIS_V, Linux-PAM $PAM_V, pam_wrapper $WRAP_V, gcc $GCC_V, \`-O2 -g\` |
	| tree | \`$REV\` |
	| load average (1, 5, 15 min) | $LOAD_START at the start, $LOAD_END at the end |

	**Noise.** Whatever else ran on the machine meanwhile (the load averages above say how much)
	is in the absolute times and rates, and in the WATCH/MULTI and naive counts of measurement 1,
	which depend on how the logins happen to be scheduled. pam_flowslot's counts and the Redis memory of measurements 5 and 8 do not; the ratios
	compare runs that were interleaved or back to back, which cancels some of the noise, not all.

	Reproduce: \`make bench\` (it installs the Debian packages that \`tests/deps.sh\` lists,
	and needs gnuplot-nox for the picture), or \`make bench QUICK=1\` for a smoke run of about
	two minutes on 2 cores that writes \`build/bench/BENCHMARKS-quick.md\` instead.

	The fault campaign's results (\`make faults\`) are in [docs/MODEL.md](docs/MODEL.md#the-fault-campaign).

	## 1. Redis commands per admitted login, under contention

	N logins start at the same instant: N processes blocked on one pipe are released together,
	each opens its own connection to one redis-server on TCP loopback and reserves one slot on
	the same schedule (interval 100 ms, so that every login can be told apart), ${M1_REPS} run(s)
	per row. Three clients in \`bench/contend.c\`, all on the same hiredis:

	- **pam_flowslot**: the module's own code path, \`rslot_call()\` from the library
	  objects, which sends one \`EVALSHA\` of \`src/slot.lua\` to reserve; a login that is
	  queued then waits as the module does (\`queue_wait()\`), renewing its place when its
	  lease asks (every 2 s near its turn, more rarely further back: measurement 8) and once
	  more at its slot to be let in, each one more \`EVALSHA\`, all counted. The
	  script was loaded before the run (the first login after a Redis restart pays one
	  \`NOSCRIPT\` reply and one \`EVAL\`).
	- **WATCH/MULTI/EXEC**: \`WATCH key\`, \`GET key\`, then \`MULTI\`, \`SET key next PX ttl\`,
	  \`EXEC\` pipelined; from \`WATCH\` again while \`EXEC\` answers nil (at most 10,000 tries).
	  Five commands and three round trips a try.
	- **naive**: \`GET key\`, then \`SET key next\`: the race the module exists to avoid.

	The alternatives take "now" from the client's clock; the module asks the server
	(\`TIME\` inside the script), which costs them nothing extra. Commands are counted by the
	clients as they send them (for the module, every command that \`rnode.c\` formats, through
	\`-Wl,--wrap=redisFormatCommandArgv\`), and by the server in \`INFO commandstats\` after a
	\`CONFIG RESETSTAT\`. The server's count includes the \`TIME\`, \`GET\` and \`SET\` that run
	inside the script, and leaves out the \`SET\`s queued in a transaction that \`EXEC\` then
	aborted, which Redis never executes. "A slot already taken": the slots, sorted, are grouped
	where less than half an interval apart; each group has one login in its own slot, the rest
	share it.

	| N | approach | admitted | commands sent per login: mean (range over runs) | × pam_flowslot | round trips per login | Redis count of the clients' commands, per login | Redis count of all commands run, per login (incl. inside the script) | most tries by one login | logins put in a slot already taken: mean (max) | largest group sharing one slot |
	|---|---|---|---|---|---|---|---|---|---|---|
EOF
printf '%s' "$M1_TABLE"
cat <<-EOF

	An earlier measurement of WATCH/MULTI found 16 to 36 commands per login for N = 50 to 200. This
	run measured about $M1_WA and $M1_WB for N = $M1_NA and $M1_NB: here the N logins are released within microseconds
	of each other, so each round of the optimistic loop has nearly every remaining login in it
	and only one of them commits: the tries per login, five commands each, grow with N. Logins
	whose starts are spread over more time, as they may have been where the anchor was measured,
	collide less. pam_flowslot's count does not depend on that, but on how long each login
	waits: one script call to reserve, one per 2 s of waiting near its turn (fewer further
	back), and one at its slot. The
	renewals per admitted login, mean (and most by one login):$M1_R_TEXT the k-th login
	waits k intervals. The alternatives only compute a slot; their logins then sleep without
	telling Redis whether they are still there.

	## 2. Added latency of an admitted login with an empty queue

	\`pamtester -v SERVICE benchuser authenticate\` under pam_wrapper (service files in the
	run's temporary directory, as tests/helpers/lib.sh does), timed from spawn to exit by
	\`bench/pairtime.c\`. A pair is one login with \`pam_permit\` alone and one with
	\`pam_flowslot\` then \`pam_permit\`, run back to back in alternating order; ${M2_PAIRS} pairs per
	row after 5 not counted. The module line is
	\`auth required pam_flowslot.so url=... state_dir=... key=bench:lat interval=1ms countdown=0 fallback=closed\`:
	a login starts more than 1 ms after the one before, so the queue stays empty, and a Redis
	failure would fail the login instead of falling back. The last two columns check that: logins
	that were told to wait, and module log lines (errors, fallbacks).

	| module backend | pairs | pam_permit alone, median ms | with pam_flowslot, median ms | ratio per pair, median | added, median ms | added, p99 ms | added, min to max ms | CPU added, median ms | logins that waited | module log lines |
	|---|---|---|---|---|---|---|---|---|---|---|
EOF
printf '%s' "$M2_TABLE"
cat <<-EOF

	What the module adds here is its whole cost in a login: loading \`pam_flowslot.so\` (and
	hiredis) into the process, parsing its options, a connection to Redis, one script call and
	the close (or, with \`url=local\`, opening, locking and rewriting a file), and one record of
	the host's counters in \`state_dir\` (here on $M2_FS). A login process also pays for exec,
	the dynamic loader and pam_wrapper's copy of libpam in both columns. Network latency to a
	Redis on another host is not measured: everything runs on loopback. "CPU added" is the
	median of the per-pair differences in the login process's CPU time (user and system, from
	\`wait4\`), which other processes' load on a shared machine changes less than the time
	waited.

	**Where it goes.** The row "loaded, never called" puts the module, with the Unix socket's
	options, in the account stack of a login that only authenticates: libpam loads every module
	of the service at \`pam_start\` and unloads it at \`pam_end\`, and calls none of the account
	stack (it counted $([ "$M2_LOADED_COUNTED" = no ] && echo "no login, as expected" || echo "logins: **not as designed**")). Loading and unloading the module and
	hiredis cost the login $(ms "$(m2 loaded cpu_diff_median_us)") ms of CPU; the call itself, on the Unix socket,
	about $M2_CALL_CPU ms more (the difference between the two rows' medians): the options, the
	connection, the script call's round trip, the counters. Neither can go without giving up a
	design rule: a PAM module holds no connection between logins, and links hiredis as Debian
	ships it, a shared library.

EOF
cat <<-EOF
	**The per-host schedule on slot.lua.** The per-host schedule (\`url=local\`) runs
	\`src/slot.lua\`, the script Redis runs, through Lua 5.1 (\`src/lscript.c\`: a fresh Lua state
	for each call, the $(m2_cost compile - script_bytes)-byte script loaded in it as compiled at build time, and libcrypto opened
	for \`redis.sha1hex\` when the script hashes a name) on a sorted set kept in the file
	(\`src/lstore.c\`). Against its C copy of the rules before (\`src/lqueue.c\`), measured once:
	[Against older code](#against-older-code).

	**Lua is linked, not opened when the store is first used.** Every login pays for mapping
	liblua5.1, a Redis login too, which never runs the script. Opening it only for the store
	would spare those logins that, and spare a \`url=local\` login nothing: it maps the same
	libraries, later. It would also move the one moment the library must load to the moment
	Redis has failed and the host's schedule is the fallback, where a library that does not
	load would leave the login to the failure policy, unqueued, just when the queue matters.
	Linked, as libhiredis is, liblua5.1-0 is one of the package's dependencies, which the
	package manager keeps installed as long as the module is. libssl, by contrast, is opened
	only for \`rediss://\` (src/tls.c), and libcrypto only when the script on the store hashes a
	name.

EOF
cat <<-EOF
	**What one call takes** (\`bench/lstorecost.c\`): \`lscript_run\`, the script on the store as
	\`src/lslot.c\` runs it, without the file, $M2_COST_ROUNDS times per row, each time on a fresh copy
	of the store read from its text, the rows taking turns call by call (so that each call finds
	the caches as another row left them, nearer a login's one call than a warm loop). A store of N places: N logins reserved one after the other
	on a schedule of one login every 3 s (the first admitted, the others queued: a place, its
	lease and its host's index each), each with a WHO of its own and one of ten HOSTs; then one
	more login reserves, as this section's login does (a WHO, no HOST, \`per_host=0\`), and, in
	the column "with a HOST", as a login from a remote host under \`per_host=3\` does. "Lua state at most" is
	\`lscript_out.memory_peak\`, all that the call's Lua state held at once (the script loaded,
	its tables and strings); the store in memory (its members' array and names) and its text
	are the C side's, as is the buffer \`lstore_write\` allocates for the text written back
	(sized for the longest members). CPU is the process's (\`CLOCK_PROCESS_CPUTIME_ID\`), median
	of the calls (p90 in brackets).

	| places | members | the login | file text, bytes | store in memory, bytes | write buffer, bytes | Lua state at most, bytes | VM instructions | CPU per call, median µs (p90) | with a HOST and \`per_host=3\`, median µs | reading and writing the store's text, median µs |
	|---|---|---|---|---|---|---|---|---|---|---|
EOF
printf '%s' "$M2_COST_TABLE"
cat <<-EOF

	**Where a call's CPU goes.** By Lua alone, in the same run: a fresh state with the four
	libraries, closed again, $M2_STATE_US µs ($(m2_cost state - memory_peak) bytes); loading the script's chunk, compiled
	at build time (\`build/luadump\`, \`RSLOT_CHUNK\`; \`luaL_loadbuffer\`, in such a state),
	$M2_LOAD_US µs, **$M2_LOAD_SHARE% of the call on the empty store** ($M2_CALL_US µs), and the loaded script
	holds $M2_SCRIPT_MEM of the call's bytes. Compiling the source instead, as the store did at
	each call before it loaded the chunk (and does where the chunk was built for another
	machine), costs $M2_COMPILE_US µs and $M2_COMPILE_MEM bytes at its peak. Running it is the rest: fewer than 1,000 VM instructions (the hook
	counts them by the thousand), and the commands' answers from the store ($M2_CALL_US µs on the
	empty store, $(us1 "$(m2_cost plain 1000 cpu_ns_median)") µs with 1,000 places: a lookup by name is one pass over the
	members, and \`redis.flowslot_gone\` asks the kernel about each lease's holder). Reading the store's
	text and writing it back is the C side's, outside \`lscript_run\`, and on a large store it
	costs more than the script: $(us1 "$(m2_cost plain 1000 store_ns_median)") µs with 1,000 places. Opening libcrypto for \`redis.sha1hex\` cost the
	process's first call $M2_DL_FIRST ms of CPU (libcrypto mapped before: $([ "$(m2_cost libcrypto - mapped_before)" = 1 ] && echo yes || echo no)); after that the module
	keeps it mapped (\`RTLD_NODELETE\`), and a \`dlopen\` costs $(us1 "$(m2_cost host 0 dl_ns_median)") µs. The hash is OpenSSL's
	low-level SHA-1 (\`SHA1_Init\`, \`SHA1_Update\`, \`SHA1_Final\`): \`SHA1()\` would first read
	openssl.cnf and load the default provider, about 1 ms more. A pamtester or \`login\`
	process pays that first call's price once in every login that hashes a name; sshd, which
	links libcrypto, does not.

	## 3. Stagger precision

	$(field n "$M3") logins released at the same instant by \`bench/stagger.c\` each call \`rslot_call()\`
	(\`interval=100ms\`, Redis on a Unix socket) and, when queued, \`queue_wait()\`, the module's
	own wait: renewing the place when its lease asks and, at the slot, asking to go in. Each records the
	slot the reservation promised (\`CLOCK_MONOTONIC\`) and when it was let in: at once, or
	when the renewal at its slot answered admitted. The spacing is between consecutive
	admissions; the lateness is each admission against the slot first promised (it includes
	the renewal's round trip). Against fixed slots, before the queue, measured once: [Against
	older code](#against-older-code).

	| logins | admitted | spacing min ms | spacing median ms | spacing max ms | lateness p50 µs | lateness p99 µs | lateness max µs | furthest from an exact 100 ms grid µs |
	|---|---|---|---|---|---|---|---|---|
	| $(field n "$M3") | $(field admitted "$M3") | $(field gap_min_ms "$M3") | $(field gap_median_ms "$M3") | $(field gap_max_ms "$M3") | $(field late_p50_us "$M3") | $(field late_p99_us "$M3") | $(field late_max_us "$M3") | $(field grid_drift_max_us "$M3") |

	The logins called \`rslot_call()\` within $(ms "$(n1 "$S_ARR" 3)") ms of the common start (median
	$(ms "$(n1 "$S_ARR" 1)") ms: $(field n "$M3") processes on $NPROC cores), and each decision, from that call to
	the reply (the connection included), took a median of $(ms "$(n1 "$S_DEC" 1)") ms (p99 $(ms "$(n1 "$S_DEC" 2)") ms,
	max $(ms "$(n1 "$S_DEC" 3)") ms). The deadline is the server's slot carried over to this host's
	clock when the reply arrives, so the spacing also carries the spread of those reply times;
	the lateness is the sleep alone. The last column compares the k-th admission with an exact
	grid, k × 100 ms plus the median offset of all of them. With fewer than 100 logins, a p99
	(nearest rank) is the largest value.

	$PNG_NOTE

	## 4. Decision capacity

	One redis-server, reached over a Unix socket and then over TCP loopback; $CONC concurrent
	clients throughout. The module's rate is $CONC processes calling \`rslot_call()\` to reserve,
	back to back for ${M4_SECONDS} s (\`bench/capacity.c\`), each decision being what a login's
	reservation does: connect, one \`EVALSHA\`, close, for a place of its own. A queued place
	is not renewed (a login's renewals would be further decisions) and lapses when its lease
	ends (5 s near its slot, a quarter of its wait and 3 s further back, at most 63 s), so
	the queue holds the places of the last seconds. \`redis-benchmark\` keeps its $CONC connections open. On
	each transport, GET ran before and after the module; the ratio is against their mean. The
	last two columns are the redis-server process's CPU while the row ran (100% = one core: the
	server is single-threaded, and the clients share the $NPROC cores with it), and that CPU
	time divided by the requests the row made.

	| transport | what | requests | per second | ratio to GET | redis-server CPU | redis-server CPU per request, µs |
	|---|---|---|---|---|---|---|
	| Unix socket | \`redis-benchmark -c $CONC -t get\` (before) | $M4_GET_N | $M4_GET1 | | $(cat "$RAW/m4-get1.cpu")% | $(m4_cpu_us get1 "$M4_GET_N") |
	| Unix socket | \`redis-benchmark -c $CONC -r\` \`EVALSHA\` of src/slot.lua reserving, a place each, connections kept open | $M4_EVAL_N | $M4_EVAL | $(ratio "$M4_EVAL" "$M4_GET") | $(cat "$RAW/m4-evalsha.cpu")% | $(m4_cpu_us evalsha "$M4_EVAL_N") |
	| Unix socket | pam_flowslot decisions, \`rslot_call()\`, a connection each | $(field decisions "$M4_MOD") in $(field seconds "$M4_MOD") s ($(field admit "$M4_MOD") admitted, $(field queued "$M4_MOD") queued, $(field refuse "$M4_MOD") refused, $(field unavailable "$M4_MOD") unavailable) | **$M4_MODPS** | **$(ratio "$M4_MODPS" "$M4_GET")** | $(cat "$RAW/m4-module.cpu")% | $(m4_cpu_us module "$(field decisions "$M4_MOD")") |
	| Unix socket | \`redis-benchmark -c $CONC -t get\` (after) | $M4_GET_N | $M4_GET2 | | $(cat "$RAW/m4-get2.cpu")% | $(m4_cpu_us get2 "$M4_GET_N") |
	| TCP loopback | \`redis-benchmark -c $CONC -t get\` (before) | $M4_GET_N | $M4_TGET1 | | $(cat "$RAW/m4-tget1.cpu")% | $(m4_cpu_us tget1 "$M4_GET_N") |
	| TCP loopback | pam_flowslot decisions, \`rslot_call()\`, a connection each | $(field decisions "$M4_TMOD") in $(field seconds "$M4_TMOD") s ($(field admit "$M4_TMOD") admitted, $(field queued "$M4_TMOD") queued, $(field refuse "$M4_TMOD") refused, $(field unavailable "$M4_TMOD") unavailable) | **$M4_TMODPS** | **$(ratio "$M4_TMODPS" "$M4_TGET")** | $(cat "$RAW/m4-tmodule.cpu")% | $M4_TCPU_US |
	| TCP loopback | \`redis-benchmark -c $CONC -t get\` (after) | $M4_GET_N | $M4_TGET2 | | $(cat "$RAW/m4-tget2.cpu")% | $(m4_cpu_us tget2 "$M4_GET_N") |

	**Capacity: one Redis decided $M4_TMODPS logins per second over TCP loopback**
	($M4_MODPS over a Unix socket), through the module's own code path with a connection per
	decision, from $CONC clients sharing this machine's $NPROC cores with the server, which used
	$(cat "$RAW/m4-tmodule.cpu")% of its one core: $(ratio "$M4_TMODPS" "$M4_TGET") × \`redis-benchmark\` GET on the same
	transport in the same run. At $M4_TCPU_US µs of server CPU per decision, a core with nothing
	else to do would decide about $(awk -v n="$M4_TCEIL" 'BEGIN { printf "%d", int(n / 100 + 0.5) * 100 }') per second: an estimate, not a measured rate.

	The script's own cost shows in the EVALSHA row, against GET on the same kept-open
	connections. The module's rows add a connection per decision (connect, accept, close), the
	price of a PAM module that holds no connection between logins. Where the server's CPU is
	well below 100%, the clients, sharing the $NPROC cores with it, were the limit, and the rate
	is a floor for what the server alone could sustain.

	## 5. Cost of waiting

	$M5_N logins (\`pamtester\` under pam_wrapper with the real \`pam_flowslot.so\`, each in a
	private \`/tmp\` as tests/helpers/lib.sh does) were started at once, with \`interval=1s max_wait=60m\`
	and the default \`countdown=15s\`, behind a slot already taken 300 s ahead, so that none
	reaches its slot while this lasts. All $M5_N had reserved a slot ${M5_FILL_S} s after the
	first was started. Then, over ${M5_WINDOW} s of waiting, each process's CPU time was read from
	\`/proc/PID/schedstat\` (nanoseconds on a CPU), then its RSS (\`VmRSS\`) and PSS
	(\`smaps_rollup\`: shared pages divided among the processes that share them, so it shrinks
	as more of them run). The baseline is the same pamtester held as long by \`pam_exec\`
	running \`sleep\`, without pam_flowslot ($M5_BASE logins).

	| | logins | RSS median KiB | RSS max KiB | RSS median, ratio to the baseline | PSS median KiB | CPU while waiting, per process: median µs | p99 µs | max µs |
	|---|---|---|---|---|---|---|---|---|
	| waiting in pam_flowslot | $M5_ALIVE waiting of $M5_N ($M5_COMM) | $(n1 "$M5_RSS" 1) | $(n1 "$M5_RSS" 3) | $(ratio "$(n1 "$M5_RSS" 1)" "$(n1 "$M5_BRSS" 1)") | $(n1 "$M5_PSS" 1) | $(n1 "$M5_CPU" 1) | $(n1 "$M5_CPU" 2) | $(n1 "$M5_CPU" 3) |
	| held by pam_exec + sleep (baseline) | $M5_BASE | $(n1 "$M5_BRSS" 1) | $(n1 "$M5_BRSS" 3) | 1 | $(n1 "$M5_BPSS" 1) | | | |

	The $M5_ALIVE waiting processes together used $(ms "$M5_CPU_SUM") ms of CPU in ${M5_WINDOW} s (a
	renewal of its place when its lease asks, here at most once a minute as every slot is
	minutes off (measurement 8), a connection and one script call, and a countdown message
	every 15 s, at most, wake a process briefly; otherwise it sleeps in \`clock_nanosleep\`),
	and $M5_PSS_SUM MiB of memory, the sum of their PSS, pam_wrapper's private copy of libpam in
	each included. A waiting login holds no connection between its renewals: at the sample, the
	server had $M5_CLIENTS client(s) connected, the one asking and any renewal under way.

	| Redis | with the head slot only | with $M5_N more logins queued | change |
	|---|---|---|---|
	| \`used_memory\`, bytes | $M5_MEM0 | $M5_MEMN | $((M5_MEMN - M5_MEM0)) |
	| \`used_memory_rss\`, bytes | $M5_RSS0 | $M5_RSSN | $((M5_RSSN - M5_RSS0)) |
	| keys | 1 | $M5_KEYS | |
	| places in the queue (\`w:\` members) | 0 | $M5_PLACES | |
	| the schedule's head slot, seconds ahead | $M5_AHEAD0 | $M5_AHEAD | |

	Each waiting login holds a place, two members of the schedule's own sorted set (one
	ranked by its arrival, one by its lease's end), while the schedule's head stays where it
	was: a waiter's slot follows from its rank. Measurement 8 gives the bytes per waiter alone.
	Both samples were taken after every command involved had run once since
	\`CONFIG RESETSTAT\` (Redis 7 allocates a latency histogram for each command at its first
	call): a place held, renewed and given up on a key of its own, then deleted. \`used_memory_rss\` also moves with the
	allocator's pages as $M5_N connections come and go, and is shown for completeness.
	$([ "$M5_ALIVE" -lt "$M5_N" ] && printf '\n%s logins were no longer waiting at the end of the window. What their logins wrote to stderr, counted:\n\n```\n%s\n```\n' "$((M5_N - M5_ALIVE))" "${M5_WHY:-(nothing)}")

	## 6. The cost of sync_replicas=1 and of Sentinel

	A master, one replica of it (\`replicaof\`) and one \`redis-sentinel\` watching the master
	(quorum 1), all on TCP loopback. One process (\`bench/optcost.c\`) makes one decision at a
	time through \`rslot_call()\` (a reservation), the module's own code path, with each configuration in
	turn, round after round, starting from a different one each round; ${M6_ROUNDS} rounds after
	20 not counted, each decision timed from the call to its return. Every configuration reaches
	the same master, with \`interval=1ms max_wait=60m timeout=10s\` and a key of its own:

	- **baseline**: \`url=redis://127.0.0.1:PORT/0\`, the master directly, \`sync_replicas=0\`.
	- **sync_replicas=1**: the same url; the module pipelines \`WAIT 1 <ms>\` after the script,
	  so the reply waits until the replica has acknowledged the reservation.
	- **Sentinel, master cached**: \`url=redis-sentinel://127.0.0.1:SPORT/fsm\`; the master's
	  address is read from its file in \`state_dir\`, here on $M6_FS, and \`ROLE\`
	  is pipelined ahead of the script, on the one connection.
	- **Sentinel, cache removed**: the same url, with the cache file removed before each
	  decision (untimed), as for the first login after a reboot empties \`/run\`: a connection to
	  the sentinel (\`SENTINEL get-master-addr-by-name\`), then the master, and the file written.

	Connections and commands are counted by the client as \`rnode.c\` opens and formats them
	(\`-Wl,--wrap\`). "Added" is the configuration's percentile less the baseline's. A
	decision that queued the login (its slot less than 1 ms ahead) gives its place back at
	once, untimed and uncounted, so that the next decision finds the queue empty.

	| configuration | admitted or queued | connections per decision | commands sent per decision | median ms | p99 ms | × baseline, median | × baseline, p99 | added, median ms | added, p99 ms |
	|---|---|---|---|---|---|---|---|---|---|
	$(m6_row plain "baseline: \`redis://\`, \`sync_replicas=0\`")
	$(m6_row sync1 "\`redis://\`, **\`sync_replicas=1\`**")
	$(m6_row sentinel "\`redis-sentinel://\`, master cached in \`state_dir\`")
	$(m6_row uncached "\`redis-sentinel://\`, cache removed before each decision")
	$(m6_row counted "\`redis://\`, the host's counters kept in \`state_dir\`")

	**sync_replicas=1 added $(m6_added sync1 median) ms per decision at the median ($(m6_ratio sync1 median) × the
	same master without it) and $(m6_added sync1 p99) ms at the p99 ($(m6_ratio sync1 p99) ×)**, with the replica
	on loopback. The master ran $M6_WAITS \`WAIT\`s, one for each of the $(($(m6 sync1 rounds) + 20)) decisions with
	\`sync_replicas=1\`, warm-up included, and the module logged $M6_COMPLAINTS lines during this
	measurement (a replica that did not acknowledge in time logs a warning). What \`WAIT\` adds
	is the replica's acknowledgement: the master asks for it (\`REPLCONF GETACK\`) before its next
	event loop sleep, and the replica answers; with a replica on another host, add that round
	trip. Each such decision also waits for one more process, the replica, to be scheduled:
	on a shared $NPROC-core machine that shows in the p99 more than in the median, and the
	p99s here carry the machine's noise more than the medians do.
	**Sentinel with the master cached added $(m6_added sentinel median) ms at the median ($(m6_ratio sentinel median) ×)**:
	the cache file's read and a \`ROLE\` on the same round trip. Without the cache, a decision
	added $(m6_added uncached median) ms ($(m6_ratio uncached median) ×): a connection to the sentinel and its answer, then
	the cache file written again.
	**Keeping the host's counters added $(m6_added counted median) ms at the median ($(m6_ratio counted median) ×)**:
	the counters file in \`state_dir\` read and one record written back under its lock, with
	no round trip to Redis.

	## 7. Script calls per login, by how long it waits

	One login per row (\`bench/queuecost.c calls\`), all at the same time, each on a schedule
	of its own whose head slot was taken the row's wait ahead, reserves and waits through the
	module's own code path (\`rslot_call()\`, then \`queue_wait()\`), Redis on a Unix socket.
	Its script calls (\`EVALSHA\`) are counted as \`rnode.c\` formats them
	(\`-Wl,--wrap=redisFormatCommandArgv\`); the server counted $(field server_script_calls "$M7_TOTAL") \`EVALSHA\`/\`EVAL\` in
	\`INFO commandstats\` for the $(field calls "$M7_TOTAL") the clients sent. The script was loaded before.

	| wait asked, s | wait promised, s | waited, s | script calls | after the reservation | per second of waiting, after the reservation |
	|---|---|---|---|---|---|
	$(m7_rows)

	**A login that need not wait costs one script call; one that waits costs one more every
	2 s near its turn, and after a quarter of its wait further back: the line through the
	logins that waited longer than the commit window is $(n1 "$M7_FIT" 1) + $(n1 "$M7_FIT" 2) calls per
	second waited.** A login whose slot is at most 2 s off (\`SLOT_COMMIT_US\`) is admitted at
	once to go in at its slot: one call. One further off is queued and renews when its lease
	asks (\`slot_renew_us\`: every 2 s within two intervals and 2 s of its slot, here
	\`interval=1ms\`; before that, a quarter of the wait it was told); the renewal that finds
	it first in line within 2 s of its slot admits it, so the call "at the slot" is that last
	renewal, and no call is made at the slot itself. Measurement 1's WATCH/MULTI client spends its commands
	in the reservation alone, and then sleeps: the queue's calls are what keeps a place alive.

EOF
bash "$BENCH_DIR/spread-report.sh" "$RAW" || fail "bench/spread-report.sh"
echo
cat <<-EOF
	## 9. Draining a queue in which a third of the logins were killed

	$(field n "$M9Q") logins arrive 10 ms apart, in order, on one schedule with
	\`interval=1s max_wait=60m\`; once each has its answer, every third (the 3rd, 6th, ... the
	$(field n "$M9Q")th) is killed with SIGKILL, by pid, $(field killed_at_s "$M9Q") s after the first arrival. The
	time is from the first arrival to when the last live login was let in
	(\`bench/queuecost.c drain\`), both designs in the same run, side by side, each on a
	redis-server of its own (Unix socket):

	- **the queue** (this tree): \`rslot_call()\` and \`queue_wait()\`, the module's own code;
	  a killed login stops renewing, its place lapses when its lease ends (5 s after its last
	  renewal near its turn, before its slot further back), and the next call on the queue
	  drops it: everyone behind moves up.
	- **fixed slots** (the previous design): one call of the script of commit c37c706
	  (\`src/slot.lua\` then: a slot, the schedule moved on by one interval), then a sleep until
	  that slot; a killed login's slot is kept, and nobody takes it.

	| design | logins | killed | live logins let in | last live login let in, s | × fixed slots | ideal: (live − 1) × interval, s | script calls per live login |
	|---|---|---|---|---|---|---|---|
	| the queue | $(field n "$M9Q") | $(field killed "$M9Q") | $(field admitted "$M9Q") of $(field live "$M9Q") | **$(field last_admitted_s "$M9Q")** | **$(ratio "$(field last_admitted_s "$M9Q")" "$(field last_admitted_s "$M9F")")** | $(field ideal_last_s "$M9Q") | $(field calls_per_live "$M9Q") |
	| fixed slots (baseline) | $(field n "$M9F") | $(field killed "$M9F") | $(field admitted "$M9F") of $(field live "$M9F") | $(field last_admitted_s "$M9F") | 1 | $(field ideal_last_s "$M9F") | $(field calls_per_live "$M9F") |

	**The queue let its last live login in after $(field last_admitted_s "$M9Q") s, where fixed slots took
	$(field last_admitted_s "$M9F") s: $(ratio "$(field last_admitted_s "$M9Q")" "$(field last_admitted_s "$M9F")") × the time.** Fixed slots keep every killed login's slot, so the
	last live login goes in at its own: (logins − 2) intervals after the first when the last is
	among the killed. The queue gets those back once the killed places lapse, and loses, for
	each, the time its place stood first in line before it lapsed: the logins close to the
	head were already admitted to go in at their slots (the commit window), and a killed
	place further back holds up the line only when it comes to its head before its lease has
	run out. The ideal column is a queue with no killed login in it at all.

EOF
# The sections of further measurements (see the end of bench/measure.sh): bench/NAME-report.sh
# prints the section of the raw results in RAWDIR/NAME (and may draw a picture next to PNG).
# In the order bench/measure.sh runs them, which is the order of their numbers.
for name in storm lookup tls ssh; do
	r=$BENCH_DIR/$name-report.sh
	[ -e "$r" ] || continue
	[ -d "$RAW/$name" ] || continue
	bash "$r" "$RAW" "$PNG" "$PNG_LINK" || fail "$r"
	echo
done
# Scale, on paper: arithmetic on measurements 4, 6 and 8.
bash "$BENCH_DIR/scale-report.sh" "$RAW" || fail "bench/scale-report.sh"
echo
# The comparisons with older code: measured once, dated, copied as they stand.
cat "$BENCH_DIR/past.md" || fail "bench/past.md"
echo
cat <<-EOF
	## What this run could not measure

	- Logins from many hosts over a real network: every client is on this machine, on loopback
	  or a Unix socket, so round-trip times are those of loopback.
	- A real login(1), or a real sshd anywhere but in measurement 13: the other logins are
	  pamtester under pam_wrapper (measurements 2, 5, 10 and 12) or C clients calling the
	  module's code (1, 3, 4, 6, 7, 8, 9, 12).
	- A replica or a sentinel on another host (measurement 6): here \`WAIT\`'s round trip to the
	  replica, and the sentinel's, are over loopback.
	- Quiet-machine figures: see the note on sharing above.

	## The commands run
EOF
echo
echo '```'
cat "$RAW/commands"
echo '```'
} > "$BODY"

# ---------------------------------------------------------------------------------------------
# At a glance: what the module costs a user and a server, figures of sections 2, 3, 4, 5, 8
# and 13 computed from the same raw results as those sections, each row linked to its
# section's heading as rendered in BODY. A row whose raw results are missing says so.
UNMEASURED="not measured in this run"
# have FILE...: every FILE is in the raw results, and not empty.
have() {
	local f
	for f; do [ -s "$RAW/$f" ] || return 1; done
}
# heading N: section N's heading in BODY, without its "## " (nothing if there is none).
heading() { sed -n "s/^## \($1\. \)/\1/p" "$BODY" | head -n 1; }
# slug TEXT: the anchor GitHub gives a heading of ASCII TEXT: in lower case, without its
# punctuation, a hyphen for each space.
slug() { printf '%s' "$1" | tr '[:upper:]' '[:lower:]' | sed -E 's/[^a-z0-9 _-]//g; s/ /-/g'; }
# sec N: section N, linked by a reference defined below the table if this run rendered it.
sec() { if [ -n "$(heading "$1")" ]; then printf '[§%s]' "$1"; else printf '§%s' "$1"; fi; }
# added US: microseconds as milliseconds added.
added() { awk -v us="$1" 'BEGIN { printf "%+.2f ms", us / 1000 }'; }
# row WHAT FIGURES N: one row of the table, from section N; FIGURES empty if not measured.
row() { echo "| $1 | ${2:-$UNMEASURED} | $(sec "$3") |"; }

# glance_m2 ROW: section 2's row ROW, the time added to a login: median, p99, and the ratio.
glance_m2() {
	have "m2-$1.txt" || return 0
	local l
	l=$(cat "$RAW/m2-$1.txt")
	echo "$(added "$(field diff_median_us "$l")") median, $(added "$(field diff_p99_us "$l")") p99; $(field ratio_median "$l") ×"
}
# glance_ssh: section 13, a real ssh login's ratio, for each stack it measured.
glance_ssh() {
	local s st with out=""
	with=$(sed -n 's/^WITH=//p' "$RAW/ssh/params" 2> /dev/null)
	for s in $with; do
		have "ssh/$s.raw" || continue
		st=$(pair_stats "$RAW/ssh/$s.raw")
		[ "$(field n "$st")" = 0 ] && continue
		case $s in
		redis) s="Redis, two sshds" ;;
		same) s="Redis, one sshd" ;;
		local) s="\`url=local\`" ;;
		esac
		out="$out${out:+, }$(field r_med "$st") × ($s)"
	done
	echo "$out"
}
# glance_m4: section 4, decisions one Redis made per second over TCP (against GET), and on a
# Unix socket.
glance_m4() {
	have m4-tmodule.out m4-tget1.out m4-tget2.out || return 0
	printf '%s on TCP (%s × GET)' "$M4_TMODPS" "$(ratio "$M4_TMODPS" "$M4_TGET")"
	have m4-module.out && printf ', %s on a Unix socket' "$M4_MODPS"
	echo
}
# glance_m5: section 5, a waiting login's RSS (against the baseline's) and CPU, medians and
# p99.
glance_m5() {
	have m5-rss m5-base-rss m5-cpu-us || return 0
	awk -v r="$(n1 "$M5_RSS" 1)" -v b="$(n1 "$M5_BRSS" 1)" -v c="$(n1 "$M5_CPU" 1)" \
		-v p="$(n1 "$M5_CPU" 2)" -v w="$M5_WINDOW" 'BEGIN {
		printf "%d KiB (%.3f ×); %.0f µs, %.0f µs in %s s\n", r, r / b, c, p, w }'
}
# glance_m8: section 8, Redis's memory per waiting login, in its longest queue.
glance_m8() {
	have spread/params spread/rows || return 0
	local n b
	n=$(sed -n 's/^ROWS=//p' "$RAW/spread/params")
	n=${n##* }
	n=${n%%:*}
	b=$(field bytes_per_waiter "$(grep "^mode=fit n=$n " "$RAW/spread/rows")")
	[ -n "$b" ] && echo "$b bytes ($n waiting)"
}
# glance_m3: section 3, the spacing of admissions and the p99 lateness.
glance_m3() {
	have m3.txt || return 0
	echo "$(field gap_min_ms "$M3"), $(field gap_median_ms "$M3"), $(field gap_max_ms "$M3") ms; $(field late_p99_us "$M3") µs late p99"
}

cat <<-EOF
	# pam_flowslot benchmarks

	Generated by \`$COMMAND\` (bench/measure.sh, then bench/report.sh) on $DATE, in ${ELAPSED} s.
	Every figure below was measured in that one run, but for the dated tables of [Against older
	code](#against-older-code), and every ratio is against a baseline measured in the same run
	on the same machine. Nothing here is a pass/fail threshold:
	\`make bench\` is not part of \`make check\`.$([ "$QUICK" = 1 ] && printf '\n\n**QUICK=1: a smoke run with fewer and shorter rounds. These are not the committed figures.**')

	## At a glance

	| what the module costs | in this run | from |
	|---|---|---|
	$(row "a login's time, Redis over TCP" "$(glance_m2 tcp)" 2)
	$(row "a login's time, Unix socket" "$(glance_m2 unix)" 2)
	$(row "a login's time, \`url=local\`" "$(glance_m2 local)" 2)
	$(row "a real ssh login's time" "$(glance_ssh)" 13)
	$(row "one Redis's decisions a second" "$(glance_m4)" 4)
	$(row "a waiting login: RSS; CPU, median, p99" "$(glance_m5)" 5)
	$(row "Redis's memory per waiting login" "$(glance_m8)" 8)
	$(row "stagger: spacing min, median, max" "$(glance_m3)" 3)

	Time added: with the module less without, per pair of logins; n ×: the median of the pairs'
	ratios, with ÷ without (for RSS, against a login held as long without the module).

EOF
for n in 2 3 4 5 8 13; do
	h=$(heading "$n")
	[ -n "$h" ] && printf '[§%s]: #%s\n' "$n" "$(slug "$h")"
done
echo
cat "$BODY"
