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

-- A schedule further ahead than any reservation could have left it is stale: the server
-- clock went back (a failover, a step), or the settings shrank. Start it afresh; likewise
-- a value that is not a number (tonumber('nan') is NaN).
local tat = tonumber(redis.call('GET', KEYS[1]))
if not tat or tat ~= tat or tat < now or tat > now + max_wait + burst * interval then
  tat = now
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
redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', ttl_ms)
return {1, wait, position}
