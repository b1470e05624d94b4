-- SPDX-License-Identifier: BSD-3-Clause
-- The redis object's commands as fuzz/fuzz_lcmd.c gives them: built into src/lscript.c in
-- place of slot.lua, for that target alone (mk/fuzz.mk). Each ARGV is one command, its
-- arguments one space apart. In an argument, %XX is the byte XX; one that starts with # goes
-- as the number after it, and {} as a table. A command that starts with ! goes through
-- redis.call, so that its error ends the script; the others through redis.pcall. sha1hex and
-- error_reply call those functions, protected.
local function arg(a)
  if a == '{}' then
    return {}
  end
  if string.sub(a, 1, 1) == '#' then
    return tonumber(string.sub(a, 2)) or a
  end
  return (string.gsub(a, '%%(%x%x)', function(h) return string.char(tonumber(h, 16)) end))
end

for _, line in ipairs(ARGV) do
  local call = redis.pcall
  if string.sub(line, 1, 1) == '!' then
    call, line = redis.call, string.sub(line, 2)
  end
  local args = {}
  for a in string.gmatch(line .. ' ', '([^ ]*) ') do
    args[#args + 1] = arg(a)
  end
  if args[1] == 'sha1hex' then
    pcall(redis.sha1hex, unpack(args, 2))
  elseif args[1] == 'error_reply' then
    pcall(redis.error_reply, unpack(args, 2))
  else
    call(unpack(args))
  end
end
return {#ARGV}
