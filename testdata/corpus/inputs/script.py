import json
d = {}
for i in range(20000):
    k = "key%d" % (i % 997)
    d[k] = d.get(k, 0) + i
s = json.dumps(d, sort_keys=True)
o = json.loads(s)
words = " ".join(str(x) for x in range(5000)).split()
print(len(s), sum(o.values()), len("".join(sorted(words))))
class P:
    def __init__(self, x): self.x = x
    def f(self): return self.x * 2
print(sum(P(i).f() for i in range(20000)))
