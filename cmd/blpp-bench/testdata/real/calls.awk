# A call-heavy awk workload for blpp-bench --suite real: user functions
# (recursive and not), string functions, associative arrays and sorting.
# Usage: gawk -v n=N -f calls.awk (N = scale).
function fib(k) { return k < 2 ? k : fib(k - 1) + fib(k - 2) }
function pad(s, w) { while (length(s) < w) s = "0" s; return s }
function word(i,   s) { s = sprintf("%x", i * 2654435761 % 1000003); return pad(s, 6) }
function count(str, arr,   k, m, parts) {
	m = split(str, parts, /[,;]/)
	for (k = 1; k <= m; k++) arr[parts[k]]++
	return m
}
BEGIN {
	total = 0
	for (round = 1; round <= 30 * n; round++) {
		line = ""
		for (i = 1; i <= 300; i++) line = line (i % 2 ? "," : ";") word(i + round)
		total += count(line, seen)
		s = line
		total += gsub(/[a-f]+/, "<&>", s)
		total += fib(12)
		total += length(toupper(substr(s, 10, 50)))
	}
	m = 0
	for (k in seen) keys[++m] = k
	asort(keys)
	printf "%d %d %d %s %s\n", n, total, m, keys[1], keys[m]
}
