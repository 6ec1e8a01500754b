/* selflib runs libselfpath's check in its DT_NEEDED copy, then dlopen's
 * each argument and runs the check of what it opened, named by the
 * argument's base name. The paths go through one buffer, as a JVM's
 * dll_load passes them: the loader's auditor must not keep the caller's
 * string. It prints which argument's handle each one got: the loader
 * maps a file once, so one file by two paths (a link) is one handle, as
 * without blpp. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int selfpath_check(const char *who);

int main(int argc, char **argv)
{
	static char buf[4096];
	void *h[16] = {0};
	int bad = selfpath_check("needed");
	for (int i = 1; i < argc && i < 16; i++) {
		snprintf(buf, sizeof(buf), "%s", argv[i]);
		h[i] = dlopen(buf, RTLD_NOW);
		memset(buf, 0, sizeof(buf));
		if (!h[i]) {
			printf("dlopen %s: %s\n", argv[i], dlerror());
			bad = 1;
			continue;
		}
		int (*check)(const char *) = (int (*)(const char *))dlsym(h[i], "selfpath_check");
		const char *base = strrchr(argv[i], '/');
		bad |= !check || check(base ? base + 1 : argv[i]) != 0;
	}
	printf("handles:");
	for (int i = 1; i < argc && i < 16; i++) {
		int first = i;
		for (int j = 1; j < i; j++)
			if (h[j] == h[i]) {
				first = j;
				break;
			}
		printf(" %d", first);
	}
	printf("\n");
	return bad;
}
