-- The training and timing workload of blpp-bench --pgo on Lua 5.4: a mix
-- of what Lua programs spend their time on (calls, method dispatch through
-- metatables, closures, table building and lookup, string building and
-- matching, sorting with a comparison function, coroutines). The first
-- argument, SCALE, sizes the work; the script prints one checksum line.

local SCALE = tonumber(arg and arg[1]) or 1

-- Recursion: calls and returns.
local function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end

-- Vectors as objects: method calls, __add and __index through metatables.
local Vec = {}
Vec.__index = Vec
function Vec.new(x, y) return setmetatable({x = x, y = y}, Vec) end
function Vec.__add(a, b) return Vec.new(a.x + b.x, a.y + b.y) end
function Vec:scaled(k) return Vec.new(self.x * k, self.y * k) end
function Vec:dot(o) return self.x * o.x + self.y * o.y end

local function vectors(n)
  local acc = Vec.new(0, 0)
  local d = 0
  for i = 1, n do
    local v = Vec.new(i % 7, i % 5):scaled(2)
    acc = acc + v
    d = d + v:dot(acc) % 1000
  end
  return acc.x + acc.y + d
end

-- Closures: counters and a pipeline of small functions.
local function counter()
  local c = 0
  return function(k) c = c + k; return c end
end

local function closures(n)
  local fs = {}
  for i = 1, 8 do fs[i] = counter() end
  local stages = {
    function(x) return x + 1 end,
    function(x) return x * 3 % 1009 end,
    function(x) return x ~ 0x55 end,
  }
  local s = 0
  for i = 1, n do
    local x = i
    for _, f in ipairs(stages) do x = f(x) end
    s = s + fs[i % 8 + 1](x % 17)
  end
  return s
end

-- Binary trees: allocation and the collector.
local function tree(d)
  if d == 0 then return {} end
  return {tree(d - 1), tree(d - 1)}
end

local function check(t)
  if t[1] then return 1 + check(t[1]) + check(t[2]) end
  return 1
end

-- Words: string building, hashing into a table, pattern matching.
local function words(n)
  local seed = 7
  local function rand(m)
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed // 65536 % m
  end
  local parts = {}
  for i = 1, n do
    local len = 2 + rand(5)
    local w = {}
    for j = 1, len do w[j] = string.char(97 + rand(6)) end
    parts[i] = table.concat(w)
  end
  local text = table.concat(parts, " ")
  local counts = {}
  for w in text:gmatch("%a+") do counts[w] = (counts[w] or 0) + 1 end
  local uniq = {}
  for w in pairs(counts) do uniq[#uniq + 1] = w end
  table.sort(uniq, function(a, b)
    if counts[a] ~= counts[b] then return counts[a] > counts[b] end
    return a < b
  end)
  local s = #uniq
  for i = 1, math.min(10, #uniq) do s = s + counts[uniq[i]] * #uniq[i] end
  return s + #text:gsub("ab", "x")
end

-- Sorting numbers with a comparison function written in Lua.
local function sorting(n)
  local a = {}
  local seed = 42
  for i = 1, n do
    seed = (seed * 16807) % 2147483647
    a[i] = seed % 100000
  end
  table.sort(a, function(x, y) return x > y end)
  local s = 0
  for i = 1, n, 97 do s = s + a[i] end
  return s
end

-- Coroutines: a generator consumed in a loop.
local function gen(n)
  return coroutine.wrap(function()
    for i = 1, n do coroutine.yield(i * i % 97) end
  end)
end

local function coroutines(n)
  local s = 0
  for v in gen(n) do s = s + v end
  return s
end

-- A small interpreter in Lua: a table-driven dispatch over string opcodes.
local ops = {
  push = function(st, x) st[#st + 1] = x end,
  add = function(st) local b = table.remove(st); st[#st] = st[#st] + b end,
  mul = function(st) local b = table.remove(st); st[#st] = st[#st] * b % 65521 end,
  dup = function(st) st[#st + 1] = st[#st] end,
  swap = function(st) st[#st], st[#st - 1] = st[#st - 1], st[#st] end,
  drop = function(st) st[#st] = nil end,
}
local prog = {
  {"push", 3}, {"push", 4}, {"add"}, {"dup"}, {"mul"}, {"push", 5}, {"swap"},
  {"drop"}, {"push", 7}, {"add"}, {"dup"}, {"add"},
}

local function interp(n)
  local s = 0
  for _ = 1, n do
    local st = {}
    for _, ins in ipairs(prog) do ops[ins[1]](st, ins[2]) end
    s = (s + st[#st]) % 1000003
  end
  return s
end

local total = 0
for _ = 1, SCALE do
  total = total + fib(22)
  total = total + vectors(20000)
  total = total + closures(30000)
  total = total + check(tree(11))
  total = total + words(4000)
  total = total + sorting(6000)
  total = total + coroutines(20000)
  total = total + interp(5000)
end
print(string.format("checksum %d", total))
