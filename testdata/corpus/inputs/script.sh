i=0; s=0
while [ $i -lt 300 ]; do
  s=$((s + i * i % 17))
  case $((i % 3)) in
    0) a=fizz ;;
    1) a=buzz ;;
    *) a=${a}x ;;
  esac
  i=$((i + 1))
done
echo "s=$s a=${#a}"
x="hello,world,from,busybox"
IFS=,; set -- $x; IFS=' '
echo "$# $1 $4 ${x%%,*} ${x#*,} ${x/world/there}"
printf '%5s|%-4d|%x\n' ab 42 255
f() { local v=$1; [ "$v" -gt 1 ] && { f $((v - 1)); r=$((r * v)); } || r=1; }
f 10; echo "10! = $r"
