/* A shared library whose constructor calls back into the executable
 * (hook is defined there and exported with -rdynamic): ld.so runs it
 * before the program's entry point, so before blpp's runtime is set up. */
extern int hook(int);
int from_ctor;

__attribute__((constructor)) static void init(void)
{
	for (int i = 0; i < 5; i++)
		from_ctor += hook(i);
}
