#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# End to end on Cockpit's web login: Debian's cockpit-ws (--no-tls, on loopback) with its PAM
# service "cockpit" and the gate in account, as etc/pam.d/cockpit-flowslot places it, logged
# into from Chromium on an Xvfb of the suite's own, typed with xdotool and read with tesseract.
# cockpit-ws, its set-uid cockpit-session and Chromium run in a private mount and network
# namespace: /etc/pam.d there is a copy with the suite's "cockpit" file, /var/log holds copies of
# the login records cockpit-session writes, and only loopback is up, so Chromium reaches nothing
# else. The screenshots stay in build/e2e-cockpit/.
set -u
. "$(dirname "$0")/../helpers/lib.sh"

[ "$(id -u)" = 0 ] || skip_all "needs root: a test user, a mount namespace, the set-uid cockpit-session"
WS=/usr/lib/cockpit/cockpit-ws
for need in "$WS" /usr/lib/cockpit/cockpit-session cockpit-bridge chromium Xvfb xdpyinfo xdotool \
	import convert tesseract nsenter unshare ip socat utmpdump; do
	command -v "$need" > /dev/null || skip_all "$need is missing (tests/deps.sh installs it)"
done
[ -f /etc/pam.d/cockpit ] || skip_all "cockpit-ws's /etc/pam.d/cockpit is missing"

CTL=$TREE/flowslotctl
SHOTS=$TOP/build/e2e-cockpit
rm -rf "$SHOTS"
mkdir -p "$SHOTS"
USR=fscockpit$$
PASS=$(head -c 12 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')
NS_PID="" XVFB_PID="" WS_PID="" CHROME_PID="" HOLDS=""
# The schedule's interval (s), the same for the gate and the places held on it; cockpit-ws's
# limit on a login (s, [basic] timeout in cockpit.conf, as it defaults).
INTERVAL=5 WS_TIMEOUT=30

# stop_group PID: stops PID, a setsid leader, and waits for it (so that it may stop and reap
# its children), then whatever is left of its process group.
stop_group() {
	[ -n "$1" ] || return 0
	kill "$1" 2> /dev/null
	wait "$1" 2> /dev/null
	kill -- "-$1" 2> /dev/null
}
# crash_handlers: the pids of Chromium's crash handlers, which name the suite's profile (the
# pattern's "[s]" keeps grep from finding itself).
crash_handlers() {
	grep -l -- "$TMP/chrome-home/chromium/Crash Report[s]" /proc/[0-9]*/cmdline 2> /dev/null | cut -d/ -f3
}
no_crash_handler() { [ -z "$(crash_handlers)" ]; }
# ns_members: the processes in the suite's mount namespace, but the one that holds it (socat):
# whatever cockpit-ws, cockpit-session and Chromium left there, however they left their group.
ns_members() {
	local ns p
	[ -n "$NS_PID" ] && ns=$(readlink "/proc/$NS_PID/ns/mnt" 2> /dev/null) || return 0
	for p in /proc/[0-9]*; do
		[ "${p#/proc/}" != "$NS_PID" ] && [ "$(readlink "$p/ns/mnt" 2> /dev/null)" = "$ns" ] &&
			echo "${p#/proc/}"
	done
}
no_ns_member() { [ -z "$(ns_members)" ]; }
# stop_ns_members: stops them (SIGTERM, then SIGKILL after 5 s).
stop_ns_members() {
	local pid
	for pid in $(ns_members); do kill "$pid" 2> /dev/null; done
	wait_for 5 no_ns_member && return 0
	for pid in $(ns_members); do kill -KILL "$pid" 2> /dev/null; done
}
# stop_all: everything the suite started, by pid, process group or namespace, and the test user.
stop_all() {
	for pid in $HOLDS; do kill "$pid" 2> /dev/null; done
	stop_group "$CHROME_PID"
	wait_for 10 no_crash_handler
	for pid in $(crash_handlers); do kill "$pid" 2> /dev/null; done
	stop_group "$WS_PID"
	stop_ns_members
	for pid in $HOLDS $XVFB_PID $NS_PID; do
		kill "$pid" 2> /dev/null
		wait "$pid" 2> /dev/null
	done
	if id "$USR" > /dev/null 2>&1; then
		for pid in $(pgrep -u "$USR"); do kill "$pid" 2> /dev/null; done
		wait_for 5 sh -c "! pgrep -u '$USR' > /dev/null"
		on_accounts userdel -r "$USR" || echo "userdel $USR failed: $(cat "$TMP/accounts.err")" >&2
	fi
	cleanup
}
trap stop_all EXIT

# in_ns COMMAND...: COMMAND in the suite's mount and network namespace (same pid: nsenter execs).
in_ns() { nsenter -t "$NS_PID" -m -n "$@"; }

# The PAM service: Debian's /etc/pam.d/cockpit with the gate's lines right after its account
# include of common-account, from etc/pam.d/cockpit-flowslot when main has it (the suite's
# schedule "web" on this host's file, INTERVAL apart); before them a stamp of when a login came
# to the gate, after them one of when it passed.
gate_lines() { # [OPTIONS]: the gate's lines, OPTIONS added to the module's
	if [ -f "$TOP/etc/pam.d/cockpit-flowslot" ]; then
		example cockpit-flowslot local "key=web interval=${INTERVAL}s ${1:-}"
	else
		echo "account [success=ok ignore=ignore module_unknown=ignore default=die] $MODULE state_dir=$TMP/state key=web interval=${INTERVAL}s max_wait=20s ${1:-}"
	fi
}
write_stack() { # [OPTIONS]: writes $TMP/pam.d/cockpit
	echo "account optional $PAM_DIR/pam_exec.so quiet /bin/sh $TREE/tests/helpers/stamp.sh $TMP/arrivals" > "$TMP/gate"
	gate_lines "${1:-}" >> "$TMP/gate"
	echo "account optional $PAM_DIR/pam_exec.so quiet /bin/sh $TREE/tests/helpers/stamp.sh $TMP/stamps" >> "$TMP/gate"
	awk -v gate="$TMP/gate" '{ print }
		/^(account[ \t]+include|@include)[ \t]+common-account[ \t]*$/ {
			while ((getline l < gate) > 0) print l
			close(gate)
		}' /etc/pam.d/cockpit > "$TMP/pam.d/cockpit"
}
# max_wait_of: the max_wait= of the gate in the stack now (the last on its line: the module's).
max_wait_of() {
	grep -o 'pam_flowslot\.so .*' "$TMP/pam.d/cockpit" | grep -o 'max_wait=[0-9a-z]*' | tail -1 | cut -d= -f2
}
# ms_of DURATION: a duration as the module reads it (Nms, Ns, Nm; a bare N in seconds), in ms.
ms_of() {
	case $1 in
	*ms) echo "${1%ms}" ;;
	*s) echo $((${1%s} * 1000)) ;;
	*m) echo $((${1%m} * 60000)) ;;
	*) echo $(($1 * 1000)) ;;
	esac
}
cp -a /etc/pam.d "$TMP/pam.d"
write_stack
mkdir -p "$TMP/state" "$TMP/xdg/cockpit"
# cockpit-ws reads $XDG_CONFIG_DIRS/cockpit/cockpit.conf; its login limit stated, as it defaults.
printf '[WebService]\nLoginTitle = flowslot e2e\n\n[basic]\ntimeout = %s\n' "$WS_TIMEOUT" > "$TMP/xdg/cockpit/cockpit.conf"

# The host's account files are shared with the suites beside this one, which add and remove
# users too: on_accounts waits out their lock. -l: no lastlog entry; the home is under $TMP.
on_accounts useradd -l -m -d "$TMP/home" -s /bin/sh "$USR" ||
	{ echo "useradd $USR failed: $(cat "$TMP/accounts.err")" >&2; exit 1; }
set_password "$USR" "$PASS" || { echo "chpasswd failed: $(cat "$TMP/accounts.err")" >&2; exit 1; }

# cockpit-session writes the host's login records: wtmp and lastlog for a session, btmp for a
# failed login. In the namespace /var/log is a directory of the suite's own holding copies of
# them, bound whole: a file bound alone would be dropped should the host rename a new one over it.
mkdir "$TMP/varlog"
for f in wtmp btmp lastlog; do
	[ ! -e "/var/log/$f" ] || cp -a "/var/log/$f" "$TMP/varlog/" || exit 1
done
# records FILE: how many login records of the test user FILE holds (wtmp, btmp).
records() { utmpdump "$1" 2> /dev/null | grep -c "\] \[$USR *\] \["; }
# lastlog_of FILE: the test user's lastlog record in FILE (its uid's 292 bytes), as a checksum.
lastlog_of() { dd if="$1" bs=292 skip="$(id -u "$USR")" count=1 2> /dev/null | md5sum | cut -c1-8; }
# host_records: the host's records of the test user, one line (the same before and after).
host_records() {
	echo "wtmp $(records /var/log/wtmp) btmp $(records /var/log/btmp) lastlog $(lastlog_of /var/log/lastlog)"
}
HOST_RECORDS=$(host_records)

# The namespace: /etc/pam.d bound to the copy, /var/log to the suite's; loopback up, and no other
# network; a /dev of its own (a tmpfs, the host's usual devices bound into it) whose /dev/log is a
# socat that keeps what is logged in $TMP/syslog, for no syslog daemon runs here. socat holds
# the namespace.
# shellcheck disable=SC2016
NS_SETUP='
	t=$1
	mount --bind "$t/pam.d" /etc/pam.d && mount --bind "$t/varlog" /var/log && ip link set lo up || exit 1
	mkdir "$t/host-dev" && mount --rbind /dev "$t/host-dev" || exit 1
	mount -t tmpfs -o mode=0755 tmpfs /dev || exit 1
	for e in null zero full random urandom tty ptmx; do
		: > "/dev/$e" && mount --bind "$t/host-dev/$e" "/dev/$e" || exit 1
	done
	for e in pts shm; do
		mkdir "/dev/$e" && mount --rbind "$t/host-dev/$e" "/dev/$e" || exit 1
	done
	ln -s /proc/self/fd /dev/fd && ln -s fd/0 /dev/stdin && ln -s fd/1 /dev/stdout &&
		ln -s fd/2 /dev/stderr && umount -l "$t/host-dev" || exit 1
	exec socat -u UNIX-RECV:/dev/log,mode=0666 "OPEN:$t/syslog,creat,append"'
unshare --mount --net --propagation private sh -c "$NS_SETUP" sh "$TMP" &
NS_PID=$!
wait_for 20 nsenter -t "$NS_PID" -m test -S /dev/log || { echo "the namespace did not start" >&2; exit 1; }
# syslog: what was logged, a message a line (socat writes the datagrams as they came).
syslog() { sed 's/<[0-9]\{1,3\}>/\n&/g' "$TMP/syslog" 2> /dev/null; }

# An Xvfb of the suite's own: it picks a display number nobody uses (-displayfd), and says which
# once it listens. No autorepeat (-r): on a loaded machine a key typed by xdotool may stay down
# long enough to repeat ("fscockpit13030" reached the page as "fscockpit1300030").
Xvfb -displayfd 3 -nolisten tcp -r -screen 0 1024x768x24 3> "$TMP/xvfb.display" > "$TMP/xvfb.log" 2>&1 &
XVFB_PID=$!
wait_for 20 test -s "$TMP/xvfb.display" || { echo "Xvfb did not start:" >&2; cat "$TMP/xvfb.log" >&2; exit 1; }
DISP=$(cat "$TMP/xvfb.display")
export DISPLAY=:$DISP

# cockpit-ws in the namespace, in a process group of its own (with cockpit-session and the
# bridges it starts); nsenter, env and setsid exec each other: $! is cockpit-ws.
WS_PORT=$(free_port)
nsenter -t "$NS_PID" -m -n env XDG_CONFIG_DIRS="$TMP/xdg" setsid "$WS" --no-tls --address 127.0.0.1 --port "$WS_PORT" \
	> "$TMP/ws.log" 2>&1 &
WS_PID=$!
ws_up() { in_ns bash -c "exec 3<> /dev/tcp/127.0.0.1/$WS_PORT" 2> /dev/null; }
wait_for 15 ws_up || { echo "cockpit-ws did not listen:" >&2; cat "$TMP/ws.log" >&2; exit 1; }

# Chromium as root needs --no-sandbox; --test-type keeps the warning bar about it off the page.
# Its profile, cache, home and temporary directory are the suite's (its singleton socket goes in
# TMPDIR, which it does not remove when stopped); no first-run dialogs, no background traffic.
# Its crash handlers leave its process group (they daemonize), and end when it ends.
mkdir -p "$TMP/chrome-home" "$TMP/chrome-tmp"
nsenter -t "$NS_PID" -m -n env HOME="$TMP/chrome-home" XDG_CONFIG_HOME="$TMP/chrome-home" \
	XDG_CACHE_HOME="$TMP/chrome-home" TMPDIR="$TMP/chrome-tmp" setsid chromium --no-sandbox \
	--test-type --user-data-dir="$TMP/chrome" --no-first-run --no-default-browser-check \
	--disable-gpu --disable-dev-shm-usage --disable-background-networking \
	--disable-component-update --disable-sync --disable-default-apps --disable-extensions \
	--password-store=basic --lang=en-US --window-position=0,0 --window-size=1024,768 \
	--app="http://127.0.0.1:$WS_PORT/" > "$TMP/chrome.log" 2>&1 &
CHROME_PID=$!

# shot NAME: a screenshot into build/e2e-cockpit/NAME.png, and what tesseract reads in the
# page's message area (its top 300 rows, grey, enlarged twice) on one line in NAME.txt.
shot() {
	import -window root "$SHOTS/$1.png" 2> /dev/null || return 1
	convert "$SHOTS/$1.png" -crop 1024x300+0+0 +repage -colorspace Gray -resize 200% "$TMP/ocr.png"
	tesseract "$TMP/ocr.png" - 2> /dev/null | tr -s ' \n\t' '   ' > "$SHOTS/$1.txt"
}
# watch_page NAME SECONDS TEXT [PAUSE]: screenshots NAME-<ms since T_ENTER> until one reads
# TEXT, or for SECONDS, PAUSE seconds apart (none by default); each text read, with when, into
# $TMP/NAME.seen.
watch_page() {
	local name=$1 until=$(($(now_ms) + $2 * 1000)) t
	: > "$TMP/$name.seen"
	while [ "$(now_ms)" -lt "$until" ]; do
		t=$(($(now_ms) - T_ENTER))
		shot "$name-$t" || continue
		printf '%s %s\n' "$t" "$(cat "$SHOTS/$name-$t.txt")" >> "$TMP/$name.seen"
		grep -qF -- "$3" "$SHOTS/$name-$t.txt" && return 0
		sleep "${4:-0}"
	done
	return 1
}
# note WHAT: a TAP comment, when the suite got there (for a run that took long).
note() { echo "# at $SECONDS s: $*"; }
# seen_at NAME TEXT: when TEXT was first read (ms after T_ENTER); seen_line NAME TEXT: that line.
seen_at() { grep -F -- "$2" "$TMP/$1.seen" | head -1 | cut -d' ' -f1; }
seen_line() { grep -F -- "$2" "$TMP/$1.seen" | head -1 | cut -d' ' -f2- | grep -o -- "$2.\{0,60\}"; }

# login_form NAME: the login page, reloaded (after a failure it may show no form), until it
# shows its form.
login_form() {
	xdotool mousemove 512 700 key F5
	T_ENTER=$(now_ms)
	watch_page "$1" 30 "User name"
}
# log_in: types the user's name and password in the form (empty: a fresh page, or one reloaded),
# and Enter; T_ENTER is just before Enter: the page sent the login no earlier.
log_in() {
	xdotool mousemove 500 143 click 1 type --delay 20 "$USR"
	xdotool key Tab type --delay 20 "$PASS"
	T_ENTER=$(now_ms)
	xdotool key Return
}

# hold NAME N: N places taken at once on the schedule "web", as N logins would, and returns
# once all are (within 30 s): each flowslotctl wait says its place as it takes it, in
# $TMP/NAME-I.log, but for the first, let in at once. Their own pids in HOLDS as each starts
# (no subshell between, which a stop would kill and leave flowslotctl running); when each was
# started, before it reserved, in $TMP/NAME-I.start; the first, in T_HOLD.
hold() {
	local i
	T_HOLD=$(now_ms)
	for i in $(seq "$2"); do
		now_ms > "$TMP/$1-$i.start"
		"$CTL" wait web "state_dir=$TMP/state" "interval=${INTERVAL}s" max_wait=120s countdown=0 \
			> "$TMP/$1-$i.log" 2>&1 &
		HOLDS="$HOLDS $!"
	done
	wait_for 30 placed "$1" $(($2 - 1)) ||
		note "$1: only $(placed_count "$1") of $2 places told after $(($(now_ms) - T_HOLD)) ms"
}
# slot_ahead NAME: a bound below the last slot of NAME's places (wall-clock ms): the latest of
# each place's start (before it reserved) plus the wait it was first told, less what the text
# rounds up (src/countdown.c: a tenth of a second, a whole one from 10 s on); a place let in
# at once was told nothing, and its slot is no earlier than its start. ("%.0f": mawk's "%d"
# stops at 2^31.)
slot_ahead() {
	local f told
	for f in "$TMP/$1"-[0-9]*.start; do
		told=$(sed -n 's/.*your turn in about \([0-9.]*\) s\..*/\1/p' "${f%.start}.log" | head -1)
		awk -v start="$(cat "$f")" -v told="${told:-0}" 'BEGIN {
			up = (told >= 10 && told !~ /\./) ? 1000 : 100
			printf "%.0f\n", start + (told > 0 ? told * 1000 - up : 0) }'
	done | sort -n | tail -1
}
# placed NAME N: N of NAME's places are taken and told.
placed_count() { find "$TMP" -maxdepth 1 -name "$1-*.log" -size +0 | wc -l; }
placed() { [ "$(placed_count "$1")" -ge "$2" ]; }
# stop_holds: gives the places held back (SIGTERM) and empties the schedule.
stop_holds() {
	for pid in $HOLDS; do kill "$pid" 2> /dev/null; done
	# shellcheck disable=SC2086 # a list of pids
	wait_for 10 none_alive $HOLDS
	for pid in $HOLDS; do wait "$pid" 2> /dev/null; done
	HOLDS=""
	"$CTL" reset web "state_dir=$TMP/state" "interval=${INTERVAL}s" > /dev/null 2>&1
}
none_alive() {
	for pid in "$@"; do ! kill -0 "$pid" 2> /dev/null || return 1; done
}

# mark: notes where cockpit-ws's log (with cockpit-session's standard error) and the syslog end
# now, in bytes (a line count missed the syslog's last message, which no newline ends yet);
# ws_since and log_since: what they got since.
mark() {
	WS_FROM=$(($(stat -c %s "$TMP/ws.log") + 1))
	LOG_FROM=$(($(stat -c %s "$TMP/syslog" 2> /dev/null || echo 0) + 1))
}
ws_since() { tail -c +"$WS_FROM" "$TMP/ws.log"; }
log_since() { tail -c +"$LOG_FROM" "$TMP/syslog" 2> /dev/null | sed 's/<[0-9]\{1,3\}>/\n&/g'; }
# module_said WHAT: the module's line "WHAT: service=cockpit user=USR ..." since mark, from the
# account phase (pam_syslog's prefix), without its prefix; fails if there is none.
module_said() {
	log_since | grep -o "pam_flowslot(cockpit:account): $1: service=cockpit user=$USR .*" | head -1 |
		sed 's/^pam_flowslot(cockpit:account): //' | grep .
}
# figure LINE NAME: the number NAME= in LINE (" NAME=": wait_ms is not max_wait_ms).
figure() { echo "$1" | sed -n "s/.* $2=\([0-9]*\).*/\1/p"; }
# host_waiting: this host's logins waiting on the schedule now (flowslotctl status).
host_waiting() {
	"$CTL" status --json web "state_dir=$TMP/state" "interval=${INTERVAL}s" 2> /dev/null |
		sed -n 's/.*"host": {"waiting": \([0-9]*\).*/\1/p'
}
# stamp_ms FILE: when the test user's login last got to FILE's stamp (ms), or nothing.
stamp_ms() {
	local ns
	ns=$(grep " $USR\$" "$1" 2> /dev/null | tail -1 | cut -d' ' -f1)
	[ -z "$ns" ] || echo $((ns / 1000000))
}
# admitted_ms: when the test user's login passed the gate (the stamp after it), or nothing;
# arrived_ms: when it came to the gate (the stamp before it: before the module reserved).
admitted_ms() { stamp_ms "$TMP/stamps"; }
arrived_ms() { stamp_ms "$TMP/arrivals"; }

note "Chromium started"
T_ENTER=$(now_ms)
if ! watch_page start 40 "User name"; then
	not_ok "Chromium shows Cockpit's login page ($(tail -3 "$TMP/chrome.log" | tr '\n' ' '))"
	finish
	exit
fi

# 1. A refusal's text: with ten places held the login's wait would be up to 50 s, over the
# stack's max_wait (20 s) if it comes within 30 s (a loaded machine is slow to start the
# places): refused at once, in account, and the page shows the module's words.
note "the login page shows"
stop_holds
hold refuse 10
mark
log_in
watch_page refuse "$WS_TIMEOUT" "Too many logins at the moment"
at=$(seen_at refuse "Too many logins at the moment")
said=$(module_said refused)
# At once: refused for the wait found at the reservation, over max_wait, never queued first
# (then refused a later slot, or let in); and the page shows the words.
refused_at_once() {
	local w m
	w=$(figure "$said" wait_ms) m=$(figure "$said" max_wait_ms)
	[ -n "$w" ] && [ -n "$m" ] && [ "$w" -gt "$m" ] && ! module_said queued > /dev/null &&
		[ -n "$at" ] && grep -q 'Too many logins at the moment.*try again in' "$TMP/refuse.seen"
}
check "over max_wait=$(max_wait_of) (ten places held $((T_ENTER - T_HOLD)) ms before): refused at once, the page shows the module's words at ${at:-never} ms: '$(seen_line refuse 'Too many logins')' (refused for wait_ms over max_wait_ms, no 'queued:' first)" \
	refused_at_once
in_account() {
	[ -n "$said" ] && ws_since | grep -q "user account access failed: 6 $USR: Permission denied" &&
		[ -z "$(admitted_ms)" ]
}
check "... in account: the module logged '${said:-nothing}', cockpit-session got PAM_PERM_DENIED (6), nothing went through" \
	in_account
stop_holds

# 2. A wait past Cockpit's limit: with max_wait=60s and twelve places held (a wait of up to
# 60 s), the login is queued, and waits until cockpit-ws gives up on it at its 30 s: why the
# example keeps max_wait under it.
note "a refusal done"
write_stack max_wait=60s
login_form timeout-form
hold timeout 12
mark
log_in
wait_for 15 module_said queued > /dev/null
waiting_then=$(host_waiting)
watch_page timeout $((WS_TIMEOUT + 20)) "Authentication failed: Timeout" 3
at=$(seen_at timeout "Authentication failed: Timeout")
said=$(module_said queued)
# cockpit-ws arms its limit when the login reaches it, after T_ENTER, with g_timeout_add_seconds,
# which GLib rounds to a whole second: down by up to 250 ms.
timed_out() {
	[ -n "$at" ] && [ "$at" -ge $((WS_TIMEOUT * 1000 - 250)) ] && ws_since | grep -q 'authentication timed out'
}
check "max_wait=$(max_wait_of), twelve places held $((T_ENTER - T_HOLD)) ms before, a wait of $(figure "$said" wait_ms) ms told, over cockpit's $WS_TIMEOUT s: the page says 'Authentication failed: Timeout' at ${at:-never} ms, not before $WS_TIMEOUT s (less GLib's 250 ms)" \
	timed_out
host_waiting_is() { [ "$(host_waiting)" = "$1" ]; }
wait_for 5 host_waiting_is 0
waiting_after=$(host_waiting)
cut_off() { [ -n "$said" ] && [ "$waiting_then" = 1 ] && [ "$waiting_after" = 0 ] && [ -z "$(admitted_ms)" ]; }
check "... cut off in the gate ('${said:-not queued}'): this host's waiters counted it (${waiting_then:-?}), then no more (${waiting_after:-?}); it never went through" \
	cut_off
stop_holds
write_stack
note "a timeout done"

# 3. A login inside its limit: three places held ahead, the login is queued for a slot an
# interval after the last of theirs, goes in no earlier, and the Cockpit page that follows a
# login shows.
login_form ok-form
hold ok 3
mark
log_in
watch_page ok $((WS_TIMEOUT + 10)) "missing the cockpit-system package"
at=$(seen_at ok "missing the cockpit-system package")
admit=$(admitted_ms)
arrived=$(arrived_ms)
queued=$(module_said queued)
wait_ms=$(figure "$queued" wait_ms)
said=$(module_said "went in")
# Its own slot: the wait told, within max_wait, from its reservation, which came after the
# stamp before the gate; it passed no earlier.
logged_in() {
	[ -n "$at" ] && [ -n "$admit" ] && [ -n "$arrived" ] && [ -n "$said" ] && [ -n "$wait_ms" ] &&
		in_range "$wait_ms" 0 "$(ms_of "$(max_wait_of)")" && [ "$admit" -ge $((arrived + wait_ms)) ]
}
check "a login inside max_wait=$(max_wait_of) (three places held $((T_ENTER - T_HOLD)) ms before): told a wait of ${wait_ms:-no} ms, in $((${admit:-0} - ${arrived:-0})) ms after it came to the gate ('${said:-no went in: line}'), then the page after a login (at ${at:-never} ms: '$(seen_line ok 'missing the cockpit')')" \
	logged_in
ahead=$(slot_ahead ok)
after_slots() {
	placed ok 2 && [ -n "$admit" ] && [ -n "$ahead" ] && [ $((admit - ahead)) -ge $((INTERVAL * 1000)) ]
}
check "... an interval ($INTERVAL s) or more after the slot of the last place held (no earlier than $((${ahead:-0} - T_HOLD)) ms after the first was taken): in at $((${admit:-0} - T_HOLD)) ms" \
	after_slots
told=$(ws_since | grep -c 'cockpit-session: pam: Login queue: ')
spinner() { [ "$told" -ge 1 ] && ! grep -q 'Login queue' "$TMP/ok.seen"; }
check "... told its place by the module ($told lines to cockpit-session), while the page said nothing of it ($(wc -l < "$TMP/ok.seen") shots)" \
	spinner
stop_holds

# The login records went to the namespace's copies, none to the host's files.
copies="wtmp $(records "$TMP/varlog/wtmp") btmp $(records "$TMP/varlog/btmp") lastlog $(lastlog_of "$TMP/varlog/lastlog")"
host_after=$(host_records)
kept_apart() { [ "$host_after" = "$HOST_RECORDS" ] && [ "$(records "$TMP/varlog/wtmp")" -ge 1 ]; }
check "cockpit-session's records of the user went to the namespace's copies ($copies), not the host's ($HOST_RECORDS, then $host_after)" \
	kept_apart

# The logs and the stack beside the screenshots, for whoever reads a failure.
cp "$TMP/ws.log" "$TMP/chrome.log" "$SHOTS/"
cp "$TMP/pam.d/cockpit" "$SHOTS/cockpit.pam"
for f in "$TMP"/*-[0-9]*.log; do cp "$f" "$SHOTS/hold-${f##*/}"; done
syslog > "$SHOTS/syslog"
finish
