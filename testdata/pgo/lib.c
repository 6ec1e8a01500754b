/* Built-in functions. None of them collects garbage (collections happen
 * only at the VM's safe points), so they may allocate freely. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm.h"

static int64_t want_int(Value v, const char *fn)
{
	if (v.kind != V_INT)
		fatal("%s: want an int, got %s", fn, type_name(v));
	return v.as.i;
}

static Value b_len(int argc, Value *argv)
{
	(void)argc;
	Value v = argv[0];
	if (is_obj_type(v, O_STRING))
		return int_value(((ObjString *)v.as.o)->len);
	if (is_obj_type(v, O_LIST))
		return int_value(((ObjList *)v.as.o)->len);
	if (is_obj_type(v, O_MAP))
		return int_value(((ObjMap *)v.as.o)->t.live);
	fatal("len: no length for %s", type_name(v));
}

static Value b_push(int argc, Value *argv)
{
	(void)argc;
	list_push(as_list(argv[0]), argv[1]);
	return argv[0];
}

static Value b_pop(int argc, Value *argv)
{
	(void)argc;
	return list_pop(as_list(argv[0]));
}

static Value b_list(int argc, Value *argv)
{
	(void)argc;
	int64_t n = want_int(argv[0], "list");
	if (n < 0 || n > 1 << 26)
		fatal("list: bad length %lld", (long long)n);
	ObjList *l = new_list((int)n);
	for (int64_t i = 0; i < n; i++)
		l->items[i] = argv[1];
	l->len = (int)n;
	return obj_value(l);
}

static Value b_keys(int argc, Value *argv)
{
	(void)argc;
	ObjMap *m = as_map(argv[0]);
	ObjList *l = new_list(m->t.live);
	Value k, v;
	for (int i = table_next(&m->t, 0, &k, &v); i >= 0; i = table_next(&m->t, i, &k, &v))
		list_push(l, k);
	return obj_value(l);
}

static Value b_has(int argc, Value *argv)
{
	(void)argc;
	Value v;
	return bool_value(table_get(&as_map(argv[0])->t, argv[1], &v));
}

static Value b_del(int argc, Value *argv)
{
	(void)argc;
	return bool_value(table_delete(&as_map(argv[0])->t, argv[1]));
}

static Value b_str(int argc, Value *argv)
{
	(void)argc;
	return obj_value(value_to_string(argv[0]));
}

static Value b_int(int argc, Value *argv)
{
	(void)argc;
	if (argv[0].kind == V_INT)
		return argv[0];
	ObjString *s = as_string(argv[0]);
	int64_t v = 0;
	int neg = 0;
	uint32_t i = 0;
	if (i < s->len && s->chars[i] == '-') {
		neg = 1;
		i++;
	}
	for (; i < s->len && s->chars[i] >= '0' && s->chars[i] <= '9'; i++)
		v = v * 10 + (s->chars[i] - '0');
	return int_value(neg ? -v : v);
}

static Value b_substr(int argc, Value *argv)
{
	(void)argc;
	ObjString *s = as_string(argv[0]);
	int64_t a = want_int(argv[1], "substr"), b = want_int(argv[2], "substr");
	if (a < 0)
		a = 0;
	if (b > s->len)
		b = s->len;
	if (b <= a)
		return obj_value(intern("", 0));
	return obj_value(intern(s->chars + a, (size_t)(b - a)));
}

static Value b_ord(int argc, Value *argv)
{
	(void)argc;
	ObjString *s = as_string(argv[0]);
	if (s->len == 0)
		fatal("ord: empty string");
	return int_value((uint8_t)s->chars[0]);
}

static Value b_chr(int argc, Value *argv)
{
	(void)argc;
	char c = (char)want_int(argv[0], "chr");
	return obj_value(intern(&c, 1));
}

static Value b_type(int argc, Value *argv)
{
	(void)argc;
	return obj_value(intern_cstr(type_name(argv[0])));
}

/* join(list, sep) concatenates the strings of list with sep between. */
static Value b_join(int argc, Value *argv)
{
	(void)argc;
	ObjList *l = as_list(argv[0]);
	ObjString *sep = as_string(argv[1]);
	size_t n = 0;
	for (int i = 0; i < l->len; i++)
		n += as_string(l->items[i])->len + (i ? sep->len : 0);
	char *buf = xrealloc(NULL, n + 1);
	size_t k = 0;
	for (int i = 0; i < l->len; i++) {
		if (i) {
			memcpy(buf + k, sep->chars, sep->len);
			k += sep->len;
		}
		ObjString *s = (ObjString *)l->items[i].as.o;
		memcpy(buf + k, s->chars, s->len);
		k += s->len;
	}
	ObjString *r = intern(buf, k);
	free(buf);
	return obj_value(r);
}

/* split(s, sep) cuts s at each occurrence of the one-character sep. */
static Value b_split(int argc, Value *argv)
{
	(void)argc;
	ObjString *s = as_string(argv[0]);
	ObjString *sep = as_string(argv[1]);
	if (sep->len != 1)
		fatal("split: the separator must be one character");
	ObjList *l = new_list(0);
	uint32_t start = 0;
	for (uint32_t i = 0; i <= s->len; i++) {
		if (i == s->len || s->chars[i] == sep->chars[0]) {
			list_push(l, obj_value(intern(s->chars + start, i - start)));
			start = i + 1;
		}
	}
	return obj_value(l);
}

static Value b_abs(int argc, Value *argv)
{
	(void)argc;
	int64_t v = want_int(argv[0], "abs");
	return int_value(v < 0 ? -v : v);
}

static Value b_min(int argc, Value *argv)
{
	(void)argc;
	int64_t a = want_int(argv[0], "min"), b = want_int(argv[1], "min");
	return int_value(a < b ? a : b);
}

static Value b_max(int argc, Value *argv)
{
	(void)argc;
	int64_t a = want_int(argv[0], "max"), b = want_int(argv[1], "max");
	return int_value(a > b ? a : b);
}

/* hash(v) exposes the table hash, so scripts can build their own tables. */
static Value b_hash(int argc, Value *argv)
{
	(void)argc;
	return int_value(hash_value(argv[0]));
}

static Value b_gc(int argc, Value *argv)
{
	(void)argc;
	(void)argv;
	return int_value((int64_t)gc_live_bytes());
}

void lib_install(void)
{
	static const struct {
		const char *name;
		int arity;
		NativeFn fn;
	} natives[] = {
		{"len", 1, b_len},       {"push", 2, b_push},   {"pop", 1, b_pop},     {"list", 2, b_list},
		{"keys", 1, b_keys},     {"has", 2, b_has},     {"del", 2, b_del},     {"str", 1, b_str},
		{"int", 1, b_int},       {"substr", 3, b_substr}, {"ord", 1, b_ord},   {"chr", 1, b_chr},
		{"type", 1, b_type},     {"join", 2, b_join},   {"split", 2, b_split}, {"abs", 1, b_abs},
		{"min", 2, b_min},       {"max", 2, b_max},     {"hash", 1, b_hash},   {"heap", 0, b_gc},
	};
	for (size_t i = 0; i < sizeof natives / sizeof natives[0]; i++)
		vm_define_native(natives[i].name, natives[i].arity, natives[i].fn);
}
