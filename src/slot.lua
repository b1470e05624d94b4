-- SPDX-License-Identifier: BSD-3-Clause
-- pam_flowslot: one schedule's queue of live waiters, atomically.
--
-- KEYS[1]  the schedule: one sorted set, so that Redis Cluster never splits it, even
--          mid-migration. Its members, by score (H(x) is 48 bits of x's SHA-1):
--            0                 "s:TAT:AT:OFF:INTERVAL:BURST:ADMITTED"  the next admission
--                              time; the schedule's clock at its last write, and how far that
--                              clock runs ahead of the server's TIME; the schedule's own
--                              interval and burst; the last admission (0: none)
--            arrival           "w:ID:WHO:HOST" a waiter's place, ranked by arrival; with ":t"
--                              after it when the place was taken back from a ghost
--            LEASE + end       "l:ID:WHO:HOST" the end of that place's lease, as granted
--            GHOST + end       "g:WHO:ARRIVAL:LEFT:HOST:0"  a place given up (at LEFT), that the
--                              same login tried again takes back
--          and the indexes that keep every lookup logarithmic, below 0:
--            -(1 + H(HOST))    "h:HOST:ID"     the places of a HOST
--            -(2^49 + H(HOST)) "i:HOST:WHO"    the ghosts of a HOST
--            -(2^50 + H(WHO))  "j:WHO:ARRIVAL:LEFT:HOST:0"  WHO's ghost
--          Times are microseconds on the schedule's clock; an empty WHO or HOST is "-".
-- ARGV[1]  what to do: reserve, renew or leave; peek reads the schedule and changes nothing;
--          reset empties it
-- ARGV[2]  interval in microseconds (T), as the caller has it: the schedule keeps its own
-- ARGV[3]  burst (b): logins that may start together after a quiet spell, as ARGV[2]
-- ARGV[4]  max_wait in microseconds: a longer wait is refused and reserves nothing; for renew,
--          what is left of the login's max_wait: a place whose slot is further off goes
-- ARGV[5]  the database, selected here so that a bad one fails before any write
-- ARGV[6]  the place's id, unique to one login
-- ARGV[7]  WHO: who is logging in (a hash of service, user and remote host), or ""
-- ARGV[8]  HOST: the remote host (a hash), or ""
-- ARGV[9]  per_host: how many places and ghosts one HOST may hold at once; 0 for no limit
-- ARGV[10] the lease near the slot, in microseconds: a place not renewed within its lease is
--          given up; further from its slot the lease is longer (lease_for)
-- ARGV[11] the commit window, in microseconds: a login first in line whose slot is at most
--          this far off is admitted now, to go in at its slot without another call
--
-- Returns {verdict, wait_us, position, interval, burst}. verdict: 1 admitted: go in after
-- wait_us (at most the commit window), nothing is kept but the schedule; 2 queued: the place
-- is held until the lease ends, renew before then, and renew at the slot to be admitted; 0
-- refused, the wait would pass max_wait (for renew: the place is gone); 3 refused, HOST holds
-- per_host places and ghosts already. position is 1 + the logins ahead, in the queue or
-- admitted to go in later. interval and burst are the schedule's, which decided.
--
-- peek and reset return {verdict, wait_us, position, waiting, since_us, interval, burst}: what
-- a login arriving now would get (as reserve, nothing held), the logins not gone in yet (live
-- places, and those admitted to go in later), and the time since the last admission, -1 for
-- none. reset answers what the schedule held just before it emptied it.
--
-- The rules (pam_flowslot(8), "The queue's promises"):
-- - The schedule is the virtual-scheduling form of GCRA; a waiter's slot follows from its rank
--   among the waiters alive now, so a place given up moves everyone behind it up.
-- - One clock per schedule: the server's TIME plus an offset that is raised (never lowered)
--   whenever TIME is not past the last write, so a clock step back reorders nothing and
--   stretches no lease.
-- - The schedule's interval and burst are the strictest seen since it was made (the longest
--   interval, the smallest burst), until it goes quiet and expires, or is reset.
-- - A ghost is taken back once (a place taken back leaves none), by a retry or by its own
--   renewal after its lease ran out, and only if nobody queued after it left: else the login
--   goes to the back. Ghosts count for per_host, and are capped per HOST and per schedule.
-- - A place whose lease ran out while it was first in line, its slot come by then, counts as
--   admitted: its login may have gone in without reaching the schedule.
-- - A lease fits the wait (lease_for): it ends before the place's slot unless that is near, and
--   its end is stored, so that every caller, an older version's script included, reads it.
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

-- The score ranges of leases and ghosts, above any arrival (a 16-digit microsecond time), and
-- of the indexes, below 0.
local LEASE, GHOST = 1e16, 2e16
local BY_HOST, GHOST_BY_HOST, GHOST_BY_WHO = 1, 2 ^ 49, 2 ^ 50
-- A place given up is remembered this long, so that the same login tried again takes it back;
-- so many at most per HOST and per schedule.
local GHOST_US, GHOSTS_PER_HOST, GHOSTS_MAX = 60000000, 16, 1024
-- A waiter renews every RENEW near its slot, and at most RENEW_MAX apart further back
-- (SLOT_RENEW_US and SLOT_RENEW_MAX_US).
local RENEW, RENEW_MAX = 2000000, 60000000
-- The furthest ahead any settings can leave a schedule (max_wait 60 min + burst 1000 *
-- interval 60 min), and the furthest back a clock may step and the schedule still be ours.
local HORIZON_MAX, STEP_MAX = 3600000000 * 1001, 400 * 86400000000

-- Microseconds as Redis arguments: a Lua number would go as 14 significant digits.
local function us(x)
  return string.format('%.0f', x)
end

local function index(base, name)
  return us(-(base + tonumber(string.sub(redis.sha1hex(name), 1, 12), 16)))
end

local t = redis.call('TIME')
local server_now = tonumber(t[1]) * 1000000 + tonumber(t[2])

-- The stored schedule, as fields. An earlier version's (a string "tat at", a bare "tat", or
-- a member "s:TAT:AT") is read, and replaced on the first write.
local stored, s_member
local from_string = redis.call('TYPE', K).ok == 'string'
if from_string then
  stored = redis.call('GET', K)
else
  s_member = redis.call('ZRANGEBYSCORE', K, 0, 0, 'LIMIT', 0, 1)[1]
  if s_member then
    stored = string.sub(s_member, 3)
  end
end
local f = {}
if stored then
  for x in string.gmatch(stored, '[^: ]+') do
    f[#f + 1] = tonumber(x) or -1
  end
end

-- Garbage, or a schedule no settings could have left, is not ours: it starts afresh. The
-- schedule's clock never runs behind its last write (AT).
local tat_raw, at, off = f[1], f[2] or server_now, f[3] or 0
local ours = tat_raw ~= nil and #f <= 6 and tat_raw >= 0 and at > 0 and off >= 0 and
    tat_raw >= at and tat_raw - at <= HORIZON_MAX and at - server_now - off <= STEP_MAX
if not ours then
  tat_raw, at, off = nil, nil, 0
end
local now = server_now + off
if at and now <= at then
  off = off + at + 1 - now
  now = at + 1
end
tat_raw = tat_raw or now
local tat = math.max(tat_raw, now)
local admitted_at = f[6] or at or 0
if #f == 1 then
  admitted_at = 0
end
if f[4] and f[4] >= 1 and ours then
  interval = math.max(interval, f[4])
end
if f[5] and f[5] >= 1 and ours then
  burst = math.min(burst, f[5])
end

local reading = op == 'peek' or op == 'reset'
local changed = false
if (from_string or (stored and not ours)) and not reading then
  redis.call('DEL', K)
  s_member = nil
  changed = true
end

local function reply(verdict, wait, position)
  return {verdict, wait, position, interval, burst}
end

-- The slot of the waiter with `rank` waiters ahead of it.
local function start_of(rank)
  return math.max(tat + (rank - burst + 1) * interval, now)
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

-- Admits one login that goes in at at_us: the schedule moves on by one interval.
local function admit(at_us)
  tat_raw = math.max(tat_raw, at_us) + interval
  tat = math.max(tat_raw, now)
  admitted_at = now
  changed = true
end

-- The lease granted to a place whose slot is `wait` off, as src/slot.c's slot_lease_us: near
-- its slot (within two intervals and the commit window) `lease`; further back a quarter of the
-- wait (RENEW to RENEW_MAX), when its login renews, and the same margin. So it ends before the
-- slot unless that is at most `lease` off, and a dead place far back delays nobody.
local function lease_for(wait)
  local renew = RENEW
  if wait > 2 * interval + window then
    renew = math.min(math.max(math.floor(wait / 4), RENEW), RENEW_MAX)
  end
  return renew + lease - RENEW
end

local function place_of(pid, pwho, phost)
  return pid .. ':' .. pwho .. ':' .. phost
end

local function parse_place(place)
  return string.match(place, '^(%w+):([%w-]+):([%w-]+)$')
end

-- A place's arrival, and whether it was taken back from a ghost; nil for none.
local function arrival_of(place)
  local a = redis.call('ZSCORE', K, 'w:' .. place)
  if a then
    return tonumber(a), false
  end
  a = redis.call('ZSCORE', K, 'w:' .. place .. ':t')
  if a then
    return tonumber(a), true
  end
  return nil, false
end

local function drop(place)
  local pid, _, phost = parse_place(place)
  redis.call('ZREM', K, 'w:' .. place, 'w:' .. place .. ':t', 'l:' .. place)
  if phost and phost ~= '-' then
    redis.call('ZREM', K, 'h:' .. phost .. ':' .. pid)
  end
  changed = true
end

-- Holds the caller's place, its slot `wait` off.
local function hold(arrival, taken, wait)
  local place = place_of(id, who, host)
  redis.call('ZADD', K, us(arrival), 'w:' .. place .. (taken and ':t' or ''))
  redis.call('ZADD', K, us(LEASE + now + lease_for(wait)), 'l:' .. place)
  if host ~= '-' then
    redis.call('ZADD', K, index(BY_HOST, host), 'h:' .. host .. ':' .. id)
  end
  changed = true
end

-- WHO's ghost, or nil: {payload, who, arrival, left, host}.
local function ghost_of(whom)
  if whom == '-' then
    return nil
  end
  local score = index(GHOST_BY_WHO, whom)
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', K, score, score)) do
    local gw, ga, gl, gh = string.match(m, '^j:([%w-]+):(%d+):(%d+):([%w-]+):0$')
    if gw == whom then
      return {payload = string.sub(m, 3), who = gw, arrival = tonumber(ga), left = tonumber(gl),
              host = gh}
    end
  end
  return nil
end

local function forget_ghost(g)
  redis.call('ZREM', K, 'g:' .. g.payload, 'j:' .. g.payload)
  if g.host ~= '-' then
    redis.call('ZREM', K, 'i:' .. g.host .. ':' .. g.who)
  end
  changed = true
end

-- Remembers a place given up at left_us for WHO's next attempt, within the caps.
local function make_ghost(pwho, phost, arrival, left_us)
  local old = ghost_of(pwho)
  if old then
    forget_ghost(old)
  end
  if pwho == '-' or redis.call('ZCOUNT', K, GHOST, '+inf') >= GHOSTS_MAX then
    return
  end
  local by_host = index(GHOST_BY_HOST, phost)
  if phost ~= '-' and redis.call('ZCOUNT', K, by_host, by_host) >= GHOSTS_PER_HOST then
    return
  end
  local payload = pwho .. ':' .. us(arrival) .. ':' .. us(left_us) .. ':' .. phost .. ':0'
  redis.call('ZADD', K, us(GHOST + left_us + GHOST_US), 'g:' .. payload)
  redis.call('ZADD', K, index(GHOST_BY_WHO, pwho), 'j:' .. payload)
  if phost ~= '-' then
    redis.call('ZADD', K, by_host, 'i:' .. phost .. ':' .. pwho)
  end
  changed = true
end

-- Gives a place up at left_us, leaving a ghost unless it was taken back already.
local function give_up(place, left_us)
  local arrival, taken = arrival_of(place)
  local _, pwho, phost = parse_place(place)
  drop(place)
  if arrival and pwho and not taken then
    make_ghost(pwho, phost, arrival, left_us)
  end
end

-- The arrival of a login that takes ghost (or nil) back: the ghost's, if nobody queued after
-- it left; else now, at the back.
local function arrival_back(ghost)
  if ghost and redis.call('ZCOUNT', K, us(ghost.left), '(' .. us(LEASE)) == 0 then
    return ghost.arrival
  end
  return now
end

-- The waiters ahead of an arrival.
local function rank_of(arrival)
  return redis.call('ZCOUNT', K, 1, '(' .. us(arrival))
end

-- The places and ghosts of HOST.
local function held_by(h)
  local places, ghosts = index(BY_HOST, h), index(GHOST_BY_HOST, h)
  return redis.call('ZCOUNT', K, places, places) + redis.call('ZCOUNT', K, ghosts, ghosts)
end

-- The key lives as long as its schedule, its last lease or its last ghost, and no longer.
-- Every write adds before it removes: a key that went empty and came back would be a new key,
-- which a cluster node refuses to make while its slot migrates.
local function save()
  -- The last place's slot, were everyone ahead of it admitted (see the lapsed places).
  local last = tat + redis.call('ZCOUNT', K, 1, '(' .. us(LEASE)) * interval
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
  if not changed then
    return
  end
  local m = 's:' .. us(tat) .. ':' .. us(now) .. ':' .. us(off) .. ':' .. us(interval) .. ':' ..
      us(burst) .. ':' .. us(admitted_at)
  if m ~= s_member then
    redis.call('ZADD', K, 0, m)
    if s_member then
      redis.call('ZREM', K, s_member)
    end
  end
  redis.call('PEXPIRE', K, math.ceil((last - now) / 1000))
end

-- The login first in line, or within the burst, whose slot is near is admitted now: it goes
-- in at its slot, and the next one's slot follows from that one, not from when it renewed.
local function due(rank, start)
  return start - now <= window and (rank == 0 or start == now)
end

-- peek and reset: what a login now would get. Nothing is written before reset's DEL, which
-- leaves renewing waiters no place: each holds one anew at the back of the fresh queue at its
-- next renewal, as a lease that ran out does.
if reading then
  local live, since = 0, -1
  if not from_string then
    live = redis.call('ZCOUNT', K, '(' .. us(LEASE + now), '(' .. us(GHOST))
  end
  if admitted_at > 0 then
    since = math.max(now - admitted_at, 0)
  end
  local start = start_of(live)
  local verdict = 2
  if start - now > max_wait then
    verdict = 0
  elseif due(live, start) then
    verdict = 1
  end
  if op == 'reset' and redis.call('EXISTS', K) == 1 then
    redis.call('DEL', K)
  end
  return {verdict, start - now, position(live), live + position(0) - 1, since, interval, burst}
end

local self = place_of(id, who, host)

-- The ghosts forgotten, then the places whose lease ran out, in arrival order (not the
-- caller's own: it is renewing, so it lives).
for _, m in ipairs(redis.call('ZRANGEBYSCORE', K, GHOST, us(GHOST + now))) do
  local payload = string.sub(m, 3)
  local gw, gh = string.match(payload, '^([%w-]+):%d+:%d+:([%w-]+):[01]$')
  redis.call('ZREM', K, m, 'j:' .. payload)
  if gh and gh ~= '-' then
    redis.call('ZREM', K, 'i:' .. gh .. ':' .. gw)
  end
  changed = true
end
local lapsed = {}
local ended = redis.call('ZRANGEBYSCORE', K, LEASE, us(LEASE + now), 'WITHSCORES')
for i = 1, #ended, 2 do
  local place = string.sub(ended[i], 3)
  if place ~= self or op == 'reserve' then
    lapsed[#lapsed + 1] = {place = place, arrival = arrival_of(place) or -1,
                           left = tonumber(ended[i + 1]) - LEASE}
  end
end
table.sort(lapsed, function(a, b) return a.arrival < b.arrival end)
for _, p in ipairs(lapsed) do
  if p.arrival >= 0 and rank_of(p.arrival) == 0 and tat_raw - (burst - 1) * interval <= p.left then
    drop(p.place)
    admit(0)
  else
    give_up(p.place, p.left)
  end
end

if op == 'leave' then
  give_up(self, now)
  save()
  return reply(1, 0, 1)
end

if op == 'reserve' then
  local ghost = ghost_of(who)
  if per_host > 0 and host ~= '-' then
    local own = (ghost and ghost.host == host) and 1 or 0
    if held_by(host) - own >= per_host then
      save()
      return reply(3, 0, position(redis.call('ZCOUNT', K, 1, '(' .. us(LEASE))))
    end
  end
  local arrival = arrival_back(ghost)
  local rank = rank_of(arrival)
  local start = start_of(rank)
  if start - now > max_wait then
    save()
    return reply(0, start - now, position(rank))
  end
  if ghost then
    forget_ghost(ghost)
  end
  if due(rank, start) then
    local pos = position(rank)
    admit(now)
    save()
    return reply(1, start - now, pos)
  end
  hold(arrival, ghost ~= nil, start - now)
  save()
  return reply(2, start - now, position(rank))
end

-- renew: a place whose lease ran out while its login lived on (stopped, slow, the server
-- unreachable) is taken back from its ghost as a retry would, or failing that held anew at
-- the back. Its rank counts the arrivals before its own, so it is known before the write, and
-- so is the lease that fits its wait.
local arrival = arrival_of(self)
local kept, ghost = arrival ~= nil, nil
if not kept then
  ghost = ghost_of(who)
  arrival = arrival_back(ghost)
end
local rank = rank_of(arrival)
local start = start_of(rank)
if kept then
  redis.call('ZADD', K, us(LEASE + now + lease_for(start - now)), 'l:' .. self)
  changed = true
else
  if ghost then
    forget_ghost(ghost)
  end
  hold(arrival, ghost ~= nil, start - now)
end
if start - now > max_wait then
  drop(self)
  save()
  return reply(0, start - now, position(rank))
end
if due(rank, start) then
  local pos = position(rank)
  admit(now)
  drop(self)
  save()
  return reply(1, start - now, pos)
end
save()
return reply(2, start - now, position(rank))
