#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# What an administrator meets around the gate (issue 20), through real libpam under
# pam_wrapper: a fresh install with no options queues quietly on the host's schedule, while a
# Redis that is named but down is logged; and the shipped stacks, with the module gone, let
# logins through, while the module, present, still refuses.
set -u
. "$(dirname "$0")/../helpers/lib.sh"

[ "$(id -u)" = 0 ] || skip_all "needs root (mount namespaces)"

# fresh NAME SERVICE USER [USER2]: one login (two, 0.3 s apart, sharing one schedule) as on a
# fresh host: private, empty /run, /etc/security and /tmp, so no configuration file and no
# state. Each login's messages go to $TMP/NAME[.2].out, its syslog to .err, its status to .rc.
fresh() {
	# /tmp as lib.sh's PRIVATE_TMP makes it (empty, but for a checkout under /tmp, which
	# stays at its own path); then /run and /etc/security.
	# shellcheck disable=SC2016
	"${PRIVATE_TMP[@]}" unshare --mount --propagation private sh -c '
		tmp=$1 name=$2 svc=$3 u1=$4 u2=$5 preload=$6
		for d in /run /etc/security; do mount -t tmpfs tmpfs "$d" || exit 126; done
		one() {
			env LD_PRELOAD="$preload" PAM_WRAPPER=1 PAM_WRAPPER_SERVICE_DIR="$tmp/svc" \
				PAM_WRAPPER_DEBUGLEVEL=2 pamtester -v "$svc" "$1" authenticate \
				> "$tmp/$2.out" 2> "$tmp/$2.err"
			echo $? > "$tmp/$2.rc"
		}
		one "$u1" "$name" &
		if [ -n "$u2" ]; then sleep 0.3; one "$u2" "$name.2" & fi
		wait' sh "$TMP" "$1" "$2" "$3" "${4:-}" "$PRELOAD"
}

# loud NAME: the lines the login logged at LOG_WARNING or above (pam_wrapper writes
# "SYSLOG(PRIORITY)"), one per line.
loud() { grep -a 'SYSLOG([0-4])' "$TMP/$1.err"; }

# 3. No url, no configuration file, no Redis: the host's own schedule, and not a word above
# LOG_NOTICE. Two logins, so that the second waits its turn (interval 7 s by default). The
# default state_dir too (OWN_STATE= keeps service from giving the line the suite's): fresh's /run
# is a private one.
OWN_STATE="" service bare "auth required @M" "$STAMP" "auth required @P/pam_permit.so"
fresh q bare alice bob
check "no options, no Redis: both logins go in (rc $(rc_of q), $(rc_of q.2))" \
	[ "$(rc_of q)" = 0 -a "$(rc_of q.2)" = 0 ]
gap_ms=$(sort -n "$TMP/stamps" | awk 'NR == 1 { a = $1 } { b = $1 } END { printf "%d", (b - a) / 1e6 }')
check "... the second about the default interval after the first, on the host's schedule (${gap_ms} ms)" \
	sh -c "[ $gap_ms -ge 6000 ] && grep -q 'queued: .*via=local' '$TMP/q.2.err'"
check "... and nothing logged at LOG_WARNING or above ($(loud q; loud q.2))" \
	sh -c "! grep -aq 'SYSLOG([0-4])' '$TMP/q.err' '$TMP/q.2.err'"

# A Redis the administrator named, down: its cause at LOG_ERR, the fallback at LOG_WARNING, as
# pam_flowslot(8) says.
down=$(free_port)
OWN_STATE="" service named "auth required @M url=redis://127.0.0.1:$down interval=1s" "auth required @P/pam_permit.so"
fresh n named alice
check "a named Redis down: the login goes in on the host's schedule (rc $(rc_of n))" [ "$(rc_of n)" = 0 ]
check "... the cause logged at LOG_ERR ($(grep -a 'SYSLOG(3)' "$TMP/n.err" | sed 's/.*SYSLOG(3): //'))" \
	grep -aq "SYSLOG(3): redis 127.0.0.1:$down: .*Connection refused" "$TMP/n.err"
check "... and the fallback at LOG_WARNING, in pam_flowslot(8)'s words" \
	sh -c "grep -aq 'SYSLOG(4): fallback=local: queueing on this host.s schedule' '$TMP/n.err' &&
		grep -q 'fallback=local: queueing on' '$TOP/man/pam_flowslot.8'"

# 2. The shipped stacks, with the module gone (the package removed, the lines left) and with
# it present. stack_of WHAT MODULE ARGS: the active lines of etc/pam.d/WHAT, or of the
# pam-auth-update profile (WHAT=profile), with the module at MODULE and ARGS instead of url=.
stack_of() {
	if [ "$1" = profile ]; then
		sed -n '/^Session:/,/^[^\t]/p' "$TOP/etc/pam-configs/flowslot" | grep $'^\t' | sed 's/^/session/'
	else
		grep -v '^#' "$TOP/etc/pam.d/$1" | grep .
	fi | tr '\t' ' ' | sed -E "s|pam_flowslot.so( url=[^ ]*)?|$2 $3|; s| pam_succeed_if.so| $PAM_DIR/pam_succeed_if.so|"
}
# Each stack is followed by a stamp (which logins got past the gate) and pam_permit.
for what in sshd-flowslot login-flowslot flowslot-example lightdm-flowslot gdm-password-flowslot \
	cockpit-flowslot xrdp-sesman-flowslot profile; do
	case $what in
	login-flowslot) op=authenticate ph=auth ;;
	lightdm-flowslot | gdm-password-flowslot | cockpit-flowslot) op=acct_mgmt ph=account ;;
	*) op=open_session ph=session ;;
	esac
	after=("$ph optional $PAM_DIR/pam_exec.so quiet /bin/sh $TREE/tests/helpers/stamp.sh $TMP/after-$what" \
		"$ph required $PAM_DIR/pam_permit.so")
	mapfile -t gone < <(stack_of "$what" /nonexistent/pam_flowslot.so "")
	service "gone-$what" "${gone[@]}" "${after[@]}"
	login "gone-$what" "gone-$what" nobody "$op"
	# The profile, which the package takes out before it removes the module, refuses instead:
	# libpam cannot tell a module gone from one a user's own memory limit kept from loading.
	if [ "$what" = profile ]; then
		check "$what, module that cannot be loaded: the login is refused, nothing after the gate runs (rc $(rc_of "gone-$what"); ${#gone[@]} lines)" \
			sh -c "[ $(rc_of "gone-$what") != 0 ] && [ ! -s '$TMP/after-$what' ] &&
				grep -aq 'unable to dlopen(/nonexistent/pam_flowslot.so)' '$TMP/gone-$what.err'"
	else
		# libpam's two LOG_ERR lines (pam_wrapper shows them without syslog's "PAM " prefix).
		check "$what, module gone: the login goes through, libpam logging the two errors the postrm names (rc $(rc_of "gone-$what"); ${#gone[@]} lines)" \
			sh -c "[ $(rc_of "gone-$what") = 0 ] && grep -q ' nobody\$' '$TMP/after-$what' &&
				grep -aq 'unable to dlopen(/nonexistent/pam_flowslot.so)' '$TMP/gone-$what.err' &&
				grep -aq 'adding faulty module: /nonexistent/pam_flowslot.so' '$TMP/gone-$what.err'"
	fi
	mapfile -t here < <(stack_of "$what" "$MODULE" "url=local state_dir=$TMP/st-$what interval=60s max_wait=1s")
	service "here-$what" "${here[@]}" "${after[@]}"
	: > "$TMP/after-$what"
	login "first-$what" "here-$what" nobody "$op"
	login "refused-$what" "here-$what" nobody "$op"
	check "$what, module present: a login past max_wait is still refused, and nothing after the gate runs" \
		sh -c "[ $(rc_of "first-$what") = 0 ] && [ $(rc_of "refused-$what") != 0 ] &&
			grep -q 'refused:' '$TMP/refused-$what.err' && [ \$(grep -c . '$TMP/after-$what') = 1 ]"
done
# The profile holds no greeter's own session (it would hold nobody: the greeter starts before
# anyone is at the screen), nor Cockpit's, whose 30 s limit its example's max_wait keeps under:
# on a schedule that refuses a second login, two logins of each such service both pass.
mapfile -t here < <(stack_of profile "$MODULE" "url=local state_dir=$TMP/st-skip interval=60s max_wait=1s")
passed=""
for svc in lightdm-greeter gdm-launch-environment sddm-greeter cockpit; do
	service "$svc" "${here[@]}" "session required $PAM_DIR/pam_permit.so"
	login "$svc-1" "$svc" nobody open_session
	login "$svc-2" "$svc" nobody open_session
	[ "$(rc_of "$svc-1")$(rc_of "$svc-2")" = 00 ] && passed="$passed $svc"
done
check "the profile skips the greeters' own sessions and Cockpit's (both logins of:$passed)" \
	[ "$passed" = " lightdm-greeter gdm-launch-environment sddm-greeter cockpit" ]

# Why not plain requisite: with the module gone, it fails every login.
service gone-requisite "session requisite /nonexistent/pam_flowslot.so" "session required $PAM_DIR/pam_permit.so"
login gone-requisite gone-requisite nobody open_session
check "the old 'requisite' line with the module gone: 'Module is unknown' (the lock-out this avoids)" \
	sh -c "[ $(rc_of gone-requisite) != 0 ] && grep -q 'Module is unknown' '$TMP/gone-requisite.err' '$TMP/gone-requisite.out'"
# The package's postrm tells the administrator which lines left behind fail every login: its
# verdict agrees with libpam's for each form a line may take (controls, an absolute path, "-").
sed -n '/^failing()/,/^}/p' "$TOP/debian/libpam-flowslot.postrm" > "$TMP/failing.sh"
. "$TMP/failing.sh"
disagree=""
i=0
for form in "session requisite /nonexistent/pam_flowslot.so" "-session requisite /nonexistent/pam_flowslot.so" \
	"session required /nonexistent/pam_flowslot.so" "session optional /nonexistent/pam_flowslot.so" \
	"session sufficient /nonexistent/pam_flowslot.so" "session [success=ok default=die] /nonexistent/pam_flowslot.so" \
	"session [default=ignore] /nonexistent/pam_flowslot.so" \
	"session [success=ok ignore=ignore module_unknown=ignore default=die] /nonexistent/pam_flowslot.so"; do
	i=$((i + 1))
	service "form$i" "$form" "session required $PAM_DIR/pam_permit.so"
	login "form$i" "form$i" nobody open_session
	libpam=passes
	[ "$(rc_of "form$i")" = 0 ] || libpam=fails
	postrm=passes
	[ -z "$(echo "sshd:1:$form" | failing)" ] || postrm=fails
	[ "$libpam" = "$postrm" ] || disagree="$disagree; '$form': libpam $libpam, postrm says $postrm"
done
check "the postrm's verdict on each leftover line agrees with libpam's ($i forms${disagree})" [ -z "$disagree" ]
check "no shipped stack names the module 'requisite' or 'required'" \
	sh -c "! grep -Eq '^[^#]*(requisite|required)[[:space:]]+pam_flowslot' '$TOP'/etc/pam.d/* '$TOP/etc/pam-configs/flowslot'"

# 7. The docs say what ships. The messages: each sentence src/countdown.c can make, and each
# refusal the module sends, as pam_flowslot(8) renders them (N for a time, P for a place).
man_text=$(MANWIDTH=1000 man -l "$TOP/man/pam_flowslot.8" 2> /dev/null | tr -s ' \n' '  ')
sentences=()
while IFS= read -r fmt; do
	fmt=${fmt//%lld/%s}
	case $fmt in
	*%syou*) for how_now in "|" "|now " "your turn was put back; |"; do
			# shellcheck disable=SC2059 # the code's own format
			case $fmt in
			*number*) sentences+=("$(printf "$fmt" "${how_now%|*}" "${how_now#*|}" P "N s")") ;;
			*) sentences+=("$(printf "$fmt" "${how_now%|*}" "${how_now#*|}" "N s")") ;;
			esac
		done ;;
	# shellcheck disable=SC2059 # the code's own format
	*number*) sentences+=("$(printf "$fmt" "N s" P)") ;;
	# shellcheck disable=SC2059
	*) sentences+=("$(printf "$fmt" "N s")") ;;
	esac
done < <(grep -ho '"Login queue: [^"]*"' "$TOP/src/countdown.c" | tr -d '"')
while IFS= read -r fmt; do sentences+=("${fmt//%s/N s}"); done < <(cat "$TOP/pam_flowslot.c" "$TOP"/src/*.c |
	tr -d '\n' | sed 's/"[[:space:]]*"//g' | grep -oE '(pam_error\(pamh|gate_say_refusal\(g), "[^"]*"' | sed 's/^[a-z_]*([a-z]*, "//; s/"$//')
missing=""
for m in "${sentences[@]}"; do
	grep -qF -- "$m" <<< "$man_text" || missing="$missing|$m"
done
check "pam_flowslot(8) lists every message the code sends (${#sentences[@]}${missing:+; missing: $missing})" \
	[ -z "$missing" -a "${#sentences[@]}" -ge 10 ]
# What make install (and so the package) puts in the documentation directory is named in the
# README by its installed name, and the BENCHMARKS.md the man page points to is among them.
make -s -C "$TOP" install DESTDIR="$TMP/mi" DOCDIR=/doc > /dev/null
unnamed=$(cd "$TMP/mi/doc" && find . -type f | sed 's|^\./||' | grep -v '^bench/' | while read -r f; do
	grep -qF "$f" "$TOP/README.md" || echo "$f"
done | paste -sd ' ')
check "the README names every installed example by its installed name${unnamed:+; not: $unnamed}" [ -z "$unnamed" ]
check "BENCHMARKS.md and its pictures are installed in the documentation directory" \
	test -f "$TMP/mi/doc/BENCHMARKS.md" -a -f "$TMP/mi/doc/bench/timeline.png" -a -f "$TMP/mi/doc/bench/storm.png"
check "no doc says 'first in its phase'; README and the man page say 'before @include common-session'" \
	sh -c "! grep -q 'first in its phase' '$TOP/README.md' '$TOP/man/pam_flowslot.8' &&
		tr '\n' ' ' < '$TOP/README.md' | grep -q 'before .@include common-session' &&
		grep -qF 'before \\(lq@include common\\-session' '$TOP/man/pam_flowslot.8'"
check "pam_flowslot(8) says a refused ssh login still shows 'Last login' and is in wtmp (sshd's doing)" \
	bash -c "grep -qF 'Last login' <<< \"\$1\" && grep -qF 'recorded in wtmp' <<< \"\$1\"" bash "$man_text"

# 6. Who is exempt, by the profile's lines (group sudo read as group daemon here, of which the
# user daemon is a member): the target user root or in the group, or the caller (PAM_RUSER, which
# su and sudo set to who ran them; sshd sets none) root or in the group. The queue is full.
mapfile -t ex < <(stack_of profile "$MODULE" "url=local state_dir=$TMP/st-ex interval=60s max_wait=1s" |
	sed 's/ingroup sudo/ingroup daemon/')
service ex "session required $SET_ITEMS" "${ex[@]}" \
	"session optional $PAM_DIR/pam_exec.so quiet /bin/sh $TREE/tests/helpers/stamp.sh $TMP/after-ex" \
	"session required $PAM_DIR/pam_permit.so"
login ex-first ex nobody open_session
verdicts=""
for who in "nobody:" "nobody:nobody" "nobody:root" "nobody:daemon" "daemon:" "root:"; do
	PAM_RUSER=${who#*:} login "ex-$who" ex "${who%%:*}" open_session
	verdicts="$verdicts $who=$(rc_of "ex-$who")"
done
check "exempt by the profile: target root or in the group, caller root or in the group; nobody else ($verdicts)" \
	[ "$verdicts" = " nobody:=1 nobody:nobody=1 nobody:root=0 nobody:daemon=0 daemon:=0 root:=0" ]

finish
