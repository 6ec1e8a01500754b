/*
 * offsetgoto.c - a threaded interpreter in OCaml's style: each
 * instruction of the translated program holds its handler's address less
 * the first handler's, as a 32-bit word, and every handler ends with
 * goto *(base + *pc++), base being the first handler's label.  The
 * offsets are made at translation time from the function's own table of
 * labels (which carries the relocations in a PIE); the jump adds a
 * loaded word to a rip-relative lea of a label (decision 170).  A
 * breakpoint instruction asks a hook for the word it replaced, as
 * OCaml's debugger support does, so one jump adds a call's result.
 *
 * Programs: a factorial loop, a sum of squares through a helper call, and
 * a countdown that prints with a breakpoint inside; each runs several
 * times.
 */
#include <stdio.h>
#include <stdlib.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

enum { PUSH, LOAD, STORE, ADD, SUB, MUL, JNZ, CALL, PRINT, BREAK, HALT, NOPS };

volatile int vol_rounds = 3;
static int saved_op; /* the offset a breakpoint replaced */

NOINLINE long helper(long x)
{
	return x * x + (x & 1);
}

NOINLINE void emit(const char *what, long v)
{
	printf("  %s %ld\n", what, v);
}

NOINLINE int saved_instruction(const int *pc)
{
	emit("break at", (long)(pc[1] & 0xff));
	return saved_op;
}

/* Runs the threaded program pc (pairs of handler offset and operand)
 * with vars[0] = arg and returns the number of instructions run; with
 * pc NULL, hands out the table of handlers and their base. */
NOINLINE long run(const int *pc, long arg, const void *const **table, const char **basep)
{
	static const void *const labels[NOPS] = {
		&&op_push, &&op_load, &&op_store, &&op_add, &&op_sub, &&op_mul,
		&&op_jnz, &&op_call, &&op_print, &&op_break, &&op_halt,
	};
	const char *base = (const char *)&&op_push;
	long stack[16], vars[4] = {arg, 0, 0, 0}, n = 0;
	int sp = 0;
	if (!pc) {
		*table = labels;
		*basep = base;
		return 0;
	}
	const int *start = pc;
#define NEXT goto *(void *)(base + *pc)
	NEXT;
op_push:
	n++;
	stack[sp++] = pc[1];
	pc += 2;
	NEXT;
op_load:
	n++;
	stack[sp++] = vars[pc[1]];
	pc += 2;
	NEXT;
op_store:
	n++;
	vars[pc[1]] = stack[--sp];
	pc += 2;
	NEXT;
op_add:
	n++;
	sp--;
	stack[sp - 1] += stack[sp];
	pc += 2;
	NEXT;
op_sub:
	n++;
	sp--;
	stack[sp - 1] -= stack[sp];
	pc += 2;
	NEXT;
op_mul:
	n++;
	sp--;
	stack[sp - 1] *= stack[sp];
	pc += 2;
	NEXT;
op_jnz:
	n++;
	if (stack[--sp])
		pc = start + 2 * pc[1];
	else
		pc += 2;
	NEXT;
op_call:
	n++;
	stack[sp - 1] = helper(stack[sp - 1]);
	pc += 2;
	NEXT;
op_print:
	n++;
	emit("print", stack[--sp]);
	pc += 2;
	NEXT;
op_break:
	n++;
	goto *(void *)(base + saved_instruction(pc));
op_halt:
	return n + vars[1] * 0;
}

/* translate turns code (opcode, operand pairs) into threaded code; an
 * opcode ORed with 0x100 gets a breakpoint. */
static int *translate(const long *code, int len)
{
	const void *const *table;
	const char *base;
	run(NULL, 0, &table, &base);
	int *t = malloc(sizeof *t * len);
	for (int i = 0; i < len; i += 2) {
		int op = (int)(code[i] & 0xff);
		t[i] = (int)((const char *)table[op] - base);
		t[i + 1] = (int)code[i + 1];
		if (code[i] & 0x100) {
			saved_op = t[i];
			t[i] = (int)((const char *)table[BREAK] - base);
		}
	}
	return t;
}

#include "vmprogs.h"

/* while (vars[0]) { print vars[0]; vars[0] -= 1 } with a breakpoint on the subtraction */
static const long countdown[] = {
	LOAD, 0, PRINT, 0,
	LOAD, 0, PUSH, 1, SUB | 0x100, 7, STORE, 0,
	LOAD, 0, JNZ, 0,
	HALT, 0,
};

int main(int argc, char **argv)
{
	long scale = argc > 1 ? atol(argv[1]) : 1;
	int *f = translate(fact, sizeof fact / sizeof fact[0]);
	int *s = translate(squares, sizeof squares / sizeof squares[0]);
	int *c = translate(countdown, sizeof countdown / sizeof countdown[0]);
	long total = 0;
	for (int r = 0; r < vol_rounds; r++) {
		printf("round %d\n", r);
		total += run(f, 5 + r * scale, NULL, NULL);
		total += run(s, 40 * scale + r, NULL, NULL);
		total += run(c, 4 + r, NULL, NULL);
	}
	printf("instructions run: %ld\n", total);
	free(f);
	free(s);
	free(c);
	return 0;
}
