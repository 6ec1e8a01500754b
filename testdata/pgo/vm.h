/* tinyvm: a small bytecode interpreter, the program blpp-bench builds
 * three ways (plain, blpp sample-PGO, clang IR-PGO) to measure what a
 * profile feed is worth. It is shaped like the interpreters people feed
 * profiles to: a lexer and a one-pass compiler to stack bytecode, a
 * switch-dispatched loop, interned strings, hash tables, lists, a
 * mark-and-sweep collector and many small helper functions.
 *
 * The language:
 *   fn name(a, b) { ... }          functions (first-class values)
 *   let x = expr;  x = expr;       variables (block-scoped locals, globals)
 *   if c { } else if d { } else { }
 *   while c { }   for i = a, b { }  (i from a up to b-1)   break; continue;
 *   return expr;  print expr;
 *   [1, 2], {"k": v}, a[i], a[i] = v, f(x), and, or, not, == != < <= > >=
 *   + - * / % (integers; + also joins strings)
 */
#ifndef TINYVM_H
#define TINYVM_H

#include <stddef.h>
#include <stdint.h>

typedef enum { V_NIL, V_BOOL, V_INT, V_OBJ } ValueKind;

typedef struct Obj Obj;

typedef struct {
	uint8_t kind;
	union {
		int64_t i;
		Obj *o;
	} as;
} Value;

typedef enum { O_STRING, O_LIST, O_MAP, O_FUNC, O_NATIVE } ObjType;

struct Obj {
	uint8_t type;
	uint8_t marked;
	Obj *next;
};

typedef struct {
	Obj h;
	uint32_t len;
	uint32_t hash;
	char chars[];
} ObjString;

typedef struct {
	Obj h;
	Value *items;
	int len, cap;
} ObjList;

/* Table is an open-addressing hash table from values to values. A key of
 * kind V_NIL marks an empty slot; a tombstone is an empty key with a true
 * value. */
typedef struct {
	Value key;
	Value val;
} Entry;

typedef struct {
	Entry *slots;
	int count; /* live entries plus tombstones */
	int live;
	int cap; /* a power of two, or 0 */
} Table;

typedef struct {
	Obj h;
	Table t;
} ObjMap;

typedef struct {
	uint8_t *code;
	int *lines;
	int len, cap;
	Value *consts;
	int nconsts, capconsts;
} Chunk;

typedef struct {
	Obj h;
	ObjString *name;
	int arity;
	Chunk chunk;
} ObjFunc;

typedef Value (*NativeFn)(int argc, Value *argv);

typedef struct {
	Obj h;
	const char *name;
	int arity; /* -1: any */
	NativeFn fn;
} ObjNative;

/* value.c */
Value nil_value(void);
Value bool_value(int b);
Value int_value(int64_t i);
Value obj_value(void *o);
int is_obj_type(Value v, ObjType t);
int truthy(Value v);
int values_equal(Value a, Value b);
uint32_t hash_value(Value v);
const char *type_name(Value v);
void print_value(Value v);
ObjString *as_string(Value v);
ObjList *as_list(Value v);
ObjMap *as_map(Value v);

/* object.c */
void *gc_alloc(ObjType type, size_t size);
void *xrealloc(void *p, size_t size);
ObjString *intern(const char *s, size_t len);
ObjString *intern_cstr(const char *s);
ObjString *string_concat(ObjString *a, ObjString *b);
ObjString *string_from_int(int64_t i);
ObjString *value_to_string(Value v);
ObjList *new_list(int cap);
void list_push(ObjList *l, Value v);
Value list_pop(ObjList *l);
ObjMap *new_map(void);
ObjFunc *new_func(ObjString *name);
ObjNative *new_native(const char *name, int arity, NativeFn fn);
void gc_collect(void);
void gc_mark_value(Value v);
void gc_maybe(void);
void gc_push_root(Value v);
void gc_pop_root(void);
size_t gc_live_bytes(void);
int gc_collections(void);

/* table.c */
void table_init(Table *t);
void table_free(Table *t);
int table_get(Table *t, Value key, Value *out);
int table_set(Table *t, Value key, Value val);
int table_delete(Table *t, Value key);
Value *table_slot(Table *t, Value key);
ObjString *table_find_string(Table *t, const char *s, size_t len, uint32_t hash);
void table_remove_unmarked(Table *t);
void table_mark(Table *t);
int table_next(Table *t, int i, Value *key, Value *val);
uint32_t hash_bytes(const char *s, size_t len);

/* chunk.c */
void chunk_init(Chunk *c);
void chunk_write(Chunk *c, uint8_t byte, int line);
int chunk_const(Chunk *c, Value v);

/* lex.c */
typedef enum {
	T_EOF, T_ERROR, T_IDENT, T_INT, T_STRING,
	T_LPAREN, T_RPAREN, T_LBRACE, T_RBRACE, T_LBRACKET, T_RBRACKET,
	T_COMMA, T_SEMI, T_COLON, T_DOT,
	T_PLUS, T_MINUS, T_STAR, T_SLASH, T_PERCENT,
	T_ASSIGN, T_EQ, T_NE, T_LT, T_LE, T_GT, T_GE,
	T_AND, T_OR, T_NOT, T_FN, T_LET, T_IF, T_ELSE, T_WHILE, T_FOR,
	T_RETURN, T_PRINT, T_TRUE, T_FALSE, T_NIL, T_BREAK, T_CONTINUE,
} TokenKind;

typedef struct {
	TokenKind kind;
	const char *start;
	int len;
	int line;
	int64_t ival;
} Token;

typedef struct {
	const char *src;
	const char *cur;
	int line;
} Lexer;

void lexer_init(Lexer *lx, const char *src);
Token lexer_next(Lexer *lx);
const char *token_name(TokenKind k);

/* compile.c */
ObjFunc *compile(const char *src);

/* vm.c */
typedef enum {
	OP_CONST, OP_NIL, OP_TRUE, OP_FALSE, OP_POP,
	OP_GET_LOCAL, OP_SET_LOCAL, OP_GET_GLOBAL, OP_SET_GLOBAL, OP_DEF_GLOBAL,
	OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD, OP_NEG, OP_NOT,
	OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE,
	OP_JUMP, OP_JUMP_FALSE, OP_JUMP_FALSE_KEEP, OP_JUMP_TRUE_KEEP, OP_LOOP,
	OP_CALL, OP_RETURN, OP_PRINT,
	OP_LIST, OP_MAP, OP_INDEX, OP_SET_INDEX,
	OP_INC_LOCAL, OP_ADD_INT, OP_LT_LOCAL_JUMP,
	OP_COUNT_
} OpCode;

int vm_run(ObjFunc *main_fn);
void vm_define_native(const char *name, int arity, NativeFn fn);
void vm_mark_roots(void);
void fatal(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* lib.c */
void lib_install(void);

#endif
