#include "units.h"

int uc(int n) {
	switch (n & 3) {
	case 0:
		return mix(n, 1);
	case 1:
		return mix(n, 2) + ua(n & 7);
	case 2:
		return ub(n & 7) - 3;
	default:
		return n;
	}
}
