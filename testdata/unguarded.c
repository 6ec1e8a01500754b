/*
 * unguarded.c: switch jump tables without a bounds check, in the shapes
 * of Lua's garbage collector (switch (o->tt) over the collectable types,
 * the other values impossible), and guarded tables whose impossible cases
 * clang aims at the end of the function (decision 98).
 *
 * mark(): a switch on a type byte minus its smallest value, sparse (5, 6,
 * 7, 8, 10, 38), the rest __builtin_unreachable: no bounds check, and
 * clang's table holds 34 entries of which 28 lead past the function.
 * kind(): a switch on a value masked to 3 bits, every case present: no
 * bounds check, the mask bounds the table.
 * step(): a guarded switch with two impossible cases inside its range.
 * color(): an enum switch with every enumerator handled and an
 * unreachable default.
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

struct obj {
	unsigned char tt;
	unsigned char marked;
	int n;
	struct obj *next;
};

enum { T_TABLE = 5, T_LCL = 6, T_UDATA = 7, T_THREAD = 8, T_PROTO = 10, T_CCL = 38 };

static struct obj *gray;
static long work;

NOINLINE long mark(struct obj *o)
{
	o->marked |= 0x20;
	switch (o->tt) {
	case T_TABLE:
		work += o->n * 3;
		gray = o->next;
		return o->n + 1;
	case T_LCL:
		work ^= o->n;
		return 2 * o->n;
	case T_UDATA:
		o->marked |= 1;
		return o->n - 4;
	case T_THREAD:
		work += 100;
		if (o->next)
			return mark(o->next) + 1;
		return 7;
	case T_PROTO:
		return o->n * o->n;
	case T_CCL:
		work -= o->n;
		return o->n + 38;
	default:
		__builtin_unreachable();
	}
}

NOINLINE int kind(unsigned v)
{
	switch (v & 7) {
	case 0: return 11;
	case 1: return (int)v * 3;
	case 2: return (int)v ^ 0x55;
	case 3: return (int)v - 9;
	case 4: return (int)(v >> 2) + 1;
	case 5: return (int)v % 13;
	case 6: return 17;
	case 7: return (int)v + 99;
	}
	return 0;
}

NOINLINE int step(unsigned op, int a)
{
	if (op >= 9)
		return -1;
	switch (op) {
	case 0: return a + 1;
	case 1: return a * 5;
	case 2: __builtin_unreachable();
	case 3: return a - 3;
	case 4: return a ^ 0x3c;
	case 5: __builtin_unreachable();
	case 6: return a / 7;
	case 7: return a % 5;
	case 8: return a << 2;
	}
	return 0;
}

enum color { RED, GREEN, BLUE, CYAN, MAGENTA, YELLOW, BLACK };

NOINLINE const char *color(enum color c)
{
	switch (c) {
	case RED: return "red";
	case GREEN: return "green";
	case BLUE: return "blue";
	case CYAN: return "cyan";
	case MAGENTA: return "magenta";
	case YELLOW: return "yellow";
	case BLACK: return "black";
	default: __builtin_unreachable();
	}
}

volatile unsigned rounds = 600;

int main(void)
{
	static const unsigned char types[] = { T_TABLE, T_LCL, T_UDATA, T_THREAD, T_PROTO, T_CCL };
	struct obj objs[24];
	long s = 0;
	for (int i = 0; i < 24; i++) {
		objs[i].tt = types[(i * 5) % 6];
		objs[i].marked = 0;
		objs[i].n = i;
		objs[i].next = i % 4 == 3 ? &objs[i - 1] : 0;
	}
	for (unsigned r = 0; r < rounds; r++) {
		s += mark(&objs[r % 24]);
		s += kind(r * 2654435761u);
		unsigned op = r % 11;
		if (op != 2 && op != 5)
			s += step(op, (int)r);
		if (r % 50 == 0)
			printf("%s ", color((enum color)(r / 50 % 7)));
	}
	printf("\n%ld %ld %d\n", s, work, gray != 0);
	return 0;
}
