{
    for (i = 1; i <= NF; i++) {
        count[$i]++
        total += length($i)
    }
    if ($1 ~ /^(alpha|beta)$/ && $NF !~ /a$/) matched++
    line[NR % 7] = toupper(substr($0, 1, 12))
}
END {
    n = asorti(count, keys)
    for (i = 1; i <= n; i++) printf "%-10s %6d\n", keys[i], count[keys[i]]
    printf "total=%d matched=%d lines=%d\n", total, matched, NR
    for (k = 0; k < 7; k++) print k, line[k]
    s = sprintf("%.6f", atan2(1, 1) * 4); print s, sqrt(2), exp(1)
    gsub(/a/, "A", s); print split("a:b:c:d", parts, ":"), s
}
