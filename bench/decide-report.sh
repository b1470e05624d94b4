#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The part of measurement 11 on what a decision costs the server against a GET, and what the
# script runs inside each operation, rendered from the raw results bench/decide.sh wrote into
# RAWDIR/lookup/ alone. bench/lookup-report.sh calls it.
#
#   bench/decide-report.sh RAWDIR
# shellcheck disable=SC2154 # DECIDE_*: set by load from the raw results
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

[ $# -eq 1 ] || fail "usage: bench/decide-report.sh RAWDIR"
RAW=$1/lookup
if [ ! -f "$RAW/decide-params" ] || [ ! -f "$RAW/decide" ] || [ ! -f "$RAW/profile" ]; then
	fail "$RAW: no raw results of the decisions (bench/decide.sh writes them)"
fi
load "$RAW/decide-params"

# cpu WHAT SCRIPT FORM: over the rounds, the server's CPU per request in one round (all its
# batches): FORM "us" the median round, "range" the lowest to the highest, "script" Redis's own
# usec per call (median round), "odd" the batches that did not do what they were for.
cpu() {
	awk -v what="$1" -v script="$2" -v form="$3" '
	{ delete v; for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
	v["what"] == what && v["script"] == script {
		r = v["round"]; ns[r] += v["cpu_ns"]; n[r] += v["requests"]; us[r] += v["usec"]
		calls[r] += v["calls"]; odd += v["odd"]
		if (v["calls"] != v["requests"]) odd++
	}
	END {
		k = 0
		for (r in ns) { k++; a[k] = ns[r] / n[r] / 1000; b[k] = us[r] / calls[r] }
		if (form == "odd") { print odd + 0; exit }
		if (k == 0) { print ""; exit }
		for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j] < a[j - 1]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		for (i = 2; i <= k; i++) for (j = i; j > 1 && b[j] < b[j - 1]; j--) { t = b[j]; b[j] = b[j - 1]; b[j - 1] = t }
		if (form == "us") printf "%.1f\n", a[int((k + 1) / 2)]
		else if (form == "script") printf "%.1f\n", b[int((k + 1) / 2)]
		else printf "%.1f to %.1f\n", a[1], a[k]
	}' "$RAW/decide"
}
x() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
GET=$(cpu get - us)
# row LABEL PLACES WHAT: one row of the decisions' table.
row() {
	local us
	us=$(cpu "$3" new us)
	printf '| %s | %s | %s (%s) | %s | %s |\n' "$1" "$2" "$us" "$(cpu "$3" new range)" \
		"$(x "$us" "$GET")" "$(cpu "$3" new script)"
}
Q0=$(cpu queued:0 new us)
Q1=$(cpu queued:1000 new us)
Q10=$(cpu queued:10000 new us)
FLAT=$(awk -v a="$Q0" -v b="$Q1" -v c="$Q10" 'BEGIN {
	hi = a; lo = a; if (b > hi) hi = b; if (c > hi) hi = c; if (b < lo) lo = b; if (c < lo) lo = c
	printf "%.2f", hi / lo }')
WORST=$(awk -v a="$Q0" -v b="$Q1" -v c="$Q10" -v d="$(cpu admitted new us)" 'BEGIN {
	hi = a; if (b > hi) hi = b; if (c > hi) hi = c; if (d > hi) hi = d; print hi }')
ODD=""
for w in admitted queued:0 queued:1000 queued:10000; do
	n=$(cpu "$w" new odd)
	[ "$n" != 0 ] && ODD="$ODD $w ($n batches)"
done
met() { awk -v v="$1" -v lim="$2" 'BEGIN { print (v <= lim) ? "met" : "not met" }'; }

echo "### What a decision costs the server, against a GET"
echo
echo "Issue 22 asked that a decision cost close to what it must: flat within 2 × from an empty"
echo "schedule to 10,000 places held, and under 4 × a GET. \`bench/decide.sh\` measures it on a"
echo "redis-server of its own (Unix socket), for this tree's \`src/slot.lua\` (the script before"
echo "issue 22's cuts, measured once: $(past_link "$1")). A decision is"
echo "a reservation from a login the schedule has never seen, with a WHO and a HOST"
echo "of its own and \`per_host=1\`: at \`interval=60m\` it is queued at the back of a schedule"
echo "holding 0, 1,000 or 10,000 places (each from a HOST of its own, made through the script);"
echo "at \`interval=1ms\` on a schedule holding none, it is admitted, first in line. Each batch is"
echo "\`redis-benchmark -c 10 -n $DECIDE_REQS\` of \`EVALSHA\`, the schedule copied back (\`COPY\`, untimed)"
echo "before it; GET, an \`EVALSHA\` of an empty script with the same arguments, and the floor (the"
echo "commands a queued reservation cannot do without, and no logic: \`TIME\`, the head, the lapsed"
echo "leases, the rank, one \`ZADD\` of the place, its lease and the new head, the old head's"
echo "\`ZREM\`, \`PEXPIRE\`) are batched alike. $DECIDE_ROUNDS rounds of $DECIDE_BATCHES batches each take them all in"
echo "turn. The server's CPU is its own \`sum_exec_runtime\` (\`/proc/PID/schedstat\`) over each"
echo "batch, over the requests: the median round (in brackets the lowest and the highest), and ×"
echo "GET; the script's own µs is Redis's \`usec\` per call in \`INFO commandstats\` (the median"
echo "round), which leaves out reading the request and writing the reply."
echo
echo "| request | places held | server CPU, µs per request | × GET | script's own µs |"
echo "|---|---|---|---|---|"
printf '| GET (baseline) | | %s (%s) | 1 | |\n' "$GET" "$(cpu get - range)"
printf '| EVALSHA of an empty script, the same arguments | | %s (%s) | %s | %s |\n' \
	"$(cpu empty empty us)" "$(cpu empty empty range)" "$(x "$(cpu empty empty us)" "$GET")" \
	"$(cpu empty empty script)"
printf '| the floor: a queued reservation'"'"'s commands, no logic | 1,000 | %s (%s) | %s | %s |\n' \
	"$(cpu floor floor us)" "$(cpu floor floor range)" "$(x "$(cpu floor floor us)" "$GET")" \
	"$(cpu floor floor script)"
row "reservation admitted, first in line" 0 admitted
row "reservation queued at the back" 0 queued:0
row "reservation queued at the back" "1,000" queued:1000
row "reservation queued at the back" "10,000" queued:10000
echo
echo "**Flat:** this tree's queued reservation took $FLAT × as much at its dearest of 0, 1,000 and"
echo "10,000 places held as at its cheapest: the goal of 2 × is **$(met "$FLAT" 2)**. **Against a GET:** its"
echo "dearest decision took $(x "$WORST" "$GET") × a GET: the goal of 4 × is **$(met "$(x "$WORST" "$GET")" 4)** by this run. The floor"
echo "row is what no script can go below with these commands: $(x "$(cpu floor floor us)" "$GET") × a GET, of which an"
echo "\`EVALSHA\` that does nothing, with the module's twelve arguments, is $(x "$(cpu empty empty us)" "$GET") ×. A decision must"
echo "read the clock, the head and the lapsed leases, rank itself, write its place, lease and head"
echo "and the expiry: seven commands run inside the script, each going through Redis's command"
echo "machinery, and the Lua around them, which converts every time between digits and numbers."
echo "This tree's dearest decision is $(x "$WORST" "$(cpu floor floor us)") × the floor."
echo
echo "**What we decided** (issue 22): the keys stay as they are, and the 4 × goal is left for a"
echo "protocol change. Going below the floor needs fewer commands a decision (one structure for"
echo "the head, the leases and the places) or fewer arguments, and either changes what is stored:"
echo "hosts upgrade one at a time and share one key (HACKING.md, \"The Redis script's cost\"), so"
echo "that would be a new key format with a migration, not a cut. What was within the script is"
echo "done: the Lua between the commands is what stands between a decision and its floor."
if [ -n "$ODD" ]; then
	echo
	echo "**Not as designed:** a batch did not hold a place at the back for each request, or admit"
	echo "each, or not every request reached the script, in:$ODD (see \`lookup/decide\`)."
fi
echo

# The profile.
# prof SCRIPT OP STATE FIELD: a field of the profile's line.
prof() {
	awk -v s="$1" -v op="$2" -v st="$3" -v f="$4" '
	{ delete v; for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
	v["script"] == s && v["op"] == op && v["state"] == st { print v[f]; exit }' "$RAW/profile"
}
# inside SCRIPT OP STATE: the commands one call ran, in order, and how many a call ran on
# average (INFO commandstats over all of them).
inside() {
	local line seq
	line=$(awk -v s="$1" -v op="$2" -v st="$3" '
	{ delete v; for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
	v["script"] == s && v["op"] == op && v["state"] == st { print; exit }' "$RAW/profile")
	[ -n "$line" ] || { echo "n/a"; return; }
	seq=$(field seq "$line" | tr ',' '\n' | sed 's/\/.*//' | awk '
		$0 == last { n++; next }
		{ if (last != "") { out = out sep last (n > 1 ? " ×" n : ""); sep = ", " } last = $0; n = 1 }
		END { if (last != "") out = out sep last (n > 1 ? " ×" n : ""); print out }')
	printf '%s (%s a call)' "$seq" "$(echo "$line" | tr ' ' '\n' | awk -F= -v calls="$(field calls "$line")" '
		$1 ~ /^[a-z]+$/ && $1 != "script" && $1 != "op" && $1 != "state" && $1 != "calls" &&
		$1 != "members" && $1 != "verdicts" && $1 != "seq" { n += $2 } END { printf "%.1f", n / calls }')"
}
echo "### What the script runs inside"
echo
echo "Each operation, $DECIDE_CALLS calls in each state (the same schedules; renew and leave on places"
echo "held first for them, at the back; leave leaves a ghost), with \`slowlog-log-slower-than 0\`."
echo "The commands: one call's, in the order it ran them (\`SLOWLOG\` logs the commands a script"
echo "runs, each with its arguments and time, before the script's own entry), and in brackets"
echo "the commands per call over all the calls (\`INFO commandstats\`, after \`CONFIG RESETSTAT\`). The"
echo "time: the median of the calls' own \`SLOWLOG\` entries, in µs (whole µs, as Redis logs them)."
echo
echo "| operation | places held | commands run inside | µs |"
echo "|---|---|---|---|"
for op in admitted queued renew leave peek; do
	for n in $DECIDE_STATES; do
		# An admission is first in line: on a schedule that holds no place.
		[ "$op" = admitted ] && [ "$n" != 0 ] && continue
		case $op in
		admitted) label="reserve, admitted" ;;
		queued) label="reserve, queued" ;;
		*) label=$op ;;
		esac
		printf '| %s | %s | %s | %s |\n' "$label" "$n" "$(inside new "$op" "$n")" \
			"$(prof new "$op" "$n" usec_median)"
	done
done
echo
echo "What the reads return: the head is one member at score 0; the highest score, one member;"
echo "the scans of lapsed leases (and, where the schedule keeps ghosts, of forgotten ghosts)"
echo "return what lapsed since the last call, here nothing; a HOST's places and ghosts and a"
echo "login's rank are counts (\`ZCOUNT\` over one index score, or the places ahead: up to all"
echo "of them, still one skip-list walk); WHO's ghost is the members at one index score, here"
echo "none. None reads a band whole: every one is \`O(log N)\` in the schedule's size N, plus what"
echo "it returns."
echo
echo "Measured by \`bench/decide.sh\` in $DECIDE_ELAPSED s (load average $DECIDE_LOAD), tree \`$DECIDE_REV\`."
