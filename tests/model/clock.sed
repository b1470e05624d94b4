# SPDX-License-Identifier: BSD-3-Clause
# src/slot.lua on the test's clock (tests/model): the server's TIME is the last ARGV,
# microseconds, and the key's expiry is written to KEY:expires on that clock rather than set in
# Redis, so that the test decides when the key is gone. ARGV[14], the floor, counts only when
# the time follows it (the tests send ARGV[1] to [13] and the time, or [1] to [14] and the time).
# Nothing else changes.
s/redis\.call('TIME')/{string.sub(ARGV[#ARGV], 1, -7), string.sub(ARGV[#ARGV], -6)}/
s/^local floor = tonumber(ARGV\[14\] or '0')$/local floor = tonumber(#ARGV > 14 and ARGV[14] or '0')/
s/redis\.call('PEXPIRE', K, \(.*\))$/redis.call('SET', K .. ':expires', string.format('%.0f', tonumber(ARGV[#ARGV]) + 1000 * \1))/
