# SPDX-License-Identifier: BSD-3-Clause
# The fault campaign's faults past one Redis server and one host (tests/campaign/CONTRACT.md):
# a Sentinel failover with and without sync_replicas, a Cluster failover and a slot migrated
# mid-stream, and a login host cut off from Redis in network namespaces, with the same hosts
# unharmed as their baseline. Sourced by run.sh after tests/campaign/lib.sh. Each heal puts
# back what the fault took (a new replica for the one promoted, the link), so that the long
# run's later rounds meet the same fault. Each fault's bounds name the docs they come from.
# shellcheck shell=bash disable=SC2086,SC2034,SC2154
# (lists of ports and names are split on purpose; FAULT_* are the runner's; HA_PORT_* are set
# by name, through on_free_port)

# The schedule's key, as the runner's stack line names it.
HA_KEY=campaign

# ha_queue: the fault comes once three waiters hold places (their slots past the 2 s commit
# window: they must renew across it), and each login may wait 8 s, so that the queue holds them.
ha_queue() { FAULT_WAITERS=3 FAULT_MAX_WAIT_MS=8000; }

HA_SERVERS="" # what ha_stop_all stops, by name (tests/helpers/lib.sh's start_redis)

# ha_stop_all: every server started, stopped by pid, and the dumps that replicas wrote
# removed, so that a later fault's server of the same name starts empty.
ha_stop_all() {
	local s
	for s in $HA_SERVERS; do
		stop_redis "$s"
		rm -f "$TMP/$s.rdb"
	done
	HA_SERVERS=""
}

# ha_kill NAME: server NAME killed outright (-9): nothing more written or replicated. Its pid
# leaves PIDS, as stop_redis's does: the number may be another process's by the cleanup.
ha_kill() {
	local pid
	pid=$(cat "$TMP/$1.pid")
	# Braces: bash reports the death of its job on stderr, wherever it notices it.
	{
		kill -9 "$pid"
		wait "$pid"
	} 2> /dev/null
	PIDS=" $PIDS "
	PIDS=${PIDS/ $pid / }
}

# ---- Sentinel -------------------------------------------------------------------------------
# A master, one or two replicas and three sentinels on loopback TCP, as tests/suites/ha.sh sets them
# up (down after 1 s, quorum 2): the master is killed while logins wait, and the sentinels
# promote a replica.

# ha_sentinel NAME MASTER-PORT PORT: a redis-sentinel watching the master "fsm". Its config
# file is its own and writable: Debian's redis-sentinel rewrites it as it learns the replicas,
# the other sentinels and each failover, and will not start on one it cannot write.
ha_sentinel() {
	printf '%s\n' "port $3" "bind 127.0.0.1" "dir $TMP" \
		"sentinel monitor fsm 127.0.0.1 $2 2" "sentinel down-after-milliseconds fsm 1000" \
		"sentinel failover-timeout fsm 5000" "sentinel parallel-syncs fsm 2" > "$TMP/$1.conf"
	redis-sentinel "$TMP/$1.conf" > "$TMP/$1.log" 2>&1 &
	echo $! > "$TMP/$1.pid"
	PIDS="$PIDS $!"
	# Its own log, not a PING, which someone else on the port could answer.
	wait_for 5 grep -q 'Sentinel ID is' "$TMP/$1.log" && return 0
	stop_redis "$1"
	return 1
}

ha_scli() { redis-cli -p "$1" "${@:2}" 2> /dev/null; }

# ha_sentinels_ready: every sentinel knows the other two, and sees each replica healthy.
ha_sentinels_ready() {
	local s n
	for s in $HA_SPORTS; do
		[ "$(ha_scli "$s" sentinel sentinels fsm | grep -c '^flags$')" = 2 ] || return 1
		n=$(ha_scli "$s" sentinel replicas fsm | grep -A1 '^master-link-status$' | grep -cx ok)
		[ "$n" = "$HA_NREPLICAS" ] || return 1
	done
}

# ha_data NAME REDIS-OPTIONS...: a data server of the Sentinel set, on a free port (in HA_PORT_
# NAME); the same server again, on its own port, when HA_PORT_NAME is set.
ha_data() {
	local name=$1 var=HA_PORT_${1//-/_} # start_redis sets "name" too: not the runner's
	shift
	if [ -n "${!var:-}" ]; then
		start_redis "$name" --repl-diskless-sync-delay 0 $HA_OPTS "$@" --port "${!var}"
	else
		on_free_port "$var" start_redis "$name" --repl-diskless-sync-delay 0 $HA_OPTS "$@" --port
	fi
}

# ha_sentinel_up NREPLICAS [REDIS-OPTIONS...]: the master, NREPLICAS replicas of it and three
# sentinels, each data server with REDIS-OPTIONS (the master syncs a new replica at once, not
# after the default 5 s); sets FAULT_URL.
ha_sentinel_up() {
	local i port
	HA_NREPLICAS=$1 HA_SPORTS="" HA_MASTER=ha-d0 HA_DATA="ha-d0"
	shift
	HA_OPTS="$*"
	unset HA_PORT_ha_d0 HA_PORT_ha_d1 HA_PORT_ha_d2
	ha_data ha-d0 || return 1
	HA_SERVERS="ha-d0"
	for i in $(seq "$HA_NREPLICAS"); do
		ha_data "ha-d$i" --replicaof 127.0.0.1 "$HA_PORT_ha_d0" || return 1
		HA_SERVERS="$HA_SERVERS ha-d$i" HA_DATA="$HA_DATA ha-d$i"
	done
	for i in 1 2 3; do
		on_free_port port ha_sentinel "ha-s$i" "$HA_PORT_ha_d0" || return 1
		HA_SERVERS="$HA_SERVERS ha-s$i" HA_SPORTS="$HA_SPORTS $port"
	done
	wait_for 30 ha_sentinels_ready || return 1
	FAULT_URL="redis-sentinel://$(echo $HA_SPORTS | sed 's/[0-9][0-9]*/127.0.0.1:&/g; s/ /,/g')/fsm"
}

# ha_named: the port every sentinel names as the master, if they agree.
ha_named() {
	local s m="" n
	for s in $HA_SPORTS; do
		n=$(ha_scli "$s" sentinel get-master-addr-by-name fsm | tail -1)
		[ -n "$n" ] && { [ -z "$m" ] || [ "$n" = "$m" ]; } || return 1
		m=$n
	done
	echo "$m"
}

# ha_switched: every sentinel names a master other than the one killed, and it says it is one.
ha_switched() {
	local m
	m=$(ha_named) && [ "$m" != "$HA_KILLED_PORT" ] &&
		[ "$(ha_scli "$m" role | head -1)" = master ]
}

ha_sentinel_inject() {
	local var=HA_PORT_${HA_MASTER//-/_}
	HA_KILLED=$HA_MASTER HA_KILLED_PORT=${!var}
	ha_kill "$HA_MASTER"
}

# Healed once the sentinels name the promoted replica; then the server killed comes back as a
# replica of it (never as a master: an empty master that a host still remembers would take
# reservations until the sentinels turned it), and the set is whole again for the next round.
ha_sentinel_heal() {
	local m d var
	wait_for 30 ha_switched || return 1
	m=$(ha_named)
	for d in $HA_DATA; do
		var=HA_PORT_${d//-/_}
		[ "${!var}" = "$m" ] && HA_MASTER=$d
	done
	campaign_event promoted "$HA_MASTER 127.0.0.1:$m"
	ha_data "$HA_KILLED" --replicaof 127.0.0.1 "$m" || return 1
	wait_for 30 ha_sentinels_ready
}

campaign_fault sentinel-kill "Sentinel: the master killed (-9) while logins wait; the sentinels promote its replica"
fault_sentinel_kill_setup() { ha_queue; ha_sentinel_up 1; }
fault_sentinel_kill_inject() { ha_sentinel_inject; }
fault_sentinel_kill_heal() { ha_sentinel_heal; }
fault_sentinel_kill_teardown() { ha_stop_all; }

campaign_fault sentinel-kill-sync "the same with sync_replicas=1 and min-replicas-to-write 1 (two replicas)"
# A reservation is acknowledged by a replica before the login goes on (WAIT), and a master
# without a replica takes none: two replicas, so that the one promoted still has one.
fault_sentinel_kill_sync_setup() {
	ha_queue
	ha_sentinel_up 2 --min-replicas-to-write 1 --min-replicas-max-lag 10 || return 1
	FAULT_OPTS="sync_replicas=1"
}
fault_sentinel_kill_sync_inject() { ha_sentinel_inject; }
fault_sentinel_kill_sync_heal() { ha_sentinel_heal; }
fault_sentinel_kill_sync_teardown() { ha_stop_all; }

# ---- Cluster --------------------------------------------------------------------------------
# Three masters on loopback TCP, as tests/suites/cluster.sh makes them (cluster-node-timeout 2 s);
# the schedule's key is on one of them. cluster-failover gives that master a replica and kills
# it; cluster-migrate moves the key's hash slot to another master, step by step.

# ha_node N: cluster node N (server ha-cN) on a port of its own, in HA_C[N], or on the one it
# had, with its nodes file, when it comes back.
ha_node() {
	local try name # start_redis sets "name": not the runner's
	for try in 1 2 3 4 5; do
		if [ -z "${HA_C[$1]:-}" ] || [ "$try" != 1 ]; then
			cluster_port "HA_C[$1]"
			rm -f "$TMP/ha-nodes-$1.conf"
		fi
		start_redis "ha-c$1" --port "${HA_C[$1]}" --cluster-enabled yes \
			--cluster-config-file "$TMP/ha-nodes-$1.conf" --cluster-node-timeout 2000 \
			--repl-diskless-sync-delay 0 2> /dev/null && return 0
	done
	return 1
}

ha_ccli() {
	local n=$1
	shift
	rcli "ha-c$n" "$@" 2> /dev/null | tr -d '\r'
}

# ha_cluster_ok N...: those nodes say the cluster is ok.
ha_cluster_ok() {
	local n
	for n; do ha_ccli "$n" cluster info | grep -qx 'cluster_state:ok' || return 1; done
}

# ha_owner: the node that serves the key's slot, as node 1 sees it.
ha_owner() {
	local n id
	id=$(ha_ccli 1 cluster nodes | awk -v s="$HA_SLOT" '{
		for (i = 9; i <= NF; i++) {
			if ($i ~ /^\[/) continue # a migration in progress, not an owner
			k = split($i, r, "-")
			if (k == 1) r[2] = r[1]
			if (s + 0 >= r[1] + 0 && s + 0 <= r[2] + 0) print $1
		}
	}')
	for n in "${!HA_C[@]}"; do [ "$(ha_ccli "$n" cluster myid)" = "$id" ] && echo "$n"; done
}

# ha_cluster_up: three masters, the slots shared out by redis-cli; sets FAULT_URL, and HA_SLOT
# and HA_OWNER, the key's hash slot and its node.
ha_cluster_up() {
	local n
	HA_C=()
	for n in 1 2 3; do
		ha_node "$n" || return 1
		HA_SERVERS="$HA_SERVERS ha-c$n"
	done
	timeout 30 redis-cli --cluster create "127.0.0.1:${HA_C[1]}" "127.0.0.1:${HA_C[2]}" \
		"127.0.0.1:${HA_C[3]}" --cluster-yes > "$TMP/ha-create.log" 2>&1 || return 1
	wait_for 20 ha_cluster_ok 1 2 3 || return 1
	HA_SLOT=$(ha_ccli 1 cluster keyslot "$HA_KEY")
	HA_OWNER=$(ha_owner)
	[ -n "$HA_OWNER" ] || return 1
	FAULT_URL="redis-cluster://127.0.0.1:${HA_C[1]},127.0.0.1:${HA_C[2]},127.0.0.1:${HA_C[3]}"
}

# ha_replica_of N M: node N replicates node M, with the data, and the masters know it.
ha_replica_of() {
	local n idn idm
	idn=$(ha_ccli "$1" cluster myid) idm=$(ha_ccli "$2" cluster myid)
	ha_ccli "$1" info replication | grep -qx 'master_link_status:up' || return 1
	for n in "${!HA_C[@]}"; do
		[ "$n" = "$1" ] || [ "$n" = "$2" ] && continue
		ha_ccli "$n" cluster nodes | grep -q "^$idn [^ ]* slave $idm " || return 1
	done
}

campaign_fault cluster-failover "Cluster: the key's master killed (-9) while logins wait; the cluster promotes its replica"
fault_cluster_failover_setup() {
	ha_queue
	ha_cluster_up || return 1
	ha_node 4 || return 1
	HA_SERVERS="$HA_SERVERS ha-c4"
	timeout 30 redis-cli --cluster add-node "127.0.0.1:${HA_C[4]}" "127.0.0.1:${HA_C[1]}" \
		--cluster-slave --cluster-master-id "$(ha_ccli "$HA_OWNER" cluster myid)" \
		> "$TMP/ha-add.log" 2>&1 || return 1
	HA_REPLICA=4
	wait_for 20 ha_replica_of 4 "$HA_OWNER"
}
fault_cluster_failover_inject() {
	HA_KILLED=$HA_OWNER
	ha_kill "ha-c$HA_OWNER"
}
# Healed once the replica is a master and every live node says the cluster is ok; then the
# node killed comes back, with its nodes file, and becomes the replica of the one that took
# its slots, for the next round.
ha_promoted() {
	local n
	[ "$(ha_ccli "$HA_REPLICA" role | head -1)" = master ] || return 1
	for n in "${!HA_C[@]}"; do
		[ "$n" = "$HA_KILLED" ] || ha_cluster_ok "$n" || return 1
	done
}
fault_cluster_failover_heal() {
	wait_for 30 ha_promoted || return 1
	HA_OWNER=$HA_REPLICA HA_REPLICA=$HA_KILLED
	campaign_event promoted "ha-c$HA_OWNER 127.0.0.1:${HA_C[HA_OWNER]}"
	ha_node "$HA_KILLED" || return 1
	wait_for 30 ha_replica_of "$HA_KILLED" "$HA_OWNER"
}
fault_cluster_failover_teardown() { ha_stop_all; }

campaign_fault cluster-migrate "Cluster: the key's hash slot migrated to another master while logins wait (MIGRATING, MIGRATE, then the slot's new node)"
# IMPORTING and MIGRATING; a second later the slot's keys moved (MIGRATE); a second later the
# slot given to its new node on every node. Logins meet each phase: the key still on the old
# node, ASK to the new one, MOVED.
fault_cluster_migrate_setup() { ha_queue; ha_cluster_up; }
fault_cluster_migrate_inject() {
	local src=$HA_OWNER dst=$((HA_OWNER % 3 + 1)) id_src id_dst keys n
	id_src=$(ha_ccli "$src" cluster myid) id_dst=$(ha_ccli "$dst" cluster myid)
	{
		ha_ccli "$dst" cluster setslot "$HA_SLOT" importing "$id_src"
		ha_ccli "$src" cluster setslot "$HA_SLOT" migrating "$id_dst"
		campaign_event migrating "slot $HA_SLOT: node $src to node $dst"
		sleep 1
		keys=$(ha_ccli "$src" cluster getkeysinslot "$HA_SLOT" 100)
		[ -z "$keys" ] || ha_ccli "$src" migrate 127.0.0.1 "${HA_C[dst]}" "" 0 5000 keys $keys
		campaign_event migrated "keys: ${keys:-none}"
		sleep 1
		for n in $dst $src $((dst % 3 + 1)); do
			ha_ccli "$n" cluster setslot "$HA_SLOT" node "$id_dst"
		done
	} >> "$FAULT_DIR/migrate.log"
	HA_OWNER=$dst
}
fault_cluster_migrate_heal() { :; }
fault_cluster_migrate_teardown() { ha_stop_all; }

# ---- Hosts in network namespaces ------------------------------------------------------------
# Redis in a namespace of its own, on a bridge; each login host a namespace joined to the
# bridge by a veth pair, as tests/suites/hosts.sh joins its two. FAULT_HOSTS names the hosts'
# namespaces, which the runner deletes at exit should teardown never run.

HA_NET=10.213.79 # the bridge's /24: Redis .1, host i .(10 + i)

# ha_netns_up NHOSTS: the namespaces, the bridge and the veth pairs, Redis on the bridge; sets
# FAULT_URL and FAULT_HOSTS.
ha_netns_up() {
	local i=0 h
	HA_NSR=fsR-$$ FAULT_HOSTS=""
	for h in $(seq "$1"); do FAULT_HOSTS="$FAULT_HOSTS fsh$h-$$"; done
	FAULT_HOSTS=${FAULT_HOSTS# }
	CAMPAIGN_NETNS="$CAMPAIGN_NETNS $HA_NSR $FAULT_HOSTS"
	ip netns add "$HA_NSR" && ip -n "$HA_NSR" link set lo up &&
		ip -n "$HA_NSR" link add br0 type bridge &&
		ip -n "$HA_NSR" addr add "$HA_NET.1/24" dev br0 &&
		ip -n "$HA_NSR" link set br0 up || return 1
	for h in $FAULT_HOSTS; do
		i=$((i + 1))
		# Made in the root namespace: names of at most 15 bytes, unique to this run.
		ip netns add "$h" && ip -n "$h" link set lo up &&
			ip link add "fsv$i-$$" type veth peer name "fsr$i-$$" &&
			ip link set "fsv$i-$$" netns "$h" && ip link set "fsr$i-$$" netns "$HA_NSR" &&
			ip -n "$HA_NSR" link set "fsr$i-$$" master br0 &&
			ip -n "$HA_NSR" link set "fsr$i-$$" up &&
			ip -n "$h" addr add "$HA_NET.$((10 + i))/24" dev "fsv$i-$$" &&
			ip -n "$h" link set "fsv$i-$$" up || return 1
	done
	# "ip netns exec" execs Redis, so $! is Redis itself, stopped by pid. Not protected
	# mode, no password: only the run's namespaces reach it.
	ip netns exec "$HA_NSR" redis-server --port 6379 --bind "$HA_NET.1" --protected-mode no \
		--unixsocket "$TMP/ha-p.sock" --unixsocketperm 700 --dir "$TMP" \
		--dbfilename ha-p.rdb --save '' --appendonly no > "$TMP/ha-p.log" 2>&1 &
	echo $! > "$TMP/ha-p.pid"
	PIDS="$PIDS $!"
	HA_SERVERS="ha-p"
	for h in $FAULT_HOSTS; do wait_for 5 ha_reaches "$h" || return 1; done
	FAULT_URL="redis://$HA_NET.1:6379"
}

# ha_reaches HOST: a client on HOST gets an answer from Redis.
ha_reaches() {
	[ "$(ip netns exec "$1" redis-cli -h "$HA_NET.1" -p 6379 ping 2> /dev/null)" = PONG ]
}

# ha_netns_down: Redis stopped, then the namespaces, and the veth pairs with them (or by name,
# should one never have got into a namespace).
ha_netns_down() {
	local i=0 h
	ha_stop_all
	for h in $FAULT_HOSTS; do
		i=$((i + 1))
		ip netns del "$h" 2> /dev/null
		ip link del "fsv$i-$$" 2> /dev/null
	done
	ip netns del "$HA_NSR" 2> /dev/null
	return 0
}

# ha_cut up|down: the last host's link, on Redis's side of its pair: its packets vanish, as
# across a real partition (each call costs its timeout), rather than meet "no route".
ha_cut() { ip -n "$HA_NSR" link set "fsr$(echo $FAULT_HOSTS | wc -w)-$$" "$1"; }

campaign_fault partition "two hosts in network namespaces on one Redis; the second cut off (its link down on Redis's side) while its logins wait, then back"
fault_partition_setup() {
	ha_queue
	FAULT_HOLD_MS=4000 # every waiter on the host cut off meets a renewal while it is
	ha_netns_up 2
}
fault_partition_inject() { ha_cut down; }
fault_partition_heal() {
	ha_cut up
	wait_for 5 ha_reaches "${FAULT_HOSTS##* }"
}
fault_partition_teardown() { ha_netns_down; }

campaign_fault hosts-none "the same two hosts, nothing cut: the baseline of many hosts on one schedule"
fault_hosts_none_setup() { ha_queue; ha_netns_up 2; }
fault_hosts_none_inject() { :; }
fault_hosts_none_heal() { :; }
fault_hosts_none_teardown() { ha_netns_down; }

# ---- Bounds ---------------------------------------------------------------------------------
# What the docs let each fault weaken, and by how much (tests/campaign/CONTRACT.md).

# ha_cut_off_bounds: waiters cut off from the schedule (no master, or no link) while holding
# places: each goes in blind at its last slot, and its place lingers until its lease runs out.
ha_cut_off_bounds() {
	echo "expect waiting 1 # every injection met a waiter holding a place, which must renew across the fault"
	echo "P2 7s # a waiter cut off from the schedule goes in blind at the last slot it was given (pam_flowslot(7), A queue of live waiters: a renewal that fails), while one that reserved before it may be held back by a place cut off ahead of both until that place's lease (5 s) runs out, learnt at its next renewal (2 s) (The queue's promises: A lapsed place at its slot counts as admitted; MODEL.md P5)"
	echo "P5 7s # such a place holds those behind it until its lease (5 s) runs out, and each learns it at its next renewal (2 s) (MODEL.md P5: a killed login's place stops within its lease)"
	echo "P7 5s # a login that reserves or renews while such a place lingers past its slot is given a slot an interval later for each (the same rules), their slots within a lease (5 s)"
}

fault_sentinel_kill_bounds() {
	echo "P1 ${FAULT_INTERVAL_MS}ms # the new master holds the schedule as replication left it: a reservation the old master had not yet sent to the replica is lost, and the schedule moves back by that many slots (docs/GUIDE.md, Capacity); on loopback the replica lags less than the ${FAULT_GAP_MS} ms between two reservations: one, an interval"
	ha_cut_off_bounds
	echo "expect fallback 1 # logins that came while no master answered followed fallback=local (docs/GUIDE.md, Capacity)"
}
fault_sentinel_kill_sync_bounds() {
	echo "# P1 exact: with sync_replicas=1 the login goes on once a replica has its reservation, and min-replicas-to-write 1 keeps a master with no replica from taking any: the promoted replica has them all (docs/GUIDE.md, Capacity; pam_flowslot(8), sync_replicas=; BENCHMARKS.md, measurement 6)"
	ha_cut_off_bounds
	echo "expect fallback 1 # logins that came while no master answered followed fallback=local (docs/GUIDE.md, Capacity)"
}
fault_cluster_failover_bounds() {
	echo "P1 ${FAULT_INTERVAL_MS}ms # the promoted replica holds the schedule as replication left it: a reservation not yet replicated is lost (docs/GUIDE.md, Capacity); on loopback one at most, an interval"
	ha_cut_off_bounds
	echo "expect fallback 1 # logins that came while the key's slot had no master followed fallback=local (docs/GUIDE.md, Capacity)"
}
fault_cluster_migrate_bounds() {
	echo "# exact: a slot migrated between nodes costs no fallback, one ASK then one MOVED, and the key moves whole (docs/GUIDE.md, Capacity; One key on Redis)"
	echo "expect waiting 1 # every migration met a waiter holding a place, which renews across its phases"
}
fault_partition_bounds() {
	ha_cut_off_bounds
	echo "expect fallback 1 # logins on the host cut off followed fallback=local, after the timeout (docs/GUIDE.md, Capacity)"
	echo "expect renew_failed 1 # a waiter on the host cut off could not renew its place"
}
fault_hosts_none_bounds() {
	echo "# exact: every host that names the same server and key queues on the same schedule, on the server's clock (docs/GUIDE.md, Capacity)"
}
