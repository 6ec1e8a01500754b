#include "units.h"

static int tri(int n) {
	int s = 0;
	while (n > 0)
		s += mix(n--, s);
	return s;
}

int ub(int n) {
	int s = 0;
	for (int i = 0; i < n; i++)
		s += tri(i) & 0xff;
	return s;
}
