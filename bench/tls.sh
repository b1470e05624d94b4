#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# What TLS costs (issue 21), in the same run. (a) Whether libssl or libcrypto is mapped in a
# login that used only unix:// or redis:// (a pam_exec step after the module reads its
# parent's /proc/PID/maps), against a rediss:// login that must map it (a plain login against
# the module before TLS was measured once, on 2026-12-03: bench/past.md). (b) One private
# redis-server with a plaintext --port and a --tls-port (a test CA made here, as tests/suites/tls.sh
# does; the certificate names 127.0.0.1): whole logins through redis:// and rediss:// in
# pamtester pairs, and decisions in one process (bench/optcost: rslot_reserve, a connection,
# and for rediss:// libssl loaded and a handshake, per decision). Writes its raw results into
# RAWDIR/tls/ (bench/measure.sh calls it); bench/tls-report.sh renders its section of
# BENCHMARKS.md from them. Nothing here asserts a time.
#
#   bash bench/tls.sh RAWDIR     (after make and the bench clients; QUICK=1 for fewer pairs)
set -u
# shellcheck source=tests/helpers/lib.sh
. "$(dirname "$0")/../tests/helpers/lib.sh"
# shellcheck source=bench/lib.sh
. "$TOP/bench/lib.sh"
say() { echo "tls: $*" >&2; }

[ $# -eq 1 ] || { echo "usage: bench/tls.sh RAWDIR" >&2; exit 2; }
RAW=$1 # for run and put (bench/lib.sh); absolute, for the clients run from $TMP
case $RAW in /*) ;; *) RAW=$PWD/$RAW ;; esac
OUT=$RAW/tls
if [ "${QUICK:-0}" = 1 ]; then PAIRS=30 ROUNDS=200; else PAIRS=300 ROUNDS=2000; fi
BIN=$TOP/build/bench
T0=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
rm -rf "$OUT"
mkdir -p "$OUT" || fail "mkdir $OUT"
put_param() { printf '%s=%s\n' "$1" "$2" >> "$OUT/params"; }

# What the module is linked to.
ldd "$TOP/pam_flowslot.so" | awk '{ print $1 }' | sort > "$OUT/ldd-new"
stat -c %s "$TOP/pam_flowslot.so" > "$OUT/size-new"

# The test PKI: a CA, and a server certificate for 127.0.0.1 (and localhost).
mkdir "$TMP/pki"
if ! { openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
	-keyout "$TMP/pki/ca.key" -out "$TMP/pki/ca.crt" -subj "/CN=flowslot bench CA" 2> /dev/null &&
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$TMP/pki/server.key" -out "$TMP/pki/server.csr" -subj "/CN=127.0.0.1" 2> /dev/null &&
	openssl x509 -req -in "$TMP/pki/server.csr" -CA "$TMP/pki/ca.crt" -CAkey "$TMP/pki/ca.key" \
		-CAcreateserial -days 2 -out "$TMP/pki/server.crt" \
		-extfile <(printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" "extendedKeyUsage=serverAuth") \
		2> /dev/null; }; then
	fail "openssl could not make the test CA and certificate"
fi
chmod 0600 "$TMP"/pki/*.key

# One server: a Unix socket, a plaintext port ($PORT, set by on_free_port) and a TLS port
# ($TLS_PORT).
TLS_PORT=$(free_port)
on_free_port PORT start_redis tls --tls-port "$TLS_PORT" --tls-cert-file "$TMP/pki/server.crt" \
	--tls-key-file "$TMP/pki/server.key" --tls-ca-cert-file "$TMP/pki/ca.crt" \
	--tls-auth-clients no --port || fail "the redis-server with --tls-port did not start"

PERMIT="auth required @P/pam_permit.so"
GATE="interval=1ms countdown=0 timeout=10s fallback=closed"
CA="tls_ca_file=$TMP/pki/ca.crt"
service new-unix "auth required @M url=unix://$TMP/tls.sock key=bench:tls:new $GATE" "$PERMIT"
# shellcheck disable=SC2153 # PORT: set by on_free_port
service plain "auth required @M url=redis://127.0.0.1:$PORT/0 key=bench:tls:plain $GATE" "$PERMIT"
service tls "auth required @M url=rediss://127.0.0.1:$TLS_PORT/0 $CA key=bench:tls:tls $GATE" "$PERMIT"
pamtester_cmd() {
	echo env LD_PRELOAD=libpam_wrapper.so PAM_WRAPPER=1 PAM_WRAPPER_SERVICE_DIR="$TMP/svc" \
		pamtester -v "$1" benchuser authenticate
}

# Mapped libraries: a pam_exec step after the module lists what its parent, the login, maps.
cat > "$TMP/maps.sh" <<-'EOF'
	m=/proc/$PPID/maps
	{
		echo "MODULE=$(grep -c 'pam_flowslot\.so' "$m")"
		echo "LIBSSL=$(grep -c '/libssl\.so' "$m")"
		echo "LIBCRYPTO=$(grep -c '/libcrypto\.so' "$m")"
	} > "$1"
EOF
MAPS="auth required @P/pam_exec.so /bin/sh $TMP/maps.sh"
for s in new-unix plain tls; do
	cp "$TMP/svc/$s" "$TMP/svc/maps-$s"
	service_line=$(printf '%s\n' "$MAPS $TMP/maps-$s.out" | sed "s|@P|$PAM_DIR|g")
	# After the module, before pam_permit.
	sed -i "1a $service_line" "$TMP/svc/maps-$s"
	(cd "$TMP" && env LD_PRELOAD=libpam_wrapper.so PAM_WRAPPER=1 PAM_WRAPPER_SERVICE_DIR="$TMP/svc" \
		pamtester -v "maps-$s" benchuser authenticate) > "$TMP/maps-$s.log" 2>&1 ||
		fail "the login maps-$s: $(tail -n 3 "$TMP/maps-$s.log")"
	cp "$TMP/maps-$s.out" "$OUT/maps-$s" || fail "maps-$s: no result"
done

# (b) redis:// (A) against rediss:// (B): whole logins, then decisions in one process.
say "a login on redis:// against rediss://, $PAIRS pairs"
# shellcheck disable=SC2046
line=$(cd "$TMP" && run "$BIN/pairtime" "$PAIRS" "$TMP/tcp.raw" "$TMP/plain.log" \
	"$TMP/tls.log" -- $(pamtester_cmd plain) -- $(pamtester_cmd tls)) ||
	fail "pairtime tcp: $line"
cp "$TMP/tcp.raw" "$OUT/" || fail "tcp.raw"
echo "$line complaints_a=$(grep -c 'pam_flowslot(' "$TMP/plain.log") complaints_b=$(grep -c 'pam_flowslot(' "$TMP/tls.log")" > "$OUT/tcp.txt"
say "a decision on redis:// against rediss:// in one process, $ROUNDS rounds"
mkdir -p "$TMP/state"
run "$BIN/optcost" "$ROUNDS" interval=1ms max_wait=60m timeout=10s "state_dir=$TMP/state" \
	-- plain "url=redis://127.0.0.1:$PORT/0" key=bench:tls:dplain \
	-- tls "url=rediss://127.0.0.1:$TLS_PORT/0" "$CA" key=bench:tls:dtls \
	> "$OUT/decisions.txt" 2> "$TMP/optcost.err" ||
	fail "optcost: $(cat "$OUT/decisions.txt") $(head -n 5 "$TMP/optcost.err")"
# The script calls the server ran (the schedules themselves lapse within a millisecond): each
# login and decision, warm-ups included, is one, as fallback=closed admits none without it.
put_param SERVER_CALLS "$(redis-cli -s "$TMP/tls.sock" info commandstats |
	awk -F'[=,:]' '/^cmdstat_eval(sha)?:/ { s += $3 } END { print s + 0 }')"
# The logins of the maps, and of the pairs (5 warm-ups each).
LOGINS=$((3 + 2 * (PAIRS + 5)))
put_param EXPECTED_CALLS $((LOGINS + 2 * (ROUNDS + 20)))
put_param PAIRS "$PAIRS"
put_param ROUNDS "$ROUNDS"
put_param DATE "$(date -u '+%Y-%m-%d at %H:%M UTC')"
put_param REV "$(git -C "$TOP" describe --always --dirty 2> /dev/null || echo "not a git tree")"
put_param REDIS_V "$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')"
put_param OPENSSL_V "$(dpkg-query -W -f='${Version}' libssl3 2> /dev/null)"
put_param NPROC "$(nproc)"
put_param LOAD "$LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
put_param ELAPSED "$(($(date +%s) - T0))"
stop_redis tls
say "done in $(($(date +%s) - T0)) s: $OUT"
