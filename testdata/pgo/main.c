/* tinyvm SCRIPT [SCALE]: compiles and runs SCRIPT; SCALE (default 1)
 * becomes the global SCALE, which the workload scripts use to size
 * their work. */
#include <stdio.h>
#include <stdlib.h>

#include "vm.h"

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(66);
	}
	size_t cap = 1 << 16, n = 0;
	char *buf = xrealloc(NULL, cap);
	for (;;) {
		size_t got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
		if (got == 0)
			break;
		if (n + 1 == cap) {
			cap *= 2;
			buf = xrealloc(buf, cap);
		}
	}
	fclose(f);
	buf[n] = '\0';
	return buf;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: tinyvm SCRIPT [SCALE]\n");
		return 64;
	}
	char *src = read_file(argv[1]);
	lib_install();
	ObjFunc *fn = compile(src);
	if (!fn)
		return 65;
	gc_push_root(obj_value(fn));
	/* SCALE is defined by a one-line script run before the real one. */
	char pre[64];
	snprintf(pre, sizeof pre, "let SCALE = %lld;", argc == 3 ? atoll(argv[2]) : 1LL);
	vm_run(compile(pre));
	int rc = vm_run(fn);
	free(src);
	return rc;
}
