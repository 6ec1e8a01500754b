/*
 * interp.c - benchmark workload: a stack-machine bytecode interpreter.
 *
 * The hot loop is a switch over the opcode of the next instruction, the
 * shape of every simple interpreter (CPython's ceval without computed
 * gotos, Lua's lvm.c).  The bytecode program counts the primes below a
 * bound by trial division and sums them, so the dispatch loop runs nested
 * bytecode loops with data-dependent branches.  A second small program
 * computes Fibonacci numbers iteratively through a call/return pair of
 * opcodes, so calls between bytecode procedures appear too.
 *
 * usage: interp [SCALE]   (SCALE 100 is the benchmark size, ~0.5 s at -O2)
 * Prints a checksum; the output depends only on SCALE.
 */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

enum op {
	OP_PUSH,  /* push imm */
	OP_LOAD,  /* push local[imm] */
	OP_STORE, /* local[imm] = pop */
	OP_ADD,
	OP_SUB,
	OP_MUL,
	OP_MOD,
	OP_LT,    /* push (a < b) */
	OP_EQ,    /* push (a == b) */
	OP_JZ,    /* if pop == 0 jump to imm */
	OP_JMP,   /* jump to imm */
	OP_INC,   /* local[imm]++ */
	OP_CALL,  /* call procedure at imm: pops argument into its local 0 */
	OP_RET,   /* return top of stack to the caller */
	OP_POP,
	OP_HALT,
};

struct insn {
	unsigned char op;
	int imm;
};

#define STACK 256
#define LOCALS 8
#define FRAMES 64

struct frame {
	int ret_pc;
	long local[LOCALS];
};

struct vm {
	long stack[STACK];
	int sp;
	struct frame frames[FRAMES];
	int fp;
	long steps;
};

NOINLINE static void vm_fault(const char *what, int pc)
{
	fprintf(stderr, "interp: %s at pc %d\n", what, pc);
	exit(1);
}

/* run executes prog from pc 0 with local 0 = arg and returns the value
 * left by the outermost OP_RET or OP_HALT. */
NOINLINE static long run(struct vm *vm, const struct insn *prog, long arg)
{
	int pc = 0;
	long a, b;
	vm->sp = 0;
	vm->fp = 0;
	vm->frames[0].ret_pc = -1;
	vm->frames[0].local[0] = arg;
	for (;;) {
		const struct insn *in = &prog[pc++];
		long *local = vm->frames[vm->fp].local;
		vm->steps++;
		switch (in->op) {
		case OP_PUSH:
			vm->stack[vm->sp++] = in->imm;
			break;
		case OP_LOAD:
			vm->stack[vm->sp++] = local[in->imm];
			break;
		case OP_STORE:
			local[in->imm] = vm->stack[--vm->sp];
			break;
		case OP_ADD:
			b = vm->stack[--vm->sp];
			vm->stack[vm->sp - 1] += b;
			break;
		case OP_SUB:
			b = vm->stack[--vm->sp];
			vm->stack[vm->sp - 1] -= b;
			break;
		case OP_MUL:
			b = vm->stack[--vm->sp];
			vm->stack[vm->sp - 1] *= b;
			break;
		case OP_MOD:
			b = vm->stack[--vm->sp];
			if (b == 0)
				vm_fault("modulo by zero", pc - 1);
			vm->stack[vm->sp - 1] %= b;
			break;
		case OP_LT:
			b = vm->stack[--vm->sp];
			a = vm->stack[vm->sp - 1];
			vm->stack[vm->sp - 1] = a < b;
			break;
		case OP_EQ:
			b = vm->stack[--vm->sp];
			a = vm->stack[vm->sp - 1];
			vm->stack[vm->sp - 1] = a == b;
			break;
		case OP_JZ:
			if (vm->stack[--vm->sp] == 0)
				pc = in->imm;
			break;
		case OP_JMP:
			pc = in->imm;
			break;
		case OP_INC:
			local[in->imm]++;
			break;
		case OP_CALL:
			if (vm->fp + 1 >= FRAMES)
				vm_fault("call stack overflow", pc - 1);
			vm->fp++;
			vm->frames[vm->fp].ret_pc = pc;
			vm->frames[vm->fp].local[0] = vm->stack[--vm->sp];
			pc = in->imm;
			break;
		case OP_RET:
			pc = vm->frames[vm->fp].ret_pc;
			if (vm->fp-- == 0)
				return vm->stack[vm->sp - 1];
			break;
		case OP_POP:
			vm->sp--;
			break;
		case OP_HALT:
			return vm->sp > 0 ? vm->stack[vm->sp - 1] : 0;
		default:
			vm_fault("bad opcode", pc - 1);
		}
		if (vm->sp < 0 || vm->sp >= STACK)
			vm_fault("stack out of range", pc - 1);
	}
}

/*
 * Sum of the primes below local 0 (locals: 0 n, 1 sum, 2 i, 3 d, 4 prime):
 *
 *	sum = 0; i = 2
 *	while i < n:
 *		d = 2; prime = 1
 *		while d*d < i+1:
 *			if i % d == 0: prime = 0; break
 *			d++
 *		if prime: sum += i
 *		i++
 *	halt sum
 */
static const struct insn primes[] = {
	/*  0 */ {OP_PUSH, 0}, {OP_STORE, 1}, {OP_PUSH, 2}, {OP_STORE, 2},
	/*  4 outer */ {OP_LOAD, 2}, {OP_LOAD, 0}, {OP_LT, 0}, {OP_JZ, 39},
	/*  8 */ {OP_PUSH, 2}, {OP_STORE, 3}, {OP_PUSH, 1}, {OP_STORE, 4},
	/* 12 inner */ {OP_LOAD, 3}, {OP_LOAD, 3}, {OP_MUL, 0},
	/* 15 */ {OP_LOAD, 2}, {OP_PUSH, 1}, {OP_ADD, 0}, {OP_LT, 0}, {OP_JZ, 31},
	/* 20 */ {OP_LOAD, 2}, {OP_LOAD, 3}, {OP_MOD, 0}, {OP_PUSH, 0}, {OP_EQ, 0},
	/* 25 */ {OP_JZ, 27}, {OP_JMP, 29},
	/* 27 */ {OP_INC, 3}, {OP_JMP, 12},
	/* 29 composite */ {OP_PUSH, 0}, {OP_STORE, 4},
	/* 31 tally */ {OP_LOAD, 4}, {OP_JZ, 37},
	/* 33 */ {OP_LOAD, 1}, {OP_LOAD, 2}, {OP_ADD, 0}, {OP_STORE, 1},
	/* 37 next */ {OP_INC, 2}, {OP_JMP, 4},
	/* 39 done */ {OP_LOAD, 1}, {OP_HALT, 0},
};

/*
 * Sum of fib(k % 40) for k below local 0, fib being a bytecode procedure
 * entered with OP_CALL (main locals: 0 count, 1 k, 2 acc; fib locals:
 * 0 n, 1 a, 2 b, 3 t).
 */
static const struct insn fibs[] = {
	/*  0 */ {OP_PUSH, 0}, {OP_STORE, 1}, {OP_PUSH, 0}, {OP_STORE, 2},
	/*  4 loop */ {OP_LOAD, 1}, {OP_LOAD, 0}, {OP_LT, 0}, {OP_JZ, 17},
	/*  8 */ {OP_LOAD, 1}, {OP_PUSH, 40}, {OP_MOD, 0}, {OP_CALL, 19},
	/* 12 */ {OP_LOAD, 2}, {OP_ADD, 0}, {OP_STORE, 2}, {OP_INC, 1}, {OP_JMP, 4},
	/* 17 done */ {OP_LOAD, 2}, {OP_HALT, 0},
	/* 19 fib */ {OP_PUSH, 0}, {OP_STORE, 1}, {OP_PUSH, 1}, {OP_STORE, 2},
	/* 23 loop */ {OP_PUSH, 0}, {OP_LOAD, 0}, {OP_LT, 0}, {OP_JZ, 40},
	/* 27 */ {OP_LOAD, 1}, {OP_LOAD, 2}, {OP_ADD, 0}, {OP_STORE, 3},
	/* 31 */ {OP_LOAD, 2}, {OP_STORE, 1}, {OP_LOAD, 3}, {OP_STORE, 2},
	/* 35 */ {OP_LOAD, 0}, {OP_PUSH, 1}, {OP_SUB, 0}, {OP_STORE, 0}, {OP_JMP, 23},
	/* 40 ret */ {OP_LOAD, 1}, {OP_RET, 0},
};

int main(int argc, char **argv)
{
	long scale = argc > 1 ? atol(argv[1]) : 100;
	struct vm *vm = calloc(1, sizeof *vm);
	unsigned long check = 0;
	long bound = 2000 + scale * 500;
	int round;
	if (vm == NULL || scale <= 0) {
		fprintf(stderr, "usage: interp [SCALE>0]\n");
		return 2;
	}
	for (round = 0; round < 4; round++) {
		long s = run(vm, primes, bound + round);
		check = check * 1000003u + (unsigned long)s;
	}
	check = check * 1000003u + (unsigned long)run(vm, fibs, scale * 3000);
	printf("interp scale=%ld steps=%ld checksum=%016lx\n", scale, vm->steps, check);
	free(vm);
	return 0;
}
