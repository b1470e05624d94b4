-- pam_flowslot: one schedule's queue of live waiters, atomically.
--
-- KEYS[1]  the schedule: "tat at", the next admission time and the server time it was written
-- KEYS[2]  the waiters in order of arrival: zset, id -> arrival (server microseconds)
-- KEYS[3]  the leases: zset, id -> lease end; and "g:WHO" -> end of a ghost's claim
-- KEYS[4]  the waiters: hash, id -> "arrival WHO HOST"
-- KEYS[5]  the ghosts: hash, WHO -> arrival, for places given up that a retry takes back
-- ARGV[1]  what to do: reserve, renew or leave
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
-- commit window), nothing is kept but the schedule; 2 queued: the place is held until the lease ends, renew before then, and renew
-- at the slot to be admitted; 0 refused, the wait would pass max_wait; 3 refused, HOST holds
-- per_host places already. position is 1 + the logins ahead, in the queue or admitted to go
-- in later.
--
-- The schedule is the virtual-scheduling form of GCRA on the server's own clock; a waiter's
-- slot follows from its rank among the waiters alive now, so a place given up moves everyone
-- behind it up.
--
-- Try it:
--   redis-cli --eval slot.lua s s:q s:l s:w s:g , reserve 7000000 1 60000000 0 a "" "" 0 5000000 0

local K_SCHED, K_QUEUE, K_LEASE, K_WAITER, K_GHOST = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local op = ARGV[1]
local interval = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local max_wait = tonumber(ARGV[4])
local db = tonumber(ARGV[5])
local id, who, host = ARGV[6], ARGV[7] or '', ARGV[8] or ''
local per_host = tonumber(ARGV[9] or '0')
local lease = tonumber(ARGV[10])
local window = tonumber(ARGV[11])
if (op ~= 'reserve' and op ~= 'renew' and op ~= 'leave') or not interval or not burst or
    not max_wait or not db or not id or id == '' or not per_host or not lease or not window or
    interval < 1 or burst < 1 or max_wait < 0 or lease < 1 or window < 0 or
    string.find(who .. host, ' ') then
  return redis.error_reply('ERR pam_flowslot: bad arguments')
end
if db ~= 0 then
  redis.call('SELECT', db)
end

-- Microseconds as Redis arguments: a Lua number would go as 14 significant digits.
local function us(x)
  return string.format('%.0f', x)
end

-- A place given up is remembered this long, so that the same login tried again takes it back.
local GHOST_US = 60000000

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

-- Staleness is read from the schedule alone, never from this login's settings: a login with a
-- shorter max_wait is refused by a long queue, it does not reset it. A clock that went back
-- since the write (a step, a failover to a master whose clock is behind) moves the schedule
-- back as far, so the queue keeps its length. A tat that has passed, garbage, or one further
-- ahead than any settings allow (max_wait 60 min + burst 1000 * interval 60 min) starts it
-- afresh. A bare "tat", as versions before 0.2 wrote it, is read as written now.
local horizon_max = 3600000000 * 1001
local tat, at
local stored = redis.call('GET', K_SCHED)
if stored then
  local t1, a1 = string.match(stored, '^(%d+) ?(%d*)$')
  tat, at = tonumber(t1), tonumber(a1) or now
end
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

-- The slot of the waiter with `rank` waiters ahead of it.
local function start_of(rank)
  local start = tat + (rank - burst + 1) * interval
  if start < now then
    start = now
  end
  return start
end

-- Admits one login: the schedule moves on by one interval, and vanishes once it has passed.
local function admit()
  local new_tat = tat + interval
  redis.call('SET', K_SCHED, us(new_tat) .. ' ' .. us(now), 'PX',
    math.ceil((new_tat - now) / 1000))
end

-- Whether the queue's keys changed, so that their expiry must follow.
local changed = false

-- Removes a waiter's place; returns its arrival and WHO, or nil when it has none.
local function drop(place)
  changed = true
  local info = redis.call('HGET', K_WAITER, place)
  redis.call('ZREM', K_QUEUE, place)
  redis.call('ZREM', K_LEASE, place)
  redis.call('HDEL', K_WAITER, place)
  if not info then
    return nil
  end
  local arrival, whom = string.match(info, '^(%d+) (%S*)')
  return arrival, whom
end

-- Gives a place up, remembering it for WHO's next attempt.
local function give_up(place)
  local arrival, whom = drop(place)
  if arrival and whom ~= '' then
    redis.call('HSET', K_GHOST, whom, arrival)
    redis.call('ZADD', K_LEASE, us(now + GHOST_US), 'g:' .. whom)
  end
end

-- Drops the places whose lease ran out, and forgets the ghosts that nobody took back.
local function purge()
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', K_LEASE, '-inf', us(now))) do
    changed = true
    if string.sub(member, 1, 2) == 'g:' then
      redis.call('HDEL', K_GHOST, string.sub(member, 3))
      redis.call('ZREM', K_LEASE, member)
    else
      give_up(member)
    end
  end
end

-- Takes WHO's ghost, if there is one: its arrival.
local function take_ghost()
  if who == '' then
    return nil
  end
  local arrival = redis.call('HGET', K_GHOST, who)
  if arrival then
    changed = true
    redis.call('HDEL', K_GHOST, who)
    redis.call('ZREM', K_LEASE, 'g:' .. who)
  end
  return arrival
end

-- The waiters ahead of an arrival.
local function rank_of(arrival)
  return redis.call('ZCOUNT', K_QUEUE, '-inf', '(' .. arrival)
end

-- Holds a place: ordered by arrival, alive while its lease is.
local function hold(arrival)
  changed = true
  redis.call('ZADD', K_QUEUE, arrival, id)
  redis.call('ZADD', K_LEASE, us(now + lease), id)
  redis.call('HSET', K_WAITER, id, arrival .. ' ' .. who .. ' ' .. host)
end

-- The queue's keys live as long as the last lease or ghost in them, and no longer.
local function expire()
  if not changed then
    return
  end
  local last = redis.call('ZRANGE', K_LEASE, -1, -1, 'WITHSCORES')
  if #last == 0 then
    redis.call('DEL', K_QUEUE, K_LEASE, K_WAITER, K_GHOST)
    return
  end
  local ms = math.ceil((tonumber(last[2]) - now) / 1000) + 1000
  for _, k in ipairs({K_QUEUE, K_LEASE, K_WAITER, K_GHOST}) do
    redis.call('PEXPIRE', k, ms)
  end
end

local function places_of(h)
  local n = 0
  for _, info in ipairs(redis.call('HVALS', K_WAITER)) do
    if string.match(info, '^%d+ %S* (%S*)$') == h then
      n = n + 1
    end
  end
  return n
end

purge()

if op == 'leave' then
  give_up(id)
  expire()
  return {1, 0, 1}
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

-- The login first in line, or within the burst, whose slot is near is admitted now: it goes
-- in at its slot, and the next one's slot follows from that one, not from when it renewed.
local function due(rank, start)
  return start - now <= window and (rank == 0 or start == now)
end

if op == 'reserve' then
  local waiting = redis.call('ZCARD', K_QUEUE)
  if per_host > 0 and host ~= '' and places_of(host) >= per_host then
    return {3, 0, position(waiting)}
  end
  local ghost = who ~= '' and redis.call('HGET', K_GHOST, who) or nil
  local arrival = ghost or us(now)
  local rank = rank_of(arrival)
  local start = start_of(rank)
  if start - now > max_wait then
    return {0, start - now, position(rank)}
  end
  take_ghost()
  if due(rank, start) then
    admit()
    expire()
    return {1, start - now, position(rank)}
  end
  hold(arrival)
  expire()
  return {2, start - now, position(rank)}
end

-- renew: a place whose lease ran out while its login lived on (stopped, slow) is taken back
-- from its ghost, or failing that (another attempt of WHO took it) held anew at the back.
local arrival = redis.call('ZSCORE', K_QUEUE, id)
if not arrival then
  arrival = take_ghost() or us(now)
  hold(arrival)
else
  changed = true
  arrival = us(tonumber(arrival))
  redis.call('ZADD', K_LEASE, us(now + lease), id)
end
local rank = rank_of(arrival)
local start = start_of(rank)
if due(rank, start) then
  drop(id)
  admit()
  expire()
  return {1, start - now, position(rank)}
end
expire()
return {2, start - now, position(rank)}
