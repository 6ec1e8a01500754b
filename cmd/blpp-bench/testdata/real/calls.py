# A call-heavy Python workload for blpp-bench --suite real: classes and
# method calls, closures, generators, a sort with a key function,
# recursion, dicts, strings and json. Usage: python3 calls.py N (N = scale).
import json
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1


class Shape:
    def __init__(self, w, h):
        self.w, self.h = w, h

    def area(self):
        return self.w * self.h


class Square(Shape):
    def __init__(self, s):
        super().__init__(s, s)

    def area(self):
        return super().area() + 1


def counter(step):
    c = 0

    def bump():
        nonlocal c
        c += step
        return c
    return bump


def fib(k):
    return k if k < 2 else fib(k - 1) + fib(k - 2)


def gen(k):
    for i in range(k):
        yield i * 3 % 17


total = 0
words = {}
for rnd in range(16 * n):
    shapes = [Square(i % 9) if i % 3 else Shape(i % 5, i % 7) for i in range(800)]
    total += sum(s.area() for s in shapes)
    bump = counter(3)
    xs = sorted((bump() * 7919 % 1009 for _ in range(500)), key=lambda x: -x)
    total += xs[0] + xs[-1] + fib(12) + sum(gen(300))
    for i in range(300):
        w = "w%x" % (i * 2654435761 % 4093)
        words[w] = words.get(w, 0) + 1
    total += len(json.dumps(words)) + len(json.loads(json.dumps(xs[:50])))
    total %= 1000003
print(n, total, len(words), max(words.values()))
