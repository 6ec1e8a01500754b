/*
 * interp.c - a small stack-machine interpreter: a dispatch loop around a
 * dense switch, the classic hot loop of a path profiler's users.  The
 * bytecode programs compute a factorial, a sum of squares and a Fibonacci
 * number with backward jumps, so paths through the dispatch loop repeat
 * with different opcode sequences.
 *
 * run_vm(): 1 loop (depth 1) and one jump table whose 11 distinct targets
 * are the 11 opcodes (the default is reached only through the range check
 * before the table), in every configuration of gcc and clang; neither
 * compiler duplicates the dispatch jump into the case bodies here.  emit()
 * becomes a tail call to printf from -O2 on.
 */
#include <stdio.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

volatile int vol_n = 10;

enum op {
	PUSH,  /* push imm */
	LOAD,  /* push var[imm] */
	STORE, /* var[imm] = pop */
	ADD,
	SUB,
	MUL,
	DUP,
	JNZ,   /* if pop != 0 jump to imm */
	JMP,   /* jump to imm */
	PRINT, /* print pop */
	HALT,
};

struct insn {
	enum op op;
	int imm;
};

NOINLINE void emit(long v)
{
	printf("  out %ld\n", v);
}

/* Runs prog with var[0] = arg; returns the number of instructions run, or
 * -1 on a bad opcode. */
NOINLINE long run_vm(const struct insn *prog, int arg)
{
	long stack[64], var[8] = {0};
	int sp = 0, pc = 0;
	long steps = 0;

	var[0] = arg;
	for (;;) {
		const struct insn *in = &prog[pc++];
		steps++;
		switch (in->op) {
		case PUSH: stack[sp++] = in->imm; break;
		case LOAD: stack[sp++] = var[in->imm]; break;
		case STORE: var[in->imm] = stack[--sp]; break;
		case ADD: sp--; stack[sp - 1] += stack[sp]; break;
		case SUB: sp--; stack[sp - 1] -= stack[sp]; break;
		case MUL: sp--; stack[sp - 1] *= stack[sp]; break;
		case DUP: stack[sp] = stack[sp - 1]; sp++; break;
		case JNZ:
			if (stack[--sp] != 0)
				pc = in->imm;
			break;
		case JMP: pc = in->imm; break;
		case PRINT: emit(stack[--sp]); break;
		case HALT: return steps;
		default: return -1;
		}
	}
}

/* var1 = 1; while (var0) { var1 *= var0; var0 -= 1 } print var1 */
static const struct insn factorial[] = {
	{PUSH, 1}, {STORE, 1},
	{LOAD, 0}, {JNZ, 5}, {JMP, 14},
	{LOAD, 1}, {LOAD, 0}, {MUL, 0}, {STORE, 1},
	{LOAD, 0}, {PUSH, 1}, {SUB, 0}, {STORE, 0}, {JMP, 2},
	{LOAD, 1}, {PRINT, 0}, {HALT, 0},
};

/* var1 = 0; do { var1 += var0 * var0 } while (--var0); print var1 */
static const struct insn squares[] = {
	{PUSH, 0}, {STORE, 1},
	{LOAD, 0}, {DUP, 0}, {MUL, 0}, {LOAD, 1}, {ADD, 0}, {STORE, 1},
	{LOAD, 0}, {PUSH, 1}, {SUB, 0}, {DUP, 0}, {STORE, 0}, {JNZ, 2},
	{LOAD, 1}, {PRINT, 0}, {HALT, 0},
};

/* var1, var2 = 0, 1; repeat var0 times: var1, var2 = var2, var1 + var2;
 * print var1 */
static const struct insn fibonacci[] = {
	{PUSH, 0}, {STORE, 1}, {PUSH, 1}, {STORE, 2},
	{LOAD, 0}, {JNZ, 7}, {JMP, 18},
	{LOAD, 1}, {LOAD, 2}, {ADD, 0}, {LOAD, 2}, {STORE, 1}, {STORE, 2},
	{LOAD, 0}, {PUSH, 1}, {SUB, 0}, {STORE, 0}, {JMP, 4},
	{LOAD, 1}, {PRINT, 0}, {HALT, 0},
};

int main(int argc, char **argv)
{
	(void)argv;
	int n = vol_n + argc - 1; /* 10 when run without arguments */

	printf("factorial(%d)\n", n);
	printf("steps %ld\n", run_vm(factorial, n));
	printf("squares(%d)\n", n);
	printf("steps %ld\n", run_vm(squares, n));
	printf("fibonacci(%d)\n", 3 * n);
	printf("steps %ld\n", run_vm(fibonacci, 3 * n));
	return 0;
}
