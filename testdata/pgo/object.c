/* Heap objects and the collector: every object is on one list; a
 * collection marks from the VM's roots and a small explicit root stack,
 * then sweeps the list. Collections run when the bytes allocated since
 * the last one pass a threshold that grows with the live heap. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm.h"

static Obj *all_objects;
static size_t bytes_since_gc;
static size_t live_bytes;
static size_t next_gc = 1 << 20;
static int collections;
static Table strings;

#define MAX_ROOTS 64
static Value roots[MAX_ROOTS];
static int nroots;

static Obj **gray;
static int ngray, capgray;

void *xrealloc(void *p, size_t size)
{
	void *q = realloc(p, size);
	if (!q && size)
		fatal("out of memory");
	return q;
}

void *gc_alloc(ObjType type, size_t size)
{
	bytes_since_gc += size;
	live_bytes += size;
	Obj *o = xrealloc(NULL, size);
	o->type = (uint8_t)type;
	o->marked = 0;
	o->next = all_objects;
	all_objects = o;
	return o;
}

void gc_push_root(Value v)
{
	if (nroots == MAX_ROOTS)
		fatal("too many temporary roots");
	roots[nroots++] = v;
}

void gc_pop_root(void)
{
	nroots--;
}

size_t gc_live_bytes(void)
{
	return live_bytes;
}

int gc_collections(void)
{
	return collections;
}

static void mark_obj(Obj *o)
{
	if (o == NULL || o->marked)
		return;
	o->marked = 1;
	if (ngray == capgray) {
		capgray = capgray ? capgray * 2 : 256;
		gray = xrealloc(gray, (size_t)capgray * sizeof *gray);
	}
	gray[ngray++] = o;
}

void gc_mark_value(Value v)
{
	if (v.kind == V_OBJ)
		mark_obj(v.as.o);
}

void table_mark(Table *t)
{
	for (int i = 0; i < t->cap; i++) {
		Entry *e = &t->slots[i];
		if (e->key.kind == V_NIL)
			continue;
		gc_mark_value(e->key);
		gc_mark_value(e->val);
	}
}

/* blacken marks what o refers to. */
static void blacken(Obj *o)
{
	switch ((ObjType)o->type) {
	case O_STRING:
	case O_NATIVE:
		break;
	case O_LIST: {
		ObjList *l = (ObjList *)o;
		for (int i = 0; i < l->len; i++)
			gc_mark_value(l->items[i]);
		break;
	}
	case O_MAP:
		table_mark(&((ObjMap *)o)->t);
		break;
	case O_FUNC: {
		ObjFunc *f = (ObjFunc *)o;
		mark_obj((Obj *)f->name);
		for (int i = 0; i < f->chunk.nconsts; i++)
			gc_mark_value(f->chunk.consts[i]);
		break;
	}
	}
}

static size_t obj_size(Obj *o)
{
	switch ((ObjType)o->type) {
	case O_STRING:
		return sizeof(ObjString) + ((ObjString *)o)->len + 1;
	case O_LIST:
		return sizeof(ObjList) + (size_t)((ObjList *)o)->cap * sizeof(Value);
	case O_MAP:
		return sizeof(ObjMap) + (size_t)((ObjMap *)o)->t.cap * sizeof(Entry);
	case O_FUNC:
		return sizeof(ObjFunc);
	case O_NATIVE:
		return sizeof(ObjNative);
	}
	return 0;
}

static void free_obj(Obj *o)
{
	switch ((ObjType)o->type) {
	case O_LIST:
		free(((ObjList *)o)->items);
		break;
	case O_MAP:
		table_free(&((ObjMap *)o)->t);
		break;
	case O_FUNC: {
		ObjFunc *f = (ObjFunc *)o;
		free(f->chunk.code);
		free(f->chunk.lines);
		free(f->chunk.consts);
		break;
	}
	default:
		break;
	}
	free(o);
}

static size_t sweep(void)
{
	size_t kept = 0;
	Obj **link = &all_objects;
	while (*link) {
		Obj *o = *link;
		if (o->marked) {
			o->marked = 0;
			kept += obj_size(o);
			link = &o->next;
		} else {
			*link = o->next;
			free_obj(o);
		}
	}
	return kept;
}

void gc_collect(void)
{
	collections++;
	for (int i = 0; i < nroots; i++)
		gc_mark_value(roots[i]);
	vm_mark_roots();
	while (ngray > 0)
		blacken(gray[--ngray]);
	table_remove_unmarked(&strings);
	live_bytes = sweep();
	bytes_since_gc = 0;
	next_gc = live_bytes * 2 > (1u << 20) ? live_bytes * 2 : (1u << 20);
}

void gc_maybe(void)
{
	if (bytes_since_gc > next_gc)
		gc_collect();
}

/* Strings. */

static ObjString *alloc_string(const char *s, size_t len, uint32_t hash)
{
	ObjString *str = gc_alloc(O_STRING, sizeof(ObjString) + len + 1);
	str->len = (uint32_t)len;
	str->hash = hash;
	memcpy(str->chars, s, len);
	str->chars[len] = '\0';
	gc_push_root(obj_value(str));
	table_set(&strings, obj_value(str), nil_value());
	gc_pop_root();
	return str;
}

ObjString *intern(const char *s, size_t len)
{
	uint32_t hash = hash_bytes(s, len);
	ObjString *found = table_find_string(&strings, s, len, hash);
	if (found)
		return found;
	return alloc_string(s, len, hash);
}

ObjString *intern_cstr(const char *s)
{
	return intern(s, strlen(s));
}

ObjString *string_concat(ObjString *a, ObjString *b)
{
	size_t len = (size_t)a->len + b->len;
	char small[256];
	char *buf = len <= sizeof small ? small : xrealloc(NULL, len);
	memcpy(buf, a->chars, a->len);
	memcpy(buf + a->len, b->chars, b->len);
	ObjString *s = intern(buf, len);
	if (buf != small)
		free(buf);
	return s;
}

ObjString *string_from_int(int64_t i)
{
	char buf[32];
	int n = snprintf(buf, sizeof buf, "%lld", (long long)i);
	return intern(buf, (size_t)n);
}

ObjString *value_to_string(Value v)
{
	switch (v.kind) {
	case V_NIL:
		return intern_cstr("nil");
	case V_BOOL:
		return intern_cstr(v.as.i ? "true" : "false");
	case V_INT:
		return string_from_int(v.as.i);
	default:
		break;
	}
	if (v.as.o->type == O_STRING)
		return (ObjString *)v.as.o;
	return intern_cstr(type_name(v));
}

/* Lists, maps, functions. */

ObjList *new_list(int cap)
{
	ObjList *l = gc_alloc(O_LIST, sizeof(ObjList));
	l->len = 0;
	l->cap = cap;
	l->items = cap ? xrealloc(NULL, (size_t)cap * sizeof(Value)) : NULL;
	return l;
}

void list_push(ObjList *l, Value v)
{
	if (l->len == l->cap) {
		int cap = l->cap < 4 ? 4 : l->cap * 2;
		bytes_since_gc += (size_t)(cap - l->cap) * sizeof(Value);
		live_bytes += (size_t)(cap - l->cap) * sizeof(Value);
		l->items = xrealloc(l->items, (size_t)cap * sizeof(Value));
		l->cap = cap;
	}
	l->items[l->len++] = v;
}

Value list_pop(ObjList *l)
{
	if (l->len == 0)
		fatal("pop from an empty list");
	return l->items[--l->len];
}

ObjMap *new_map(void)
{
	ObjMap *m = gc_alloc(O_MAP, sizeof(ObjMap));
	table_init(&m->t);
	return m;
}

ObjFunc *new_func(ObjString *name)
{
	ObjFunc *f = gc_alloc(O_FUNC, sizeof(ObjFunc));
	f->name = name;
	f->arity = 0;
	chunk_init(&f->chunk);
	return f;
}

ObjNative *new_native(const char *name, int arity, NativeFn fn)
{
	ObjNative *n = gc_alloc(O_NATIVE, sizeof(ObjNative));
	n->name = name;
	n->arity = arity;
	n->fn = fn;
	return n;
}

/* Chunks. */

void chunk_init(Chunk *c)
{
	memset(c, 0, sizeof *c);
}

void chunk_write(Chunk *c, uint8_t byte, int line)
{
	if (c->len == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 64;
		c->code = xrealloc(c->code, (size_t)c->cap);
		c->lines = xrealloc(c->lines, (size_t)c->cap * sizeof(int));
	}
	c->code[c->len] = byte;
	c->lines[c->len] = line;
	c->len++;
}

int chunk_const(Chunk *c, Value v)
{
	for (int i = 0; i < c->nconsts; i++)
		if (values_equal(c->consts[i], v))
			return i;
	if (c->nconsts == c->capconsts) {
		c->capconsts = c->capconsts ? c->capconsts * 2 : 16;
		c->consts = xrealloc(c->consts, (size_t)c->capconsts * sizeof(Value));
	}
	c->consts[c->nconsts] = v;
	return c->nconsts++;
}
