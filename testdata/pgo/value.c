/* Values: constructors, kinds, equality, hashing and printing. */
#include <stdio.h>
#include <string.h>

#include "vm.h"

Value nil_value(void)
{
	Value v;
	v.kind = V_NIL;
	v.as.i = 0;
	return v;
}

Value bool_value(int b)
{
	Value v;
	v.kind = V_BOOL;
	v.as.i = b != 0;
	return v;
}

Value int_value(int64_t i)
{
	Value v;
	v.kind = V_INT;
	v.as.i = i;
	return v;
}

Value obj_value(void *o)
{
	Value v;
	v.kind = V_OBJ;
	v.as.o = o;
	return v;
}

int is_obj_type(Value v, ObjType t)
{
	return v.kind == V_OBJ && v.as.o->type == t;
}

int truthy(Value v)
{
	switch (v.kind) {
	case V_NIL:
		return 0;
	case V_BOOL:
		return v.as.i != 0;
	case V_INT:
		return v.as.i != 0;
	default:
		return 1;
	}
}

/* Strings are interned, so object identity is string equality. */
int values_equal(Value a, Value b)
{
	if (a.kind != b.kind)
		return 0;
	switch (a.kind) {
	case V_NIL:
		return 1;
	case V_BOOL:
	case V_INT:
		return a.as.i == b.as.i;
	default:
		return a.as.o == b.as.o;
	}
}

static uint32_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return (uint32_t)x;
}

uint32_t hash_value(Value v)
{
	switch (v.kind) {
	case V_NIL:
		return 7;
	case V_BOOL:
		return v.as.i ? 11 : 13;
	case V_INT:
		return mix64((uint64_t)v.as.i);
	default:
		if (v.as.o->type == O_STRING)
			return ((ObjString *)v.as.o)->hash;
		return mix64((uint64_t)(uintptr_t)v.as.o);
	}
}

const char *type_name(Value v)
{
	switch (v.kind) {
	case V_NIL:
		return "nil";
	case V_BOOL:
		return "bool";
	case V_INT:
		return "int";
	default:
		break;
	}
	switch ((ObjType)v.as.o->type) {
	case O_STRING:
		return "string";
	case O_LIST:
		return "list";
	case O_MAP:
		return "map";
	case O_FUNC:
		return "function";
	case O_NATIVE:
		return "native";
	}
	return "?";
}

static void print_list(ObjList *l)
{
	putchar('[');
	for (int i = 0; i < l->len; i++) {
		if (i > 0)
			fputs(", ", stdout);
		print_value(l->items[i]);
	}
	putchar(']');
}

static void print_map(ObjMap *m)
{
	Value k, v;
	int first = 1;
	putchar('{');
	for (int i = table_next(&m->t, 0, &k, &v); i >= 0; i = table_next(&m->t, i, &k, &v)) {
		if (!first)
			fputs(", ", stdout);
		first = 0;
		print_value(k);
		fputs(": ", stdout);
		print_value(v);
	}
	putchar('}');
}

void print_value(Value v)
{
	switch (v.kind) {
	case V_NIL:
		fputs("nil", stdout);
		return;
	case V_BOOL:
		fputs(v.as.i ? "true" : "false", stdout);
		return;
	case V_INT:
		printf("%lld", (long long)v.as.i);
		return;
	default:
		break;
	}
	switch ((ObjType)v.as.o->type) {
	case O_STRING: {
		ObjString *s = (ObjString *)v.as.o;
		fwrite(s->chars, 1, s->len, stdout);
		return;
	}
	case O_LIST:
		print_list((ObjList *)v.as.o);
		return;
	case O_MAP:
		print_map((ObjMap *)v.as.o);
		return;
	case O_FUNC: {
		ObjFunc *f = (ObjFunc *)v.as.o;
		printf("<fn %s>", f->name ? f->name->chars : "main");
		return;
	}
	case O_NATIVE:
		printf("<native %s>", ((ObjNative *)v.as.o)->name);
		return;
	}
}

ObjString *as_string(Value v)
{
	if (!is_obj_type(v, O_STRING))
		fatal("expected a string, got %s", type_name(v));
	return (ObjString *)v.as.o;
}

ObjList *as_list(Value v)
{
	if (!is_obj_type(v, O_LIST))
		fatal("expected a list, got %s", type_name(v));
	return (ObjList *)v.as.o;
}

ObjMap *as_map(Value v)
{
	if (!is_obj_type(v, O_MAP))
		fatal("expected a map, got %s", type_name(v));
	return (ObjMap *)v.as.o;
}
