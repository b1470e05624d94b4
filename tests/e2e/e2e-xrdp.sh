#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# End to end with xrdp 0.9.21: xrdp and xrdp-sesman in the foreground on free loopback ports,
# in a private mount namespace that holds copies of /etc/pam.d (the gate in the service
# xrdp-sesman), /etc/xrdp and the host's login records, a /run of its own and a /dev/log the
# suite listens on. sesman starts Xorg with xorgxrdp as the user; the clients are xfreerdp on
# an Xvfb of the suite's. The user sees nothing of the queue (xrdp shows a flat colour), nor of
# a refusal: the module's lines go to sesman's log.
set -u
. "$(dirname "$0")/../helpers/lib.sh"

[ "$(id -u)" = 0 ] || skip_all "needs root: xrdp-sesman, useradd and mount namespaces"
for cmd in xrdp xrdp-sesman xfreerdp Xvfb xdpyinfo xdotool xmessage import convert python3 openssl; do
	command -v "$cmd" > /dev/null || skip_all "$cmd is missing (tests/deps.sh installs it)"
done
[ -e /usr/lib/xorg/modules/drivers/xrdpdev_drv.so ] || skip_all "xorgxrdp is missing"
unshare --mount --propagation private true 2> /dev/null || skip_all "no mount namespace here"

CTL=$TREE/flowslotctl
SHOTS=$TOP/build/e2e-xrdp
rm -rf "$SHOTS"
mkdir -p "$SHOTS" "$TMP/client"
INTERVAL=6
GATE="key=rdp interval=${INTERVAL}s"
SLOG=$TMP/sesman.log
# Users unique to this suite and run, with one password.
U1=fsxrdp$$a U2=fsxrdp$$b
PASS=flowslot-$$
NS_PID="" NS_MNT=""

# free_id FROM: an id from FROM up that no user or group of the host has, for a user and its
# group (far above the ids useradd gives on the host meanwhile). The suite draws FROM in
# 63000-63899, a range no other suite uses (tests/e2e/e2e-console.sh counts up from 61000), under
# the UID_MAX=65000 its useradd is given.
free_id() {
	local id=$1
	while getent passwd "$id" > /dev/null || getent group "$id" > /dev/null; do id=$((id + 1)); done
	echo "$id"
}

# plan_user NAME UID: a user for the namespace to make (in $TMP/users), with a home under $TMP
# whose ~/startwm.sh (sesman's UserWindowManager) stamps "<ns> <user>" into $TMP/stamps when
# the X session starts, shows a line of text, and holds the session until $TMP/end exists.
plan_user() {
	mkdir -p "$TMP/home/$1"
	cat > "$TMP/home/$1/startwm.sh" <<- EOF
		#!/bin/sh
		printf '%s %s\n' "\$(date +%s%N)" "\$(id -un)" >> '$TMP/stamps'
		xmessage -center "The X session of \$(id -un)" &
		i=0
		while [ ! -e '$TMP/end' ] && [ \$i -lt 900 ]; do sleep 0.1; i=\$((i + 1)); done
	EOF
	chmod 0755 "$TMP/home/$1/startwm.sh"
	echo "$1 $2 $(openssl passwd -6 "$PASS")" >> "$TMP/users"
}

# start_xvfb: an Xvfb for the clients, in $DISPLAY_N, once it answers. Xvfb picks a free
# display itself (-displayfd: from 0 up, the first whose sockets it can bind, the abstract one
# failing while another server holds it; the number written once it is ready): no other suite's
# server can take it between a look at /tmp and the start, as with a number picked beforehand.
start_xvfb() {
	Xvfb -displayfd 3 -screen 0 1400x600x24 -nolisten tcp 3> "$TMP/xvfb.display" > "$TMP/xvfb.log" 2>&1 &
	XVFB_PID=$!
	PIDS="$PIDS $XVFB_PID"
	wait_for 20 grep -q '^[0-9][0-9]*$' "$TMP/xvfb.display" &&
		DISPLAY_N=$(cat "$TMP/xvfb.display") &&
		wait_for 10 xdpyinfo -display ":$DISPLAY_N" > /dev/null 2>&1
}

# configure: copies of /etc/xrdp (the ports, the logs, the displays sesman uses) and of
# /etc/pam.d, which the namespace binds over the host's.
configure() {
	local offset
	XRDP_PORT=$(free_port)
	SESMAN_PORT=$(free_port)
	while [ "$SESMAN_PORT" = "$XRDP_PORT" ]; do SESMAN_PORT=$(free_port); done
	# sesman's sessions on displays from a random offset up, clear of the low numbers that the
	# other suites' Xvfb take; sesman skips the ones in use itself.
	offset=$((RANDOM % 400 + 300))
	cp -a /etc/xrdp "$TMP/etc-xrdp"
	cp -a /etc/pam.d "$TMP/pam.d"
	# The first port= is the listener's; [Xorg]'s port=-1 (a display from sesman) stays.
	sed -i -e "0,/^port=/s|^port=.*|port=tcp://127.0.0.1:$XRDP_PORT|" \
		-e "s|^LogFile=.*|LogFile=$TMP/xrdp.log|" -e 's|^EnableSyslog=.*|EnableSyslog=false|' \
		"$TMP/etc-xrdp/xrdp.ini"
	# Each line of sesman's log names its process: a session's child logs its PAM messages.
	sed -i -e "s|^ListenPort=.*|ListenPort=$SESMAN_PORT|" \
		-e "s|^ListenAddress=.*|ListenAddress=127.0.0.1|" \
		-e "s|^X11DisplayOffset=.*|X11DisplayOffset=$offset|" \
		-e "s|^LogFile=.*|LogFile=$SLOG|" -e 's|^EnableSyslog=.*|EnableSyslog=false|' \
		-e 's|^#EnableProcessId=.*|EnableProcessId=true|' "$TMP/etc-xrdp/sesman.ini"
}

# gate_in PHASE: the service xrdp-sesman, Debian's with etc/pam.d/xrdp-sesman-flowslot's
# lines (the gate on the suite's own state_dir, GATE added) before its first PHASE line:
# @include common-session, as the example says, or, for auth, its first auth line. Before
# them, a pam_exec line stamps when each login came to the gate ("<ns> <user>" into
# $TMP/arrivals; when its session opens, not when it closes).
gate_in() {
	local when=auth
	[ "$1" = session ] && when=open_session
	printf '%s optional %s/pam_exec.so quiet type=%s /bin/sh %s/tests/helpers/stamp.sh %s/arrivals\n' \
		"$1" "$PAM_DIR" "$when" "$TREE" "$TMP" > "$TMP/gate-lines"
	example xrdp-sesman-flowslot local "$GATE" | sed "s/^session /$1 /" >> "$TMP/gate-lines"
	awk -v phase="$1" -v lines="$TMP/gate-lines" '
		!done && ($1 == phase || $0 == "@include common-" phase) {
			while ((getline l < lines) > 0) print l
			done = 1
		}
		{ print }' /etc/pam.d/xrdp-sesman > "$TMP/pam.d/xrdp-sesman"
}

# log_files: copies of the host's login records (/var/log/wtmp, btmp, lastlog: those it has)
# for the namespace to bind over them, their names in $TMP/log-files; their sums, as the host
# has them, in $TMP/log-sums (records_kept checks them after the run).
log_files() {
	local f
	: > "$TMP/log-files"
	for f in wtmp btmp lastlog; do
		[ -f "/var/log/$f" ] || continue
		cp -p --sparse=always "/var/log/$f" "$TMP/log-$f" && echo "$f" >> "$TMP/log-files"
	done
	# shellcheck disable=SC2046 # a list of names, none with a blank
	(cd /var/log && md5sum /dev/null $(cat "$TMP/log-files")) > "$TMP/log-sums"
}
# records_kept: the host's login records are as they were before the run.
records_kept() { (cd /var/log && md5sum --quiet -c "$TMP/log-sums") > /dev/null 2>&1; }

# start_servers: xrdp-sesman and xrdp in the foreground in a private mount namespace, with
# the copies bound on /etc/pam.d and /etc/xrdp and on the host's login records (log_files), a
# /run of its own (pid files, the xorgxrdp sockets, utmp), and an overlay on /dev whose
# /dev/log sends its datagrams to $TMP/syslog as "<ns> <message>". Every process started there
# stays in the namespace (stop_ns).
# The users of $TMP/users are made there by useradd, in an overlay on /etc (its upper layer
# under $TMP): the host's account files are never written. A useradd on the host renames a new
# /etc/passwd over the old one, which drops a bind mount on that file in any other namespace:
# another suite's copy of it, beside this one.
start_servers() {
	local d
	for d in dev etc; do mkdir -p "$TMP/$d-up" "$TMP/$d-work" "$TMP/$d-new"; done
	cat > "$TMP/syslogd.py" <<- 'EOF'
		import os, socket, sys, time
		s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
		s.bind("/dev/log")
		os.chmod("/dev/log", 0o666)
		with open(sys.argv[1], "a", buffering=1) as f:
		    while True:
		        d = s.recv(65536).decode(errors="replace").rstrip("\n")
		        f.write("%d %s\n" % (time.time_ns(), d))
	EOF
	# shellcheck disable=SC2016 # the namespace's script; its paths are its arguments
	setsid unshare --mount --propagation private sh -c '
		tmp=$1
		mount -t overlay overlay -o "lowerdir=/etc,upperdir=$tmp/etc-up,workdir=$tmp/etc-work" \
			"$tmp/etc-new" && mount --move "$tmp/etc-new" /etc || exit 1
		# A host useradd holds its lock files while it runs; they belong to the host and its
		# files: hidden here (whiteouts in the upper layer), where the files are our copies.
		# One may come while ours run: then again.
		while read -r name uid hash; do
			for try in 1 2 3 4 5; do
				for f in passwd shadow group gshadow subuid subgid; do rm -f "/etc/$f.lock"; done
				{ getent group "$name" > /dev/null || groupadd -g "$uid" "$name"; } &&
					{ getent passwd "$name" > /dev/null ||
						useradd -K UID_MAX=65000 -u "$uid" -g "$uid" -M -d "$tmp/home/$name" \
							-s /bin/sh -p "$hash" "$name"; } && break
				[ $try = 5 ] && exit 1
				sleep 0.5
			done
			chown -R "$name:" "$tmp/home/$name" || exit 1
		done < "$tmp/users"
		# The login records: copies of the host'"'"'s, bound over them (log_files).
		for f in $(cat "$tmp/log-files"); do
			mount --bind "$tmp/log-$f" "/var/log/$f" || exit 1
		done
		mount --bind "$tmp/pam.d" /etc/pam.d && mount --bind "$tmp/etc-xrdp" /etc/xrdp &&
			mount -t tmpfs -o mode=0755 tmpfs /run || exit 1
		mkdir -p /run/xrdp/sockdir /run/lock && chmod 3777 /run/xrdp/sockdir && chmod 1777 /run/lock
		mount -t overlay overlay -o "lowerdir=/dev,upperdir=$tmp/dev-up,workdir=$tmp/dev-work" \
			"$tmp/dev-new" || exit 1
		for m in pts shm mqueue hugepages; do
			if mountpoint -q "/dev/$m" 2> /dev/null; then
				mount --rbind "/dev/$m" "$tmp/dev-new/$m" || exit 1
			fi
		done
		mount --move "$tmp/dev-new" /dev || exit 1
		python3 "$tmp/syslogd.py" "$tmp/syslog" &
		i=0
		while [ ! -S /dev/log ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
		xrdp-sesman --nodaemon --config /etc/xrdp/sesman.ini > "$tmp/sesman.out" 2>&1 &
		xrdp --nodaemon --config /etc/xrdp/xrdp.ini > "$tmp/xrdp.out" 2>&1 &
		wait' sh "$TMP" > "$TMP/ns.log" 2>&1 &
	NS_PID=$!
	# The namespace, once unshare made it: every process started there is in it, and stays.
	wait_for 10 sh -c "[ \"\$(readlink /proc/$NS_PID/ns/mnt)\" != '$(readlink /proc/$$/ns/mnt)' ]" &&
		NS_MNT=$(readlink "/proc/$NS_PID/ns/mnt")
	wait_for 30 listening "$SESMAN_PORT" && wait_for 30 listening "$XRDP_PORT"
}

# listening PORT: something listens on PORT.
listening() { ss -Htln "sport = :$1" | grep -q .; }
# backlog PORT: how many connections wait to be accepted on the listening PORT.
backlog() { ss -Htln "sport = :$1" | awk '{ print $2; exit }'; }

# descendants PID: PID's descendants, deepest first.
descendants() {
	local c
	for c in $(pgrep -P "$1"); do
		descendants "$c"
		echo "$c"
	done
}

# stop_tree PID: PID and its descendants, by pid: TERM, then KILL for what is left after 5 s.
stop_tree() {
	local pids p
	pids="$(descendants "$1") $1"
	# shellcheck disable=SC2086 # a list of pids
	kill $pids 2> /dev/null
	for _ in $(seq 50); do
		for p in $pids; do kill -0 "$p" 2> /dev/null && break; done || break
		sleep 0.1
	done
	# shellcheck disable=SC2086
	kill -KILL $pids 2> /dev/null
	wait "$1" 2> /dev/null
}

# client NAME USER X: xfreerdp on the suite's Xvfb at X, logging in as USER (credentials
# passed: xrdp logs in at once, without its own dialog), in a window titled NAME; the pid of
# the subshell around it in $TMP/NAME.pid, its own in $TMP/NAME.rdp.
client() {
	# In a subshell that outlives it: how it ended goes to its log, not to the suite's stderr
	# (xfreerdp stopped while connected dies of a segmentation fault).
	(
		HOME=$TMP/client DISPLAY=":$DISPLAY_N" xfreerdp /v:127.0.0.1:"$XRDP_PORT" /u:"$2" \
			/p:"$PASS" /cert:ignore /size:640x480 /window-position:"$3"x0 /title:"$1" \
			-clipboard &
		echo $! > "$TMP/$1.rdp"
		wait $!
		echo "exit $?"
	) > "$TMP/$1.client" 2>&1 &
	echo $! > "$TMP/$1.pid"
}

# stop_clients NAME...: each client still running stopped (stop_tree), and the shared memory
# its xfreerdp leaves in the host's /dev/shm when it is killed: its TSMF channel's, named
# after its pid.
stop_clients() {
	local c
	for c in "$@"; do
		[ -e "$TMP/$c.pid" ] || continue
		stop_tree "$(cat "$TMP/$c.pid")"
		[ -s "$TMP/$c.rdp" ] &&
			rm -f "/dev/shm/com.freerdp.xfreerdp.tsmf_$(printf '%016X' "$(cat "$TMP/$c.rdp")")"
		rm -f "$TMP/$c.pid" "$TMP/$c.rdp"
	done
}

# window NAME: the X window of client NAME on the suite's Xvfb (its title), once it has one.
window() {
	local win
	wait_for 10 sh -c "DISPLAY=':$DISPLAY_N' xdotool search --name '^$1\$' > /dev/null 2>&1" &&
		win=$(DISPLAY=":$DISPLAY_N" xdotool search --name "^$1\$" 2> /dev/null | head -1) &&
		echo "$win"
}
# snap WINDOW FILE: a screenshot of X window WINDOW into build/e2e-xrdp/FILE.png; prints when it
# was written (ns): the window was taken before that.
snap() {
	[ -n "$1" ] && import -display ":$DISPLAY_N" -window "$1" "$SHOTS/$2.png" 2> /dev/null &&
		date +%s%N
}
# looks FILE: the colours of build/e2e-xrdp/FILE.png: how many, and the commonest ("N #RRGGBB").
looks() {
	printf '%s %s\n' "$(convert "$SHOTS/$1.png" -format %k info: 2> /dev/null)" \
		"$(convert "$SHOTS/$1.png" -format %c histogram:info:- 2> /dev/null | sort -rn | head -1 |
			grep -o '#[0-9A-Fa-f]\{6\}' | head -1)"
}

# drawn WINDOW FILE: a shot of X window WINDOW (snap) shows more than one colour.
drawn() { snap "$1" "$2" > /dev/null && [ "$(looks "$2" | cut -d' ' -f1)" -gt 1 ]; }

# since MARK: sesman's log after its first MARK lines.
since() { tail -n +$(($1 + 1)) "$SLOG"; }
# at MARK ERE: the number of the first line of since MARK that matches ERE (99999: none).
at() { since "$1" | grep -n -m1 -E -- "$2" | cut -d: -f1 | grep . || echo 99999; }
# session_pid MARK USER: the pid of the process sesman forked for USER's session (which opens
# it: the gate in session waits in it).
session_pid() {
	since "$1" | sed -n "s/.*Starting session: session_pid \([0-9]*\),.* user name $2\$/\1/p" |
		head -1 | grep . || echo none
}
# stamp_of USER: when USER's X session started (ns).
stamp_of() { awk -v u="$1" '$2 == u { print $1; exit }' "$TMP/stamps"; }
# went_in SINCE USER: when the module let USER in (its "went in:" line, ns), from the syslog
# after its first SINCE lines.
went_in() {
	tail -n +$(($1 + 1)) "$TMP/syslog" | grep -F "pam_flowslot(xrdp-sesman:" |
		grep -F " went in: service=xrdp-sesman user=$2 " | head -1 | cut -d' ' -f1
}
# came_to SINCE USER: when USER came to the gate (its first line, "queued:" or "went in:", ns).
came_to() {
	tail -n +$(($1 + 1)) "$TMP/syslog" | grep -F "pam_flowslot(xrdp-sesman:" |
		grep -E " (queued|went in): service=xrdp-sesman user=$2 " | head -1 | cut -d' ' -f1
}
# arrival_of USER: when USER came to the gate (its stamp before the gate, ns).
arrival_of() { awk -v u="$1" '$2 == u { print $1; exit }' "$TMP/arrivals"; }
# told_wait SINCE USER: the wait the module told USER (its "queued:" line's wait_ms, from the
# syslog after its first SINCE lines; 0 when it went in at once).
told_wait() {
	tail -n +$(($1 + 1)) "$TMP/syslog" | grep -F " queued: service=xrdp-sesman user=$2 " |
		sed -n 's/.* wait_ms=\([0-9]*\) .*/\1/p' | head -1 | grep . || echo 0
}
# slot_bound SINCE USER: a bound on USER's slot (ns): no earlier than its arrival plus the wait
# it was told (the module reserved after the stamp). A stamp made late by a loaded machine
# measures from that bound only widens a gap; a slot given too soon narrows it below an
# interval. Empty when USER never came.
slot_bound() {
	local a
	a=$(arrival_of "$2")
	[ -n "$a" ] && echo $((a + $(told_wait "$1" "$2") * 1000000))
}
# came_yet SINCE USER: USER came to the gate (the module logged its first line).
came_yet() { [ -n "$(came_to "$1" "$2")" ]; }
# ms A B: B - A, ns to ms ("?" when either is missing).
ms() { if [ -n "$1" ] && [ -n "$2" ]; then echo $((($2 - $1) / 1000000)); else echo "?"; fi; }

# hold_until DEPTH COMMAND...: keeps DEPTH places waiting in line on the gate's schedule,
# held by flowslotctl wait as logins would hold them (in the background; a new one whenever
# fewer wait), until COMMAND succeeds (60 s at most). A login that comes to the gate meanwhile,
# however late a loaded machine brings it, waits DEPTH intervals or more. "hold_until N true"
# fills the line and returns.
hold_until() {
	# Not "limit": wait_for (lib.sh) sets that one, which is ours while it runs.
	local depth=$1 deadline=$(($(now_ms) + 60000)) waiting h
	shift
	while :; do
		waiting=0
		for h in ${HOLDERS:-}; do holding "$h" && waiting=$((waiting + 1)); done
		if [ "$waiting" -lt "$depth" ]; then
			HELD=$((${HELD:-0} + 1))
			"$CTL" wait rdp state_dir="$TMP/state" interval="${INTERVAL}s" > "$TMP/hold$HELD.out" 2>&1 &
			HOLDERS="${HOLDERS:-} $!:$HELD"
			# In line (it said so), or in at once (it is gone): the next one comes after it.
			wait_for 5 sh -c "grep -q . '$TMP/hold$HELD.out' || ! kill -0 $! 2> /dev/null"
			continue
		fi
		"$@" && return 0
		[ "$(now_ms)" -lt "$deadline" ] || return 1
		sleep 0.1
	done
}
# stop_holders: the holders still running (flowslotctl itself: each started as a simple
# command in the background, so $! is its own pid), by pid: TERM, then waited for.
stop_holders() {
	local h
	for h in ${HOLDERS:-}; do kill "${h%:*}" 2> /dev/null; done
	for h in ${HOLDERS:-}; do wait "${h%:*}" 2> /dev/null; done
	HOLDERS=""
}
# holding PID:N: holder N (pid PID) still waits for its turn (it prints each line as it goes).
holding() {
	kill -0 "${1%:*}" 2> /dev/null && ! grep -q 'your turn now' "$TMP/hold${1#*:}.out"
}
# end_sessions MARK N: the sessions end (their window managers return), sesman reaps N of them
# after MARK, and the clients are stopped; the stamps are cleared.
end_sessions() {
	local h
	touch "$TMP/end"
	wait_for 20 sh -c "[ \$(tail -n +$(($1 + 1)) '$SLOG' | grep -c '++ terminated session') -ge $2 ]"
	stop_clients c1 c2
	rm -f "$TMP/end"
	: > "$TMP/stamps"
	: > "$TMP/arrivals"
	for h in ${HOLDERS:-}; do wait "${h%:*}"; done
	HOLDERS=""
}

# no_session_why: empty when both users' X sessions started; else why not, as far as sesman's
# log and the X servers' logs tell (their errors).
no_session_why() {
	[ "$(wc -l < "$TMP/stamps")" -ge 2 ] && return 0
	printf '; %s' "$(grep -h -E '\[(ERROR|WARN) ?\]|\(EE\)' "$SLOG" "$TMP"/home/*/.xorgxrdp.*.log 2> /dev/null |
		grep -v 'scp_process_msg failed\|trans_check_wait_objs failed\|exited quickly' | head -5 | tr '\n' ' ')"
}

# now_pam MARK PID: sesman's log after MARK has a PAM message of PID.
now_pam() { since "$1" | grep -q "\[pid:$2 .*PAM: Login queue"; }
# first_to_come MARK: the user whose session sesman started first after MARK.
first_to_come() {
	since "$1" | sed -n 's/.*Starting session: .* user name \(.*\)$/\1/p' | head -1
}
# first_waits MARK: the session process of the first to come has told a PAM message (it waits).
first_waits() {
	local u p
	u=$(first_to_come "$1")
	[ -n "$u" ] && p=$(session_pid "$1" "$u") && [ "$p" != none ] && now_pam "$1" "$p"
}
# waits_in_auth MARK: sesman's main process has told a PAM message since MARK.
waits_in_auth() { since "$1" | grep -q 'PAM: Login queue: you are'; }

# in_ns MNT: the processes in the mount namespace MNT ("mnt:[N]"), read in one pass.
in_ns() {
	# shellcheck disable=SC2010 # ls -l names each link's target, which is what is matched
	ls -l /proc/[0-9]*/ns/mnt 2> /dev/null | grep -F -- "-> $1" | sed 's|.* /proc/\([0-9]*\)/ns/mnt .*|\1|'
}
# stop_ns: every process in the servers' namespace, by pid (whatever its parent or process
# group: sesman's sessions have their own, and their processes outlive their parents): TERM,
# once to each, those born meanwhile too; then KILL for what is left after 5 s.
stop_ns() {
	local told=" " p
	for _ in $(seq 50); do
		for p in $(in_ns "$NS_MNT"); do
			case $told in *" $p "*) continue ;; esac
			kill "$p" 2> /dev/null
			told="$told$p "
		done
		[ -n "$(in_ns "$NS_MNT")" ] || break
		sleep 0.1
	done
	# shellcheck disable=SC2046 # a list of pids
	kill -KILL $(in_ns "$NS_MNT") 2> /dev/null
	wait "$NS_PID" 2> /dev/null
}

# cleanup_all: the clients, the servers' namespace (the users' processes are all in it:
# sesman started them there), then lib.sh's cleanup (Xvfb, $TMP). Never by uid: the ids are
# free on the host when drawn, not reserved. The screenshots stay in build/e2e-xrdp/.
cleanup_all() {
	touch "$TMP/end" 2> /dev/null
	stop_clients c1 c2
	stop_holders
	if [ -n "$NS_MNT" ]; then
		stop_ns
	elif [ -n "$NS_PID" ]; then
		stop_tree "$NS_PID"
	fi
	[ -s "$SHOTS/index" ] || rmdir "$SHOTS" 2> /dev/null
	cleanup
}
trap cleanup_all EXIT
# Stopped from outside: said, with when, for whoever reads a run that ended early.
trap 'echo "# e2e-xrdp.sh: stopped by INT or TERM at $SECONDS s" >&2; exit 130' INT TERM

start_xvfb || { not_ok "an Xvfb for the clients ($(cat "$TMP/xvfb.log"))"; finish; exit 1; }
configure
uid1=$(free_id $((63000 + RANDOM % 900)))
uid2=$(free_id $((uid1 + 1)))
plan_user "$U1" "$uid1"
plan_user "$U2" "$uid2"
: > "$TMP/stamps"
: > "$TMP/arrivals"
chmod 0666 "$TMP/stamps"
mkdir -m 0700 "$TMP/state"
gate_in session
log_files
start_servers || {
	not_ok "xrdp and xrdp-sesman listen ($(cat "$TMP/ns.log" "$TMP/sesman.out" "$TMP/xrdp.out" 2> /dev/null; tail -n 3 "$SLOG" "$TMP/xrdp.log" 2> /dev/null))"
	finish
	exit 1
}

# 1. The gate in session, as etc/pam.d/xrdp-sesman-flowslot places it: two users, the second
# client started once the first came to the gate (its first line in the module's log). The
# module lets the second in an interval or more after the slot of the first (its arrival at the
# gate plus the wait it was told: after_slots in tests/suites/hosts.sh), in the order they came to
# the gate (their arrival stamps). Then both X sessions start (their stamps), each no sooner
# than its own slot, the second an interval or more after the first's; how far apart the two
# stamps are is said, not asserted: a loaded machine may start the first one's X server late.
mark=$(wc -l < "$SLOG") smark=$(wc -l < "$TMP/syslog")
client c1 "$U1" 0
wait_for 30 came_yet "$smark" "$U1"
client c2 "$U2" 660
wait_for 60 sh -c "[ \$(wc -l < '$TMP/stamps') -ge 2 ]"
s1=$(stamp_of "$U1") s2=$(stamp_of "$U2")
in2=$(went_in "$smark" "$U2")
b1=$(slot_bound "$smark" "$U1") b2=$(slot_bound "$smark" "$U2")
came=$(sort -n "$TMP/arrivals" | cut -d' ' -f2 | tr '\n' ' ')
let_in=$(tail -n +$((smark + 1)) "$TMP/syslog" | grep -o ' went in: service=xrdp-sesman user=[^ ]*' |
	cut -d= -f3 | tr '\n' ' ')
went=$(sort -n "$TMP/stamps" | cut -d' ' -f2 | tr '\n' ' ')
check "session gate: the module lets the second RDP login in an interval or more after the slot of the first ($(ms "$b1" "$in2") ms; interval ${INTERVAL} s), in the order they came (came: $came; let in: $let_in)" \
	sh -c "[ -n '$b1' ] && [ -n '$in2' ] && [ \$(( ($in2 - $b1) / 1000000 )) -ge $((INTERVAL * 1000)) ] &&
		[ '$came' = '$let_in' ] && [ \$(echo '$came' | wc -w) = 2 ]"
check "... and both X sessions start, each no sooner than its slot ($(ms "$b1" "$s1") and $(ms "$b2" "$s2") ms after), the second $(ms "$b1" "$s2") ms after the first's slot (stamps $(ms "$s1" "$s2") ms apart; started: $went)$(no_session_why)" \
	sh -c "[ -n '$s1' ] && [ -n '$s2' ] && [ -n '$b1' ] && [ -n '$b2' ] &&
		[ '$s1' -ge '$b1' ] && [ '$s2' -ge '$b2' ] &&
		[ \$(( ($s2 - $b1) / 1000000 )) -ge $((INTERVAL * 1000)) ]"
end_sessions "$mark" 2

# 2. Neither held by the other's wait: on a fresh schedule, three places held ahead until the
# first login waits, three intervals or more; the second client, started once the first waits,
# is accepted and authenticated ("created session") and comes to the gate (its PAM message)
# before the first one's turn, in sesman's log; both sessions start.
mark=$(wc -l < "$SLOG") smark=$(wc -l < "$TMP/syslog")
"$CTL" reset rdp state_dir="$TMP/state" > /dev/null
hold_until 3 true
client c1 "$U1" 0
hold_until 3 first_waits "$mark"
client c2 "$U2" 660
first=$U1 second=$U2 first_client=c1
p1=$(session_pid "$mark" "$first")
win1=$(window "$first_client")
# What the first one's client shows while it waits: up to three shots, half a second apart,
# until its turn; once its X session is in, one more. Looked at afterwards: a loaded machine
# would push the later shots past the wait.
shots=""
for i in 1 2 3; do
	since "$mark" | grep -q "\[pid:$p1 .*PAM: Login queue: your turn now" && break
	taken=$(snap "$win1" "2-wait-$i") && shots="$shots 2-wait-$i:$taken"
	sleep 0.5
done
wait_for 60 sh -c "[ \$(wc -l < '$TMP/stamps') -ge 2 ]"
# Once its session is in, as soon as its window shows on the client (20 s at most).
wait_for 20 drawn "$win1" 2-session
p2=$(session_pid "$mark" "$second")
told1=$(at "$mark" "\[pid:$p1 .*PAM: Login queue: you are")
turn1=$(at "$mark" "\[pid:$p1 .*PAM: Login queue: your turn now")
created2=$(at "$mark" "created session .*username $second,")
gate2=$(at "$mark" "\[pid:$p2 .*PAM: Login queue: you are")
# The second's first line at the gate (a stamp no earlier than its reservation) against the
# bound on the first one's slot (no later than the first went in).
at2=$(came_to "$smark" "$second") b1=$(slot_bound "$smark" "$first")
check "session gate, the first login waiting (told from line $told1): the second is authenticated (sesman's log, line $created2) and at the gate (line $gate2) before the first's turn (line $turn1; its slot $(ms "$at2" "$b1") ms or more later)" \
	sh -c "[ $told1 -lt $turn1 ] && [ $created2 -lt $turn1 ] && [ $gate2 -lt $turn1 ] &&
		[ $turn1 != 99999 ] && [ -n '$at2' ] && [ -n '$b1' ] && [ '$at2' -lt '$b1' ]"
check "... and both sessions start ($(tr '\n' ' ' < "$TMP/stamps"))" \
	sh -c "[ -n '$(stamp_of "$U1")' ] && [ -n '$(stamp_of "$U2")' ]"

# 3. What the user sees: the module's lines are in sesman's log (the first login's, by its
# process), and the client shows one flat colour through the wait; once the session is in,
# the same shot shows its window (more colours).
told=$(since "$mark" | grep "\[pid:$p1 " | grep -o 'PAM: Login queue: .*' | sort -u | tr '\n' '|')
check "the module's lines are in sesman's log, by the waiting login's process ($told)" \
	sh -c "echo '$told' | grep -q 'PAM: Login queue: you are' &&
		echo '$told' | grep -q 'PAM: Login queue: your turn now'"
# The shots written before the bound on the first one's slot: taken during its wait.
during="" flat=0
for one in $shots; do
	[ "${one#*:}" -lt "${b1:-0}" ] || continue
	look=$(looks "${one%:*}")
	during="$during${one%:*}: $look; "
	[ "${look%% *}" = 1 ] && flat=$((flat + 1))
done
after=$(looks 2-session)
printf '%s\n' "shots of the first client (colours, commonest) while it waited: ${during:-none}" \
	"once its session was in, 2-session: $after" > "$SHOTS/index"
check "the client shows one flat colour through the wait (${during:-no shot during the wait}), the session's window after (2-session: $after; build/e2e-xrdp/)" \
	sh -c "[ -n '$during' ] && [ $flat = \$(echo '$during' | grep -o ': ' | wc -l) ] && [ '${after%% *}' -gt 1 ]"
end_sessions "$mark" 2

# 4. The contrast: the gate in auth, which sesman runs in its main loop (auth_userpass), one
# login at a time. Two places held ahead again until the first login waits, the second client
# started then: while the first waits, the second one's connection to sesman stays in sesman's
# listen backlog, not accepted; sesman takes it only after the first one's turn; then it waits
# its own turn; both sessions start.
mark=$(wc -l < "$SLOG") smark=$(wc -l < "$TMP/syslog")
gate_in auth
"$CTL" reset rdp state_dir="$TMP/state" > /dev/null
hold_until 2 true
client c1 "$U1" 0
hold_until 2 waits_in_auth "$mark"
client c2 "$U2" 660
pending() { [ "$(backlog "$SESMAN_PORT")" -ge 1 ]; }
wait_for 15 pending
waiting=$(backlog "$SESMAN_PORT")
turn_then=$(at "$mark" 'PAM: Login queue: your turn now')
wait_for 60 sh -c "[ \$(wc -l < '$TMP/stamps') -ge 2 ]"
first=$(tail -n +$((smark + 1)) "$TMP/syslog" | grep -o ' queued: service=xrdp-sesman user=[^ ]*' |
	head -1 | cut -d= -f3)
second=$U2
[ "$first" = "$U2" ] && second=$U1
turn1=$(at "$mark" 'PAM: Login queue: your turn now')
conn2=$(since "$mark" | grep -n 'connection received from' | sed -n '2s/:.*//p')
created2=$(at "$mark" "created session .*username $second,")
check "auth gate, the first login waiting: the second client's connection waits in sesman's backlog ($waiting), not accepted, before the first's turn ($([ "$turn_then" = 99999 ] && echo "not yet" || echo "at line $turn_then"))" \
	sh -c "[ '$waiting' -ge 1 ] && [ '$turn_then' = 99999 ]"
at2=$(came_to "$smark" "$second") in1=$(went_in "$smark" "$first")
check "... sesman takes it (line ${conn2:-never}) and authenticates it (line $created2) only after the first's turn (line $turn1): at the gate $(ms "$in1" "$at2") ms after the first went in" \
	sh -c "[ $turn1 != 99999 ] && [ ${conn2:-0} -gt $turn1 ] && [ $created2 -gt $turn1 ] &&
		[ -n '$at2' ] && [ -n '$in1' ] && [ '$at2' -ge '$in1' ]"
check "... and both sessions start, in turn ($(tr '\n' ' ' < "$TMP/stamps"))" \
	sh -c "[ -n '$(stamp_of "$U1")' ] && [ -n '$(stamp_of "$U2")' ]"
end_sessions "$mark" 2

# 5. A refusal over xrdp: the gate in session again, with max_wait=10s, three places held
# ahead (three intervals or more: past it). The module refuses the login at once (its
# "refused:" line, the wait it would have had past max_wait); its words are in sesman's log by
# the session's process, where pam_open_session fails, and sesman ends that session: no X
# session starts. The client is told nothing: xrdp had said "login successful" to it and waits
# for an X server that never comes; once sesman ended the session, the client still runs and
# shows one flat colour.
mark=$(wc -l < "$SLOG") smark=$(wc -l < "$TMP/syslog") xmark=$(wc -l < "$TMP/xrdp.log")
GATE="key=rdp interval=${INTERVAL}s max_wait=10s"
gate_in session
"$CTL" reset rdp state_dir="$TMP/state" > /dev/null
hold_until 3 true
client c1 "$U1" 0
wait_for 30 sh -c "tail -n +$((mark + 1)) '$SLOG' | grep -q '++ terminated session: .*username $U1,'"
p1=$(session_pid "$mark" "$U1")
refused=$(tail -n +$((smark + 1)) "$TMP/syslog" | grep -F " refused: service=xrdp-sesman user=$U1 " |
	grep -o 'wait_ms=[0-9]* .*max_wait_ms=[0-9]*' | head -1)
said=$(since "$mark" | grep "\[pid:$p1 " | grep -o 'PAM: Too many logins.*' | head -1)
failed=$(since "$mark" | grep "\[pid:$p1 " | grep -c 'pam_open_session failed')
told=$(tail -n +$((xmark + 1)) "$TMP/xrdp.log" | grep -c "login successful for user $U1 ")
taken=$(snap "$(window c1)" 5-refused) && look=$(looks 5-refused)
still=no
kill -0 "$(cat "$TMP/c1.pid")" 2> /dev/null && ! grep -q '^exit' "$TMP/c1.client" && still=yes
echo "refused over xrdp, once sesman ended the session, 5-refused: ${look:-no shot}" >> "$SHOTS/index"
check "refusal over xrdp (session, max_wait=10s, three places ahead): the module refuses the login (${refused:-no refusal}), sesman logs its words by the session's process (${said:-none}), pam_open_session fails ($failed) and no X session starts ($(wc -l < "$TMP/stamps"))" \
	sh -c "[ -n '$refused' ] && [ $failed -ge 1 ] && [ ! -s '$TMP/stamps' ] &&
		echo '$said' | grep -q 'PAM: Too many logins at the moment. Please try again in [0-9]* s\.'"
check "... the client is told nothing: xrdp said \"login successful\" ($told) and, once the session ended, the client still runs ($still), one flat colour (${look:-no shot}; build/e2e-xrdp/5-refused.png)" \
	sh -c "[ $told -ge 1 ] && [ $still = yes ] && [ -n '$taken' ] && [ '${look%% *}' = 1 ]"
stop_holders
touch "$TMP/end"
stop_clients c1
rm -f "$TMP/end"

# 6. The host's login records: whatever sesman and the session stack wrote went to the copies.
stop_ns
NS_MNT="" NS_PID=""
changed=$(cd "$TMP" && sed '\|/dev/null$|d; s/  /  log-/' "$TMP/log-sums" | md5sum -c 2> /dev/null | grep -c FAILED)
check "the host's login records ($(tr '\n' ' ' < "$TMP/log-files")) are as they were: the namespace had copies ($changed of them written)" \
	records_kept

finish
