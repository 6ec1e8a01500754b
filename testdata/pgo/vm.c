/* The virtual machine: a value stack, call frames, and the dispatch loop,
 * a switch over the opcode of each instruction. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm.h"

#define FRAMES_MAX 256
#define STACK_MAX (FRAMES_MAX * 64)

typedef struct {
	ObjFunc *fn;
	uint8_t *ip;
	Value *slots;
} Frame;

static Value stack[STACK_MAX];
static Value *sp = stack;
static Frame frames[FRAMES_MAX];
static int nframes;
static Table globals;

void fatal(const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fputs("runtime error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	for (int i = nframes - 1; i >= 0; i--) {
		Frame *f = &frames[i];
		int at = (int)(f->ip - f->fn->chunk.code) - 1;
		if (at < 0)
			at = 0;
		fprintf(stderr, "  line %d in %s\n", f->fn->chunk.lines[at], f->fn->name ? f->fn->name->chars : "the script");
	}
	exit(70);
}

void vm_mark_roots(void)
{
	for (Value *v = stack; v < sp; v++)
		gc_mark_value(*v);
	for (int i = 0; i < nframes; i++)
		gc_mark_value(obj_value(frames[i].fn));
	table_mark(&globals);
}

void vm_define_native(const char *name, int arity, NativeFn fn)
{
	ObjString *s = intern_cstr(name);
	gc_push_root(obj_value(s));
	table_set(&globals, obj_value(s), obj_value(new_native(name, arity, fn)));
	gc_pop_root();
}

/* Operations too large or too rare for the loop itself. */

static Value add_slow(Value a, Value b)
{
	if (is_obj_type(a, O_STRING) || is_obj_type(b, O_STRING)) {
		ObjString *x = value_to_string(a);
		gc_push_root(obj_value(x));
		ObjString *y = value_to_string(b);
		gc_push_root(obj_value(y));
		ObjString *s = string_concat(x, y);
		gc_pop_root();
		gc_pop_root();
		return obj_value(s);
	}
	if (is_obj_type(a, O_LIST) && is_obj_type(b, O_LIST)) {
		ObjList *x = (ObjList *)a.as.o, *y = (ObjList *)b.as.o;
		ObjList *l = new_list(x->len + y->len);
		memcpy(l->items, x->items, (size_t)x->len * sizeof(Value));
		memcpy(l->items + x->len, y->items, (size_t)y->len * sizeof(Value));
		l->len = x->len + y->len;
		return obj_value(l);
	}
	fatal("cannot add %s and %s", type_name(a), type_name(b));
}

static int64_t int_operand(Value v, const char *op)
{
	if (v.kind != V_INT)
		fatal("operand of %s is %s, not int", op, type_name(v));
	return v.as.i;
}

static int compare(Value a, Value b)
{
	if (a.kind == V_INT && b.kind == V_INT)
		return a.as.i < b.as.i ? -1 : a.as.i > b.as.i;
	if (is_obj_type(a, O_STRING) && is_obj_type(b, O_STRING)) {
		ObjString *x = (ObjString *)a.as.o, *y = (ObjString *)b.as.o;
		uint32_t n = x->len < y->len ? x->len : y->len;
		int c = memcmp(x->chars, y->chars, n);
		if (c != 0)
			return c < 0 ? -1 : 1;
		return x->len < y->len ? -1 : x->len > y->len;
	}
	fatal("cannot compare %s and %s", type_name(a), type_name(b));
}

static Value index_get(Value c, Value k)
{
	if (is_obj_type(c, O_LIST)) {
		ObjList *l = (ObjList *)c.as.o;
		int64_t i = int_operand(k, "list index");
		if (i < 0)
			i += l->len;
		if (i < 0 || i >= l->len)
			fatal("list index %lld out of range (length %d)", (long long)k.as.i, l->len);
		return l->items[i];
	}
	if (is_obj_type(c, O_MAP)) {
		Value v;
		if (table_get(&((ObjMap *)c.as.o)->t, k, &v))
			return v;
		return nil_value();
	}
	if (is_obj_type(c, O_STRING)) {
		ObjString *s = (ObjString *)c.as.o;
		int64_t i = int_operand(k, "string index");
		if (i < 0)
			i += s->len;
		if (i < 0 || i >= s->len)
			fatal("string index %lld out of range (length %u)", (long long)k.as.i, s->len);
		return obj_value(intern(s->chars + i, 1));
	}
	fatal("cannot index %s", type_name(c));
}

static void index_set(Value c, Value k, Value v)
{
	if (is_obj_type(c, O_LIST)) {
		ObjList *l = (ObjList *)c.as.o;
		int64_t i = int_operand(k, "list index");
		if (i < 0)
			i += l->len;
		if (i < 0 || i >= l->len)
			fatal("list index %lld out of range (length %d)", (long long)k.as.i, l->len);
		l->items[i] = v;
		return;
	}
	if (is_obj_type(c, O_MAP)) {
		if (k.kind == V_NIL)
			fatal("a map key cannot be nil");
		*table_slot(&((ObjMap *)c.as.o)->t, k) = v;
		return;
	}
	fatal("cannot assign into %s", type_name(c));
}

static Value make_list(Value *items, int n)
{
	ObjList *l = new_list(n);
	memcpy(l->items, items, (size_t)n * sizeof(Value));
	l->len = n;
	return obj_value(l);
}

static Value make_map(Value *kv, int n)
{
	ObjMap *m = new_map();
	gc_push_root(obj_value(m));
	for (int i = 0; i < n; i++)
		index_set(obj_value(m), kv[2 * i], kv[2 * i + 1]);
	gc_pop_root();
	return obj_value(m);
}

static Value get_global(ObjString *name)
{
	Value v;
	if (!table_get(&globals, obj_value(name), &v))
		fatal("undefined variable %s", name->chars);
	return v;
}

static void set_global(ObjString *name, Value v)
{
	Value old;
	if (!table_get(&globals, obj_value(name), &old))
		fatal("undefined variable %s", name->chars);
	table_set(&globals, obj_value(name), v);
}

/* call_native runs a built-in on the argc values on top of the stack; its
 * result replaces the callee. */
static void call_native(ObjNative *n, int argc)
{
	if (n->arity >= 0 && argc != n->arity)
		fatal("%s takes %d arguments, got %d", n->name, n->arity, argc);
	Value r = n->fn(argc, sp - argc);
	sp -= argc + 1;
	*sp++ = r;
}

static int64_t checked_div(int64_t a, int64_t b, int mod)
{
	if (b == 0)
		fatal("division by zero");
	if (mod) {
		int64_t r = a % b;
		return r < 0 ? r + (b < 0 ? -b : b) : r;
	}
	return a / b;
}

#define READ8() (*ip++)
#define READ16() (ip += 2, (uint16_t)((ip[-2] << 8) | ip[-1]))
#define CONST16() (consts[READ16()])
#define PUSH(v) (*sp++ = (v))
#define POP() (*--sp)
#define PEEK(n) (sp[-1 - (n)])
#define SAVE() (frame->ip = ip)
#define LOAD()                                   \
	do {                                     \
		frame = &frames[nframes - 1];    \
		ip = frame->ip;                  \
		slots = frame->slots;            \
		consts = frame->fn->chunk.consts; \
	} while (0)

#define INT_BINARY(op, name)                                                         \
	do {                                                                         \
		Value b = POP(), a = PEEK(0);                                        \
		PEEK(0) = int_value(int_operand(a, name) op int_operand(b, name)); \
	} while (0)

#define COMPARE(test)                                                              \
	do {                                                                       \
		Value b = POP(), a = PEEK(0);                                      \
		int r = (a.kind == V_INT && b.kind == V_INT) ? (a.as.i > b.as.i) - (a.as.i < b.as.i) \
							    : compare(a, b);         \
		PEEK(0) = bool_value(r test 0);                                     \
	} while (0)

static int run(void)
{
	Frame *frame;
	uint8_t *ip;
	Value *slots;
	Value *consts;
	LOAD();
	for (;;) {
		uint8_t op = READ8();
		switch ((OpCode)op) {
		case OP_CONST:
			PUSH(CONST16());
			break;
		case OP_NIL:
			PUSH(nil_value());
			break;
		case OP_TRUE:
			PUSH(bool_value(1));
			break;
		case OP_FALSE:
			PUSH(bool_value(0));
			break;
		case OP_POP:
			sp--;
			break;
		case OP_GET_LOCAL:
			PUSH(slots[READ8()]);
			break;
		case OP_SET_LOCAL:
			slots[READ8()] = PEEK(0);
			break;
		case OP_GET_GLOBAL: {
			ObjString *name = (ObjString *)CONST16().as.o;
			SAVE();
			PUSH(get_global(name));
			break;
		}
		case OP_SET_GLOBAL: {
			ObjString *name = (ObjString *)CONST16().as.o;
			SAVE();
			set_global(name, PEEK(0));
			break;
		}
		case OP_DEF_GLOBAL: {
			ObjString *name = (ObjString *)CONST16().as.o;
			table_set(&globals, obj_value(name), PEEK(0));
			sp--;
			break;
		}
		case OP_ADD: {
			Value b = POP(), a = PEEK(0);
			if (a.kind == V_INT && b.kind == V_INT) {
				PEEK(0) = int_value(a.as.i + b.as.i);
			} else {
				SAVE();
				PUSH(b);
				Value r = add_slow(a, b);
				sp--;
				PEEK(0) = r;
			}
			break;
		}
		case OP_ADD_INT: {
			int8_t k = (int8_t)READ8();
			SAVE();
			PEEK(0) = int_value(int_operand(PEEK(0), "+") + k);
			break;
		}
		case OP_SUB:
			SAVE();
			INT_BINARY(-, "-");
			break;
		case OP_MUL:
			SAVE();
			INT_BINARY(*, "*");
			break;
		case OP_DIV:
		case OP_MOD: {
			SAVE();
			Value b = POP(), a = PEEK(0);
			PEEK(0) = int_value(checked_div(int_operand(a, "/"), int_operand(b, "/"), op == OP_MOD));
			break;
		}
		case OP_NEG:
			SAVE();
			PEEK(0) = int_value(-int_operand(PEEK(0), "unary -"));
			break;
		case OP_NOT:
			PEEK(0) = bool_value(!truthy(PEEK(0)));
			break;
		case OP_EQ: {
			Value b = POP();
			PEEK(0) = bool_value(values_equal(PEEK(0), b));
			break;
		}
		case OP_NE: {
			Value b = POP();
			PEEK(0) = bool_value(!values_equal(PEEK(0), b));
			break;
		}
		case OP_LT:
			SAVE();
			COMPARE(<);
			break;
		case OP_LE:
			SAVE();
			COMPARE(<=);
			break;
		case OP_GT:
			SAVE();
			COMPARE(>);
			break;
		case OP_GE:
			SAVE();
			COMPARE(>=);
			break;
		case OP_JUMP: {
			uint16_t d = READ16();
			ip += d;
			break;
		}
		case OP_JUMP_FALSE: {
			uint16_t d = READ16();
			if (!truthy(POP()))
				ip += d;
			break;
		}
		case OP_JUMP_FALSE_KEEP: {
			uint16_t d = READ16();
			if (!truthy(PEEK(0)))
				ip += d;
			break;
		}
		case OP_JUMP_TRUE_KEEP: {
			uint16_t d = READ16();
			if (truthy(PEEK(0)))
				ip += d;
			break;
		}
		case OP_LOOP: {
			uint16_t d = READ16();
			ip -= d;
			SAVE();
			gc_maybe();
			break;
		}
		case OP_LT_LOCAL_JUMP: {
			uint8_t i = READ8(), lim = READ8();
			uint16_t d = READ16();
			Value a = slots[i], b = slots[lim];
			SAVE();
			int lt = (a.kind == V_INT && b.kind == V_INT) ? a.as.i < b.as.i : compare(a, b) < 0;
			if (!lt)
				ip += d;
			break;
		}
		case OP_INC_LOCAL: {
			uint8_t i = READ8();
			slots[i].as.i++;
			break;
		}
		case OP_CALL: {
			int argc = READ8();
			Value callee = PEEK(argc);
			SAVE();
			gc_maybe();
			if (is_obj_type(callee, O_FUNC)) {
				ObjFunc *fn = (ObjFunc *)callee.as.o;
				if (argc != fn->arity)
					fatal("%s takes %d arguments, got %d", fn->name ? fn->name->chars : "?", fn->arity, argc);
				if (nframes == FRAMES_MAX || sp + 256 > stack + STACK_MAX)
					fatal("stack overflow");
				Frame *f = &frames[nframes++];
				f->fn = fn;
				f->ip = fn->chunk.code;
				f->slots = sp - argc - 1;
				LOAD();
			} else if (is_obj_type(callee, O_NATIVE)) {
				call_native((ObjNative *)callee.as.o, argc);
			} else {
				fatal("cannot call %s", type_name(callee));
			}
			break;
		}
		case OP_RETURN: {
			Value r = POP();
			sp = slots;
			nframes--;
			if (nframes == 0)
				return 0;
			PUSH(r);
			LOAD();
			break;
		}
		case OP_PRINT:
			print_value(POP());
			putchar('\n');
			break;
		case OP_LIST: {
			int n = READ8();
			Value l = make_list(sp - n, n);
			sp -= n;
			PUSH(l);
			break;
		}
		case OP_MAP: {
			int n = READ8();
			SAVE();
			Value m = make_map(sp - 2 * n, n);
			sp -= 2 * n;
			PUSH(m);
			break;
		}
		case OP_INDEX: {
			SAVE();
			Value k = POP();
			PEEK(0) = index_get(PEEK(0), k);
			break;
		}
		case OP_SET_INDEX: {
			SAVE();
			Value v = POP(), k = POP();
			index_set(PEEK(0), k, v);
			PEEK(0) = v;
			break;
		}
		case OP_COUNT_:
		default:
			SAVE();
			fatal("bad opcode %d", op);
		}
	}
}

int vm_run(ObjFunc *main_fn)
{
	sp = stack;
	PUSH(obj_value(main_fn));
	frames[0].fn = main_fn;
	frames[0].ip = main_fn->chunk.code;
	frames[0].slots = stack;
	nframes = 1;
	return run();
}
