/*
 * dladdr.c - names addresses the way backtrace_symbols does, for the tests
 * of symbols added to .dynsym (build with -rdynamic).
 *
 *   dladdr ADDR...   for each link-time address, prints
 *                    "ADDR NAME+0xOFF" from dladdr (after adding the load
 *                    bias), or "ADDR ?" when dladdr finds no symbol
 *
 * It first prints whether dlsym finds the function lookup at its own
 * address: a symbol added for a copy elsewhere must not capture lookups.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

static ElfW(Addr) bias;

static int first(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	bias = info->dlpi_addr; /* the main program comes first */
	return 1;
}

__attribute__((noinline)) int lookup(int x)
{
	return x + 1;
}

int main(int argc, char **argv)
{
	dl_iterate_phdr(first, NULL);
	void *self = dlopen(NULL, RTLD_NOW);
	void *f = self ? dlsym(self, "lookup") : NULL;
	printf("dlsym %s\n", f == (void *)lookup ? "original" : "other");
	for (int i = 1; i < argc; i++) {
		Dl_info info;
		char *a = (char *)(bias + strtoull(argv[i], NULL, 0));
		if (dladdr(a, &info) && info.dli_sname)
			printf("%s %s+%#lx\n", argv[i], info.dli_sname, (unsigned long)(a - (char *)info.dli_saddr));
		else
			printf("%s ?\n", argv[i]);
	}
	return lookup(0) - 1;
}
