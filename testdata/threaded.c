/*
 * threaded.c - a direct-threaded interpreter: each instruction of the
 * translated program holds its handler's address, and every handler ends
 * with goto *pc->h, a jump through a word of the heap (PHP's hybrid VM
 * jumps through opline->handler, Ruby's through the word at its program
 * counter).  No slice of such a jump reaches a table; the handlers'
 * addresses come from the function's own table of labels, which run
 * hands out when called with no program (Ruby's vm_exec_core does the
 * same) and which translate copies into the instructions (decision 169).
 *
 * Programs: a factorial loop, a sum of squares through a helper call, and
 * a countdown that prints; each runs several times.
 */
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

enum { PUSH, LOAD, STORE, ADD, SUB, MUL, JNZ, CALL, PRINT, HALT, NOPS };

struct insn {
	const void *h;
	long arg;
};

volatile int vol_rounds = 3;

NOINLINE long helper(long x)
{
	return x * x + (x & 1);
}

NOINLINE void emit(const char *what, long v)
{
	printf("  %s %ld\n", what, v);
}

/* Runs the threaded program pc with vars[0] = arg and returns the number
 * of instructions run; with pc NULL, returns the table of handlers. */
NOINLINE long run(const struct insn *pc, long arg, const void *const **table)
{
	static const void *const labels[NOPS] = {
		&&op_push, &&op_load, &&op_store, &&op_add, &&op_sub, &&op_mul,
		&&op_jnz, &&op_call, &&op_print, &&op_halt,
	};
	long stack[16], vars[4] = {arg, 0, 0, 0}, n = 0;
	int sp = 0;
	if (!pc) {
		*table = labels;
		return 0;
	}
	const struct insn *start = pc;
	goto *pc->h;
op_push:
	n++;
	stack[sp++] = pc->arg;
	pc++;
	goto *pc->h;
op_load:
	n++;
	stack[sp++] = vars[pc->arg];
	pc++;
	goto *pc->h;
op_store:
	n++;
	vars[pc->arg] = stack[--sp];
	pc++;
	goto *pc->h;
op_add:
	n++;
	sp--;
	stack[sp - 1] += stack[sp];
	pc++;
	goto *pc->h;
op_sub:
	n++;
	sp--;
	stack[sp - 1] -= stack[sp];
	pc++;
	goto *pc->h;
op_mul:
	n++;
	sp--;
	stack[sp - 1] *= stack[sp];
	pc++;
	goto *pc->h;
op_jnz:
	n++;
	if (stack[--sp])
		pc = start + pc->arg;
	else
		pc++;
	goto *pc->h;
op_call:
	n++;
	stack[sp - 1] = helper(stack[sp - 1]);
	pc++;
	goto *pc->h;
op_print:
	n++;
	emit("print", stack[--sp]);
	pc++;
	goto *pc->h;
op_halt:
	return n + vars[1] * 0;
}

/* translate turns code (opcode, operand pairs) into threaded code. */
static struct insn *translate(const long *code, int len)
{
	const void *const *table;
	run(NULL, 0, &table);
	struct insn *t = malloc(sizeof *t * (len / 2));
	for (int i = 0; i < len / 2; i++) {
		t[i].h = table[code[2 * i]];
		t[i].arg = code[2 * i + 1];
	}
	return t;
}

#include "vmprogs.h"

/* while (vars[0]) { print vars[0]; vars[0] -= 3; if (!vars[0]) break } */
static const long countdown[] = {
	LOAD, 0, PRINT, 0,
	LOAD, 0, PUSH, 1, SUB, 0, STORE, 0,
	LOAD, 0, JNZ, 0,
	HALT, 0,
};

int main(int argc, char **argv)
{
	long scale = argc > 1 ? atol(argv[1]) : 1;
	struct insn *f = translate(fact, sizeof fact / sizeof fact[0]);
	struct insn *s = translate(squares, sizeof squares / sizeof squares[0]);
	struct insn *c = translate(countdown, sizeof countdown / sizeof countdown[0]);
	long total = 0;
	for (int r = 0; r < vol_rounds; r++) {
		printf("round %d\n", r);
		total += run(f, 5 + r * scale, NULL);
		total += run(s, 40 * scale + r, NULL);
		total += run(c, 4 + r, NULL);
	}
	printf("instructions run: %ld\n", total);
	free(f);
	free(s);
	free(c);
	return 0;
}
