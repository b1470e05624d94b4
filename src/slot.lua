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
--          and lower, -(2^52 + ASKED) "t": when a reservation last asked for the schedule's
--          settings, or stricter ones (none: never); -2^53 "r:REBUILT": when a caller
--          that held or heard of the schedule found it lost and made it again (none: never);
--          lowest, -(2^53 + 2) "x:UNTIL": a reset keeps the key until then (none: no reset)
--          Times are microseconds on the schedule's clock; an empty WHO or HOST is "-".
-- ARGV[1]  what to do: reserve, renew or leave; peek reads the schedule and changes nothing;
--          reset empties it but its head. A reserve whose id holds a place already (a login asking again
--          after its call timed out, which the server made late) answers that place as renew
--          does, and holds no other
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
--          this far off is admitted now, to go in at its slot without another call; -1 admits
--          nobody, and only holds places (the pressure hold's line, while pressure is high)
-- ARGV[12] reserve, renew: how far off the next slot was, by the last answer the caller's host
--          heard, in microseconds; 0 (or none) for none. It counts only on a key that holds no
--          schedule: one lost (evicted, a restart without its data) is made again with it
-- ARGV[13] renew: how long ago the place arrived, by its last answer, in microseconds (or
--          none): on a schedule made again, a place lost with it is held again at its arrival
-- ARGV[14] reserve: how far off, at the soonest, the next slot is, in microseconds; 0 (or
--          none) for no floor. The per-host schedule taken as a fallback sends how far off
--          its host knows the shared schedule to go on: its own waiters there, going in at
--          their slots, and the next slot it last heard of
-- Numbers are whole (a fraction, inf or nan is bad arguments).
--
-- Returns {verdict, wait_us, position, interval, burst, next_us, age_us}. verdict: 1
-- admitted: go in after wait_us (at most the commit window), nothing is kept but the
-- schedule; 2 queued: the place is held until the lease ends, renew before then, and renew
-- at the slot to be admitted; 0 refused, the wait would pass max_wait (for renew: the place
-- is gone); 3 refused, HOST holds per_host places and ghosts already. position is 1 + the logins ahead, in the queue or
-- admitted to go in later. interval and burst are the schedule's, which decided. next_us: how
-- far off the schedule's next slot is, as written back (its last admission and interval);
-- age_us: how long ago the place held arrived (0 when none is held).
--
-- peek and reset return {verdict, wait_us, position, waiting, since_us, interval, burst}: what
-- a login arriving now would get (as reserve, nothing held), the logins not gone in yet (live
-- places, and those admitted to go in later), and the time since the last admission, -1 for
-- none. reset answers what the schedule held just before it emptied it. peek adds evicts: 1
-- when the server may evict keys to stay under its maxmemory (a maxmemory-policy other than
-- noeviction, and a maxmemory), the schedule's first under volatile-ttl, for it always has a
-- short TTL; else 0.
--
-- The rules (pam_flowslot(7), "The queue's promises"):
-- - The schedule is the virtual-scheduling form of GCRA; a waiter's slot follows from its rank
--   among the waiters alive now, so a place given up moves everyone behind it up.
-- - One clock per schedule: the server's TIME plus an offset that is raised (never lowered)
--   whenever TIME is not past the last write, so a clock step back reorders nothing and
--   stretches no lease.
-- - The schedule's interval and burst are the strictest seen since it was made (the longest
--   interval, the smallest burst), until it goes quiet and expires, or is reset. A login that
--   is refused has no say: what its call tidies is tidied by the schedule's own settings, and
--   they are what is written back.
-- - A reservation is idempotent by its place's id: asked again, it answers the place it made,
--   as a renewal does, and holds no second one.
-- - A lost schedule is made again by those who hold it: a reservation or renewal that finds
--   no schedule puts the next slot back where its host last heard it was (no further off than
--   the caller's burst, intervals and commit window allow), and for a minute and a lease after
--   (every waiter renews within that) a renewal whose place is gone, with no ghost, holds it
--   again at its own arrival if that was before the schedule was made again. A reset leaves
--   the schedule's head: it is not lost, and its waiters join the back.
-- - A ghost is taken back once (a place taken back leaves none), by a retry or by its own
--   renewal after its lease ran out, and only if nobody queued after it left: else the login
--   goes to the back. Ghosts count for per_host, and are capped per HOST and per schedule.
-- - A place whose lease ran out while it was first in line, its slot come by then, counts as
--   admitted: its login may have gone in without reaching the schedule. A place with no lease
--   at all (a damaged store) goes once it is first.
-- - What only the host can know: a place whose holder the store knows to be gone (its process
--   ended) lapses now, as if its lease had. The per-host file's store gives the script
--   redis.flowslot_gone, the leases of those places; Redis cannot know, and has none (nil):
--   no place is known gone, at no cost and with no error counted.
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
local heard = tonumber(ARGV[12] or '0')
local age = tonumber(ARGV[13] or '0')
local floor = tonumber(ARGV[14] or '0')
-- This login's place: its id, WHO and HOST, checked in one match (none of them holds a ':').
local self = id and who and host and id .. ':' .. who .. ':' .. host
if (op ~= 'reserve' and op ~= 'renew' and op ~= 'leave' and op ~= 'peek' and op ~= 'reset') or not interval or not burst or
    not max_wait or not db or not self or not string.match(self, '^%w+:[%w-]+:[%w-]+$') or not per_host or
    not lease or not window or not heard or not age or not floor or interval < 1 or burst < 1 or
    max_wait < 0 or lease < 1 or window < -1 or heard < 0 or age < 0 or floor < 0 or
    interval % 1 ~= 0 or burst % 1 ~= 0 or max_wait % 1 ~= 0 or db % 1 ~= 0 or
    per_host % 1 ~= 0 or lease % 1 ~= 0 or window % 1 ~= 0 or heard % 1 ~= 0 or age % 1 ~= 0 or
    floor % 1 ~= 0 then
  return redis.error_reply('ERR pam_flowslot: bad arguments')
end
if db ~= 0 then
  redis.call('SELECT', db)
end

-- The score ranges of leases and ghosts, above any arrival (a 16-digit microsecond time), and
-- of the indexes, below 0.
local LEASE, GHOST = 1e16, 2e16
local BY_HOST, GHOST_BY_HOST, GHOST_BY_WHO = 1, 2 ^ 49, 2 ^ 50
-- Settings stricter than a caller's hold this long after a reservation last asked for them.
local ASKED_FOR, ASKED = 60000000, 2 ^ 52
-- The score of the member that says when a lost schedule was made again.
local REBUILT = '-9007199254740992'
-- The score of the member that says how long a reset keeps the key (see reset()).
local RESET_UNTIL = '-9007199254740994'
-- A place given up is remembered this long, so that the same login tried again takes it back;
-- so many at most per HOST and per schedule.
local GHOST_US, GHOSTS_PER_HOST, GHOSTS_MAX = 60000000, 16, 1024
-- A waiter renews every RENEW near its slot, and at most RENEW_MAX apart further back
-- (SLOT_RENEW_US and SLOT_RENEW_MAX_US).
local RENEW, RENEW_MAX = 2000000, 60000000
-- The furthest ahead any settings can leave a schedule (max_wait 60 min + burst 1000 *
-- interval 60 min), and the furthest back a clock may step and the schedule still be ours.
local HORIZON_MAX, STEP_MAX = 3600000000 * 1001, 400 * 86400000000
-- The bands' bounds as Redis reads them, written out once: the places end below LEASE, the
-- leases below GHOST.
local LEASE_S, GHOST_S = '10000000000000000', '20000000000000000'
local PLACES_END, LEASES_END = '(' .. LEASE_S, '(' .. GHOST_S

-- Microseconds as Redis arguments: a Lua number would go as 14 significant digits. %d prints
-- the same digits as %.0f for less, where a C long has 64 bits (not on a 32-bit server:
-- there, and past 2^62, %.0f). Every time here is whole: the arguments are checked.
local WIDE = string.format('%d', 2 ^ 53) == '9007199254740992'
local function us(x)
  if WIDE and x < 2 ^ 62 and x > -2 ^ 62 then
    return string.format('%d', x)
  end
  return string.format('%.0f', x)
end

-- An index's score: -(base + H(name)). H is computed once per name and call.
local hashes = {}
local function index(base, name)
  local h = hashes[name]
  if not h then
    h = tonumber(string.sub(redis.sha1hex(name), 1, 12), 16)
    hashes[name] = h
  end
  return us(-(base + h))
end

local t = redis.call('TIME')
local server_now = t[1] * 1000000 + t[2]

-- The stored schedule, as fields. An earlier version's (a string "tat at", a bare "tat", or
-- a member "s:TAT:AT") is read, and replaced on the first write. A sorted set is read
-- directly: only a key of another type costs the TYPE that tells a string from the rest.
local stored, s_member, from_string
local got = redis.pcall('ZRANGEBYSCORE', K, '0', '0', 'LIMIT', '0', '1')
if got.err then
  if redis.call('TYPE', K).ok ~= 'string' then
    return redis.error_reply(got.err)
  end
  from_string = true
  stored = redis.call('GET', K)
else
  s_member = got[1]
  if s_member then
    stored = string.sub(s_member, 3)
  end
end
-- f: the fields as numbers (-1 for one that is not a whole number); fs: as written, when the
-- head has this version's form, so that a field that did not change is written back as is.
-- Digits that Redis wrote are read with + 0, which converts once (tonumber converts twice).
local f, fs = {}, nil
if stored then
  local a, b, c, d, e, g = string.match(stored, '^(%d+):(%d+):(%d+):(%d+):(%d+):(%d+)$')
  if a then
    fs = {a, b, c, d, e, g}
    f = {a + 0, b + 0, c == '0' and 0 or c + 0, d == ARGV[2] and interval or d + 0,
         e == ARGV[3] and burst or e + 0, g + 0}
  else
    for x in string.gmatch(stored, '[^: ]+') do
      local n = tonumber(x)
      f[#f + 1] = (n and n % 1 == 0) and n or -1
    end
  end
end

-- Garbage, or a schedule no settings could have left, is not ours: it starts afresh. The
-- schedule's clock never runs behind its last write (AT).
local tat_raw, at, off = f[1], f[2] or server_now, f[3] or 0
local ours = tat_raw ~= nil and #f <= 6 and tat_raw >= 0 and at > 0 and off >= 0 and
    tat_raw >= at and tat_raw - at <= HORIZON_MAX and at - server_now - off <= STEP_MAX
if not ours then
  tat_raw, at, off, fs = nil, nil, 0, nil
end
local now = server_now + off
if at and now <= at then
  off = off + at + 1 - now
  now = at + 1
end
tat_raw = tat_raw or now
local tat = math.max(tat_raw, now)
-- A key that holds no schedule, reached by a login that holds a place on it (a renewal) or
-- whose host heard of its next slot, lost it (evicted, a restart without its data): the next
-- slot goes back where the host heard it was, no further off than the caller's own settings
-- could have left it. So the spacing survives, and the places come back as they renew.
local rebuilt = not stored and (op == 'renew' or (op == 'reserve' and heard > 0))
if rebuilt then
  tat_raw = now + math.min(heard, burst * interval + math.max(window, 0))
  tat = tat_raw
end
local admitted_at = f[6] or at or 0
if #f == 1 then
  admitted_at = 0
end
-- The settings. The schedule's own (the caller's, for a schedule that has none) tidy what
-- lapsed, and decide a renewal and a leave: a waiter has no say. A reservation (and peek,
-- which answers as one) that asks for settings at least as strict is decided by its own,
-- which are kept if it is let in or queued, and so is the time it asked. A looser one is
-- decided by the strictest of its own and the schedule's while they were asked for within
-- ASKED_FOR, and by its own after that: the schedule's settings, and its next slot, follow
-- the callers it has.
local own_interval, own_burst = interval, burst
if f[4] and f[4] >= 1 and ours then
  own_interval = f[4]
end
if f[5] and f[5] >= 1 and ours then
  own_burst = f[5]
end
-- When a reservation last asked for the schedule's settings, or stricter ones, on its clock:
-- the member "t", scored -(ASKED + time), below every index; none (a schedule that a renewal
-- made, after a reset, or an earlier version's): never, so the next reservation decides.
local function asked_at()
  local score = not from_string and redis.call('ZSCORE', K, 't')
  return score and -(score + 0) - ASKED or 0
end
local asks, shift = false, 0
if op == 'reserve' or op == 'peek' then
  if interval >= own_interval and burst <= own_burst then
    asks = true
  elseif now - asked_at() >= ASKED_FOR then
    asks, shift = true, math.min(interval - own_interval, 0)
  else
    interval, burst = math.max(interval, own_interval), math.min(burst, own_burst)
  end
else
  interval, burst = own_interval, own_burst
end

-- Settings that follow a looser caller move the next slot on from the last admission by
-- their interval, not the old one (undone for a refused caller, which has no say).
local function follow(sign)
  if shift ~= 0 then
    tat_raw = tat_raw + sign * shift
    tat = math.max(tat_raw, now)
  end
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

-- The login first in line, or within the burst, whose slot is near is admitted now: it goes
-- in at its slot, and the next one's slot follows from that one, not from when it renewed.
local function due(rank, start)
  return start - now <= window and (rank == 0 or start == now)
end

-- The leases not yet ended whose holder the store knows to be gone (none on Redis).
local function gone_leases()
  if not redis.flowslot_gone then
    return {}
  end
  local live = {}
  for _, m in ipairs(redis.flowslot_gone(K)) do
    local score = redis.call('ZSCORE', K, m)
    if score and score + 0 > LEASE + now then
      live[#live + 1] = m
    end
  end
  return live
end

-- When an earlier reset's hold on the key ends (reset()), on the schedule's clock; 0: none.
local function reset_until()
  local x = not from_string and redis.call('ZRANGEBYSCORE', K, RESET_UNTIL, RESET_UNTIL,
      'LIMIT', '0', '1')[1]
  return x and tonumber(string.sub(x, 3)) or 0
end

-- Empties the schedule but its head: its next slot now, with the caller's settings and no
-- "t" (the next reservation decides). The key then stays, the head alone if nobody comes,
-- until the next slot it erased has passed and a minute and a lease after: its waiters,
-- renewing within that, find a schedule that is not lost, so they join the back; and a
-- host's memory of the old next slot (ARGV[12]), which only a lost schedule reads, has
-- lapsed before the key may go. Added before the rest goes, as every write (below); an
-- earlier version's string goes first, for a set to take its place.
local function reset()
  if redis.call('EXISTS', K) == 0 then
    return
  end
  local hold = math.max(math.max(tat_raw - shift, now) + RENEW_MAX + lease, reset_until())
  if from_string then
    redis.call('DEL', K)
  end
  local head = 's:' .. us(now) .. ':' .. us(now) .. ':' .. us(off) .. ':' ..
      us(tonumber(ARGV[2])) .. ':' .. us(tonumber(ARGV[3])) .. ':0'
  local until_m = 'x:' .. us(hold)
  redis.call('ZADD', K, '0', head, RESET_UNTIL, until_m)
  local rest = {}
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', K, '-inf', '+inf')) do
    if m ~= head and m ~= until_m then
      rest[#rest + 1] = m
    end
    if #rest == 30 then
      redis.call('ZREM', K, unpack(rest))
      rest = {}
    end
  end
  if #rest > 0 then
    redis.call('ZREM', K, unpack(rest))
  end
  redis.call('PEXPIRE', K, math.ceil((hold - now) / 1000))
end

-- peek and reset: what a login now would get. Nothing is written before reset's, which
-- leaves renewing waiters no place: each holds one anew at the back of the emptied queue at
-- its next renewal, as a lease that ran out does.
if reading then
  follow(1)
  local live, since = 0, -1
  if not from_string then
    live = redis.call('ZCOUNT', K, '(' .. us(LEASE + now), LEASES_END) - #gone_leases()
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
  if op == 'reset' then
    reset()
    return {verdict, start - now, position(live), live + position(0) - 1, since, interval, burst}
  end
  -- Whether the server may evict the key (for flowslotctl check). The per-host file's store
  -- (the one that gives redis.flowslot_gone) evicts nothing, and has no INFO; a server whose
  -- ACL denies the caller INFO cannot tell, and peek answers all the same.
  local evicts = 0
  if not redis.flowslot_gone then
    local info = redis.pcall('INFO', 'memory')
    local policy = type(info) == 'string' and string.match(info, 'maxmemory_policy:([%w-]+)')
    if policy and policy ~= 'noeviction' and string.match(info, 'maxmemory:(%d+)') ~= '0' then
      evicts = 1
    end
  end
  return {verdict, start - now, position(live), live + position(0) - 1, since, interval, burst,
          evicts}
end

local now_s = us(now)
-- The member with the highest score, read once: whether the key may hold ghosts, and leases
-- (a schedule with none spends nothing on looking for them; ghosts is set again as they are
-- made), and, while it stays, the last ghost's end or lease's for the key's expiry (at the end).
local top, top_score = nil, 0
if not changed then
  local r = redis.call('ZREVRANGE', K, '0', '0', 'WITHSCORES')
  top, top_score = r[1], (r[2] or 0) + 0
end
local ghosts, leases = top_score >= GHOST, top_score >= LEASE
-- What this call adds last, as score, member pairs: its own place and lease, and the head,
-- in one ZADD (at the end); the highest lease and ghost it adds, as scores; whether the member
-- with the highest score went, or moved down.
local adds, lease_top, ghost_top, removed = {}, 0, 0, false
-- The index score of this login's HOST's places, once worked out.
local host_places

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

-- Renews this login's lease, its slot `wait` off, written at the end.
local function add_lease(wait)
  local score = LEASE + now + lease_for(wait)
  adds[#adds + 1] = us(score)
  adds[#adds + 1] = 'l:' .. self
  if top == 'l:' .. self and score < top_score then
    removed = true
  end
  lease_top = math.max(lease_top, score)
end

-- Admits one login that goes in at at_us: the schedule moves on by one interval (step).
local function admit(at_us, step)
  tat_raw = math.max(tat_raw, at_us) + step
  tat = math.max(tat_raw, now)
  admitted_at = now
  changed = true
end

-- A place's arrival, and whether it was taken back from a ghost; nil for none.
local function arrival_of(place)
  local a = redis.call('ZSCORE', K, 'w:' .. place)
  if a then
    return a + 0, false
  end
  a = redis.call('ZSCORE', K, 'w:' .. place .. ':t')
  if a then
    return a + 0, true
  end
  return nil, false
end

-- Drops a place (pid and phost, from the place, for its HOST's index).
local function drop(place, pid, phost)
  if phost and phost ~= '-' then
    redis.call('ZREM', K, 'w:' .. place, 'w:' .. place .. ':t', 'l:' .. place,
        'h:' .. phost .. ':' .. pid)
  else
    redis.call('ZREM', K, 'w:' .. place, 'w:' .. place .. ':t', 'l:' .. place)
  end
  changed, removed = true, removed or top == 'l:' .. place
end

-- Holds this login's place, its slot `wait` off, written at the end.
local function hold(arrival_s, taken, wait)
  adds[#adds + 1] = arrival_s
  adds[#adds + 1] = 'w:' .. self .. (taken and ':t' or '')
  add_lease(wait)
  if host ~= '-' then
    adds[#adds + 1] = host_places or index(BY_HOST, host)
    adds[#adds + 1] = 'h:' .. host .. ':' .. id
  end
  changed = true
end

-- WHO's ghost, or nil: {payload, who, arrival, left (as written), host}.
local function ghost_of(whom)
  if whom == '-' or not ghosts then
    return nil
  end
  local score = index(GHOST_BY_WHO, whom)
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', K, score, score)) do
    local gw, ga, gl, gh = string.match(m, '^j:([%w-]+):(%d+):(%d+):([%w-]+):0$')
    if gw == whom then
      return {payload = string.sub(m, 3), who = gw, arrival = tonumber(ga), left = gl, host = gh}
    end
  end
  return nil
end

local function forget_ghost(g)
  if g.host ~= '-' then
    redis.call('ZREM', K, 'g:' .. g.payload, 'j:' .. g.payload, 'i:' .. g.host .. ':' .. g.who)
  else
    redis.call('ZREM', K, 'g:' .. g.payload, 'j:' .. g.payload)
  end
  -- The highest ghost, if it was this one or one this call made (ghost_top knows no better).
  changed, removed = true, removed or top == 'g:' .. g.payload or ghost_top > 0
end

-- Remembers a place given up at left_us for WHO's next attempt, within the caps.
local function make_ghost(pwho, phost, arrival, left_us)
  local old = ghost_of(pwho)
  if old then
    forget_ghost(old)
  end
  if pwho == '-' or (ghosts and redis.call('ZCOUNT', K, GHOST_S, '+inf') >= GHOSTS_MAX) then
    return
  end
  local by_host = phost ~= '-' and index(GHOST_BY_HOST, phost)
  if by_host and ghosts and redis.call('ZCOUNT', K, by_host, by_host) >= GHOSTS_PER_HOST then
    return
  end
  local payload = pwho .. ':' .. us(arrival) .. ':' .. us(left_us) .. ':' .. phost .. ':0'
  local score = GHOST + left_us + GHOST_US
  if by_host then
    redis.call('ZADD', K, us(score), 'g:' .. payload, index(GHOST_BY_WHO, pwho), 'j:' .. payload,
        by_host, 'i:' .. phost .. ':' .. pwho)
  else
    redis.call('ZADD', K, us(score), 'g:' .. payload, index(GHOST_BY_WHO, pwho), 'j:' .. payload)
  end
  ghosts, ghost_top = true, math.max(ghost_top, score)
  changed = true
end

-- Gives a place up at left_us, leaving a ghost unless it was taken back already; known: its
-- arrival and whether it was taken back, if read already.
local function give_up(place, left_us, known)
  local arrival, taken
  if known then
    arrival, taken = known.arrival, known.taken
  else
    arrival, taken = arrival_of(place)
  end
  local pid, pwho, phost = string.match(place, '^(%w+):([%w-]+):([%w-]+)$')
  drop(place, pid, phost)
  if arrival and pwho and not taken then
    make_ghost(pwho, phost, arrival, left_us)
  end
end

-- The arrival of a login that takes ghost (or nil) back: the ghost's, if nobody queued after
-- it left; else now, at the back.
local function arrival_back(ghost)
  if ghost and redis.call('ZCOUNT', K, ghost.left, PLACES_END) == 0 then
    return ghost.arrival
  end
  return now
end

-- Whether a place that arrived at a was lost with the schedule: it was made again after a,
-- within a minute and a lease (every waiter renews within that).
local function lost_since(a)
  local made = rebuilt and now
  if not made and not from_string then
    local r = redis.call('ZRANGEBYSCORE', K, REBUILT, REBUILT, 'LIMIT', '0', '1')[1]
    made = r and tonumber(string.sub(r, 3))
  end
  return made and a < made and now - made <= RENEW_MAX + lease
end

-- The waiters ahead of an arrival.
local function rank_of(arrival_s)
  return redis.call('ZCOUNT', K, '1', '(' .. arrival_s)
end

-- The places and ghosts of this login's HOST.
local function held_by()
  host_places = index(BY_HOST, host)
  local n = redis.call('ZCOUNT', K, host_places, host_places)
  if ghosts then
    local held = index(GHOST_BY_HOST, host)
    n = n + redis.call('ZCOUNT', K, held, held)
  end
  return n
end

-- A field of the head as this call writes it: as stored, if it has not changed.
local function field(i, x)
  local s = fs and fs[i]
  if s and f[i] == x and (#s == 1 or string.byte(s) ~= 48) then
    return s
  end
  return x == now and now_s or us(x)
end

-- The ghosts forgotten, then the places whose lease ran out, in arrival order (not the
-- caller's own: it is renewing, so it lives).
if ghosts then
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', K, GHOST_S, us(GHOST + now))) do
    local payload = string.sub(m, 3)
    local gw, gh = string.match(payload, '^([%w-]+):%d+:%d+:([%w-]+):[01]$')
    if gh and gh ~= '-' then
      redis.call('ZREM', K, m, 'j:' .. payload, 'i:' .. gh .. ':' .. gw)
    else
      redis.call('ZREM', K, m, 'j:' .. payload)
    end
    changed, removed = true, removed or top == m
  end
end
if leases then
  local lapsed = {}
  local ended = redis.call('ZRANGEBYSCORE', K, LEASE_S, us(LEASE + now), 'WITHSCORES')
  for i = 1, #ended, 2 do
    local place = string.sub(ended[i], 3)
    if place ~= self or op == 'reserve' then
      local arrival, taken = arrival_of(place)
      lapsed[#lapsed + 1] = {place = place, arrival = arrival, taken = taken,
                             left = tonumber(ended[i + 1]) - LEASE}
    end
  end
  for _, m in ipairs(gone_leases()) do
    local place = string.sub(m, 3)
    if place ~= self or op == 'reserve' then
      local arrival, taken = arrival_of(place)
      lapsed[#lapsed + 1] = {place = place, arrival = arrival, taken = taken, left = now}
    end
  end
  table.sort(lapsed, function(a, b) return (a.arrival or -1) < (b.arrival or -1) end)
  for _, p in ipairs(lapsed) do
    if p.arrival and tat_raw - (own_burst - 1) * own_interval <= p.left and
        rank_of(us(p.arrival)) == 0 then
      local pid, _, phost = string.match(p.place, '^(%w+):([%w-]+):([%w-]+)$')
      drop(p.place, pid, phost)
      admit(0, own_interval)
    else
      give_up(p.place, p.left, p)
    end
  end
end

-- A place without its lease (only a damaged store holds one: a file edited by hand) has no
-- login that renews it, and would stand first for ever: once first, it goes, leaving no ghost.
local first = redis.call('ZRANGEBYSCORE', K, '1', PLACES_END, 'LIMIT', '0', '1')[1]
local orphan = first and string.match(first, '^w:(%w+:[%w-]+:[%w-]+)')
if orphan and not redis.call('ZSCORE', K, 'l:' .. orphan) then
  local pid, _, phost = string.match(orphan, '^(%w+):([%w-]+):([%w-]+)$')
  drop(orphan, pid, phost)
end
follow(1)

-- The operation decides its answer; every one then saves the schedule (below). places: how
-- many are held, where the operation knows; place_age: how long ago the place held arrived.
local result, places
local place_age = 0
-- A reserve asked again answers the place it made (the renewal below).
if op == 'reserve' and arrival_of(self) then
  op = 'renew'
end
-- A reservation's floor (ARGV[14]) moves the next slot on to it, so that every place here
-- follows; a refused login's is undone (below): it has no say.
local unfloored = tat_raw
local floored = op == 'reserve' and now + math.min(floor, max_wait + interval) > tat
if floored then
  tat_raw = now + math.min(floor, max_wait + interval)
  tat = tat_raw
end
if op == 'leave' then
  give_up(self, now)
  result = reply(1, 0, 1)
elseif op == 'reserve' then
  local ghost = ghost_of(who)
  local own = (ghost and ghost.host == host) and 1 or 0
  if per_host > 0 and host ~= '-' and held_by() - own >= per_host then
    places = redis.call('ZCOUNT', K, '1', PLACES_END)
    result = reply(3, 0, position(places))
  else
    local arrival = arrival_back(ghost)
    local arrival_s = arrival == now and now_s or us(arrival)
    local rank = rank_of(arrival_s)
    -- At the back, the places ahead are all of them: every place arrived by the last write,
    -- and the clock runs past it.
    places = arrival == now and rank or nil
    local start = start_of(rank)
    if start - now > max_wait then
      result = reply(0, start - now, position(rank))
    else
      if ghost then
        forget_ghost(ghost)
      end
      if due(rank, start) then
        result = reply(1, start - now, position(rank))
        admit(now, interval)
      else
        hold(arrival_s, ghost ~= nil, start - now)
        places = places and places + 1
        result = reply(2, start - now, position(rank))
        place_age = now - arrival
      end
    end
  end
else
  -- renew: a place whose lease ran out while its login lived on (stopped, slow, the server
  -- unreachable) is taken back from its ghost as a retry would, or failing that held anew at
  -- the back. Its rank counts the arrivals before its own, so it is known before the write, and
  -- so is the lease that fits its wait: what it decides is decided before anything is written.
  local arrival = arrival_of(self)
  local held, ghost = arrival ~= nil, nil
  if not held then
    ghost = ghost_of(who)
    arrival = arrival_back(ghost)
    if ghost then
      forget_ghost(ghost)
    elseif age > 0 and lost_since(now - math.min(age, HORIZON_MAX)) then
      arrival = now - math.min(age, HORIZON_MAX)
    end
  end
  local arrival_s = arrival == now and now_s or us(arrival)
  local rank = rank_of(arrival_s)
  local start = start_of(rank)
  if start - now > max_wait then
    drop(self, id, host)
    result = reply(0, start - now, position(rank))
  elseif due(rank, start) then
    result = reply(1, start - now, position(rank))
    admit(now, interval)
    drop(self, id, host)
  else
    if held then
      add_lease(start - now)
      changed = true
    else
      hold(arrival_s, ghost ~= nil, start - now)
    end
    result = reply(2, start - now, position(rank))
    place_age = now - arrival
  end
end

-- The key lives as long as its schedule, its last lease or its last ghost, and no longer.
-- Every write adds before it removes: a key that went empty and came back would be a new key,
-- which a cluster node refuses to make while its slot migrates. So the new head goes in one
-- ZADD with this call's place, before the old head goes. Unchanged, with the next slot ahead,
-- the key outlives this call: nothing to write.
-- A refused login has no say in the settings kept, nor in the next slot (verdicts 0 and 3).
if result[1] == 0 or result[1] == 3 then
  interval, burst, asks = own_interval, own_burst, false
  if floored then
    tat_raw = unfloored
    tat = math.max(tat_raw, now)
  end
  follow(-1)
end
if changed or tat <= now then
  local m
  if changed then
    m = 's:' .. field(1, tat) .. ':' .. now_s .. ':' .. field(3, off) .. ':' ..
        field(4, interval) .. ':' .. field(5, burst) .. ':' .. field(6, admitted_at)
    if m ~= s_member then
      adds[#adds + 1] = '0'
      adds[#adds + 1] = m
    end
    if rebuilt then
      adds[#adds + 1] = REBUILT
      adds[#adds + 1] = 'r:' .. now_s
    end
    -- A place this call holds that was there already (an id reserving twice) adds none.
    if #adds > 0 and redis.call('ZADD', K, unpack(adds)) < #adds / 2 then
      places = nil
    end
    if asks then
      redis.call('ZADD', K, us(-(ASKED + now)), 't')
    end
  end
  -- The last place's slot, were everyone ahead of it admitted (see the lapsed places), and the
  -- last ghost's and lease's ends. While the member with the highest score read at first stays,
  -- the highest of each is that one or one this call added; only a lease under the ghosts is
  -- read. Else the highest score is read again, and below the ghosts if it is one.
  local last = tat + (places or redis.call('ZCOUNT', K, '1', PLACES_END)) * interval
  local hi, lease_hi = top_score, nil
  if removed then
    hi = (redis.call('ZREVRANGE', K, '0', '0', 'WITHSCORES')[2] or 0) + 0
  else
    hi, lease_hi = math.max(hi, ghost_top), math.max(hi, lease_top)
  end
  if hi >= GHOST then
    last = math.max(last, hi - GHOST)
    if lease_hi and top_score < GHOST then
      hi = lease_hi
    else
      hi = (redis.call('ZREVRANGEBYSCORE', K, LEASES_END, LEASE_S, 'WITHSCORES', 'LIMIT', '0',
          '1')[2] or 0) + 0
    end
  else
    hi = lease_hi or hi
  end
  if hi >= LEASE then
    last = math.max(last, hi - LEASE)
  end
  -- A reset's hold: kept while it lasts, forgotten after.
  local hold = reset_until()
  if hold > now then
    last = math.max(last, hold)
  elseif hold > 0 and last > now and changed then
    redis.call('ZREM', K, 'x:' .. us(hold))
  end
  if last <= now then
    if #adds > 0 or redis.call('EXISTS', K) == 1 then
      redis.call('DEL', K)
    end
  elseif changed then
    if m ~= s_member and s_member then
      redis.call('ZREM', K, s_member)
    end
    redis.call('PEXPIRE', K, math.ceil((last - now) / 1000))
  end
end
result[6], result[7] = tat - now, place_age
return result
