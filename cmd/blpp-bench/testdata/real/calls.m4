dnl A call-heavy m4 workload for blpp-bench --suite real: recursive
dnl macros, arithmetic, string macros and loops.
dnl Usage: m4 -Dn=N calls.m4 (N = scale).
divert(-1)
define(`fib', `ifelse(eval(`$1 < 2'), 1, `$1', `eval(fib(decr($1)) + fib(eval(`$1 - 2')))')')
define(`forloop', `pushdef(`$1', `$2')_forloop($@)popdef(`$1')')
define(`_forloop', `$4`'ifelse($1, `$3', `', `define(`$1', incr($1))$0($@)')')
define(`total', 0)
define(`add', `define(`total', eval(total + $1 % 1000003))')
define(`word', `substr(`abcdefghijklmnopqrstuvwxyz', eval($1 % 20), 5)')
define(`upper', `translit(`$1', `a-z', `A-Z')')
define(`round', `add(fib(9))forloop(`i', 1, 40, `add(len(upper(word(eval(i * $1)))))add(index(`the quick brown fox', word(i)))')')
forloop(`r', 1, eval(40 * n), `round(r)')
divert(0)dnl
n total
