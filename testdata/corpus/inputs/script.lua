local t = {}
for i = 1, 2000 do t[i] = (i * 7919) % 1009 end
table.sort(t)
local sum = 0
for _, v in ipairs(t) do sum = sum + v end
print("sum", sum, t[1], t[#t])
local words = {}
for w in string.gmatch("the quick brown fox jumps over the lazy dog the end", "%a+") do
  words[w] = (words[w] or 0) + 1
end
local keys = {}
for k in pairs(words) do keys[#keys + 1] = k end
table.sort(keys)
for _, k in ipairs(keys) do io.write(k, "=", words[k], " ") end
print()
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
print("fib", fib(20))
local co = coroutine.wrap(function() for i = 1, 5 do coroutine.yield(i * i) end end)
for _ = 1, 5 do io.write(co(), " ") end
print()
print(string.format("%5.2f %x %q", math.pi, 255, "a\nb"), ("abc"):rep(3, "-"), utf8.char(72, 228, 8364))
local ok, err = pcall(function() error({code = 7}) end)
print(ok, type(err), err.code)
print(select("#", 1, nil, 3), math.maxinteger // 3, 7 // 2, 7.0 // 2, 2^10)
