# SPDX-License-Identifier: BSD-3-Clause
# src/slot.lua on the test's clock (tests/model): the server's TIME is ARGV[14], microseconds,
# and the key's expiry is written to KEY:expires on that clock rather than set in Redis, so
# that the test decides when the key is gone. Nothing else changes.
s/redis\.call('TIME')/{string.sub(ARGV[14], 1, -7), string.sub(ARGV[14], -6)}/
s/redis\.call('PEXPIRE', K, \(.*\))$/redis.call('SET', K .. ':expires', string.format('%.0f', tonumber(ARGV[14]) + 1000 * \1))/
