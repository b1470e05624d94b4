#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Redis across an untrusted network: Debian 12's hiredis has no TLS, so the module
# talks to a stunnel4 client on loopback, which carries it over TLS to a redis-server that
# listens with tls-port only and asks for a client certificate. The tunnels are made from the
# shipped etc/stunnel/flowslot-redis.conf, with a test CA made here by openssl. 1. Logins are
# staggered through the tunnel, on the TLS server's schedule. 2. The server has no plaintext
# port, and the module cannot use it without the tunnel. 3. A tunnel that trusts another CA,
# expects another name, or has no client certificate carries nothing: fallback=closed refuses,
# with one LOG_ERR line. 4. Between stunnel and Redis (recorded by a socat relay) the password
# does not appear; the same relay in front of a plaintext Redis shows that it would.
set -u
. "$(dirname "$0")/lib.sh"

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
logins s stagger 3
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
	[ "$(tlscli exists tls:stagger 2> /dev/null)" = 1 ]
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

finish
