-- pam_flowslot: one schedule's queue of live waiters, atomically.
--
-- KEYS[1]  the schedule: one hash, so that Redis Cluster never splits it, even mid-migration.
--          Field s: "tat at", the next admission time and the server time it was written;
--          w:ID: "arrival lease WHO HOST", a waiter's place; g:WHO: "arrival end", a place
--          given up, that the same login tried again takes back. An empty WHO or HOST is "-".
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
-- commit window), nothing is kept but the schedule; 2 queued: the place is held until the
-- lease ends, renew before then, and renew at the slot to be admitted; 0 refused, the wait
-- would pass max_wait; 3 refused, HOST holds per_host places already. position is 1 + the
-- logins ahead, in the queue or admitted to go in later.
--
-- The schedule is the virtual-scheduling form of GCRA on the server's own clock; a waiter's
-- slot follows from its rank among the waiters alive now, so a place given up moves everyone
-- behind it up.
--
-- Try it:
--   redis-cli --eval slot.lua myschedule , reserve 7000000 1 60000000 0 a "" "" 0 5000000 0

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
if (op ~= 'reserve' and op ~= 'renew' and op ~= 'leave') or not interval or not burst or
    not max_wait or not db or not id or not string.match(id, '^%w+$') or
    not string.match(who, '^[%w-]+$') or not string.match(host, '^[%w-]+$') or not per_host or
    not lease or not window or interval < 1 or burst < 1 or max_wait < 0 or lease < 1 or
    window < 0 then
  return redis.error_reply('ERR pam_flowslot: bad arguments')
end
if db ~= 0 then
  redis.call('SELECT', db)
end

-- A place given up is remembered this long, so that the same login tried again takes it back.
local GHOST_US = 60000000

-- Microseconds as Redis arguments: a Lua number would go as 14 significant digits.
local function us(x)
  return string.format('%.0f', x)
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

-- The stored state. An earlier version's schedule (a string "tat at", or a bare "tat") is
-- read, and replaced by a hash on the first write.
local stored, waiters, ghosts = nil, {}, {}
local kind = redis.call('TYPE', K).ok
local from_string = kind == 'string'
if from_string then
  stored = redis.call('GET', K)
elseif kind == 'hash' then
  local all = redis.call('HGETALL', K)
  for i = 1, #all, 2 do
    local field, value = all[i], all[i + 1]
    local tag, name = string.sub(field, 1, 2), string.sub(field, 3)
    if field == 's' then
      stored = value
    elseif tag == 'w:' then
      local a, l, w, h = string.match(value, '^(%d+) (%d+) (%S+) (%S+)$')
      if a then
        waiters[name] = {arrival = tonumber(a), lease = tonumber(l), who = w, host = h}
      end
    elseif tag == 'g:' then
      local a, e = string.match(value, '^(%d+) (%d+)$')
      if a then
        ghosts[name] = {arrival = tonumber(a), ends = tonumber(e)}
      end
    end
  end
end

-- Staleness is read from the schedule alone, never from this login's settings: a login with a
-- shorter max_wait is refused by a long queue, it does not reset it. A clock that went back
-- since the write (a step, a failover to a master whose clock is behind) moves the schedule
-- back as far, so the queue keeps its length. A tat that has passed, garbage, or one further
-- ahead than any settings allow (max_wait 60 min + burst 1000 * interval 60 min) starts it
-- afresh. A bare "tat", as versions before 0.2 wrote it, is read as written now.
local horizon_max = 3600000000 * 1001
local tat, at
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
-- A clock that went back: the schedule moved back as far is kept (below), or every renewal
-- would find the same wait until the clock caught up.
local stepped_back = at and at > now

-- The writes, made at the end: fields to set and fields to delete.
local sets, dels = {}, {}
local function put(field, value)
  sets[field] = value
  dels[field] = nil
end
local function del(field)
  dels[field] = true
  sets[field] = nil
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
  put('s', us(tat + interval) .. ' ' .. us(now))
end

local function drop(place)
  waiters[place] = nil
  del('w:' .. place)
end

-- Gives a place up, remembering it for its WHO's next attempt.
local function give_up(place)
  local w = waiters[place]
  if not w then
    return
  end
  drop(place)
  if w.who ~= '-' then
    ghosts[w.who] = {arrival = w.arrival, ends = now + GHOST_US}
    put('g:' .. w.who, us(w.arrival) .. ' ' .. us(now + GHOST_US))
  end
end

-- Takes WHO's ghost, if there is one: its arrival.
local function take_ghost()
  local g = who ~= '-' and ghosts[who]
  if not g then
    return nil
  end
  ghosts[who] = nil
  del('g:' .. who)
  return g.arrival
end

local function rank_of(arrival)
  local rank = 0
  for _, w in pairs(waiters) do
    if w.arrival < arrival then
      rank = rank + 1
    end
  end
  return rank
end

local function hold(arrival)
  waiters[id] = {arrival = arrival, lease = now + lease, who = who, host = host}
  put('w:' .. id, us(arrival) .. ' ' .. us(now + lease) .. ' ' .. who .. ' ' .. host)
end

local function count(tbl, pred)
  local n = 0
  for _, v in pairs(tbl) do
    if pred(v) then
      n = n + 1
    end
  end
  return n
end

-- Saves what changed; the hash lives as long as its schedule, its last lease or its last
-- ghost, and no longer.
local function save()
  if next(sets) == nil and next(dels) == nil then
    return
  end
  if from_string then
    redis.call('DEL', K)
    if not sets['s'] and stored then
      put('s', stored)
    end
  end
  local fields = {}
  for f in pairs(dels) do
    fields[#fields + 1] = f
  end
  if #fields > 0 then
    redis.call('HDEL', K, unpack(fields))
  end
  local pairs_ = {}
  for f, v in pairs(sets) do
    pairs_[#pairs_ + 1] = f
    pairs_[#pairs_ + 1] = v
  end
  if #pairs_ > 0 then
    redis.call('HSET', K, unpack(pairs_))
  end
  local last = now
  local s = sets['s'] or stored
  if s then
    last = math.max(last, tonumber(string.match(s, '^(%d+)')) or now)
  end
  for _, w in pairs(waiters) do
    last = math.max(last, w.lease)
  end
  for _, g in pairs(ghosts) do
    last = math.max(last, g.ends)
  end
  if last <= now then
    redis.call('DEL', K)
  else
    redis.call('PEXPIRE', K, math.ceil((last - now) / 1000))
  end
end

if stepped_back then
  put('s', us(tat) .. ' ' .. us(now))
end

-- Drops the places whose lease ran out, and forgets the ghosts that nobody took back.
for place, w in pairs(waiters) do
  if w.lease <= now then
    give_up(place)
  end
end
for whom, g in pairs(ghosts) do
  if g.ends <= now then
    ghosts[whom] = nil
    del('g:' .. whom)
  end
end

if op == 'leave' then
  give_up(id)
  save()
  return {1, 0, 1}
end

-- The login first in line, or within the burst, whose slot is near is admitted now: it goes
-- in at its slot, and the next one's slot follows from that one, not from when it renewed.
local function due(rank, start)
  return start - now <= window and (rank == 0 or start == now)
end

if op == 'reserve' then
  if per_host > 0 and host ~= '-' and
      count(waiters, function(w) return w.host == host end) >= per_host then
    save()
    return {3, 0, position(count(waiters, function() return true end))}
  end
  local ghost = who ~= '-' and ghosts[who]
  local arrival = ghost and ghost.arrival or now
  local rank = rank_of(arrival)
  local start = start_of(rank)
  if start - now > max_wait then
    save()
    return {0, start - now, position(rank)}
  end
  take_ghost()
  if due(rank, start) then
    admit()
    save()
    return {1, start - now, position(rank)}
  end
  hold(arrival)
  save()
  return {2, start - now, position(rank)}
end

-- renew: a place whose lease ran out while its login lived on (stopped, slow) is taken back
-- from its ghost, or failing that (another attempt of WHO took it) held anew at the back.
local w = waiters[id]
local arrival
if not w then
  arrival = take_ghost() or now
else
  arrival = w.arrival
end
hold(arrival)
local rank = rank_of(arrival)
local start = start_of(rank)
if due(rank, start) then
  drop(id)
  admit()
  save()
  return {1, start - now, position(rank)}
end
save()
return {2, start - now, position(rank)}
