#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The section of BENCHMARKS.md on what TLS costs, rendered from the raw results bench/tls.sh
# wrote into RAWDIR/tls/ alone. bench/report.sh calls it (PNG and LINK are taken and ignored:
# no picture).
#
#   bench/tls-report.sh RAWDIR [PNG [LINK]]
# shellcheck disable=SC2154 # PAIRS, LIBSSL ...: set by load from the raw results
set -u
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

if [ $# -lt 1 ] || [ $# -gt 3 ]; then
	fail "usage: bench/tls-report.sh RAWDIR [PNG [LINK]]"
fi
RAW=$1/tls
for f in params tcp.raw tcp.txt decisions.txt maps-new-unix maps-plain maps-tls ldd-new size-new; do
	[ -f "$RAW/$f" ] || fail "$RAW/$f: no raw results of the TLS measurement (bench/tls.sh writes them)"
done
load "$RAW/params"

# pairs FILE WHAT: over the pairs "a_us b_us" of FILE, WHAT is a_med, a_p90, b_med, b_p90 (ms),
# ratio (of the medians), diff (median of the per-pair B - A, ms), pratio (median of the
# per-pair B / A), or n. Nearest rank.
pairs() {
	awk -v what="$2" '
	function rank(n, p) { r = int((n * p + 99) / 100); return r < 1 ? 1 : r }
	function sort(v, n,   i, j, t) {
		for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
	}
	{ n++; a[n] = $1; b[n] = $2; d[n] = $2 - $1; q[n] = $2 / $1 }
	END {
		sort(a, n); sort(b, n); sort(d, n); sort(q, n)
		m = rank(n, 50); p = rank(n, 90)
		if (what == "a_med") printf "%.2f", a[m] / 1000
		else if (what == "a_p90") printf "%.2f", a[p] / 1000
		else if (what == "b_med") printf "%.2f", b[m] / 1000
		else if (what == "b_p90") printf "%.2f", b[p] / 1000
		else if (what == "ratio") printf "%.3f", b[m] / a[m]
		else if (what == "diff") printf "%+.2f", d[m] / 1000
		else if (what == "pratio") printf "%.3f", q[m]
		else print n
	}' "$RAW/$1"
}
# dec NAME FIELD: FIELD of optcost's line for configuration NAME.
dec() { field "$2" "$(grep "^name=$1 " "$RAW/decisions.txt")"; }
# mapped SERVICE: the mappings of libssl and of libcrypto in that login's process.
mapped() {
	load "$RAW/maps-$1"
	echo "libssl $LIBSSL times and libcrypto $LIBCRYPTO"
}
linked() { grep -cE '^(libssl|libcrypto)\.so' "$RAW/ldd-$1"; }
fails() { echo $(($(field fail_a "$(cat "$RAW/$1.txt")") + $(field fail_b "$(cat "$RAW/$1.txt")"))); }
complaints() { echo $(($(field complaints_a "$(cat "$RAW/$1.txt")") + $(field complaints_b "$(cat "$RAW/$1.txt")"))); }
row() { printf '| %s | %s | %s | %s |' "$(pairs "$1" "${2}_med")" "$(pairs "$1" "${2}_p90")" "$3" "$4"; }

T_DIFF=$(pairs tcp.raw diff)
D_PLAIN=$(dec plain median_us)
D_TLS=$(dec tls median_us)
D_DIFF=$(ms $((D_TLS - D_PLAIN)))

echo "## 12. What TLS costs: a plain login, and a rediss:// decision"
echo
echo "Issue 21 asked two things of the module's own TLS (\`rediss://\`, \`src/tls.c\`, libssl"
echo "loaded with \`dlopen\` only for the \`rediss\` schemes). First, that a login on \`redis://\`"
echo "or \`unix://\` pay nothing measurable for TLS existing: here, whether libssl is mapped in"
echo "a plain login (against the module before TLS, measured once: $(past_link "$1"))."
echo "Second, the price of the handshake: on one redis-server with a plaintext \`--port\` and a"
echo "\`--tls-port\` (a test CA made by openssl for the run, the certificate naming 127.0.0.1,"
echo "\`tls_ca_file=\`), $PAIRS pairs of logins on \`redis://127.0.0.1\` and on"
echo "\`rediss://127.0.0.1\`, then $ROUNDS decisions of each in one process, alternating"
echo "(\`bench/optcost\`: \`rslot_reserve\`, the module's code path, a connection per decision,"
echo "and for \`rediss://\` libssl loaded, its context made and a handshake, per decision)."
echo "Every login and decision was admitted at \`interval=1ms\` with \`fallback=closed\`, so each"
echo "was decided by the server ($SERVER_CALLS script calls counted there: $EXPECTED_CALLS, warm-ups included, and a retry"
echo "wherever a script was not yet loaded)."
echo "Times in ms, medians and p90 by nearest rank; B − A is the median of the per-pair"
echo "differences."
echo
echo "| login or decision | median | p90 | B ÷ A (medians) | B − A (median) |"
echo "|---|---|---|---|---|"
echo "| A: a login on \`redis://\` $(row tcp.raw a "" "")"
echo "| B: a login on \`rediss://\` $(row tcp.raw b "$(pairs tcp.raw ratio)" "$T_DIFF")"
echo "| A: a decision on \`redis://\`, in one process | $(ms "$D_PLAIN") | $(ms "$(dec plain p90_us)") | | |"
echo "| B: a decision on \`rediss://\`, in one process | $(ms "$D_TLS") | $(ms "$(dec tls p90_us)") | $(ratio "$D_TLS" "$D_PLAIN") | $D_DIFF (of the medians) |"
echo
echo "**A plain login with TLS in the module:** a module of $(cat "$RAW/size-new") bytes, which"
echo "links neither libssl nor libcrypto (\`ldd\`: $(linked new) of them). Mapped in the login's"
echo "process, read from \`/proc/PID/maps\` by a \`pam_exec\` step after the module: $(mapped new-unix)"
echo "after a \`unix://\` login, $(mapped plain) after a \`redis://\` one; $(mapped tls) after a"
echo "\`rediss://\` login, which shows that the check sees them when they are there."
echo
echo "**The handshake's price:** a login on \`rediss://\` took ${T_DIFF#+} ms more than one on"
echo "\`redis://\` (median of the pairs); in one process a decision took $D_DIFF ms more, $(ratio "$D_TLS" "$D_PLAIN") ×"
echo "(min $(ms "$(dec tls min_us)"), p99 $(ms "$(dec tls p99_us)") ms against min"
echo "$(ms "$(dec plain min_us)"), p99 $(ms "$(dec plain p99_us)")). A login pays, besides the"
echo "handshake, for loading libssl and libcrypto into a fresh process. Both over loopback: a"
echo "network's round trips add to the handshake (TLS 1.3: one more) and to the plain"
echo "connection alike. A measurement, not a test: nothing here fails a build; single pairs"
echo "carry the noise of whatever else runs on the machine."
F=$(fails tcp)
C=$(complaints tcp)
if [ "$F" != 0 ] || [ "$C" != 0 ]; then
	echo
	echo "**Not as designed:** $F logins failed and the module logged $C lines in the pairs"
	echo "(see \`tls/tcp.txt\` in the raw results)."
fi
echo
if [ -f "$1/machine" ]; then
	echo "Measured by \`bench/tls.sh\` in $ELAPSED s of this run (load average $LOAD)."
else
	echo "Measured on its own, apart from the rest of this file: \`bash bench/tls.sh RAWDIR\`,"
	echo "then \`bash bench/tls-report.sh RAWDIR\`, on $DATE, tree \`$REV\`, $NPROC CPUs,"
	echo "redis-server $REDIS_V, libssl3 $OPENSSL_V, in $ELAPSED s (load average $LOAD)."
fi
