-- A call-heavy Lua workload for blpp-bench --suite real: method calls
-- through metatables, closures, a sort with a comparator, coroutines,
-- recursion and string building. Usage: lua5.4 calls.lua N (N = scale).
local n = tonumber(arg[1]) or 1

local Vec = {}
Vec.__index = Vec
function Vec.new(x, y) return setmetatable({x = x, y = y}, Vec) end
function Vec:add(o) return Vec.new(self.x + o.x, self.y + o.y) end
function Vec:dot(o) return self.x * o.x + self.y * o.y end
function Vec:scale(k) return Vec.new(self.x * k, self.y * k) end

local function counter(step)
  local c = 0
  return function() c = c + step; return c end
end

local function fib(k) if k < 2 then return k end return fib(k - 1) + fib(k - 2) end

local function gen(k)
  return coroutine.wrap(function()
    for i = 1, k do coroutine.yield(i * 3 % 17) end
  end)
end

local total, dots, strs = 0, 0, 0
for round = 1, 8 * n do
  local acc = Vec.new(0, 0)
  for i = 1, 2000 do
    local v = Vec.new(i % 13, i % 7)
    acc = acc:add(v:scale(2))
    dots = (dots + v:dot(acc)) % 1000003
  end
  local next1, next2 = counter(1), counter(3)
  local t = {}
  for i = 1, 600 do t[i] = (next1() * 7919 + next2()) % 1009 end
  table.sort(t, function(a, b) return a > b end)
  total = (total + t[1] + t[#t] + fib(14)) % 1000003
  for y in gen(300) do total = (total + y) % 1000003 end
  local parts = {}
  for i = 1, 200 do parts[#parts + 1] = string.format("%d:%s", i, tostring(i * round)) end
  strs = (strs + #table.concat(parts, ",")) % 1000003
end
print(n, total, dots, strs)
