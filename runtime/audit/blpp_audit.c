//go:build ignore

/*
 * blpp_audit.c: the rtld auditor that `blpp run` hands the dynamic loader
 * (ld.so --audit, rtld-audit(7)), so that a program loads the instrumented
 * copy of every shared object it opens, DT_NEEDED or dlopen'ed, by name or
 * by absolute path (decision 82). The loader calls la_objsearch with each
 * name it is about to try; for a file path that the run's map lists, the
 * auditor answers the instrumented copy's path instead (the copy's link in
 * a mirror of the original's place, decision 109), and for the bare name of
 * a library blpp run prepared, that path at once. A path the map does not
 * list (a module dlopen'ed by an absolute path, Python's extension modules)
 * is the copy the auditor already gave for the same file by another path,
 * or is rewritten there and then: the auditor runs blpp, which prints the
 * copy's path, and remembers it.
 *
 * The map is the file "map" in the auditor's own directory:
 *
 *   blpp\t/path/to/blpp\targ\targ...      (how to rewrite an object: blpp ARGS --module-tag N ORIG)
 *   used\tN,N,...                          (module tags taken)
 *   /original/path\t/instrumented/copy     (one line per object)
 *
 * Freestanding: no libc (the auditor runs in its own link namespace, before
 * the program's libc exists), raw system calls, static buffers. Anything
 * that fails leaves the name as the loader gave it: the object then runs
 * uninstrumented.
 */

typedef unsigned long u64;
typedef long s64;
typedef unsigned int u32;

#define EXPORT __attribute__((visibility("default")))

enum { SYS_read = 0, SYS_write = 1, SYS_open = 2, SYS_close = 3, SYS_stat = 4, SYS_fstat = 5, SYS_rt_sigaction = 13, SYS_pipe = 22, SYS_dup2 = 33, SYS_fork = 57,
       SYS_execve = 59, SYS_exit = 60, SYS_wait4 = 61, SYS_readlink = 89 };

static s64 sc(s64 n, s64 a, s64 b, s64 c, s64 d)
{
	s64 r;
	register s64 r10 __asm__("r10") = d;
	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
	return r;
}

static u64 slen(const char *s)
{
	u64 n = 0;
	while (s[n])
		n++;
	return n;
}

static int seq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

enum { MAP_MAX = 1 << 20, ENT_MAX = 8192, ARG_MAX = 64 };

static char text[MAP_MAX];  /* the map file, lines split in place */
static u64 ntext;
static char extra[MAP_MAX]; /* paths learnt from blpp during the run */
static u64 nextra;
static struct {
	const char *orig, *copy;
	/* The files orig and copy name (device, inode; all ones for none),
	 * read when same_file first needs them (known). */
	u64 id[2][2];
	int known;
} ents[ENT_MAX];
static u64 nents;
static char *blpp_argv[ARG_MAX + 4];
static u64 nargs;
static u64 next_tag;
static unsigned char used[2048]; /* module tags taken */
static char dir[4096];
static int loaded;

/* own_dir finds this file's directory from /proc/self/maps: the mapping
 * that holds la_version. */
unsigned int la_version(unsigned int v);
static int own_dir(void)
{
	static char buf[1 << 16];
	u64 at = (u64)&la_version, n = 0;
	s64 fd = sc(SYS_open, (s64) "/proc/self/maps", 0, 0, 0), r;
	if (fd < 0)
		return 0;
	while (n < sizeof(buf) - 1 && (r = sc(SYS_read, fd, (s64)(buf + n), (s64)(sizeof(buf) - 1 - n), 0)) > 0)
		n += (u64)r;
	sc(SYS_close, fd, 0, 0, 0);
	buf[n] = 0;
	for (char *l = buf; *l;) {
		char *e = l, *p;
		u64 lo = 0, hi = 0;
		while (*e && *e != '\n')
			e++;
		for (p = l; *p && *p != '-'; p++)
			lo = lo * 16 + (u64)(*p <= '9' ? *p - '0' : *p - 'a' + 10);
		for (p++; *p && *p != ' '; p++)
			hi = hi * 16 + (u64)(*p <= '9' ? *p - '0' : *p - 'a' + 10);
		if (lo <= at && at < hi) {
			char *path = 0, *slash = 0;
			for (p = l; p < e; p++)
				if (*p == '/' && !path)
					path = p;
			if (!path)
				return 0;
			for (p = path; p < e; p++)
				if (*p == '/')
					slash = p;
			if ((u64)(slash - path) + 1 >= sizeof(dir))
				return 0;
			for (p = path; p < slash; p++)
				dir[p - path] = *p;
			dir[slash - path] = 0;
			return 1;
		}
		l = *e ? e + 1 : e;
	}
	return 0;
}

static void load(void)
{
	char name[4200];
	u64 n = slen(dir);
	s64 fd, r;
	loaded = 1;
	if (!own_dir())
		return;
	n = slen(dir);
	for (u64 i = 0; i < n; i++)
		name[i] = dir[i];
	const char *m = "/map";
	for (u64 i = 0; m[i]; i++)
		name[n + i] = m[i];
	name[n + 4] = 0;
	if ((fd = sc(SYS_open, (s64)name, 0, 0, 0)) < 0)
		return;
	while (ntext < sizeof(text) - 1 && (r = sc(SYS_read, fd, (s64)(text + ntext), (s64)(sizeof(text) - 1 - ntext), 0)) > 0)
		ntext += (u64)r;
	sc(SYS_close, fd, 0, 0, 0);
	text[ntext] = 0;
	for (char *l = text; *l;) {
		char *e = l, *f[ARG_MAX + 2];
		u64 nf = 0;
		while (*e && *e != '\n')
			e++;
		if (*e)
			*e++ = 0;
		f[nf++] = l;
		for (char *p = l; *p; p++)
			if (*p == '\t') {
				*p = 0;
				if (nf < ARG_MAX + 2)
					f[nf++] = p + 1;
			}
		if (seq(f[0], "blpp") && nf >= 2) {
			for (u64 i = 1; i < nf && nargs < ARG_MAX; i++)
				blpp_argv[nargs++] = f[i];
		} else if (seq(f[0], "used") && nf == 2) {
			u64 v = 0;
			for (const char *p = f[1];; p++) {
				if (*p >= '0' && *p <= '9') {
					v = v * 10 + (u64)(*p - '0');
					continue;
				}
				if (v < sizeof(used))
					used[v] = 1;
				v = 0;
				if (!*p)
					break;
			}
		} else if (f[0][0] == '/' && nf == 2 && nents < ENT_MAX) {
			ents[nents].orig = f[0];
			ents[nents].copy = f[1];
			nents++;
		}
		l = e;
	}
}

static char *utoa(char *end, u64 v)
{
	*--end = 0;
	do
		*--end = (char)('0' + v % 10);
	while (v /= 10);
	return end;
}

/* rewrite runs `blpp ARGS --module-tag N orig` and returns the path it
 * prints (the instrumented copy), or 0. */
static const char *rewrite(const char *orig)
{
	static char tagbuf[24];
	char out[4096];
	char *argv[ARG_MAX + 8], *envp[1] = {0};
	s64 p[2] = {0}, pid, r;
	int fds[2];
	u64 n = 0, a = 0;
	/* The tag follows from the file's name, as blpp run's own choice for
	 * the start libraries does (FNV-1a 32, 1 + h % 2047, the next free one
	 * on a clash), so the copy in the cache serves the next run too. */
	{
		const char *b = orig;
		u32 h = 2166136261u;
		for (const char *p = orig; *p; p++)
			if (*p == '/')
				b = p + 1;
		for (; *b; b++)
			h = (h ^ (unsigned char)*b) * 16777619u;
		next_tag = 1 + h % 2047;
		for (u64 i = 0; i < 2047 && used[next_tag]; i++)
			next_tag = next_tag % 2047 + 1;
	}
	if (!nargs || used[next_tag] || nents >= ENT_MAX)
		return 0;
	for (u64 i = 0; i < nargs; i++)
		argv[a++] = blpp_argv[i];
	argv[a++] = "--module-tag";
	argv[a++] = utoa(tagbuf + sizeof(tagbuf), next_tag);
	argv[a++] = (char *)orig;
	argv[a] = 0;
	if (sc(SYS_pipe, (s64)fds, 0, 0, 0) < 0)
		return 0;
	p[0] = fds[0], p[1] = fds[1];
	/* The program must not see a child it never made: one that handles
	 * SIGCHLD (ps aborts on any signal it did not expect) would take
	 * blpp's exit for its own. So SIGCHLD has its default action, which
	 * discards it, from before the fork until the child is reaped, and
	 * then the program's action back. (A child that exits unforked, as a
	 * clone with no exit signal would, is no better: under valgrind such
	 * a copy of the process dumps the counts it inherited.) A child of
	 * the program's own that ends in that window is reaped as usual; only
	 * its signal is lost. */
	u64 dfl[4] = {0}, old[4] = {0}; /* struct kernel_sigaction: handler, flags, restorer, mask */
	int restore = sc(SYS_rt_sigaction, 17 /* SIGCHLD */, (s64)dfl, (s64)old, 8) == 0;
	pid = sc(SYS_fork, 0, 0, 0, 0);
	if (pid == 0) {
		sc(SYS_dup2, p[1], 1, 0, 0);
		sc(SYS_close, p[0], 0, 0, 0);
		sc(SYS_execve, (s64)argv[0], (s64)argv, (s64)envp, 0);
		sc(SYS_exit, 127, 0, 0, 0);
	}
	sc(SYS_close, p[1], 0, 0, 0);
	if (pid < 0) {
		sc(SYS_close, p[0], 0, 0, 0);
		if (restore)
			sc(SYS_rt_sigaction, 17, (s64)old, 0, 8);
		return 0;
	}
	while (n < sizeof(out) - 1 && (r = sc(SYS_read, p[0], (s64)(out + n), (s64)(sizeof(out) - 1 - n), 0)) != 0) {
		if (r == -4) /* EINTR */
			continue;
		if (r < 0)
			break;
		n += (u64)r;
	}
	sc(SYS_close, p[0], 0, 0, 0);
	int status = 0;
	while ((r = sc(SYS_wait4, pid, (s64)&status, 0, 0)) == -4)
		;
	if (restore)
		sc(SYS_rt_sigaction, 17, (s64)old, 0, 8);
	if (r < 0 || status != 0)
		return 0;
	while (n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
		n--;
	if (!n || out[0] != '/' || nextra + n + 1 > sizeof(extra))
		return 0;
	char *copy = extra + nextra;
	for (u64 i = 0; i < n; i++)
		copy[i] = out[i];
	copy[n] = 0;
	nextra += n + 1;
	used[next_tag++] = 1;
	return copy;
}

/* blpp run starts the program with entries added to its environment:
 *
 *   LD_LIBRARY_PATH=DIR/lib[:X]  LD_AUDIT=[Y:]DIR/blpp_audit.so  [BLPP_AUDIT_PAD=]  BLPP_AUDIT_ENV=CODES:EXE
 *
 * EXE is the file blpp run starts. A process that runs another file (a
 * shell script between blpp and the program, valgrind's wrapper) is not
 * the program: there the auditor does nothing at all (inactive), neither
 * to the environment, which the program must still get, nor to the
 * objects it loads, which it finds past the library links (la_objsearch
 * skips them), so that it runs as if blpp were not there.
 *
 * and, where the program's start-up libraries need more static TLS than
 * glibc's surplus holds under an auditor, GLIBC_TUNABLES=[Z:]TUNABLE=N
 * (decision 124). CODES has a letter for each other entry: 'L', 'A' or
 * 'T' for a variable the program's own environment did not have (the
 * entry goes), 'l', 'a' or 't' for one it had (X, Y or Z: the entry gets
 * the program's value back), 'P' for
 * the pad, which makes the entries that go, the control entry among them,
 * an even number, and 'B' for the BLPP_PROFILE entry blpp run adds for
 * the runtime (the last one: it goes, and the runtime, which finds the
 * environment moved, reads it from /proc/self/environ, decision 140),
 * and 'F' for BLPP_FOLLOW, the run's directory, which the runtime reads
 * there too when the program execs (decision 167).
 * The loader has read these variables by the time it runs this
 * constructor (it parses them before it loads auditors) and gives it
 * the array the program's libc takes as environ: so the program and its
 * children see their own environment (decision 105). The entries are
 * found by name, wherever they are: something between blpp and the
 * program (valgrind's wrapper) may have moved them or added its own.
 *
 * Removing entries must not move the auxiliary vector, which follows the
 * environment's terminating null and which some programs find by walking
 * past it (the Go runtime does): the others move down, and the freed
 * slots become the null and (AT_IGNORE, 0) pairs in front of the real
 * vector. Only pointers change; the strings stay where the kernel put
 * them. Anything unexpected leaves the environment as it is. */
static char envbuf[3][8192];

static const char *after(const char *s, const char *prefix)
{
	while (*prefix)
		if (*s++ != *prefix++)
			return 0;
	return s;
}

/* fix returns the entry that gives the program back its own value of the
 * variable name (e.g. "LD_LIBRARY_PATH="), whose blpp part is ours, at the
 * front (front) or at the back; 0 if e is not such an entry. */
static char *fix(const char *e, const char *name, const char *ours, int front, char *buf)
{
	const char *v = after(e, name), *p;
	u64 n = 0, nn = slen(name), no = slen(ours), nv;
	if (!v)
		return 0;
	nv = slen(v);
	if (front) {
		if (!(p = after(v, ours)) || *p != ':')
			return 0;
		p++;
	} else {
		if (nv < no + 1 || !seq(v + nv - no, ours) || v[nv - no - 1] != ':')
			return 0;
		p = v;
	}
	nv -= no + 1;
	if (nn + nv + 1 > sizeof(envbuf[0]))
		return 0;
	for (u64 i = 0; i < nn; i++)
		buf[n++] = name[i];
	for (u64 i = 0; i < nv; i++)
		buf[n++] = p[i];
	buf[n] = 0;
	return buf;
}

/* The GLIBC_TUNABLES item blpp run adds (wholerun.TunableStaticTLS). */
#define TUNABLE "glibc.rtld.optional_static_tls="

/* drop_tunable returns the entry e (GLIBC_TUNABLES=Z:TUNABLE=N) without
 * its last item, which must be ours; 0 if it is not such an entry. */
static char *drop_tunable(const char *e, char *buf)
{
	const char *name = "GLIBC_TUNABLES=", *v = after(e, name);
	u64 n, colon = 0, found = 0;
	if (!v)
		return 0;
	for (u64 i = 0; v[i]; i++)
		if (v[i] == ':') {
			colon = i;
			found = 1;
		}
	if (!found || !after(v + colon + 1, TUNABLE))
		return 0;
	n = slen(name);
	if (n + colon + 1 > sizeof(envbuf[0]))
		return 0;
	for (u64 i = 0; i < n; i++)
		buf[i] = name[i];
	for (u64 i = 0; i < colon; i++)
		buf[n + i] = v[i];
	buf[n + colon] = 0;
	return buf;
}

/* entry is the index of the last entry of envp[0..n) that begins with
 * name, or n. */
static u64 entry(char **envp, u64 n, const char *name)
{
	for (u64 i = n; i-- > 0;)
		if (after(envp[i], name))
			return i;
	return n;
}

enum { ENV_MAX = 1 << 16 };
static unsigned char gone[ENV_MAX];
static int inactive; /* this process is not the program blpp run started */

/* is_exe says whether this process runs the file path names. */
static int is_exe(const char *path, u64 n)
{
	static char self[4096];
	s64 r = sc(SYS_readlink, (s64) "/proc/self/exe", (s64)self, sizeof(self), 0);
	if (r < 0 || (u64)r != n)
		return 0;
	for (u64 i = 0; i < n; i++)
		if (self[i] != path[i])
			return 0;
	return 1;
}

__attribute__((constructor)) static void restore_env(int argc, char **argv, char **envp)
{
	char lib[4200], aud[4200];
	const char *codes, *v;
	u64 n = 0, d, ctl, removed = 1, w;
	(void)argc;
	(void)argv;
	if (!envp || !own_dir())
		return;
	while (envp[n])
		n++;
	if (n > ENV_MAX || (ctl = entry(envp, n, "BLPP_AUDIT_ENV=")) == n)
		return;
	codes = after(envp[ctl], "BLPP_AUDIT_ENV=");
	{
		u64 nc = 0;
		while (codes[nc] && codes[nc] != ':')
			nc++;
		if (codes[nc] == ':' && !is_exe(codes + nc + 1, slen(codes + nc + 1))) {
			inactive = 1;
			return;
		}
		if (nc > 6)
			return;
	}
	d = slen(dir);
	if (d + 16 > sizeof(lib))
		return;
	for (u64 i = 0; i < d; i++)
		lib[i] = aud[i] = dir[i];
	const char *ls = "/lib", *as = "/blpp_audit.so";
	for (u64 i = 0; i <= 4; i++)
		lib[d + i] = ls[i];
	for (u64 i = 0; i <= 14; i++)
		aud[d + i] = as[i];
	char *put[6] = {0};
	u64 at[6];
	for (u64 i = 0; codes[i] && codes[i] != ':'; i++) {
		char c = codes[i], *e;
		const char *name = "BLPP_AUDIT_PAD=";
		if (c == 'L' || c == 'l')
			name = "LD_LIBRARY_PATH=";
		else if (c == 'A' || c == 'a')
			name = "LD_AUDIT=";
		else if (c == 'T' || c == 't')
			name = "GLIBC_TUNABLES=";
		else if (c == 'B')
			name = "BLPP_PROFILE=";
		else if (c == 'F')
			name = "BLPP_FOLLOW=";
		if ((at[i] = entry(envp, n, name)) == n)
			return;
		e = envp[at[i]];
		v = after(e, name);
		switch (c) {
		case 'L': /* ours, perhaps with more after it */
			if (!after(v, lib) || (v[slen(lib)] && v[slen(lib)] != ':'))
				return;
			break;
		case 'A':
			if (!seq(v, aud))
				return;
			break;
		case 'T': /* ours alone */
			if (!after(v, TUNABLE))
				return;
			break;
		case 'P':
		case 'B':
		case 'F':
			break;
		case 'l':
			if (!(put[i] = fix(e, "LD_LIBRARY_PATH=", lib, 1, envbuf[0])))
				return;
			break;
		case 'a':
			if (!(put[i] = fix(e, "LD_AUDIT=", aud, 0, envbuf[1])))
				return;
			break;
		case 't':
			if (!(put[i] = drop_tunable(e, envbuf[2])))
				return;
			break;
		default:
			return;
		}
	}
	/* Two letters naming one entry would make the count wrong. */
	gone[ctl] = 1;
	for (u64 i = 0; codes[i] && codes[i] != ':'; i++)
		if (!put[i] && !gone[at[i]]) {
			gone[at[i]] = 1;
			removed++;
		}
	if (removed % 2) {
		for (u64 i = 0; i < n; i++)
			gone[i] = 0;
		return;
	}
	for (u64 i = 0; codes[i] && codes[i] != ':'; i++)
		if (put[i])
			envp[at[i]] = put[i];
	w = 0;
	for (u64 i = 0; i < n; i++)
		if (!gone[i])
			envp[w++] = envp[i];
	envp[w] = 0;
	for (u64 j = w + 1; j <= n; j++)
		envp[j] = (j - w) % 2 ? (char *)1 /* AT_IGNORE */ : 0;
}

EXPORT unsigned int la_version(unsigned int v)
{
	return v >= 1 ? 1 : 0;
}

/* file_id reads the device and inode of the file fd (fd >= 0) or path
 * names into id; 0 if it cannot. */
static int file_id(s64 fd, const char *path, u64 id[2])
{
	u64 st[18]; /* struct stat: st_dev, st_ino first */
	s64 r = fd >= 0 ? sc(SYS_fstat, fd, (s64)st, 0, 0) : sc(SYS_stat, (s64)path, (s64)st, 0, 0);
	if (r < 0)
		return 0;
	id[0] = st[0], id[1] = st[1];
	return 1;
}

/* same_file returns the copy of the object whose original (or copy) is
 * the file id, 0 if none. One file reached by another path (a link in a
 * mirror, /lib for /usr/lib) is one object: the loader maps a file once
 * and a second dlopen of it returns the first, so it must be handed the
 * same copy, not a second one made under another tag (decision 109). */
static const char *same_file(const u64 id[2])
{
	for (u64 i = 0; i < nents; i++) {
		if (!ents[i].known) {
			int o = file_id(-1, ents[i].orig, ents[i].id[0]), c = file_id(-1, ents[i].copy, ents[i].id[1]);
			if (!o)
				ents[i].id[0][0] = ents[i].id[0][1] = ~0ul;
			if (!c)
				ents[i].id[1][0] = ents[i].id[1][1] = ~0ul;
			ents[i].known = 1;
		}
		for (int k = 0; k < 2; k++)
			if (ents[i].id[k][0] == id[0] && ents[i].id[k][1] == id[1])
				return ents[i].copy;
	}
	return 0;
}

/* keep copies s into extra and returns the copy, 0 without room. */
static const char *keep(const char *s)
{
	u64 n = slen(s);
	if (nextra + n + 1 > sizeof(extra))
		return 0;
	char *k = extra + nextra;
	for (u64 i = 0; i <= n; i++)
		k[i] = s[i];
	nextra += n + 1;
	return k;
}

/* by_name returns the object blpp run prepared for the bare name the
 * program asks for (its link DIR/lib/NAME), 0 if none. */
static const char *by_name(const char *name)
{
	static char path[4200];
	u64 d = slen(dir), n = slen(name);
	const char *ls = "/lib/";
	if (!d || d + 5 + n + 1 > sizeof(path))
		return 0;
	for (u64 i = 0; i < d; i++)
		path[i] = dir[i];
	for (u64 i = 0; i < 5; i++)
		path[d + i] = ls[i];
	for (u64 i = 0; i <= n; i++)
		path[d + 5 + i] = name[i];
	for (u64 i = 0; i < nents; i++)
		if (seq(ents[i].orig, path))
			return ents[i].copy;
	return 0;
}

enum { LA_SER_ORIG = 1 };

/* LA_SER_ORIG is the name as the program gave it; later calls give the
 * paths the search tries. Only file paths are mapped, and the bare names
 * of the libraries blpp run prepared. */
EXPORT char *la_objsearch(const char *name, unsigned long *cookie, unsigned int flag)
{
	const char *copy;
	(void)cookie;
	if (!loaded)
		load();
	if (inactive) {
		/* Past the library links to the originals. */
		u64 d = slen(dir);
		if (name && d && after(name, dir) && after(name + d, "/lib/"))
			return 0;
		return (char *)name;
	}
	if (!name)
		return 0;
	if (name[0] != '/') {
		/* A library blpp run prepared is named by the path of its copy in
		 * its mirror from the start: the loader keeps a path it finds in
		 * a search (DIR/lib/NAME) as the object's name (l_name, dladdr,
		 * $ORIGIN), but takes a path given for the name itself as is, so
		 * that a library that finds its installation from its own path
		 * finds the original's through the mirror (decision 109). What the
		 * search would have found is that link anyway: DIR/lib comes
		 * first in LD_LIBRARY_PATH. */
		if (flag == LA_SER_ORIG) {
			for (const char *p = name; *p; p++)
				if (*p == '/')
					return (char *)name;
			if ((copy = by_name(name)))
				return (char *)copy;
		}
		return (char *)name;
	}
	for (u64 i = 0; i < nents; i++)
		if (seq(ents[i].orig, name))
			return (char *)ents[i].copy;
	for (u64 i = 0; i < nents; i++)
		if (seq(ents[i].copy, name))
			return (char *)name; /* already a copy */
	{
		u64 id[2];
		s64 fd = sc(SYS_open, (s64)name, 0, 0, 0);
		if (fd < 0)
			return (char *)name; /* the search goes on elsewhere */
		int ok = file_id(fd, 0, id);
		sc(SYS_close, fd, 0, 0, 0);
		copy = ok ? same_file(id) : 0;
	}
	if (!copy && !(copy = rewrite(name)))
		copy = name; /* blpp refused it: it runs as it is */
	/* The name is the caller's string (dlopen's argument), which it may
	 * reuse for another path once dlopen returns: the entry keeps copies
	 * of its own. Without room the object is still answered, not
	 * remembered. */
	const char *o = keep(name), *c = copy == name ? o : copy;
	if (o && c && nents < ENT_MAX) {
		ents[nents].orig = o;
		ents[nents].copy = c;
		nents++;
	}
	return (char *)copy;
}
