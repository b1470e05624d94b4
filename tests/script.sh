#!/bin/bash
# The Lua script on its own, through redis-cli --eval, against private redis-servers.
set -u
. "$(dirname "$0")/lib.sh"

LUA=$TREE/src/slot.lua
start_redis s || exit 1

# slot KEY INTERVAL_US BURST MAX_WAIT_US: prints "admitted wait_us position".
slot() {
	rcli "${SERVER:-s}" --eval "$LUA" "$1" , "$2" "$3" "$4" | tr '\n' ' ' | sed 's/ $//'
}

# Burst: three at once start now, the fourth one interval later.
r1=$(slot b 1000000 3 60000000)
r2=$(slot b 1000000 3 60000000)
r3=$(slot b 1000000 3 60000000)
r4=$(slot b 1000000 3 60000000)
check "burst=3: three start at once ($r1 | $r2 | $r3)" \
	[ "$r1|$r2|$r3" = "1 0 1|1 0 1|1 0 1" ]
read -r a w p <<< "$r4"
check "burst=3: the fourth waits about one interval ($r4)" \
	sh -c "[ '$a $p' = '1 1' ] && [ $w -gt 900000 ] && [ $w -le 1000000 ]"

# b = 1: slot = max(last + T, now), positions counting up.
r1=$(slot one 2000000 1 60000000)
r2=$(slot one 2000000 1 60000000)
r3=$(slot one 2000000 1 60000000)
check "burst=1: waits 0, ~T, ~2T with positions 1, 1, 2 ($r1 | $r2 | $r3)" \
	sh -c "echo '$r1 $r2 $r3' | awk '{ exit !(\$1==1 && \$2==0 && \$3==1 &&
		\$5>1900000 && \$5<=2000000 && \$6==1 && \$8>3900000 && \$8<=4000000 && \$9==2) }'"

# A refusal writes nothing: neither the schedule nor its expiry moves.
slot r 5000000 1 60000000 > /dev/null
before=$(rcli s get r)
refused=$(slot r 5000000 1 1000000)
check "a wait past max_wait is refused ($refused)" [ "${refused%% *}" = 0 ]
check "the refusal left the schedule as it was" [ "$(rcli s get r)" = "$before" ]
slot fresh 5000000 1 0 > /dev/null
refused=$(slot fresh 5000000 1 0)
check "max_wait=0 refuses any wait ($refused)" [ "${refused%% *}" = 0 ]

# The schedule vanishes when it stops mattering: at tat.
slot e 300000 1 60000000 > /dev/null
pttl=$(rcli s pttl e)
check "the key expires with its schedule (pttl $pttl ms)" in_range "$pttl" 0 300
sleep 0.5
check "... and is gone after it" [ "$(rcli s exists e)" = 0 ]

# The stored time keeps every digit (tostring() would write 1.7e+15).
slot d 1000000 1 60000000 > /dev/null
stored=$(rcli s get d)
check "the schedule is stored as whole microseconds, tat and time written ($stored)" \
	sh -c "echo '$stored' | grep -Eq '^[0-9]{16} [0-9]{16}$'"

# Staleness is the schedule's own, never the caller's (issue #7 item 1): nine logins queue
# 63 s at max_wait=60s; a login with max_wait=45s, then one with 50s, are refused, and the
# schedule is left as it was.
for _ in 1 2 3 4 5 6 7 8 9; do slot mixed 7000000 1 60000000 > /dev/null; done
before=$(rcli s get mixed)
r45=$(slot mixed 7000000 1 45000000)
r50=$(slot mixed 7000000 1 50000000)
check "mixed max_wait: 45 s and 50 s are refused by a 63 s queue ($r45 | $r50)" \
	[ "${r45%% *}|${r50%% *}" = "0|0" ]
check "... and the queue is left as it was" [ "$(rcli s get mixed)" = "$before" ]

# A server clock that went back a day since the schedule was written: the queue keeps its
# length (3 s), it neither holds logins for a day nor vanishes.
now=$(rcli s time | head -1)
rcli s set back "$((now + 86403))000000 $((now + 86400))000000" > /dev/null
read -r a w _ <<< "$(slot back 1000000 1 60000000)"
check "a clock a day back keeps the queue's length (admitted $a, wait $w us)" \
	sh -c "[ $a = 1 ] && [ $w -gt 2500000 ] && [ $w -le 3000000 ]"
# Further ahead than any settings allow (60 min + 1000 * 60 min): not ours, restarted.
rcli s set far "$((now + 3700000))000000 ${now}000000" > /dev/null
r=$(slot far 1000000 1 60000000)
check "a schedule beyond any settings' horizon is treated as stale ($r)" [ "$r" = "1 0 1" ]
# A bare tat, as earlier versions wrote it, is still read.
rcli s set bare "$((now + 5))000000" > /dev/null
read -r a w _ <<< "$(slot bare 1000000 1 60000000)"
check "a bare tat is read as a schedule ($a $w)" sh -c "[ $a = 1 ] && [ $w -gt 3000000 ]"

# Garbage in the key is overwritten, not trusted.
rcli s set junk "not-a-number" > /dev/null
check "garbage in the schedule reads as empty" [ "$(slot junk 1000000 1 60000000)" = "1 0 1" ]
slot_db() { rcli s --eval "$LUA" "$1" , 1000000 1 60000000 "$2" 2>&1 | tr '\n' ' '; }
check "ARGV[4] selects the database first" \
	sh -c "[ '$(slot_db indb 4)' = '1 0 1 ' ] && [ \$(redis-cli -s '$TMP/s.sock' -n 4 exists indb) = 1 ]"
check "a database out of range fails before any write" \
	sh -c "echo '$(slot_db nodb 99)' | grep -q 'out of range' && [ \$(redis-cli -s '$TMP/s.sock' exists nodb) = 0 ]"
check "bad arguments are an error" \
	sh -c "rcli() { :; }; redis-cli -s '$TMP/s.sock' --eval '$LUA' x , abc 1 1 2>&1 | grep -q 'bad arguments'"

# The script reads the server's clock: the stored schedule is one interval past its TIME.
slot st 1000000 1 60000000 > /dev/null
tat=$(rcli s get st)
tat=${tat%% *}
server_us=$(rcli s time | tr '\n' ' ' | awk '{ printf "%d%06d", $1, $2 }')
check "the schedule is one interval past the server's TIME ($((tat - server_us)) us)" \
	in_range $((tat - server_us)) 0 1000000

finish
