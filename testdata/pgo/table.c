/* Open-addressing hash tables with linear probing and tombstones, used
 * for maps, globals and the string intern set. */
#include <stdlib.h>
#include <string.h>

#include "vm.h"

#define MAX_LOAD_NUM 3
#define MAX_LOAD_DEN 4

/* FNV-1a over the bytes, then a final avalanche so that short keys that
 * differ in one byte spread over the table. */
uint32_t hash_bytes(const char *s, size_t len)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++) {
		h ^= (uint8_t)s[i];
		h *= 16777619u;
	}
	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	h ^= h >> 12;
	return h;
}

void table_init(Table *t)
{
	t->slots = NULL;
	t->count = 0;
	t->live = 0;
	t->cap = 0;
}

void table_free(Table *t)
{
	free(t->slots);
	table_init(t);
}

static int is_empty(const Entry *e)
{
	return e->key.kind == V_NIL;
}

static int is_tombstone(const Entry *e)
{
	return e->key.kind == V_NIL && e->val.kind == V_BOOL;
}

/* find returns the slot holding key, or the slot where it would go: the
 * first tombstone on its probe sequence, else the empty slot ending it. */
static Entry *find(Entry *slots, int cap, Value key)
{
	uint32_t mask = (uint32_t)cap - 1;
	uint32_t i = hash_value(key) & mask;
	Entry *grave = NULL;
	for (;;) {
		Entry *e = &slots[i];
		if (is_empty(e)) {
			if (!is_tombstone(e))
				return grave ? grave : e;
			if (!grave)
				grave = e;
		} else if (values_equal(e->key, key)) {
			return e;
		}
		i = (i + 1) & mask;
	}
}

static void grow(Table *t)
{
	int cap = t->cap < 8 ? 8 : t->cap * 2;
	Entry *slots = calloc((size_t)cap, sizeof(Entry));
	if (!slots)
		fatal("out of memory");
	t->count = 0;
	for (int i = 0; i < t->cap; i++) {
		Entry *old = &t->slots[i];
		if (is_empty(old))
			continue;
		Entry *e = find(slots, cap, old->key);
		*e = *old;
		t->count++;
	}
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
}

int table_get(Table *t, Value key, Value *out)
{
	if (t->live == 0)
		return 0;
	Entry *e = find(t->slots, t->cap, key);
	if (is_empty(e))
		return 0;
	*out = e->val;
	return 1;
}

/* table_slot returns the value slot of key, adding key with a nil value
 * when it is missing. The pointer is valid until the next insertion. */
Value *table_slot(Table *t, Value key)
{
	if ((t->count + 1) * MAX_LOAD_DEN > t->cap * MAX_LOAD_NUM)
		grow(t);
	Entry *e = find(t->slots, t->cap, key);
	if (is_empty(e)) {
		if (!is_tombstone(e))
			t->count++;
		t->live++;
		e->key = key;
		e->val = nil_value();
	}
	return &e->val;
}

int table_set(Table *t, Value key, Value val)
{
	int before = t->live;
	*table_slot(t, key) = val;
	return t->live != before;
}

int table_delete(Table *t, Value key)
{
	if (t->live == 0)
		return 0;
	Entry *e = find(t->slots, t->cap, key);
	if (is_empty(e))
		return 0;
	e->key = nil_value();
	e->val = bool_value(1);
	t->live--;
	return 1;
}

/* table_find_string looks a string up by its bytes, for interning. */
ObjString *table_find_string(Table *t, const char *s, size_t len, uint32_t hash)
{
	if (t->live == 0)
		return NULL;
	uint32_t mask = (uint32_t)t->cap - 1;
	uint32_t i = hash & mask;
	for (;;) {
		Entry *e = &t->slots[i];
		if (is_empty(e)) {
			if (!is_tombstone(e))
				return NULL;
		} else {
			ObjString *k = (ObjString *)e->key.as.o;
			if (k->hash == hash && k->len == len && memcmp(k->chars, s, len) == 0)
				return k;
		}
		i = (i + 1) & mask;
	}
}

/* table_remove_unmarked drops the keys the collector is about to free:
 * the intern set holds its strings weakly. */
void table_remove_unmarked(Table *t)
{
	for (int i = 0; i < t->cap; i++) {
		Entry *e = &t->slots[i];
		if (!is_empty(e) && e->key.kind == V_OBJ && !e->key.as.o->marked) {
			e->key = nil_value();
			e->val = bool_value(1);
			t->live--;
		}
	}
}

/* table_next iterates: it returns the index after the next live entry at
 * or after i and fills key and val, or -1 at the end. */
int table_next(Table *t, int i, Value *key, Value *val)
{
	for (; i < t->cap; i++) {
		Entry *e = &t->slots[i];
		if (!is_empty(e)) {
			*key = e->key;
			*val = e->val;
			return i + 1;
		}
	}
	return -1;
}
