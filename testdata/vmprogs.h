/*
 * vmprogs.h - the programs threaded.c and offsetgoto.c run: opcode,
 * operand pairs over the opcodes each file's enum names (PUSH, LOAD,
 * STORE, ADD, SUB, MUL, JNZ, CALL, PRINT, HALT).
 */

/* vars[1] = 1; while (vars[0]) { vars[1] *= vars[0]; vars[0] -= 1; } push vars[1]; print */
static const long fact[] = {
	PUSH, 1, STORE, 1,
	LOAD, 1, LOAD, 0, MUL, 0, STORE, 1,
	LOAD, 0, PUSH, 1, SUB, 0, STORE, 0,
	LOAD, 0, JNZ, 2,
	LOAD, 1, PRINT, 0, HALT, 0,
};

/* vars[1] = 0; while (vars[0]) { vars[1] += helper(vars[0]); vars[0] -= 1; } print vars[1] */
static const long squares[] = {
	PUSH, 0, STORE, 1,
	LOAD, 1, LOAD, 0, CALL, 0, ADD, 0, STORE, 1,
	LOAD, 0, PUSH, 1, SUB, 0, STORE, 0,
	LOAD, 0, JNZ, 2,
	LOAD, 1, PRINT, 0, HALT, 0,
};
