/* selflib runs libselfpath's check in its DT_NEEDED copy, then dlopen's
 * the plugin at argv[1] and, when given, the same file again through the
 * other path argv[2] (a link): the loader maps a file once, so the second
 * dlopen must return the first handle, as it does without blpp. */
#include <dlfcn.h>
#include <stdio.h>

int selfpath_check(const char *who);

static void *open_plugin(const char *path)
{
	void *h = dlopen(path, RTLD_NOW);
	if (!h) {
		printf("dlopen %s: %s\n", path, dlerror());
		return 0;
	}
	int (*check)(const char *) = (int (*)(const char *))dlsym(h, "selfpath_check");
	if (!check || check("plugin") != 0)
		return 0;
	return h;
}

int main(int argc, char **argv)
{
	int bad = selfpath_check("needed");
	if (argc > 1) {
		void *h = open_plugin(argv[1]);
		bad |= !h;
		if (argc > 2) {
			void *h2 = open_plugin(argv[2]);
			printf("same handle: %s\n", h && h == h2 ? "yes" : "no");
			bad |= !h2 || h != h2;
		}
	}
	return bad;
}
