/* sibling.c - runs the program "blpp-sibling-tool" from the directory of
 * its own executable, as ocamlmktop.opt runs ocamlc and a compiler driver
 * its passes, and prints what it printed (decision 170). */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	char self[4096], cmd[4200];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n < 0)
		return 2;
	self[n] = 0;
	snprintf(cmd, sizeof cmd, "%s/%s", dirname(self), "blpp-sibling-tool");
	execl(cmd, "blpp-sibling-tool", (char *)NULL);
	perror(cmd);
	return 1;
}
