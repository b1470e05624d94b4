-- pam_flowslot: reserve the next login slot on one schedule, atomically.
--
-- KEYS[1]  the schedule
-- ARGV[1]  interval in microseconds (T)
-- ARGV[2]  burst (b): logins that may start together after a quiet spell
-- ARGV[3]  max_wait in microseconds: a longer wait is refused and reserves nothing
-- ARGV[4]  optional: the database, selected here so that a bad one fails before any write
--
-- Returns {admitted, wait_us, position}: admitted is 1 or 0, wait_us the time from now to
-- the slot, position 1 + the number of logins still to be admitted before this one.
-- This is the virtual-scheduling form of GCRA, on the server's own clock, used to reserve a
-- slot rather than to reject.
--
-- Try it: redis-cli --eval slot.lua myschedule , 7000000 1 60000000

local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local max_wait = tonumber(ARGV[3])
local db = tonumber(ARGV[4] or '0')
if not interval or not burst or not max_wait or not db or interval < 1 or burst < 1 or
    max_wait < 0 then
  return redis.error_reply('ERR pam_flowslot: bad arguments')
end
if db ~= 0 then
  redis.call('SELECT', db)
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

-- The schedule is stored as "tat at": its theoretical arrival time and the server's time
-- when it was written. Whether it is stale is read from it alone, never from this login's
-- settings: a login with a shorter max_wait is refused by a long queue, it does not reset it.
-- A clock that went back since (a step, a failover to a master whose clock is behind) moves
-- the schedule back as far, so the queue keeps its length. A tat that has passed, garbage,
-- or a tat further ahead than any settings allow (max_wait 60 min + burst 1000 * interval
-- 60 min) starts the schedule afresh. A bare "tat", as versions before 0.2 wrote it, is
-- read as written now.
local horizon_max = 3600000000 * 1001
local tat, at
local stored = redis.call('GET', KEYS[1])
if stored then
  local t, a = string.match(stored, '^(%d+) ?(%d*)$')
  tat, at = tonumber(t), tonumber(a) or now
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

local start = tat - (burst - 1) * interval
if start < now then
  start = now
end
local wait = start - now
-- 1 + the logins to be admitted before this one.
local position = math.floor(wait / interval) + 1

if wait > max_wait then
  return {0, wait, position}
end

-- The schedule means nothing once now passes tat, so it may vanish then.
local new_tat = tat + interval
local ttl_ms = math.ceil((new_tat - now) / 1000)
-- '%.0f': tostring() would keep only 14 digits of a 16-digit microsecond time.
redis.call('SET', KEYS[1], string.format('%.0f %.0f', new_tat, now), 'PX', ttl_ms)
return {1, wait, position}
