-- SPDX-License-Identifier: BSD-3-Clause
-- pam_flowslot: one schedule's queue of live waiters, atomically.
--
-- KEYS[1]  the schedule: one sorted set, so that Redis Cluster never splits it, even
--          mid-migration, and every lookup stays logarithmic. Its members, by score:
--            0                "s:TAT:AT"           the next admission time, and the server time
--                                                  it was written
--            arrival          "w:ID:WHO:HOST"      a waiter's place, ranked by arrival
--            LEASE + end      "l:ID:WHO:HOST"      that place's lease
--            GHOST + end      "g:WHO:ARRIVAL"      a place given up, that the same login tried
--                                                  again takes back
--          Times are server microseconds; an empty WHO or HOST is "-".
-- ARGV[1]  what to do: reserve, renew or leave; peek reads the schedule and changes nothing;
--          reset empties it
-- ARGV[2]  interval in microseconds (T)
-- ARGV[3]  burst (b): logins that may start together after a quiet spell
-- ARGV[4]  max_wait in microseconds: a longer wait is refused and reserves nothing
-- ARGV[5]  the database, selected here so that a bad one fails before any write
-- ARGV[6]  the place's id, unique to one login
-- ARGV[7]  WHO: who is logging in (a hash of service, user and remote host), or ""
-- ARGV[8]  HOST: the remote host (a hash), or ""
-- ARGV[9]  per_host: how many places one HOST may hold at once; 0 for no limit
-- ARGV[10] the lease, in microseconds: a place not renewed within it is given up
-- ARGV[11] the commit window, in microseconds: a login first in line whose slot is at most
--          this far off is admitted now, to go in at its slot without another call
--
-- Returns {verdict, wait_us, position}. verdict: 1 admitted: go in after wait_us (at most the
-- commit window), nothing is kept but the schedule; 2 queued: the place is held until the
-- lease ends, renew before then, and renew at the slot to be admitted; 0 refused, the wait
-- would pass max_wait; 3 refused, HOST holds per_host places already. position is 1 + the
-- logins ahead, in the queue or admitted to go in later.
--
-- peek and reset return {verdict, wait_us, position, waiting, since_us}: what a login
-- arriving now would get (as reserve, nothing held), the places held by live leases, and the
-- time since the schedule was last written (the last admission), -1 for none. reset answers
-- what the schedule held just before it emptied it.
--
-- The schedule is the virtual-scheduling form of GCRA on the server's own clock; a waiter's
-- slot follows from its rank among the waiters alive now, so a place given up moves everyone
-- behind it up.
--
-- Try it:
--   redis-cli --eval slot.lua myschedule , reserve 7000000 1 60000000 0 a "" "" 0 5000000 0
--   redis-cli --eval slot.lua myschedule , peek 7000000 1 60000000 0 a "" "" 0 5000000 0

local K = KEYS[1]
local op = ARGV[1]
local interval = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local max_wait = tonumber(ARGV[4])
local db = tonumber(ARGV[5])
local id = ARGV[6]
local who = ARGV[7] ~= '' and ARGV[7] or '-'
local host = ARGV[8] ~= '' and ARGV[8] or '-'
local per_host = tonumber(ARGV[9])
local lease = tonumber(ARGV[10])
local window = tonumber(ARGV[11])
if (op ~= 'reserve' and op ~= 'renew' and op ~= 'leave' and op ~= 'peek' and op ~= 'reset') or not interval or not burst or
    not max_wait or not db or not id or not string.match(id, '^%w+$') or
    not string.match(who, '^[%w-]+$') or not string.match(host, '^[%w-]+$') or not per_host or
    not lease or not window or interval < 1 or burst < 1 or max_wait < 0 or lease < 1 or
    window < 0 then
  return redis.error_reply('ERR pam_flowslot: bad arguments')
end
if db ~= 0 then
  redis.call('SELECT', db)
end

-- The score ranges of leases and ghosts, above any arrival (a 16-digit microsecond time).
local LEASE, GHOST = 1e16, 2e16
-- A place given up is remembered this long, so that the same login tried again takes it back.
local GHOST_US = 60000000

-- Microseconds as Redis arguments: a Lua number would go as 14 significant digits.
local function us(x)
  return string.format('%.0f', x)
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

-- The stored schedule. An earlier version's (a string "tat at", or a bare "tat") is read, and
-- replaced by the sorted set on the first write.
local stored, s_member
local from_string = redis.call('TYPE', K).ok == 'string'
if from_string then
  stored = redis.call('GET', K)
else
  s_member = redis.call('ZRANGEBYSCORE', K, 0, 0, 'LIMIT', 0, 1)[1]
  if s_member then
    stored = string.gsub(string.sub(s_member, 3), ':', ' ')
  end
end

-- Staleness is read from the schedule alone, never from this login's settings: a login with a
-- shorter max_wait is refused by a long queue, it does not reset it. A clock that went back
-- since the write (a step, a failover to a master whose clock is behind) moves the schedule
-- back as far, and that is stored, so the queue keeps its length. A tat that has passed,
-- garbage, or one further ahead than any settings allow (max_wait 60 min + burst 1000 *
-- interval 60 min) starts it afresh. A bare "tat", as versions before 0.2 wrote it, is read
-- as written now.
local horizon_max = 3600000000 * 1001
local tat, at
if stored then
  local t1, a1 = string.match(stored, '^(%d+) ?(%d*)$')
  tat, at = tonumber(t1), tonumber(a1) or now
end
local stepped_back = at and at > now
if not tat or not at or at <= 0 or tat < at then
  tat = now
else
  if now < at then
    tat = tat - (at - now)
  end
  if tat < now or tat - now > horizon_max then
    tat = now
  end
end

local reading = op == 'peek' or op == 'reset'
local changed = false
if from_string and not reading then
  redis.call('DEL', K)
  changed = true
end

-- Every write adds before it removes: a key that went empty and came back would be a new key,
-- which a cluster node refuses to make while its slot migrates.
local function set_schedule(new_tat)
  local m = 's:' .. us(new_tat) .. ':' .. us(now)
  if m ~= s_member then
    redis.call('ZADD', K, 0, m)
    if s_member then
      redis.call('ZREM', K, s_member)
    end
    s_member = m
  end
  changed = true
end
if not reading and (stepped_back or (from_string and stored)) then
  set_schedule(tat)
end

-- The slot of the waiter with `rank` waiters ahead of it.
local function start_of(rank)
  local start = tat + (rank - burst + 1) * interval
  if start < now then
    start = now
  end
  return start
end

-- A waiter's place for its user: 1 + the logins before it, those admitted to go in later
-- (within the commit window) included.
local function position(rank)
  local pending = 0
  local first = start_of(0)
  if first > now then
    pending = math.ceil((first - now) / interval) - 1
  end
  return rank + 1 + pending
end

-- Admits one login: the schedule moves on by one interval.
local function admit()
  set_schedule(tat + interval)
end

local function place_of(pid, pwho, phost)
  return pid .. ':' .. pwho .. ':' .. phost
end

local function drop(place)
  redis.call('ZREM', K, 'w:' .. place, 'l:' .. place)
  changed = true
end

-- Gives a place up, remembering it for its WHO's next attempt.
local function give_up(place)
  local arrival = redis.call('ZSCORE', K, 'w:' .. place)
  local pwho = string.match(place, '^%w+:([%w-]+):')
  if arrival and pwho and pwho ~= '-' then
    redis.call('ZADD', K, us(GHOST + now + GHOST_US), 'g:' .. pwho .. ':' .. us(arrival))
  end
  drop(place)
end

-- WHO's ghost: its member and arrival, or nil.
local function ghost_of(whom)
  if whom == '-' then
    return nil
  end
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', K, GHOST, '+inf')) do
    local gw, ga = string.match(m, '^g:([%w-]+):(%d+)$')
    if gw == whom then
      return m, tonumber(ga)
    end
  end
  return nil
end

-- Forgets WHO's ghost, once its place is taken back (or no longer needed).
local function forget_ghost(m)
  if m then
    redis.call('ZREM', K, m)
    changed = true
  end
end

-- The waiters ahead of an arrival.
local function rank_of(arrival)
  return redis.call('ZCOUNT', K, 1, '(' .. us(arrival))
end

local function hold(arrival)
  local place = place_of(id, who, host)
  redis.call('ZADD', K, us(arrival), 'w:' .. place)
  redis.call('ZADD', K, us(LEASE + now + lease), 'l:' .. place)
  changed = true
end

local function places_of(h)
  local n = 0
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', K, 1, '(' .. us(LEASE))) do
    if string.match(m, ':([%w-]+)$') == h then
      n = n + 1
    end
  end
  return n
end

-- The key lives as long as its schedule, its last lease or its last ghost, and no longer. The
-- ghosts that nobody took back go last, once nothing else is to be read or written: the key
-- must not go empty before (see set_schedule).
local function save()
  local last = now
  if s_member then
    last = math.max(last, tonumber(string.match(s_member, '^s:(%d+)')) or now)
  end
  for _, range in ipairs({{'+inf', GHOST, GHOST}, {'(' .. us(GHOST), LEASE, LEASE}}) do
    local top = redis.call('ZREVRANGEBYSCORE', K, range[1], range[2], 'WITHSCORES', 'LIMIT', 0, 1)
    if top[2] then
      last = math.max(last, tonumber(top[2]) - range[3])
    end
  end
  if last <= now then
    if redis.call('EXISTS', K) == 1 then
      redis.call('DEL', K)
    end
    return
  end
  if redis.call('ZREMRANGEBYSCORE', K, GHOST, us(GHOST + now)) > 0 then
    changed = true
  end
  if changed then
    redis.call('PEXPIRE', K, math.ceil((last - now) / 1000))
  end
end

-- The login first in line, or within the burst, whose slot is near is admitted now: it goes
-- in at its slot, and the next one's slot follows from that one, not from when it renewed.
local function due(rank, start)
  return start - now <= window and (rank == 0 or start == now)
end

-- peek and reset: the live waiters (those whose lease runs), and what a login now would get.
-- Nothing is written before reset's DEL, which leaves renewing waiters no place: each holds
-- one anew at the back of the fresh queue at its next renewal, as a lease that ran out does.
if reading then
  local waiting, since = 0, -1
  if not from_string then
    waiting = redis.call('ZCOUNT', K, '(' .. us(LEASE + now), '(' .. us(GHOST))
  end
  if at and stored then
    since = math.max(now - at, 0)
  end
  local start = start_of(waiting)
  local verdict = 2
  if start - now > max_wait then
    verdict = 0
  elseif due(waiting, start) then
    verdict = 1
  end
  if op == 'reset' and redis.call('EXISTS', K) == 1 then
    redis.call('DEL', K)
  end
  return {verdict, start - now, position(waiting), waiting, since}
end

-- Drops the places whose lease ran out (the ghosts that nobody took back go in save()).
for _, m in ipairs(redis.call('ZRANGEBYSCORE', K, LEASE, us(LEASE + now))) do
  give_up(string.sub(m, 3))
end

local self = place_of(id, who, host)

if op == 'leave' then
  give_up(self)
  save()
  return {1, 0, 1}
end

if op == 'reserve' then
  if per_host > 0 and host ~= '-' and places_of(host) >= per_host then
    save()
    return {3, 0, position(redis.call('ZCOUNT', K, 1, '(' .. us(LEASE)))}
  end
  local ghost, ghost_arrival = ghost_of(who)
  local arrival = ghost_arrival or now
  local rank = rank_of(arrival)
  local start = start_of(rank)
  if start - now > max_wait then
    save()
    return {0, start - now, position(rank)}
  end
  if due(rank, start) then
    admit()
    forget_ghost(ghost)
    save()
    return {1, start - now, position(rank)}
  end
  hold(arrival)
  forget_ghost(ghost)
  save()
  return {2, start - now, position(rank)}
end

-- renew: a place whose lease ran out while its login lived on (stopped, slow) is taken back
-- from its ghost, or failing that (another attempt of WHO took it) held anew at the back.
local arrival = redis.call('ZSCORE', K, 'w:' .. self)
local ghost, ghost_arrival
if arrival then
  arrival = tonumber(arrival)
else
  ghost, ghost_arrival = ghost_of(who)
  arrival = ghost_arrival or now
end
hold(arrival)
forget_ghost(ghost)
local rank = rank_of(arrival)
local start = start_of(rank)
if due(rank, start) then
  admit()
  drop(self)
  save()
  return {1, start - now, position(rank)}
end
save()
return {2, start - now, position(rank)}
