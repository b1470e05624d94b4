#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Hostile user names and remote hosts: up to 64 KiB, binary bytes, '%', newlines and RESP.
# They never change which key is touched beyond the template, never grow a key past its
# bound, and never reach the log unescaped.
set -u
. "$(dirname "$0")/../helpers/lib.sh"

start_redis h || exit 1

# The key template's expansion, written independently of the module: bytes outside
# [A-Za-z0-9._:@-] become %XX.
encode() {
	LC_ALL=C od -An -v -tu1 | tr -s ' \n' '\n\n' | grep . | while read -r d; do
		if (((d >= 48 && d <= 57) || (d >= 65 && d <= 90) || (d >= 97 && d <= 122) ||
			d == 46 || d == 95 || d == 58 || d == 64 || d == 45)); then
			printf "\\$(printf '%03o' "$d")"
		else
			printf '%%%02X' "$d"
		fi
	done
}

# hostile_login NAME USER RHOST KEY-TEMPLATE [more options]: two logins, so the second queues
# and logs its "queued:" line. The key lives an interval after the second's slot: 2 s, so that
# a loaded machine still finds it there after the logins.
hostile_login() {
	local svc=$1 user=$2 rhost=$3 key=$4
	shift 4
	service "$svc" "auth required $SET_ITEMS" \
		"auth required @M url=unix://$TMP/h.sock key=$key interval=2s state_dir=$TMP/st-$svc $*" \
		"auth required @P/pam_permit.so"
	PAM_RHOST=$rhost login "${svc}1" "$svc" "$user"
	PAM_RHOST=$rhost login "${svc}2" "$svc" "$user"
}

# RESP, CRLF, '%', '/', '..' and high bytes in the user name; the same in the remote host.
evil_user=$(printf 'u\r\n*1\r\n$8\r\nFLUSHALL\r\n%%u%%%%/../\x01\xff{x}')
evil_host=$(printf 'h\n%%h\r\n$-1\x7f..')
hostile_login evil "$evil_user" "$evil_host" 'fs:%u:%h'
want="fs:$(printf '%s' "$evil_user" | encode):$(printf '%s' "$evil_host" | encode)"
keys=$(rcli h --scan | grep -v '^$')
check "RESP, CRLF and '%' in user and rhost: both logins admitted" \
	[ "$(rc_of evil1)$(rc_of evil2)" = 00 ]
check "... they touched exactly one key, the template's expansion ($keys)" [ "$keys" = "$want" ]
check "... FLUSHALL never ran: the key is still there" [ "$(rcli h exists "$want")" = 1 ]
# (pamtester -v itself echoes the raw user name: only the module's SYSLOG lines count.)
one_escaped_line() {
	[ "$(grep -ac 'SYSLOG(5)' "$TMP/evil2.err")" = 1 ] &&
		grep -aqF 'user=u\x0d\x0a*1\x0d\x0a$8\x0d\x0aFLUSHALL\x0d\x0a%u%%/../\x01\xff{x} rhost=h\x0a%h\x0d\x0a$-1\x7f.. wait_ms=' \
			"$TMP/evil2.err"
}
check "... the log line is one line, the bytes escaped" one_escaped_line

# 64 KiB names: the key would pass 256 bytes, so it is cut and ends in a hash of the whole;
# the login queues on Redis like any other, and no key outside the template is touched.
big=$(head -c 65536 /dev/zero | tr '\0' 'A')
rcli h flushall > /dev/null
hostile_login big "$big" "$big" 'fs:%u'
check "64 KiB user and rhost: both logins decided" [ "$(rc_of big1)$(rc_of big2)" = 00 ]
bigkey=$(rcli h --scan)
check "... through Redis, the second queued" grep -q 'queued: .*via=redis' "$TMP/big2.err"
check "... on one key of 256 bytes at most: the name cut, then a hash ($(printf %s "$bigkey" | wc -c) bytes)" \
	sh -c "[ $(rcli h dbsize) = 1 ] && printf %s '$bigkey' | grep -Eq '^fs:A+~[0-9a-f]{16}$' && [ $(printf %s "$bigkey" | wc -c) -le 256 ]"
check "... and nothing logged at LOG_ERR" sh -c "! grep -q 'SYSLOG(3)' '$TMP/big1.err' '$TMP/big2.err'"
longest=$(grep -a 'SYSLOG(' "$TMP/big1.err" "$TMP/big2.err" |
	awk '{ if (length($0) > n) n = length($0) } END { print n + 0 }')
check "... every log line of the module bounded ($longest bytes)" [ "$longest" -lt 1024 ]

# A key of exactly 256 bytes is used as it is; one byte more is cut, and has a schedule of
# its own. The first key must outlive the second's two logins.
rcli h flushall > /dev/null
hostile_login at "$(head -c 254 /dev/zero | tr '\0' b)" '' 'k:%u' interval=6s
check "a key of exactly 256 bytes is used" [ "$(rcli h --scan | tr -d '\n' | wc -c)" = 256 ]
hostile_login over "$(head -c 255 /dev/zero | tr '\0' b)" '' 'k:%u'
check "257 bytes: a key of its own, cut with a hash, and the second login queued on Redis" \
	sh -c "[ $(rcli h dbsize) = 2 ] && grep -q 'queued: .*via=redis' '$TMP/over2.err' && ! grep -q 'SYSLOG(3)' '$TMP/over1.err'"

# Every user name tried leaves what its host heard of its schedule (key=%u), before
# authentication: 400 names once left 400 files heard.HASH in state_dir (a tmpfs, memory) while
# Redis held none of them a minute later. They share one table of NCACHE_HEARD_MAX (256)
# entries, of 32 bytes. With all 300 slots still to come, the table keeps the 256 that come
# last: the last name's is honoured on a schedule lost (FLUSHALL), the first name's gave its
# place (pam_flowslot(8), FILES).
service spray "auth required @M url=unix://$TMP/h.sock key=sp:%u interval=120s max_wait=5s state_dir=$TMP/st-spray" \
	"auth required @P/pam_permit.so"
rcli h flushall > /dev/null
for b in $(seq 10 24); do
	logins "sp$b" spray 20
done
sprayed=$(cat "$TMP"/sp[12]???.rc | grep -c '^0$')
heard_files=$(ls "$TMP/st-spray" | grep -c '^heard')
heard_size=$(stat -c %s "$TMP/st-spray/heard" 2> /dev/null || echo 0)
check "300 user names tried: what the host heard is one table of fixed size ($sprayed admitted; $heard_files file(s) heard*, $heard_size bytes)" \
	sh -c "[ $sprayed = 300 ] && [ $heard_files = 1 ] && [ $heard_size -le 8192 ]"
rcli h flushall > /dev/null
login spl spray sp2420
login spf spray sp1001
check "... the last name's next slot is still honoured on its schedule lost: refused past max_wait" \
	sh -c "[ $(rc_of spl) != 0 ] && grep -q 'refused: ' '$TMP/spl.err'"
check "... the first name's gave its place, past 256 slots to come: in at once" \
	sh -c "[ $(rc_of spf) = 0 ] && ! grep -Eq '(queued|refused): ' '$TMP/spf.err'"

finish
