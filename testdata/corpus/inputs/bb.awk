{ for (i = 1; i <= NF; i++) { c[$i]++; t += length($i) } if ($2 ~ /^(mu|nu|xi)$/) m++ }
END { for (k in c) n++; printf "%d words, %d distinct, %d chars, %d matched, %d lines\n", NF * NR, n, t, m, NR
      s = sprintf("%08.3f|%-6s|%x", 3.14159, "ab", 255); gsub(/1/, "one", s); print s, toupper("done"), substr("abcdef", 2, 3), index("hello", "ll") }
