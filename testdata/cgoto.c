/*
 * cgoto.c - a byte-code interpreter dispatching with GCC's labels as
 * values (goto *table[op]), as CPython's and Lua's loops do: the dispatch
 * is replicated at the end of every handler, so a dozen indirect jumps
 * read one table of label addresses, and nothing checks the opcode's range
 * (it is an unsigned char, so the table's 256 possible slots are bounded
 * only by what the compiler placed around it).  In a PIE the table's
 * entries are R_X86_64_RELATIVE relocations.
 *
 * run(): the dispatch loop; every handler ends in its own indirect jump
 * through the same table.  Programs: a factorial, a sum of squares, a
 * countdown that prints, each run several times.
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

enum { PUSH, LOAD, STORE, ADD, SUB, MUL, DUP, JNZ, JMP, PRINT, HALT, NOP };

volatile int vol_rounds = 3;

NOINLINE void show(long v)
{
	printf("  out %ld\n", v);
}

/* Runs code (opcodes and one-byte operands) with var[0] = arg and returns
 * the number of opcodes run. */
NOINLINE long run(const unsigned char *code, long arg)
{
	static const void *const table[] = {
		&&op_push, &&op_load, &&op_store, &&op_add, &&op_sub, &&op_mul,
		&&op_dup, &&op_jnz, &&op_jmp, &&op_print, &&op_halt, &&op_nop,
	};
	long stack[16], var[4] = {arg, 0, 0, 0};
	long *sp = stack, n = 0;
	const unsigned char *pc = code;
#define DISPATCH() do { n++; goto *table[*pc++]; } while (0)
	DISPATCH();
op_push:
	*sp++ = *pc++;
	DISPATCH();
op_load:
	*sp++ = var[*pc++];
	DISPATCH();
op_store:
	var[*pc++] = *--sp;
	DISPATCH();
op_add:
	sp--;
	sp[-1] += sp[0];
	DISPATCH();
op_sub:
	sp--;
	sp[-1] -= sp[0];
	DISPATCH();
op_mul:
	sp--;
	sp[-1] *= sp[0];
	DISPATCH();
op_dup:
	sp[0] = sp[-1];
	sp++;
	DISPATCH();
op_jnz:
	if (*--sp != 0) {
		pc = code + *pc;
		DISPATCH();
	}
	pc++;
	DISPATCH();
op_jmp:
	pc = code + *pc;
	DISPATCH();
op_print:
	show(*--sp);
	DISPATCH();
op_nop:
	DISPATCH();
op_halt:
	return n;
}

/* var0! into var1 */
static const unsigned char fact[] = {
	PUSH, 1, STORE, 1,
	/* 4: */ LOAD, 1, LOAD, 0, MUL, STORE, 1,
	LOAD, 0, PUSH, 1, SUB, DUP, STORE, 0, JNZ, 4,
	LOAD, 1, PRINT, HALT,
};

/* sum of i*i for i = var0 .. 1 */
static const unsigned char squares[] = {
	PUSH, 0, STORE, 1,
	/* 4: */ LOAD, 0, DUP, MUL, LOAD, 1, ADD, STORE, 1, NOP,
	LOAD, 0, PUSH, 1, SUB, DUP, STORE, 0, JNZ, 4,
	LOAD, 1, PRINT, HALT,
};

/* prints var0, var0-1, ..., 1 */
static const unsigned char countdown[] = {
	/* 0: */ LOAD, 0, PRINT, LOAD, 0, PUSH, 1, SUB, DUP, STORE, 0, JNZ, 0,
	JMP, 15, NOP, /* 15: */ HALT,
};

int main(void)
{
	long total = 0;
	for (int r = 0; r < vol_rounds; r++) {
		total += run(fact, 10 + r);
		total += run(squares, 20 + r);
		total += run(countdown, 3 + r);
	}
	printf("opcodes run: %ld\n", total);
	return 0;
}
