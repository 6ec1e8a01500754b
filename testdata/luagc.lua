-- luagc.lua: work for Lua's garbage collector (decision 98): tables, closures,
-- weak tables (ephemerons), coroutines, in incremental and generational mode.
local N = tonumber(arg and arg[1]) or 20000
local function churn(gen)
  if gen then collectgarbage("generational") else collectgarbage("incremental") end
  local keep = {}
  local weakk = setmetatable({}, {__mode = "k"})
  local weakv = setmetatable({}, {__mode = "v"})
  local sum = 0
  for i = 1, N do
    local t = {i, tostring(i), {i * 2}}
    local f = function() return t[1] + i end
    weakk[t] = f
    weakv[i % 97] = t
    if i % 7 == 0 then keep[#keep + 1] = t end
    if i % 13 == 0 then
      local co = coroutine.wrap(function(a) local b = coroutine.yield(a + 1); return b * 2 end)
      sum = sum + co(i) + co(3)
    end
    sum = sum + f()
    if #keep > 500 then keep = {} end
  end
  collectgarbage()
  local n = 0
  for _ in pairs(weakk) do n = n + 1 end
  return sum, #keep
end
print(churn(false))
print(churn(true))
print(collectgarbage("count") > 0)
