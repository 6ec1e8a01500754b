/*
 * cgslot.c - a computed-goto interpreter whose table address lives in a
 * frame slot: every dispatch reloads it from the stack before reading the
 * entry (mov 0x8(%rsp),%rdx; mov (%rdx,%rcx,8),%rdx; jmp *%rdx), as gcc
 * compiles CPython 3.12's and 3.13's _PyEval_EvalFrameDefault and their
 * regular-expression engine, which spill the table's address once and
 * reload it after every call.  Here a volatile scalar whose address is
 * never taken forces the same code on every compiler.
 *
 * The frame also holds an operand stack whose address is taken and an
 * array of variables stored through an index, both above the slot: the
 * analysis must keep the slot's constant across them (decision 168).
 * Programs: a factorial, a sum of squares and a countdown that prints,
 * each run several times.
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

enum { PUSH, LOAD, STORE, ADD, SUB, MUL, JNZ, PRINT, HALT };

volatile int vol_rounds = 3;

NOINLINE void emit(const char *what, long v)
{
	printf("  %s %ld\n", what, v);
}

/* Runs code (opcodes and one-byte operands) with vars[0] = arg and
 * returns the number of opcodes run. */
NOINLINE long run(const unsigned char *code, long arg)
{
	static const void *const table[] = {
		&&op_push, &&op_load, &&op_store, &&op_add, &&op_sub, &&op_mul,
		&&op_jnz, &&op_print, &&op_halt,
	};
	const void *const *volatile tab = table;
	long stack[16], vars[4] = {arg, 0, 0, 0};
	long *sp = stack, n = 0;
	const unsigned char *pc = code;
#define NEXT() do { n++; goto *tab[*pc++]; } while (0)
	NEXT();
op_push:
	*sp++ = *pc++;
	NEXT();
op_load:
	*sp++ = vars[*pc++ & 3];
	NEXT();
op_store:
	vars[*pc++ & 3] = *--sp;
	NEXT();
op_add:
	sp--;
	sp[-1] += sp[0];
	NEXT();
op_sub:
	sp--;
	sp[-1] -= sp[0];
	NEXT();
op_mul:
	sp--;
	sp[-1] *= sp[0];
	NEXT();
op_jnz:
	if (*--sp != 0) {
		pc = code + *pc;
		NEXT();
	}
	pc++;
	NEXT();
op_print:
	emit("out", *--sp);
	NEXT();
op_halt:
	emit("ops", n);
	return n;
}

/* vars[1] = 1; while (vars[0]) { vars[1] *= vars[0]; vars[0]--; } print vars[1] */
static const unsigned char fact[] = {
	PUSH, 1, STORE, 1,
	/* 4: */ LOAD, 1, LOAD, 0, MUL, STORE, 1,
	LOAD, 0, PUSH, 1, SUB, STORE, 0,
	LOAD, 0, JNZ, 4,
	LOAD, 1, PRINT, HALT,
};

/* vars[1] = 0; while (vars[0]) { vars[1] += vars[0] * vars[0]; vars[0]--; } print vars[1] */
static const unsigned char squares[] = {
	PUSH, 0, STORE, 1,
	/* 4: */ LOAD, 0, LOAD, 0, MUL, LOAD, 1, ADD, STORE, 1,
	LOAD, 0, PUSH, 1, SUB, STORE, 0,
	LOAD, 0, JNZ, 4,
	LOAD, 1, PRINT, HALT,
};

/* while (vars[0]) { print vars[0]; vars[0] -= 3; } (arg a multiple of 3) */
static const unsigned char countdown[] = {
	/* 0: */ LOAD, 0, PRINT,
	LOAD, 0, PUSH, 3, SUB, STORE, 0,
	LOAD, 0, JNZ, 0,
	HALT,
};

int main(void)
{
	long total = 0;
	for (int r = 0; r < vol_rounds; r++) {
		total += run(fact, 10 + r);
		total += run(squares, 50 * (r + 1));
		total += run(countdown, 9 + 3 * r);
	}
	printf("total %ld\n", total);
	return 0;
}
