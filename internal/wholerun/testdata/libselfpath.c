/* libselfpath finds its installation from its own path, as libjvm.so
 * finds JAVA_HOME: dladdr names the file it was loaded from, and the file
 * share/marker three directories above it (PREFIX/lib/sub/libX.so) is
 * read. The library is built twice, as the program's DT_NEEDED library
 * and as a plugin it dlopen's (selflib.c). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* here is this file's own code: selfpath_check's address would be the
 * first definition in the process (the DT_NEEDED library's). */
static void here(void) {}

int selfpath_check(const char *who)
{
	Dl_info di;
	char path[4096], marker[64] = "";
	if (!dladdr((void *)here, &di) || !di.dli_fname)
		return printf("%s: no dladdr\n", who), 1;
	snprintf(path, sizeof(path), "%s", di.dli_fname);
	for (int up = 0; up < 3; up++) {
		char *slash = strrchr(path, '/');
		if (!slash)
			return printf("%s: short path %s\n", who, di.dli_fname), 1;
		*slash = 0;
	}
	strncat(path, "/share/marker", sizeof(path) - strlen(path) - 1);
	FILE *f = fopen(path, "r");
	if (f) {
		if (!fgets(marker, sizeof(marker), f))
			marker[0] = 0;
		marker[strcspn(marker, "\n")] = 0;
		fclose(f);
	}
	printf("%s: path=%s marker=%s\n", who, di.dli_fname, f ? marker : "(none)");
	return f ? 0 : 1;
}
