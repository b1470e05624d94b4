# SPDX-License-Identifier: BSD-3-Clause
# Shared by tests/e2e/e2e-ssh.sh and bench/ssh.sh, after tests/helpers/lib.sh: Debian's sshd on 127.0.0.1
# with a config, host key and authorized_keys of its own in $TMP, its PAM service read from
# $TMP/svc through pam_wrapper (so /etc/pam.d is untouched), and the ssh client's options.
# shellcheck shell=bash

# sshd_keys: an ed25519 host key ($TMP/hostkey) and user key ($TMP/userkey), the user key in
# $TMP/authorized_keys, and sshd's privilege-separation directory.
sshd_keys() {
	[ -d /run/sshd ] || mkdir -m 0755 /run/sshd
	ssh-keygen -q -t ed25519 -N '' -f "$TMP/hostkey" &&
		ssh-keygen -q -t ed25519 -N '' -f "$TMP/userkey" &&
		cp "$TMP/userkey.pub" "$TMP/authorized_keys"
}

# sshd_start NAME GRACE_S [CONFIG-LINE...]: /usr/sbin/sshd started as $TMP/NAME, so that its
# PAM service is NAME (write $TMP/svc/NAME first, with service), on 127.0.0.1 and a free port:
# the port in $SSHD_PORT, the pid in $SSHD_PID (and in PIDS, for cleanup). sshd takes its
# service name from argv[0], and must be started by absolute path (re-exec demands one). The
# config lines go first, where sshd takes a keyword's first value. sshd's own log is
# $TMP/NAME.log; $TMP/NAME.err has its stderr, with pam_wrapper's (module syslog lines as
# "SYSLOG(N): ..." at PAM_WRAPPER_DEBUGLEVEL 2, $SSHD_PAM_DEBUGLEVEL).
#
# sshd runs every connection in a process of its own, re-executed from argv[0], and pam_wrapper
# gives each one a working directory /tmp/pam.X of its own: 62 names for the whole machine,
# picked with lstat then mkdir, shared with every other user of pam_wrapper, and left behind by
# every sshd process that ends in _exit, as sshd's do, until a process looking for a name finds
# no live process of the pid in it (pids are reused). A storm of logins then races for names
# and with the cleaning of stale ones. That is the likely cause of two CI runs' "Connection
# closed" with no error line from sshd (8 of 10, and 29 of 30, logins in), not a proven one:
# e2e-ssh.sh's checks now print pam_wrapper's errors with sshd's, should it happen again. So
# $TMP/NAME is build/privtmp (tests/helpers/privtmp.c), which runs sshd under that name in a private
# /tmp, and each connection re-executes it: one /tmp per process, gone with it. Where lib.sh has
# no private /tmp (not root), or SSHD_SHARED_TMP=1 (bench/ssh.sh: it times sshd as installed),
# $TMP/NAME is a symlink to sshd itself.
SSHD_ENV=()
if [ ${#PRIVATE_TMP[@]} != 0 ] && [ "${SSHD_SHARED_TMP:-0}" != 1 ]; then
	SSHD_ENV=(PRIVTMP_EXEC=/usr/sbin/sshd "PRIVTMP_STAGE=$TMP/ns-tmp")
	[ -n "$top_in_tmp" ] && SSHD_ENV+=("PRIVTMP_KEEP=$TOP")
fi

sshd_start() {
	local name=$1 grace=$2
	shift 2
	if [ ! -L "$TMP/$name" ]; then
		if [ ${#SSHD_ENV[@]} != 0 ]; then
			# By $TREE, the physical checkout: visible in every private /tmp.
			[ -x "$TOP/build/privtmp" ] || {
				echo "sshd.sh: build/privtmp is missing: make build/privtmp" >&2
				return 1
			}
			ln -s "$TREE/build/privtmp" "$TMP/$name"
		else
			ln -s /usr/sbin/sshd "$TMP/$name"
		fi
	fi
	for _ in 1 2 3 4 5; do
		SSHD_PORT=$(free_port)
		{
			printf '%s\n' "$@"
			cat <<-EOF
				ListenAddress 127.0.0.1
				Port $SSHD_PORT
				HostKey $TMP/hostkey
				PidFile $TMP/$name.pid
				UsePAM yes
				KbdInteractiveAuthentication yes
				PasswordAuthentication yes
				PubkeyAuthentication yes
				AuthorizedKeysFile $TMP/authorized_keys
				PermitRootLogin yes
				StrictModes no
				LoginGraceTime $grace
				LogLevel VERBOSE
			EOF
		} > "$TMP/$name.config"
		: > "$TMP/$name.log"
		env "${SSHD_ENV[@]}" LD_PRELOAD=libpam_wrapper.so PAM_WRAPPER=1 \
			PAM_WRAPPER_SERVICE_DIR="$TMP/svc" \
			PAM_WRAPPER_DEBUGLEVEL="${SSHD_PAM_DEBUGLEVEL:-2}" "$TMP/$name" -D \
			-E "$TMP/$name.log" -f "$TMP/$name.config" 2> "$TMP/$name.err" &
		SSHD_PID=$!
		PIDS="$PIDS $SSHD_PID"
		for _ in $(seq 100); do
			(exec 3<> "/dev/tcp/127.0.0.1/$SSHD_PORT") 2> /dev/null && return 0
			kill -0 "$SSHD_PID" 2> /dev/null || break
			sleep 0.05
		done
		# Gone: another process took the port first; still there: it did not start in time.
		kill -0 "$SSHD_PID" 2> /dev/null && break
		wait "$SSHD_PID" 2> /dev/null
	done
	echo "sshd $name did not start:" >&2
	cat "$TMP/$name.log" "$TMP/$name.err" >&2
	return 1
}

# sshd_stop PID: stops one sshd started by sshd_start, and waits for it.
sshd_stop() {
	kill "$1" 2> /dev/null
	wait "$1" 2> /dev/null
	return 0
}

# The client: no known_hosts. (LogLevel=ERROR would also silence the warning about adding the
# host key to none, and the banners a test may look for.)
SSH_OPTS=(-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=30)
# The same, for a publickey login with $TMP/userkey and no prompt.
# shellcheck disable=SC2034 # for the caller
SSH_KEY_OPTS=("${SSH_OPTS[@]}" -o BatchMode=yes -o IdentitiesOnly=yes -i "$TMP/userkey")
