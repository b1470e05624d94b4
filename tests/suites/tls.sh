#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Redis across an untrusted network. Part one: the stunnel route, kept for servers older
# than Redis 6: the module talks to a stunnel4 client on loopback, which carries it over TLS
# to a redis-server that listens with tls-port only and asks for a client certificate. The tunnels are made from the
# shipped etc/stunnel/flowslot-redis.conf, with a test CA made here by openssl. 1. Logins are
# staggered through the tunnel, on the TLS server's schedule. 2. The server has no plaintext
# port, and the module cannot use it without the tunnel. 3. A tunnel that trusts another CA,
# expects another name, or has no client certificate carries nothing: fallback=closed refuses,
# with one LOG_ERR line. 4. Between stunnel and Redis (recorded by a socat relay) the password
# does not appear; the same relay in front of a plaintext Redis shows that it would.
# Part two: the module's own TLS (rediss://, rediss-sentinel://, rediss-cluster://), against
# redis-servers with --tls-port: staggered logins; each bad server refused within timeout with
# one LOG_ERR line naming the cause; tls_verify=ca; client certificates; an ACL user;
# Sentinel naming its master by IP; a Cluster redirecting; and the wire recorded. Then the
# files: CA and certificate files of another owner, writable by others, links or FIFOs, each
# refused at once and named; tls_ca_dir=; causes named whole; a CN that subjectAltName does not
# back; options that would check less than they say; short IPv4 forms checked as addresses.
set -u
. "$(dirname "$0")/../helpers/lib.sh"

PW='tls-s3cret-pw'
permit="auth required @P/pam_permit.so"

for tool in stunnel4 openssl socat; do
	command -v "$tool" > /dev/null ||
		skip_all "$tool is not installed (tests/deps.sh installs it as root: apt-get install $tool)"
done
# Debian's redis-server is built with TLS, linked to libssl.
ldd "$(command -v redis-server)" | grep -q libssl || skip_all "this redis-server is built without TLS"

# The test PKI: our CA, a server certificate for redis.example.net and a client certificate
# from it, and another CA, as a man in the middle would have.
mkdir "$TMP/pki"
# issue NAME CN ISSUER EXTENSIONS: NAME.key and NAME.crt, signed by ISSUER's key.
issue() {
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$TMP/pki/$1.key" -out "$TMP/pki/$1.csr" -subj "/CN=$2" 2> /dev/null &&
		openssl x509 -req -in "$TMP/pki/$1.csr" -CA "$TMP/pki/$3.crt" -CAkey "$TMP/pki/$3.key" \
			-CAcreateserial -days 2 -out "$TMP/pki/$1.crt" \
			-extfile <(printf '%s\n' "$4") 2> /dev/null
}
ca() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-keyout "$TMP/pki/$1.key" -out "$TMP/pki/$1.crt" -subj "/CN=$2" 2> /dev/null
}
if ! { ca ca "flowslot test CA" && ca other-ca "someone else's CA" &&
	issue server redis.example.net ca "subjectAltName=DNS:redis.example.net
extendedKeyUsage=serverAuth" &&
	issue client login-host.example.net ca "extendedKeyUsage=clientAuth"; }; then
	echo "Bail out! openssl could not make the test CA and certificates"
	exit 1
fi
chmod 0600 "$TMP"/pki/*.key

# The Redis server: TLS only, a client certificate required, a password.
tls_redis() {
	start_redis tls --tls-port "$1" --tls-cert-file "$TMP/pki/server.crt" \
		--tls-key-file "$TMP/pki/server.key" --tls-ca-cert-file "$TMP/pki/ca.crt" \
		--tls-auth-clients yes --requirepass "$PW" && TLS_PORT=$1
}
if ! on_free_port port tls_redis; then
	echo "Bail out! the TLS redis-server did not start"
	exit 1
fi
tlscli() {
	redis-cli --tls --cacert "$TMP/pki/ca.crt" --cert "$TMP/pki/client.crt" \
		--key "$TMP/pki/client.key" -h 127.0.0.1 -p "$TLS_PORT" -a "$PW" --no-auth-warning "$@"
}

# tunnel NAME [OPTION=VALUE...]: stunnel4 running etc/stunnel/flowslot-redis.conf, accepting
# on a free loopback port ($port), connecting to the TLS Redis, with our CA and client
# certificate; each OPTION=VALUE replaces the example's line (an empty VALUE drops it).
tunnel() {
	name=$1
	shift
	edits=(-e "/^pid =/a syslog = no\ndebug = info"
		-e "s|^connect = .*|connect = 127.0.0.1:$TLS_PORT|"
		-e "s|^CAfile = .*|CAfile = $TMP/pki/ca.crt|"
		-e "s|^cert = .*|cert = $TMP/pki/client.crt|"
		-e "s|^key = .*|key = $TMP/pki/client.key|")
	for o in "$@"; do
		if [ -z "${o#*=}" ]; then
			edits+=(-e "/^${o%%=*} = /d")
		else
			edits+=(-e "s|^${o%%=*} = .*|${o%%=*} = ${o#*=}|")
		fi
	done
	on_free_port port start_tunnel "$name"
}
start_tunnel() {
	sed "${edits[@]}" -e "s|^accept = .*|accept = 127.0.0.1:$2|" \
		"$TOP/etc/stunnel/flowslot-redis.conf" > "$TMP/$1.conf"
	stunnel4 "$TMP/$1.conf" > "$TMP/$1.log" 2>&1 &
	tpid=$!
	PIDS="$PIDS $tpid"
	for _ in $(seq 200); do
		grep -q 'Configuration successful' "$TMP/$1.log" && return 0
		kill -0 "$tpid" 2> /dev/null || break
		sleep 0.05
	done
	kill "$tpid" 2> /dev/null
	echo "stunnel $1 did not start:" >&2
	cat "$TMP/$1.log" >&2
	return 1
}

# errs NAME: login NAME's LOG_ERR lines (pam_wrapper writes them as SYSLOG(3)).
errs() { grep 'SYSLOG(3)' "$TMP/$1.err"; }
# refused_closed NAME: login NAME was refused by fallback=closed, with one LOG_ERR line.
refused_closed() {
	[ "$(rc_of "$1")" = 1 ] &&
		grep -q 'Authentication service cannot retrieve authentication info' "$TMP/$1.err" &&
		[ "$(errs "$1" | wc -l)" = 1 ] && return 0
	echo "$1: rc $(rc_of "$1"), LOG_ERR: $(errs "$1")" >&2
	return 1
}
shown() { errs "$1" | sed 's/.*SYSLOG(3): //' | head -1; }
# closed_service NAME PORT: a service NAME on the Redis URL 127.0.0.1:PORT, fallback=closed.
closed_service() {
	service "$1" "auth required @M url=redis://:$PW@127.0.0.1:$2 key=tls-$1 timeout=2s fallback=closed" \
		"$permit"
}

if ! tunnel good; then
	echo "Bail out! stunnel4 did not start"
	exit 1
fi
GOOD=$port

# 1. Three logins at once through the tunnel, configured as the recipe says (the password in
# password_file=): staggered one interval apart, decided by the Redis behind it, whose
# schedule key now exists.
printf '%s\n' "$PW" > "$TMP/redis.secret"
chmod 0600 "$TMP/redis.secret"
service stagger "auth required @M url=redis://127.0.0.1:$GOOD password_file=$TMP/redis.secret key=tls:%s interval=1s timeout=2s countdown=0 fallback=closed debug" \
	"$STAMP" "$permit"
rm -f "$TMP/stamps"
# The key expires an interval after the last slot, which a loaded machine can pass before the
# logins are all reaped: look for it while they wait.
key_seen() { [ "$(tlscli exists tls:stagger 2> /dev/null)" = 1 ] && touch "$TMP/key.seen"; }
wait_for 20 key_seen &
seer=$!
logins s stagger 3
wait "$seer"
all_admitted() {
	for n in s01 s02 s03; do
		[ "$(rc_of $n)" = 0 ] && grep -q "redis 127.0.0.1:$GOOD: decided" "$TMP/$n.err" &&
			continue
		echo "$n: rc $(rc_of $n)" >&2
		cat "$TMP/$n.err" >&2
		return 1
	done
}
check "3 logins through stunnel: admitted, each decided by Redis through the tunnel" all_admitted
gaps=$(sort -n "$TMP/stamps" | awk 'NR > 1 { printf "%d ", ($1 - prev) / 1e6 } { prev = $1 }')
min_gap=$(echo "$gaps" | tr ' ' '\n' | grep . | sort -n | head -1)
check "... staggered: admissions at least 500 ms apart at interval=1s (gaps: ${gaps}ms)" \
	[ "${min_gap:-0}" -ge 500 ]
check "... the schedule key tls:stagger is on the TLS server (redis-cli --tls)" \
	[ -e "$TMP/key.seen" ]
check "... with no LOG_ERR line, and no password in the logs" \
	sh -c "! grep -qE 'SYSLOG\(3\)|$PW' '$TMP'/s0?.err"

# 2. No plaintext port: the server's port is 0, a plaintext client on the TLS port gets no
# answer, and the module straight to it (no tunnel) follows fallback=closed.
check "the TLS server has no plaintext port (port $(rcli tls -a "$PW" --no-auth-warning config get port | tail -1))" \
	[ "$(rcli tls -a "$PW" --no-auth-warning config get port | tail -1)" = 0 ]
check "a plaintext PING to the TLS port gets no PONG" \
	sh -c "! timeout 5 redis-cli -h 127.0.0.1 -p $TLS_PORT -a '$PW' --no-auth-warning ping 2> /dev/null | grep -q PONG"
closed_service direct "$TLS_PORT"
login direct direct alice
check "the module straight to the TLS port: refused by fallback=closed, one LOG_ERR ($(shown direct))" \
	refused_closed direct

# 3. Tunnels that must carry nothing. A login through each is refused (fallback=closed), the
# module logs why at LOG_ERR, and stunnel (or, for a missing client certificate, the server)
# says why the connection was dropped.
# says LOG PATTERN: $TMP/LOG.log matches PATTERN.
says() {
	grep -Eq "$2" "$TMP/$1.log" && return 0
	tail -n 15 "$TMP/$1.log" >&2
	return 1
}
# bad_tunnel NAME WHY LOG PATTERN [OPTION=VALUE...]: a tunnel NAME with those options.
bad_tunnel() {
	name=$1 why=$2 log=$3 pattern=$4
	shift 4
	if ! tunnel "$name" "$@"; then
		not_ok "$why: stunnel did not start"
		return
	fi
	closed_service "$name" "$port"
	login "$name" "$name" alice
	check "$why: refused by fallback=closed, one LOG_ERR ($(shown "$name"))" refused_closed "$name"
	by=stunnel
	[ "$log" = tls ] && by="the server"
	check "... dropped by $by: $(grep -Eo "$pattern" "$TMP/$log.log" | head -1)" \
		says "$log" "$pattern"
	check "... nothing reached the schedule" [ "$(tlscli exists "tls-$name" 2> /dev/null)" = 0 ]
}
bad_tunnel wrongca "a tunnel trusting another CA (a wrong server certificate)" wrongca \
	'Rejected by CERT at depth=1: .*' "CAfile=$TMP/pki/other-ca.crt"
bad_tunnel wronghost "a tunnel expecting another server name" wronghost \
	'CERT: Subject checks failed' "checkHost=other.example.net"
bad_tunnel nocert "a tunnel without a client certificate" tls \
	'peer did not return a certificate' "cert=" "key="

# 4. What crosses the wire between stunnel and Redis, through a socat relay that records it.
# relay NAME TARGET-PORT: socat on a free port ($port), dumping NAME.c2s and NAME.s2c.
relay() { on_free_port port start_relay "$1" "$2"; }
start_relay() {
	: > "$TMP/$1.c2s"
	socat -r "$TMP/$1.c2s" -R "$TMP/$1.s2c" \
		"TCP-LISTEN:$3,bind=127.0.0.1,reuseaddr,fork" "TCP:127.0.0.1:$2" 2> "$TMP/$1.log" &
	rpid=$!
	PIDS="$PIDS $rpid"
	for _ in $(seq 100); do
		(exec 3<> "/dev/tcp/127.0.0.1/$3") 2> /dev/null && return 0
		kill -0 "$rpid" 2> /dev/null || break
		sleep 0.05
	done
	kill "$rpid" 2> /dev/null
	return 1
}
# The control: the module straight to a plaintext Redis through the relay.
plain_redis() { start_redis plain --port "$1" --requirepass "$PW"; }
if on_free_port port plain_redis && relay capplain "$port" && CAPPLAIN=$port &&
	relay captls "$TLS_PORT" && tunnel cap "connect=127.0.0.1:$port" && CAP=$port; then
	service capplain "auth required @M url=redis://:$PW@127.0.0.1:$CAPPLAIN key=cap timeout=2s fallback=closed" \
		"$permit"
	login capplain capplain alice
	check "control: through the relay to a plaintext Redis, the password is on the wire" \
		sh -c "[ $(rc_of capplain) = 0 ] && grep -qaF '$PW' '$TMP/capplain.c2s'"
	service captls "auth required @M url=redis://:$PW@127.0.0.1:$CAP key=cap timeout=2s fallback=closed" \
		"$permit"
	login captls captls alice
	check "through stunnel and the relay to the TLS Redis: admitted, key on the server" \
		[ "$(rc_of captls):$(tlscli exists cap 2> /dev/null)" = 0:1 ]
	# A TLS record starts with its content type (22, handshake) and version 3.x.
	check "... the relay saw TLS ($(wc -c < "$TMP/captls.c2s") bytes, starting $(head -c 2 "$TMP/captls.c2s" | od -An -tx1 | tr -d ' '))" \
		[ "$(head -c 2 "$TMP/captls.c2s" | od -An -tx1 | tr -d ' ')" = 1603 ]
	check "... and neither the password nor EVALSHA in clear" \
		sh -c "! grep -qaE '$PW|EVALSHA|AUTH' '$TMP/captls.c2s'"
else
	not_ok "the capture: the relays or the tunnel did not start"
fi

# --- Part two: the module's own TLS. ---
# More certificates: a server named only by an IP address that is not the one we dial
# (tls_verify=ca's case), one for 127.0.0.1 (the sentinel, and the cluster nodes, whose bus
# asks each other for a client certificate), the Sentinel
# master's, and an expired one, issued three days ago for one day.
ok_pki=1
issue iponly "10.9.9.9" ca "subjectAltName=IP:10.9.9.9
extendedKeyUsage=serverAuth" || ok_pki=0
issue loop "127.0.0.1" ca "subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth,clientAuth" || ok_pki=0
issue master master.example.net ca "subjectAltName=DNS:master.example.net
extendedKeyUsage=serverAuth" || ok_pki=0
faketime -f -3d bash -c "$(declare -f issue); TMP=$TMP; issue expired redis.example.net ca 'subjectAltName=DNS:redis.example.net
extendedKeyUsage=serverAuth'" 2> /dev/null && openssl x509 -checkend 0 -noout -in "$TMP/pki/expired.crt" > /dev/null &&
	ok_pki=0
chmod 0600 "$TMP"/pki/*.key
[ "$ok_pki" = 1 ] || { echo "Bail out! openssl could not make the second set of certificates"; exit 1; }

# Under valgrind a handshake takes a second or more: a longer timeout, and bounds to match.
TO=2
[ -n "$VG" ] && TO=20
BOUND_MS=$((TO * 1000 + 2500))
plain_tcp() { start_redis plaintcp --port "$1"; }
# native_redis NAME CERT [options...] PORT: a TLS-only server with that certificate.
native_redis() {
	local name=$1 cert=$2
	shift 2
	local port=${*: -1}
	start_redis "$name" --tls-port "$port" --tls-cert-file "$TMP/pki/$cert.crt" \
		--tls-key-file "$TMP/pki/$cert.key" --tls-ca-cert-file "$TMP/pki/ca.crt" \
		--tls-auth-clients no "${@:1:$#-1}"
}
if ! { on_free_port NAT native_redis nat server --requirepass "$PW" &&
	on_free_port EXPIRED native_redis expired expired &&
	on_free_port IPONLY native_redis iponly iponly &&
	on_free_port PLAIN plain_tcp; }; then
	echo "Bail out! the redis-servers with --tls-port did not start"
	exit 1
fi
nrcli() { rcli nat -a "$PW" --no-auth-warning "$@"; }
has_schedule() { nrcli zrangebyscore "$1" 0 0 | grep -q '^s:'; }
CA="tls_ca_file=$TMP/pki/ca.crt"
NAME="tls_server_name=redis.example.net"
# native SERVICE URL [OPTIONS]: a service on URL, fallback=closed, timeout $TO; a state_dir of
# its own, as a host of its own: a host logs each cause at most once a second, and each of these
# logins is to name its own, whatever the one before met.
native() {
	service "$1" "auth required @M url=$2 key=nat-$1 timeout=${TO}s countdown=0 fallback=closed state_dir=$TMP/st-$1 ${3:-}" \
		"$permit"
}
# timed NAME SERVICE: one login as alice; its time in $took (ms).
timed() {
	local t0
	t0=$(now_ms)
	login "$1" "$2" alice
	took=$(($(now_ms) - t0))
}
# refused NAME CAUSE: refused by fallback=closed within the bound, with one LOG_ERR line
# that names CAUSE.
refused() {
	refused_closed "$1" && [ "$took" -le "$BOUND_MS" ] && errs "$1" | grep -qF -- "$2" &&
		return 0
	echo "$1: took ${took}ms (bound ${BOUND_MS}), LOG_ERR: $(errs "$1")" >&2
	return 1
}
admitted() {
	[ "$(rc_of "$1")" = 0 ] && ! errs "$1" > /dev/null && return 0
	echo "$1: rc $(rc_of "$1")" >&2
	cat "$TMP/$1.err" >&2
	return 1
}

# 5. Three logins at once through rediss:// (the password in password_file=), staggered one
# interval apart on the server's schedule.
service nstagger "auth required @M url=rediss://127.0.0.1:$NAT password_file=$TMP/redis.secret $CA $NAME key=nat:%s interval=1s timeout=${TO}s countdown=0 fallback=closed debug" \
	"$STAMP" "$permit"
rm -f "$TMP/stamps"
logins n nstagger 3
nat_admitted() {
	for n in n01 n02 n03; do
		[ "$(rc_of $n)" = 0 ] && grep -q "redis 127.0.0.1:$NAT: decided" "$TMP/$n.err" &&
			continue
		echo "$n: rc $(rc_of $n)" >&2
		cat "$TMP/$n.err" >&2
		return 1
	done
}
check "rediss://: 3 logins admitted, each decided by the TLS server" nat_admitted
gaps=$(sort -n "$TMP/stamps" | awk 'NR > 1 { printf "%d ", ($1 - prev) / 1e6 } { prev = $1 }')
min_gap=$(echo "$gaps" | tr ' ' '\n' | grep . | sort -n | head -1)
check "... staggered at interval=1s (gaps: ${gaps}ms)" [ "${min_gap:-0}" -ge 500 ]
check "... on the TLS server's schedule, nat:nstagger ($(nrcli zrangebyscore nat:nstagger 0 0 | cut -c1-24))" \
	has_schedule nat:nstagger
check "... no LOG_ERR line, no password in the logs" \
	sh -c "! grep -qE 'SYSLOG\(3\)|$PW' '$TMP'/n0?.err"

# 6. Each bad server: refused within timeout, one LOG_ERR line naming the cause.
# nbad NAME DESCRIPTION CAUSE URL OPTIONS
nbad() {
	native "$1" "$4" "${5:-}"
	timed "$1" "$1"
	check "$2: refused in ${took}ms, one LOG_ERR ($(shown "$1"))" refused "$1" "$3"
}
nbad wrongca "rediss:// trusting another CA" "certificate verify failed: self-signed certificate in certificate chain" \
	"rediss://:$PW@127.0.0.1:$NAT" "tls_ca_file=$TMP/pki/other-ca.crt $NAME"
nbad systemca "rediss:// with the system's trust store only" "certificate verify failed" \
	"rediss://:$PW@127.0.0.1:$NAT" "$NAME"
nbad wrongname "rediss:// expecting another name" "certificate verify failed: hostname mismatch" \
	"rediss://:$PW@127.0.0.1:$NAT" "$CA tls_server_name=other.example.net"
nbad wildcard "rediss:// expecting a name the certificate has only as a partial wildcard" \
	"certificate verify failed: hostname mismatch" \
	"rediss://:$PW@127.0.0.1:$NAT" "$CA tls_server_name=redis.example.net.evil"
nbad byip "rediss:// to 127.0.0.1 with no tls_server_name: the address checked as an IP" \
	"certificate verify failed: IP address mismatch" "rediss://:$PW@127.0.0.1:$NAT" "$CA"
nbad expired "rediss:// to an expired certificate" "certificate verify failed: certificate has expired" \
	"rediss://127.0.0.1:$EXPIRED" "$CA $NAME"
nbad plainport "rediss:// to a plaintext Redis" "TLS handshake: timed out: no answer to the TLS hello" \
	"rediss://:$PW@127.0.0.1:$PLAIN" "$CA $NAME"
nbad tlsport "redis:// (plaintext) to a TLS port" "without a word (a TLS port? use rediss://)" \
	"redis://:$PW@127.0.0.1:$NAT"
# A listener that accepts and says nothing.
stall_listener() {
	python3 -c 'import socket,sys,time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
held = []
while True: held.append(s.accept()[0])' "$1" 2> /dev/null &
	PIDS="$PIDS $!"
	wait_for 5 bash -c "exec 3<> /dev/tcp/127.0.0.1/$1" 2> /dev/null
}
if on_free_port STALL stall_listener; then
	nbad stall "rediss:// to a server that stalls the handshake" "TLS handshake: timed out" \
		"rediss://127.0.0.1:$STALL" "$CA $NAME"
	check "... and waited out its timeout (${took}ms)" [ "$took" -ge $((TO * 1000 - 100)) ]
	# Nothing was sent: the server made nothing, and is not asked again (pam_flowslot(7), "A
	# reservation asked again").
	check "... once: a handshake that timed out is not asked again (${took}ms, timeout ${TO}s)" \
		[ "$took" -lt $((2 * TO * 1000)) ]
else
	not_ok "the stalling listener did not start"
fi
# flowslotctl check, on the same objects, names the failure too (no conf file: the suite's
# own, empty).
: > "$TMP/ctl.conf"
mkdir -p "$TMP/ctl-state"
"$TOP/flowslotctl" "conf=$TMP/ctl.conf" "url=rediss://127.0.0.1:$NAT" "$CA" timeout=${TO}s \
	tls_server_name=other.example.net "state_dir=$TMP/ctl-state" check > "$TMP/ctl.out" 2>&1
ctl_rc=$?
check "flowslotctl check names the TLS failure ($(head -1 "$TMP/ctl.out"))" \
	sh -c "[ $ctl_rc != 0 ] && grep -q 'TLS handshake: certificate verify failed: hostname mismatch' '$TMP/ctl.out'"
"$TOP/flowslotctl" "conf=$TMP/ctl.conf" "url=rediss://127.0.0.1:$NAT" "$CA" "$NAME" timeout=${TO}s \
	"password_file=$TMP/redis.secret" "state_dir=$TMP/ctl-state" check > "$TMP/ctl2.out" 2>&1
check "... and passes on the right name ($(head -1 "$TMP/ctl2.out"))" grep -q '^ok: ' "$TMP/ctl2.out"
check "nothing reached the schedules of the refused logins" \
	[ "$(nrcli keys 'nat-*' | grep -c .)" = 0 ]
native keyperm "rediss://127.0.0.1:$TLS_PORT" "$CA $NAME tls_cert_file=$TMP/pki/client.crt tls_key_file=$TMP/pki/client.key"
chmod 0644 "$TMP/pki/client.key"
timed keyperm keyperm
chmod 0600 "$TMP/pki/client.key"
check "a client key readable by others: refused, named ($(shown keyperm))" \
	refused keyperm "tls_key_file: cannot use $TMP/pki/client.key: readable by group or others"

# 7. tls_verify=ca: the chain alone, for a certificate that names only an IP address.
native iponly "rediss://127.0.0.1:$IPONLY" "$CA"
timed iponlyname iponly
check "a certificate naming only 10.9.9.9, by name: refused ($(shown iponlyname))" \
	refused iponlyname "IP address mismatch"
native iponlyca "rediss://127.0.0.1:$IPONLY" "$CA tls_verify=ca"
login iponlyca iponlyca alice
check "... with tls_verify=ca: admitted, on that server" \
	sh -c "[ $(rc_of iponlyca) = 0 ] && [ \"\$(redis-cli -s '$TMP/iponly.sock' exists nat-iponlyca)\" = 1 ]"
native iponlyca2 "rediss://127.0.0.1:$IPONLY" "tls_ca_file=$TMP/pki/other-ca.crt tls_verify=ca"
timed iponlyca2 iponlyca2
check "... but tls_verify=ca still checks the chain ($(shown iponlyca2))" refused iponlyca2 \
	"certificate verify failed"

# 8. A server that requires client certificates (tls-auth-clients yes: the stunnel suite's).
native ccert "rediss://:$PW@127.0.0.1:$TLS_PORT" "$CA $NAME tls_cert_file=$TMP/pki/client.crt tls_key_file=$TMP/pki/client.key"
login ccert ccert alice
check "tls-auth-clients yes, with tls_cert_file and tls_key_file: admitted" admitted ccert
native nocert "rediss://:$PW@127.0.0.1:$TLS_PORT" "$CA $NAME"
timed nocert nocert
check "... without a client certificate: refused ($(shown nocert))" refused nocert "certificate required"

# 9. An ACL user through rediss://: AUTH user pass, the pass in password_file=.
nrcli acl setuser gate on '>gate-pw' '~nat-*' '+@all' > /dev/null
printf 'gate-pw\n' > "$TMP/gate.secret"
chmod 0600 "$TMP/gate.secret"
native acl "rediss://gate@127.0.0.1:$NAT" "$CA $NAME password_file=$TMP/gate.secret"
login acl acl alice
check "an ACL user through rediss://: admitted, key on the server" \
	sh -c "[ $(rc_of acl) = 0 ] && [ \"\$(redis-cli -s '$TMP/nat.sock' -a '$PW' --no-auth-warning exists nat-acl)\" = 1 ]"
printf 'wrong-pw\n' > "$TMP/gate.secret"
timed aclbad acl
check "... with a wrong password: refused ($(shown aclbad))" refused aclbad "AUTH: WRONGPASS"

# 10. Sentinel over TLS: the sentinel, on 127.0.0.1, checked as that address; the master it
# names by IP, checked as master.example.net (tls_server_name=).
tls_sentinel() {
	cat > "$TMP/sentinel.conf" <<-EOF
		port 0
		tls-port $1
		bind 127.0.0.1
		dir $TMP
		tls-cert-file $TMP/pki/loop.crt
		tls-key-file $TMP/pki/loop.key
		tls-ca-cert-file $TMP/pki/ca.crt
		tls-auth-clients no
		tls-replication yes
		sentinel monitor nmaster 127.0.0.1 $MASTER 1
	EOF
	redis-server "$TMP/sentinel.conf" --sentinel > "$TMP/sentinel.log" 2>&1 &
	PIDS="$PIDS $!"
	wait_for 10 sh -c "redis-cli --tls --cacert '$TMP/pki/ca.crt' -h 127.0.0.1 -p $1 sentinel get-master-addr-by-name nmaster 2> /dev/null | grep -q 127.0.0.1"
}
if on_free_port MASTER native_redis smaster master && on_free_port SENT tls_sentinel; then
	native sent "rediss-sentinel://127.0.0.1:$SENT/nmaster" "$CA tls_server_name=master.example.net debug"
	login sent sent alice
	check "rediss-sentinel://: admitted by the master the sentinel named by IP" \
		sh -c "[ $(rc_of sent) = 0 ] && grep -q 'redis 127.0.0.1:$MASTER: decided' '$TMP/sent.err' && [ \"\$(redis-cli -s '$TMP/smaster.sock' exists nat-sent)\" = 1 ]"
	native sentip "rediss-sentinel://127.0.0.1:$SENT/nmaster" "$CA"
	timed sentip sentip
	check "... without tls_server_name, the master checked as 127.0.0.1 is refused ($(shown sentip))" \
		sh -c "grep -q 'redis 127.0.0.1:$MASTER: TLS handshake: certificate verify failed: IP address mismatch' '$TMP/sentip.err' && [ $(rc_of sentip) = 1 ]"
	native sentname "rediss-sentinel://127.0.0.1:$SENT/nmaster" "tls_ca_file=$TMP/pki/other-ca.crt tls_server_name=master.example.net"
	timed sentname sentname
	check "... a sentinel whose chain fails: named as the sentinel ($(shown sentname))" \
		sh -c "grep -q 'sentinel 127.0.0.1:$SENT: TLS handshake: certificate verify failed' '$TMP/sentname.err' && [ $(rc_of sentname) = 1 ]"
else
	not_ok "Sentinel over TLS: the master or the sentinel did not start ($(tail -3 "$TMP/sentinel.log" 2> /dev/null))"
fi

# 11. A Cluster over TLS (tls-cluster yes), two masters; the seed MOVEs the login to the other
# node, named by IP and checked as one.
cluster_node() {
	native_redis "$1" loop --cluster-enabled yes --cluster-config-file "$TMP/$1.nodes" \
		--tls-cluster yes --tls-replication yes "$2"
}
clusterok() {
	for n in cl1 cl2; do
		rcli "$n" cluster info | grep -q 'cluster_state:ok' || return 1
	done
}
if on_free_port CL1 cluster_node cl1 && on_free_port CL2 cluster_node cl2 &&
	rcli cl1 cluster addslotsrange 0 8191 > /dev/null && rcli cl2 cluster addslotsrange 8192 16383 > /dev/null &&
	rcli cl1 cluster meet 127.0.0.1 "$CL2" > /dev/null && wait_for 15 clusterok; then
	# A service whose key the second node holds: nat-<name> with a slot >= 8192.
	for cname in c1 c2 c3 c4 c5 c6 c7 c8; do
		[ "$(rcli cl1 cluster keyslot "nat-$cname")" -ge 8192 ] && break
	done
	native "$cname" "rediss-cluster://127.0.0.1:$CL1" "$CA debug"
	login "$cname" "$cname" alice
	moved() {
		[ "$(rc_of "$1"):$(rcli cl2 exists "nat-$1")" = 0:1 ] &&
			grep -q "redis 127.0.0.1:$CL2: decided after 1 redirects" "$TMP/$1.err"
	}
	check "rediss-cluster://: admitted by the node the seed MOVEd it to (nat-$cname)" \
		moved "$cname"
else
	not_ok "Cluster over TLS: the cluster did not form"
fi

# 12. The wire, recorded by a relay in front of the TLS server, with the script flushed so
# that the script itself (EVAL) must cross too.
if relay capnat "$NAT"; then
	nrcli script flush > /dev/null
	sha=$(sed -n 's/^#define RSLOT_SCRIPT_SHA1 "\(.*\)"$/\1/p' "$TOP/build/slot_lua.h")
	native capnat "rediss://127.0.0.1:$port" "password_file=$TMP/redis.secret $CA $NAME"
	login capnat capnat alice
	check "through the relay: admitted, after loading the script" \
		[ "$(rc_of capnat):$(nrcli exists nat-capnat):$(nrcli script exists "$sha")" = 0:1:1 ]
	check "... the relay saw TLS ($(wc -c < "$TMP/capnat.c2s") bytes, starting $(head -c 2 "$TMP/capnat.c2s" | od -An -tx1 | tr -d ' '))" \
		[ "$(head -c 2 "$TMP/capnat.c2s" | od -An -tx1 | tr -d ' ')" = 1603 ]
	check "... and neither the password, AUTH, EVAL nor the script's text in clear" \
		sh -c "! grep -qaE '$PW|AUTH|EVAL|redis\\.call|reserve' '$TMP/capnat.c2s'"
else
	not_ok "the capture of rediss://: the relay did not start"
fi

# 13. Every TLS file is opened as tls_key_file= is (trust_open_root_file): root's, writable by
# no one else, a regular file, not a symbolic link; tls_ca_dir= the same, as a directory. A bad
# one is refused before anything of it is read, with one LOG_ERR line naming the option, the
# file and why; a good one is read whole, and refused for what it holds.
NATURL="rediss://:$PW@127.0.0.1:$NAT"
F=$TMP/files
mkdir "$F"
cp "$TMP/pki/ca.crt" "$F/ca-0666.crt" && chmod 0666 "$F/ca-0666.crt"
nbad cawritable "a tls_ca_file= of mode 0666, where anyone could add a CA" \
	"tls_ca_file: cannot use $F/ca-0666.crt: writable by group or others" \
	"$NATURL" "tls_ca_file=$F/ca-0666.crt $NAME"
cp "$TMP/pki/ca.crt" "$F/ca-nobody.crt" && chown 65534 "$F/ca-nobody.crt"
nbad canotroot "a tls_ca_file= owned by another user" \
	"tls_ca_file: cannot use $F/ca-nobody.crt: not owned by root" \
	"$NATURL" "tls_ca_file=$F/ca-nobody.crt $NAME"
ln -s ../pki/ca.crt "$F/ca-link.crt"
nbad calink "a tls_ca_file= that is a symbolic link" \
	"tls_ca_file: cannot use $F/ca-link.crt: a symbolic link" "$NATURL" "tls_ca_file=$F/ca-link.crt $NAME"
printf 'not a certificate\n' > "$F/ca-text.crt"
nbad catext "a tls_ca_file= with no certificate in it" \
	"tls_ca_file: cannot use $F/ca-text.crt: no certificate in it (PEM)" \
	"$NATURL" "tls_ca_file=$F/ca-text.crt $NAME"
cp "$TMP/pki/client.crt" "$F/client-0666.crt" && chmod 0666 "$F/client-0666.crt"
nbad certwritable "a tls_cert_file= of mode 0666" \
	"tls_cert_file: cannot use $F/client-0666.crt: writable by group or others" \
	"rediss://:$PW@127.0.0.1:$TLS_PORT" "$CA $NAME tls_cert_file=$F/client-0666.crt tls_key_file=$TMP/pki/client.key"
# A FIFO: a module that opened one would wait for a writer for ever. This one's writer comes
# a few seconds past the timeout, so that such a module fails the time bound, not hangs.
mkfifo "$F/ca.fifo" "$F/cert.fifo"
fifo_writer() { (sleep $((TO + 3)) && exec 3<> "$1" && sleep 1) & PIDS="$PIDS $!"; }
fifo_writer "$F/ca.fifo"
nbad cafifo "a FIFO as tls_ca_file=: refused at once, not waited on" \
	"tls_ca_file: cannot use $F/ca.fifo: not a regular file" "$NATURL" "tls_ca_file=$F/ca.fifo $NAME"
fifo_writer "$F/cert.fifo"
nbad certfifo "a FIFO as tls_cert_file=: refused at once, not waited on" \
	"tls_cert_file: cannot use $F/cert.fifo: not a regular file" \
	"rediss://:$PW@127.0.0.1:$TLS_PORT" "$CA $NAME tls_cert_file=$F/cert.fifo tls_key_file=$TMP/pki/client.key"

# 14. tls_ca_dir=, a hashed directory (openssl rehash): used, and refused when it is not
# root's alone, a link, or missing, each named.
mkdir "$TMP/cadir" && cp "$TMP/pki/ca.crt" "$TMP/cadir/" && openssl rehash "$TMP/cadir" 2> /dev/null
native cadir "$NATURL" "tls_ca_dir=$TMP/cadir $NAME"
login cadir cadir alice
check "tls_ca_dir= of root's, hashed: admitted" admitted cadir
chmod 0777 "$TMP/cadir"
nbad cadirwritable "a tls_ca_dir= of mode 0777" \
	"tls_ca_dir: cannot use $TMP/cadir: writable by group or others" "$NATURL" "tls_ca_dir=$TMP/cadir $NAME"
chmod 0755 "$TMP/cadir"
ln -s cadir "$TMP/cadir-link"
nbad cadirlink "a tls_ca_dir= that is a symbolic link" \
	"tls_ca_dir: cannot use $TMP/cadir-link: a symbolic link" "$NATURL" "tls_ca_dir=$TMP/cadir-link $NAME"
nbad cadirmissing "a missing tls_ca_dir=: named as missing, not as an unknown issuer" \
	"tls_ca_dir: cannot use $TMP/no-such-dir: No such file or directory" \
	"$NATURL" "tls_ca_dir=$TMP/no-such-dir $NAME"

# 15. The cause is the first thing OpenSSL or the file said, and it is logged whole: a path
# too long for the line loses its middle, never the cause.
nbad camissing "a missing tls_ca_file=: named as missing, not as \"system lib\"" \
	"tls_ca_file: cannot use $F/no-such.crt: No such file or directory" \
	"$NATURL" "tls_ca_file=$F/no-such.crt $NAME"
long=$TMP/$(printf 'd%.0s' $(seq 200))
mkdir "$long"
nbad calong "a missing tls_ca_file= of ${#long} bytes and more: the cause still named" \
	"No such file or directory" "$NATURL" "tls_ca_file=$long/ca.crt $NAME"
check "... the option and the path's ends shown, its middle cut ($(shown calong | cut -c1-60)...)" \
	grep -q "tls_ca_file: cannot use $TMP/d*\.\.\.d*/ca\.crt: No such file or directory" "$TMP/calong.err"

# 16. A name in a certificate is in its subjectAltName or nowhere: a certificate that names
# redis.example.net only as its CN is refused by name (its chain is good: tls_verify=ca takes it).
issue cnonly redis.example.net ca "extendedKeyUsage=serverAuth" && chmod 0600 "$TMP/pki/cnonly.key"
if on_free_port CNONLY native_redis cnonly cnonly; then
	nbad cnonly "a certificate naming the host in its CN, not its subjectAltName" \
		"certificate verify failed: hostname mismatch" "rediss://127.0.0.1:$CNONLY" "$CA $NAME"
	native cnonlyca "rediss://127.0.0.1:$CNONLY" "$CA tls_verify=ca"
	login cnonlyca cnonlyca alice
	check "... its chain alone (tls_verify=ca): admitted" admitted cnonlyca
else
	not_ok "the server with a CN-only certificate did not start"
fi

# 17. Options that would check less than they say, refused as bad values: the login follows
# fallback (closed here), one LOG_ERR line naming why.
nbad verifycanoca "tls_verify=ca with no CA named (any public CA's certificate would do)" \
	"tls_verify=ca needs tls_ca_file= or tls_ca_dir=" "rediss://127.0.0.1:$IPONLY" "tls_verify=ca"
nbad dotname "tls_server_name=.example.net (OpenSSL's any subdomain)" \
	"bad value for tls_server_name: \".example.net\": a leading '.'" "$NATURL" "$CA tls_server_name=.example.net"
nbad portname "tls_server_name= with a port" \
	"bad value for tls_server_name: \"redis.example.net:6380\": a ':' outside an IPv6 address" \
	"$NATURL" "$CA tls_server_name=redis.example.net:6380"

# 18. Short forms of an IPv4 address (127.1, 2130706433) are the address the connection dials:
# checked as that address, 127.0.0.1 here, and never sent as SNI.
if on_free_port LOOP native_redis loopsrv loop && relay capshort "$LOOP"; then
	n=0
	for host in 127.1 2130706433; do
		n=$((n + 1))
		native "short$n" "rediss://$host:$port" "$CA"
		login "short$n" "short$n" alice
		check "rediss://$host, a certificate for IP:127.0.0.1: admitted, on that server" \
			sh -c "[ $(rc_of "short$n") = 0 ] && [ \"\$(redis-cli -s '$TMP/loopsrv.sock' exists nat-short$n)\" = 1 ]"
	done
	check "... and no SNI: neither 127.1 nor 2130706433 in the client's bytes" \
		sh -c "! grep -qaE '127\\.1|2130706433' '$TMP/capshort.c2s'"
else
	not_ok "the short IPv4 forms: the server or the relay did not start"
fi

finish
