/* Several compile units for TestLazyUnits: an inline function every unit
   expands, cold code that gives a unit two address ranges. */
static inline int mix(int a, int b) {
	int r = a * 31 + b;
	if (r & 1)
		r ^= r >> 3;
	return r;
}
int ua(int n);
int ub(int n);
int uc(int n);
