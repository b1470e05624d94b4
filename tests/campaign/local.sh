# SPDX-License-Identifier: BSD-3-Clause
# The fault campaign's one-host faults (tests/campaign/CONTRACT.md): Redis stopped and
# restarted, its clock stepped, waiters killed, stopped and hung up, state_dir full and
# unwritable. Sourced by run.sh after tests/campaign/lib.sh. Each fault's bounds name the
# section of docs/MODEL.md or pam_flowslot(7) they come from.
# shellcheck shell=bash disable=SC2034 # the FAULT_* settings are read by run.sh

# local_redis_pid NAME: the server's pid, from start_redis's file.
local_redis_pid() { cat "$TMP/$1.pid"; }

# ---- none: the baseline ---------------------------------------------------------------------
# No fault: what the properties look like on this machine now, and the epsilon of P1 and P3.
campaign_fault none "no fault: the baseline, epsilon measured here"
fault_none_setup() { campaign_redis none; }
fault_none_inject() { :; }
fault_none_heal() { :; }
fault_none_teardown() { stop_redis none; }
fault_none_bounds() { :; }

# ---- Redis stopped (SIGSTOP), then resumed (SIGCONT) ---------------------------------------
# Shorter than the module's timeout: calls are held up, none fails.
campaign_fault redis-stop-short "Redis stopped (SIGSTOP) for 300 ms, less than timeout (500 ms), then resumed"
fault_redis_stop_short_setup() {
	campaign_redis rss || return 1
	FAULT_HOLD_MS=300
}
fault_redis_stop_short_inject() { kill -STOP "$(local_redis_pid rss)"; }
fault_redis_stop_short_heal() { kill -CONT "$(local_redis_pid rss)"; }
fault_redis_stop_short_teardown() { stop_redis rss; }
fault_redis_stop_short_bounds() {
	echo "P1 300ms # a call held up by the stop returns that much late, and a login admitted by it goes in as late, while the next keeps its slot: spacing on the schedule's clock, less the call's delay (pam_flowslot(7), The queue's promises: Order, on the schedule's own clock; MODEL.md P1)"
	echo "P5 300ms # the renewal that would admit the next waiter is held up as long (MODEL.md P5)"
}

# Longer than the timeout, shorter than a lease: reservations fall back to the host's
# schedule, renewals fail and are tried again, a waiter whose slot comes meanwhile goes in blind.
campaign_fault redis-stop-long "Redis stopped (SIGSTOP) for 3 s, past timeout (500 ms) and one renewal, then resumed"
fault_redis_stop_long_setup() {
	campaign_redis rsl || return 1
	FAULT_HOLD_MS=3000
}
fault_redis_stop_long_inject() { kill -STOP "$(local_redis_pid rsl)"; }
fault_redis_stop_long_heal() { kill -CONT "$(local_redis_pid rsl)"; }
fault_redis_stop_long_teardown() { stop_redis rsl; }
fault_redis_stop_long_bounds() {
	echo "P1 500ms # a renewal at the slot that times out goes in blind at the last slot given, one timeout late, and the next keeps its slot (pam_flowslot(7), A queue of live waiters: a renewal that fails; MODEL.md P1: late by d, the next may follow by interval - d)"
	echo "P5 7s # a reservation that timed out is made when the server resumes: its place holds those behind as a killed login's does, until its lease (5 s) ends and a renewal (2 s apart) drops it (MODEL.md, Redis stopped)"
	echo "P7 4s # the same places make a reservation after the resume see a longer queue, up to max_wait (4 s), past which it is refused (MODEL.md, Redis stopped)"
	echo "expect renew_unanswered 1 # a waiter's renewal met the stop: it timed out, and was answered when asked again if it began in the stop's last 2 s (4 x timeout), else failed (pam_flowslot(7), A reservation asked again)"
	echo "expect fallback_local 1 # a login that came meanwhile was decided on the host's schedule (fallback=local): queued there, or refused where the slots of the waiters going in blind left it none within max_wait (pam_flowslot(7), The host's waiters)"
}

# About two timeouts, while logins arrive (issue 29: a stall of that size is ordinary, a fork
# for a snapshot, a slow command, a paused VM): a reservation that times out is asked again
# with its place id within the decision's budget (4 x timeout), and the server, resumed,
# answers the place it made. No login follows the fallback onto the host's schedule, where
# it went in after logins that came seconds later, while its place on Redis stood unrenewed.
campaign_fault redis-stall "Redis stopped (SIGSTOP) for 1 s, two timeouts (500 ms), while logins arrive every 250 ms, then resumed"
fault_redis_stall_setup() {
	campaign_redis rst || return 1
	FAULT_HOLD_MS=1000 FAULT_GAP_MS=250
}
fault_redis_stall_inject() { kill -STOP "$(local_redis_pid rst)"; }
fault_redis_stall_heal() { kill -CONT "$(local_redis_pid rst)"; }
fault_redis_stall_teardown() { stop_redis rst; }
fault_redis_stall_bounds() {
	echo "P1 500ms # as redis-stop-long: a renewal at the slot that times out goes in blind at the last slot given (MODEL.md P1)"
	echo "P5 1500ms # calls held up by the stop (1 s) return that much late, after the resumed server has answered the others it holds (MODEL.md P5); the long run saw 969 ms"
	echo "P7 1s # a reservation whose late first try made a place past what is left of its max_wait is refused when asked again; until then that place pushes the slots granted behind it back an interval (MODEL.md P5, redis-stall)"
	echo "expect asked_again 1 # a reservation that timed out was answered when asked again (MODEL.md P5: a reservation asked again)"
	echo "never fallback_local # no login queued on the host's schedule: each was answered on Redis within 4 x timeout"
}

# ---- The schedule lost ----------------------------------------------------------------------
# The key gone while logins wait, Redis up all along: as maxmemory evicts it (volatile-ttl
# takes it first, for it always has a TTL), or a FLUSHALL. The first call to find it gone makes
# it again, its next slot where this host last heard it was, and each waiter, at its next
# renewal, holds its place again at its own arrival (issue 29; MODEL.md, "A lost schedule").
# Before, the next login went in at once, and the waiters joined the back as they renewed.
campaign_fault redis-key-lost "the schedule's key deleted (as an eviction) while logins wait, Redis up"
fault_redis_key_lost_setup() {
	campaign_redis rkl || return 1
	FAULT_HOLD_MS=500
}
fault_redis_key_lost_inject() { campaign_event lost "$(rcli rkl del campaign)"; }
fault_redis_key_lost_heal() { :; }
fault_redis_key_lost_teardown() { stop_redis rkl; }
# local_remade_bounds: what a schedule lost and made again by those who hold it weakens
# (MODEL.md, "A lost schedule"): not the spacing, which this host heard of; the order, for one
# renewal.
local_remade_bounds() {
	echo "P2 4s # until a waiter renews (2 s apart near its slot) its place is not in the schedule made again: the logins that come meanwhile and are admitted to go in within the commit window (2 s) go ahead of it (MODEL.md, A lost schedule: order within one renewal)"
	echo "P7 4s # a waiter that holds its place again at its arrival goes ahead of the logins that came after it and queued meanwhile: each such place moves their slots back an interval, up to max_wait (4 s) (MODEL.md, A lost schedule)"
}
fault_redis_key_lost_bounds() {
	local_remade_bounds
	echo "expect lost 1 # the key was there when it was deleted, while logins waited"
}

# ---- Redis restarted ------------------------------------------------------------------------
# Without persistence: the schedule and its queue are lost; the logins that hold it make it
# again, as when the key is lost, once Redis is back.
campaign_fault redis-restart "Redis restarted without persistence (down 2.5 s, past one renewal): the schedule and its queue lost"
fault_redis_restart_setup() {
	campaign_redis rr || return 1
	FAULT_HOLD_MS=2500
}
fault_redis_restart_inject() { stop_redis rr; }
fault_redis_restart_heal() { start_redis rr; }
fault_redis_restart_teardown() { stop_redis rr; }
# local_lost_bounds: what a Redis restarted without its data weakens where the host cannot keep
# what it heard (its state_dir full or read-only): the schedule is made again without the next
# slot (MODEL.md, "A lost schedule": a host that heard nothing).
local_lost_bounds() {
	echo "P1 2s # the next slot unknown to the host, the first login on the schedule made again may go in up to an interval early, once, and the logins admitted to go in within the commit window (2 s) go in at their slots (MODEL.md, A lost schedule)"
	echo "P2 - # Redis came back without its data while the host's schedule could not be written either: the order is measured, not promised (MODEL.md, A lost schedule)"
	echo "P5 5s # waiters cannot renew while Redis is down (2.5 s); each learns the new queue at its next renewal, 2 s at most after it is back, each call within timeout (MODEL.md P5)"
}
fault_redis_restart_bounds() {
	local_remade_bounds
	echo "P5 5s # waiters cannot renew while Redis is down (2.5 s); each learns the schedule made again at its next renewal, 2 s at most after it is back, each call within timeout (MODEL.md P5)"
	echo "expect renew_failed 1 # a waiter's renewal failed while Redis was down"
}

# With persistence: SHUTDOWN SAVE, and the same dump loaded; the down time is shorter than a
# lease, so every place is still held when the waiters renew.
campaign_fault redis-restart-saved "Redis restarted with its data (SHUTDOWN SAVE, the same dump, down 2.5 s, within a lease), burst 2"
fault_redis_restart_saved_setup() {
	campaign_redis rrs --save 3600 1 || return 1
	FAULT_HOLD_MS=2500 FAULT_BURST=2
}
fault_redis_restart_saved_inject() {
	local pid
	pid=$(local_redis_pid rrs)
	rcli rrs shutdown save > /dev/null 2>&1
	wait_for 10 sh -c "! kill -0 $pid 2> /dev/null"
	wait "$pid" 2> /dev/null
	return 0
}
fault_redis_restart_saved_heal() { start_redis rrs --save 3600 1; }
fault_redis_restart_saved_teardown() { stop_redis rrs; }
fault_redis_restart_saved_bounds() {
	echo "P5 5s # waiters cannot renew while Redis is down (2.5 s), and learn of a place given back at their first renewal after, 2 s at most, within timeout (MODEL.md P5)"
	echo "P7 3500ms # a waiter whose slot came while Redis was down went in blind, and its place stays first in line until its lease ends: until then the queue behind is longer by an interval for each, at most the down time (2.5 s) and one interval (MODEL.md, Redis down while logins wait)"
	echo "expect renew_failed 1 # a waiter's renewal failed while Redis was down"
}

# With its data, but down past every lease (5 s): when it is back, a place whose login went in
# blind at its slot meanwhile is counted as admitted at that slot if it was first in line, so
# that a newcomer does not take the slot again (pam_flowslot(7), A lapsed place at its slot
# counts as admitted; issue 18's "spacing broken by a failed renewal across a restart").
campaign_fault redis-restart-lease "Redis restarted with its data (SHUTDOWN SAVE, the same dump) after 5.5 s down, past every lease; interval 4 s"
fault_redis_restart_lease_setup() {
	campaign_redis rrl --save 3600 1 || return 1
	FAULT_HOLD_MS=5500 FAULT_INTERVAL_MS=4000 FAULT_MAX_WAIT_MS=12000 FAULT_WAITERS=1
	FAULT_LOGINS=$((FAULT_LOGINS * 3 / 2))
}
fault_redis_restart_lease_inject() {
	local pid
	pid=$(local_redis_pid rrl)
	rcli rrl shutdown save > /dev/null 2>&1
	wait_for 10 sh -c "! kill -0 $pid 2> /dev/null"
	wait "$pid" 2> /dev/null
	return 0
}
fault_redis_restart_lease_heal() { start_redis rrl --save 3600 1; }
fault_redis_restart_lease_teardown() { stop_redis rrl; }
fault_redis_restart_lease_bounds() {
	echo "P2 - # a waiter cut off past its lease takes its place back at its next renewal only if nobody queued since it lapsed, else it joins the back (pam_flowslot(7), Ghosts; MODEL.md P2)"
	echo "P5 8s # waiters cannot renew while Redis is down (5.5 s); the places that lapsed meanwhile are dropped at the first call after, and those behind learn it at their next renewal, 2 s at most, within timeout (MODEL.md P5)"
	echo "P6 1 # a renewal that takes back a lapsed place is not counted again (MODEL.md P6)"
	echo "expect blind 1 # a waiter's slot came while Redis was down: it went in blind"
}

# ---- the server's clock stepped -------------------------------------------------------------
# As tests/suites/script.sh steps it ("One clock per schedule", "a clock a day back"): every time
# stored in the key moved by -D (the server's clock stepped forward by D) or +D (back by D), in
# one atomic script, so that no call of the module sees half of it. The kernel's clock is
# never touched. Reads both the key of this tree's script and that of earlier versions ("s:TAT:AT",
# "g:WHO:ARRIVAL").
# shellcheck disable=SC2016 # Lua
LOCAL_SHIFT_LUA='
local K, d = KEYS[1], tonumber(ARGV[1])
local function us(x) return string.format("%.0f", x) end
local function shift_fields(m, which)
  local f, out = {}, {}
  for x in string.gmatch(m, "[^:]+") do f[#f + 1] = x end
  for i, x in ipairs(f) do
    local n = tonumber(x)
    if which[i] and n and n > 0 then out[i] = us(n + d) else out[i] = x end
  end
  return table.concat(out, ":")
end
local all = redis.call("ZRANGE", K, 0, -1, "WITHSCORES")
local moved = 0
for i = 1, #all, 2 do
  local m, sc = all[i], tonumber(all[i + 1])
  local kind = string.sub(m, 1, 2)
  local nm, ns = m, sc
  if kind == "s:" then nm = shift_fields(m, {[2] = true, [3] = true, [7] = true})
  elseif kind == "w:" or kind == "l:" then ns = sc + d
  elseif kind == "g:" then ns = sc + d; nm = shift_fields(m, {[3] = true, [4] = true})
  elseif kind == "j:" then nm = shift_fields(m, {[3] = true, [4] = true})
  end
  if nm ~= m or ns ~= sc then
    redis.call("ZREM", K, m)
    redis.call("ZADD", K, us(ns), nm)
    moved = moved + 1
  end
end
local ttl = redis.call("PTTL", K)
if ttl > 0 and ttl + d / 1000 > 0 then redis.call("PEXPIRE", K, math.floor(ttl + d / 1000)) end
return moved'

# local_clock_step SERVER US: the server's clock seen stepped by -US (US > 0: stored times
# moved ahead, as a clock stepped back sees them).
local_clock_step() {
	local n
	n=$(rcli "$1" eval "$LOCAL_SHIFT_LUA" 1 campaign "$2")
	campaign_event clock "$2 us: $n members moved"
}

campaign_fault clock-forward "the server's clock stepped forward by 8 s (every stored time moved 8 s back), past every lease; max_wait 6 s"
fault_clock_forward_setup() {
	campaign_redis cf || return 1
	FAULT_HOLD_MS=500 FAULT_WAITERS=2 FAULT_MAX_WAIT_MS=6000
}
fault_clock_forward_inject() { local_clock_step cf -8000000; }
fault_clock_forward_heal() { :; }
fault_clock_forward_teardown() { stop_redis cf; }
fault_clock_forward_bounds() {
	echo "P1 8s # the schedule keeps time by the server's clock: a step forward by d brings admissions up to d closer (MODEL.md P1)"
	echo "P2 6s # a step forward past a lease ends leases early: a waiter takes its place back at its next renewal only if nobody queued since its lease ended, so every login that reserves before that renewal (2 s) goes ahead of it and it joins the back, up to its max_wait (6 s) later (MODEL.md P2; pam_flowslot(7), Ghosts)"
	echo "P3 8s # slots come d sooner on the server's clock (MODEL.md P1, P3)"
	echo "P5 2s # the places whose leases ended are dropped at the next call, and those behind learn it at their next renewal (MODEL.md P5)"
	echo "P6 1 # a renewal that takes back a lapsed place is not counted again: one more place per WHO (MODEL.md P6)"
	echo "P7 2s # a waiter whose lease the step ended takes its place back at its renewal, pushing a slot granted meanwhile back by an interval (MODEL.md P2)"
	echo "expect waiting 1 # the step met logins waiting in the queue"
}

campaign_fault clock-back "the server's clock stepped back by 3 s (every stored time moved 3 s ahead), burst 2, max_wait 6 s"
fault_clock_back_setup() {
	campaign_redis cb || return 1
	FAULT_HOLD_MS=500 FAULT_BURST=2 FAULT_WAITERS=2 FAULT_MAX_WAIT_MS=6000
}
fault_clock_back_inject() { local_clock_step cb 3000000; }
fault_clock_back_heal() { :; }
fault_clock_back_teardown() { stop_redis cb; }
fault_clock_back_bounds() {
	echo "P5 2s # the schedule's clock stands still for as long as since its last write, at most 2 s while anyone waits (MODEL.md P4, P5)"
	echo "P7 2s # the same standstill pushes the slots granted after the step back by as much, against the observer's clock (MODEL.md P4)"
	echo "expect waiting 1 # the step met logins waiting in the queue"
}

# ---- waiters killed, stopped, hung up -------------------------------------------------------
# local_pick: the waiters to hit: the second in line and the last, when there are such.
local_pick() {
	local w
	w=$(campaign_waiters)
	{ echo "$w" | sed -n 2p; echo "$w" | sed -n '3,$p' | tail -1; } | grep . | sort -u
}

campaign_fault waiter-kill "waiters killed outright (SIGKILL): the second in line and the last"
fault_waiter_kill_setup() {
	campaign_redis wk || return 1
	FAULT_HOLD_MS=500 FAULT_WAITERS=3 FAULT_MAX_WAIT_MS=6000
}
fault_waiter_kill_inject() {
	local id
	for id in $(local_pick); do campaign_signal KILL "$id"; done
}
fault_waiter_kill_heal() { :; }
fault_waiter_kill_teardown() { stop_redis wk; }
fault_waiter_kill_bounds() {
	echo "P5 7s # a killed login's place stops delaying within its lease (5 s) from its last renewal, once the next call drops it: a renewal of those behind, 2 s apart (MODEL.md P5; pam_flowslot(7), A queue of live waiters)"
	echo "P7 3s # the same place, first in line past its slot, makes the slots granted behind it drift with now until its lease ends, less than 3 s past its slot (pam_flowslot(7), A lapsed place at its slot counts as admitted; MODEL.md P5, P7)"
	echo "expect killed 1 # a waiter was killed (two when the queue held three)"
}

campaign_fault waiter-stop "waiters stopped (SIGSTOP) for 6 s, past their lease, then resumed: the second in line and the last"
fault_waiter_stop_setup() {
	campaign_redis ws || return 1
	FAULT_HOLD_MS=6000 FAULT_WAITERS=3 FAULT_MAX_WAIT_MS=6000
}
fault_waiter_stop_inject() {
	local id
	for id in $(local_pick); do campaign_signal STOP "$id"; done
}
fault_waiter_stop_heal() {
	local id
	# shellcheck disable=SC2013 # ids, one word each
	for id in $(awk -F'\t' '$2 == "stop" { print $3 }' "$FAULT_DIR/events.tsv"); do
		grep -q "	cont	$id\$" "$FAULT_DIR/events.tsv" || campaign_signal CONT "$id"
	done
}
fault_waiter_stop_teardown() { stop_redis ws; }
fault_waiter_stop_bounds() {
	echo "P5 7s # a stopped waiter's place holds others up until its lease (5 s) ends and the next call drops it (MODEL.md P5)"
	echo "P6 1 # a stopped waiter that takes its lapsed place back at its renewal is not counted again (MODEL.md P6)"
	echo "P7 3s # a stopped waiter's place, first in line past its slot, makes the slots granted behind it drift with now until its lease ends, less than 3 s past its slot (MODEL.md P5, P7)"
	echo "expect stopped 1 # a waiter was stopped (two when the queue held three)"
}

# A hang-up the module sees: the login's client connection closed by the far end, as sshd's
# is when the client goes (tests/e2e/e2e-ssh.sh); its place goes back at once and leaves a ghost,
# which counts against per_host.
campaign_fault waiter-hangup "waiters hung up (their client connection closed): the second in line and the last; burst 2, per_host 2"
fault_waiter_hangup_setup() {
	campaign_redis wh || return 1
	FAULT_HOLD_MS=500 FAULT_WAITERS=3 FAULT_BURST=2 FAULT_PER_HOST=2 FAULT_MAX_WAIT_MS=6000
}
fault_waiter_hangup_inject() {
	local id
	for id in $(local_pick); do campaign_hangup "$id"; done
}
fault_waiter_hangup_heal() { :; }
fault_waiter_hangup_teardown() { stop_redis wh; }
fault_waiter_hangup_bounds() {
	echo "P5 2s # the schedule drops a place given back at once; each waiter behind learns it at its next renewal, 2 s apart (MODEL.md P5)"
	echo "expect abandoned 1 # a waiter saw its user hang up (two when the queue held three)"
}

# ---- state_dir full or unwritable -----------------------------------------------------------
# The state directory on a small tmpfs of its own, mounted before the logins start (so that
# their private mount namespaces have it too) and unmounted by teardown (or, failing that, at
# exit by run.sh). Full: a file fills it. Unwritable: the tmpfs remounted read-only, which as
# a superblock flag holds in every mount namespace (root would write through a chmod).
local_statedir_mount() {
	mount -t tmpfs -o size=256k,mode=0700 campaign-state "$FAULT_STATE_DIR" || return 1
	CAMPAIGN_MOUNTS="$FAULT_STATE_DIR $CAMPAIGN_MOUNTS"
}
local_statedir_umount() {
	local _
	for _ in 1 2 3 4 5; do
		umount "$FAULT_STATE_DIR" 2> /dev/null && return 0
		sleep 0.2
	done
	umount -l "$FAULT_STATE_DIR"
}
local_fill() {
	dd if=/dev/zero of="$FAULT_STATE_DIR/filler" bs=4k > /dev/null 2>&1
	campaign_event full "$(df -k --output=avail "$FAULT_STATE_DIR" | tail -1 | tr -d ' ') KiB left"
}
local_unfill() { rm -f "$FAULT_STATE_DIR/filler"; }
# The remount fails while a login has the file open for writing: tried again.
local_remount() {
	local i
	for i in $(seq 50); do
		mount -o "remount,$1" "$FAULT_STATE_DIR" 2> /dev/null && return 0
		sleep 0.02
	done
	echo "cannot remount $FAULT_STATE_DIR $1" >&2
	return 1
}

# url=local, the state_dir filling up under the host's schedule.
campaign_fault statedir-full "url=local, state_dir (a 256 KiB tmpfs) filled up for 2 s"
fault_statedir_full_setup() {
	local_statedir_mount || return 1
	FAULT_URL=local
}
fault_statedir_full_inject() { local_fill; }
fault_statedir_full_heal() { local_unfill; }
fault_statedir_full_teardown() { local_statedir_umount; }
fault_statedir_full_bounds() { :; }

# Redis down and fallback=local onto a full state_dir: the host's schedule cannot even be made.
campaign_fault statedir-full-fallback "Redis killed and state_dir (a 256 KiB tmpfs) full: fallback=local cannot write"
fault_statedir_full_fallback_setup() {
	local_statedir_mount || return 1
	campaign_redis sff || return 1
	FAULT_HOLD_MS=2500
}
fault_statedir_full_fallback_inject() {
	local_fill
	stop_redis sff
}
fault_statedir_full_fallback_heal() {
	start_redis sff
	local_unfill
}
fault_statedir_full_fallback_teardown() {
	stop_redis sff
	local_statedir_umount
}
fault_statedir_full_fallback_bounds() {
	local_lost_bounds
	echo "expect fallback 1 # a login came while Redis was down"
}

# url=local, the state_dir read-only: the file cannot be opened for writing.
campaign_fault statedir-ro "url=local, state_dir remounted read-only for 2 s"
fault_statedir_ro_setup() {
	local_statedir_mount || return 1
	FAULT_URL=local
}
fault_statedir_ro_inject() { local_remount ro; }
fault_statedir_ro_heal() { local_remount rw; }
fault_statedir_ro_teardown() { local_statedir_umount; }
fault_statedir_ro_bounds() {
	echo "expect fallback 1 # a login came while state_dir was read-only"
}

campaign_fault statedir-ro-fallback "Redis killed and state_dir read-only: fallback=local cannot write"
fault_statedir_ro_fallback_setup() {
	local_statedir_mount || return 1
	campaign_redis srf || return 1
	FAULT_HOLD_MS=2500
}
fault_statedir_ro_fallback_inject() {
	local_remount ro
	stop_redis srf
}
fault_statedir_ro_fallback_heal() {
	start_redis srf
	local_remount rw
}
fault_statedir_ro_fallback_teardown() {
	stop_redis srf
	local_statedir_umount
}
fault_statedir_ro_fallback_bounds() {
	local_lost_bounds
	echo "expect fallback 1 # a login came while Redis was down"
}

# url=local, the schedule file's lock held by a stopped process (a user's su stopped while it
# held it, issue 29): the file the schedule is in now (the last one it went on in, if an earlier
# round took one over), locked by tests/helpers/lockhold.py, which stops itself; healed by its end.
local_current_file() {
	local f=$FAULT_STATE_DIR/slot.campaign next
	while [ -k "$f" ]; do
		next=$FAULT_STATE_DIR/next.$(printf %x "$(stat -c %i "$f")")
		[ -e "$next" ] || break
		f=$next
	done
	echo "$f"
}
# url=local, a local user who stops, kills and starves their own waiting logins (issue 38):
# the second in line killed, another stopped 6 s, past its lease, and resumed, and the last
# limited to a small address space as it waits (prlimit --as on the running login), so that its
# next call fails for its own limits. The worst each does is lose its own place: nobody else
# is let in out of turn or refused for it, and none is let in without a wait.
campaign_fault local-user "url=local: a user's waiting logins killed, stopped 6 s, and starved of memory"
fault_local_user_setup() {
	FAULT_URL=local
	FAULT_HOLD_MS=6000 FAULT_WAITERS=4 FAULT_MAX_WAIT_MS=8000
}
fault_local_user_inject() {
	local w pid
	w=$(campaign_waiters)
	set -- $w
	[ $# -ge 2 ] && campaign_signal KILL "$2"
	[ $# -ge 3 ] && campaign_signal STOP "$3"
	if [ $# -ge 4 ] && pid=$(campaign_pid "${!#}") && [ -n "$pid" ]; then
		campaign_event starve "${!#}"
		prlimit --pid "$pid" --as=$((8 * 1024 * 1024)) 2> /dev/null
	fi
}
fault_local_user_heal() { fault_waiter_stop_heal; }
fault_local_user_teardown() { :; }
fault_local_user_bounds() {
	echo "P5 7s # a stopped waiter's place holds others up until its lease (5 s) ends and the next call drops it; a killed one's until the next call finds its process gone (MODEL.md P5)"
	echo "P6 1 # a stopped waiter that takes its lapsed place back at its renewal is not counted again (MODEL.md P6)"
	echo "P7 3s # a stopped waiter's place, first in line past its slot, makes the slots granted behind it drift with now until its lease ends (MODEL.md P5, P7)"
	echo "expect killed 1 # a waiter was killed"
	echo "expect stopped 1 # a waiter was stopped"
	echo "never fallback # no login is let in without a wait for what a user did to their own"
}

campaign_fault statedir-lock-stop "url=local, the schedule file's lock held by a stopped process for 5 s"
fault_statedir_lock_stop_setup() {
	FAULT_URL=local
	FAULT_HOLD_MS=5000
}
fault_statedir_lock_stop_inject() {
	python3 "$TOP/tests/helpers/lockhold.py" stop "$(local_current_file)" > "$FAULT_DIR/lockhold.out" 2>&1 &
	LOCK_HOLDER=$!
	PIDS="$PIDS $LOCK_HOLDER"
	wait_for 5 grep -q holding "$FAULT_DIR/lockhold.out"
}
fault_statedir_lock_stop_heal() {
	kill -CONT "$LOCK_HOLDER"
	kill "$LOCK_HOLDER"
	wait "$LOCK_HOLDER" 2> /dev/null
}
fault_statedir_lock_stop_teardown() { :; }
fault_statedir_lock_stop_bounds() {
	echo "P5 3s # a stuck holder costs the others its detection time, 2 s and a quarter, once: the first call to find it so takes the file over (MODEL.md, the per-host store's own edges)"
	echo "P7 3s # a reservation decided after that detection time is given a slot from then"
	echo "expect stuck 1 # a login found the holder stuck and took the file over"
}
