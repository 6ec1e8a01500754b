//go:build ignore

/*
 * blpp runtime: following an exec under blpp run (decision 167).
 *
 * An image replaced by execve is profiled up to the exec (blpp_rt_leave
 * writes its profile); the program it execs would run uninstrumented. In
 * a process blpp run started, the environment the process began with
 * holds BLPP_FOLLOW, the run's directory, where blpp run put a link to
 * itself named "blpp". Before an execve system call of instrumented code,
 * or a call of execve it hooks (blpp_leave kind BLPP_LEAVE_EXECVE), the
 * runtime execs that link
 * instead, as
 *
 *	DIR/blpp __follow-exec SIGNALS PATH ARGV...
 *
 * with the program's own environment, and blpp sets the new program up
 * as blpp run does (its copy, its libraries', a profile of its own) and
 * execs it with ARGV and that environment. The process keeps its pid,
 * its open files, its signal mask: it is one exec more. SIGNALS is two
 * 16-digit hexadecimal masks (bit s-1 for signal s), the signals the
 * process ignores and those it blocks, which blpp, whose own runtime
 * handles most signals and unblocks some, sets again just before its
 * exec: an exec keeps both, and `trap '' PIPE; exec prog` or nohup
 * count on it.
 *
 * An exec whose errors the program would see is left alone, so that
 * what the program learns from a failing exec stays the kernel's: the
 * target must be a regular file this process may execute, without
 * set-user-ID or set-group-ID bits (their privileges would be lost),
 * that starts as an ELF file or a "#!" script; anything else (ENOENT
 * while execvp searches PATH, a text file without "#!" that a shell then
 * runs itself on ENOEXEC) goes to the kernel unchanged. So does every
 * exec when the redirected one fails.
 *
 * Nothing here writes memory outside this stack frame: a vfork child
 * (posix_spawn, system) runs it on its parent's memory.
 */

/* FOLLOW_ARGS is the most arguments an exec may have to be followed: the
 * new argument vector is built on the stack, and posix_spawn's child
 * stack is about 32 KiB more than its own arguments. */
enum { FOLLOW_ARGS = 1024, FOLLOW_DIR = 512 };

/*
 * follow_target says whether the kernel would start the file at path
 * (absolute, or relative to the working directory, as execve takes it)
 * without an error the program could tell from blpp's: a regular file
 * this process may execute, no set-ID bits, beginning with an ELF
 * header or "#!".
 */
static int follow_target(const char *path)
{
	u64 st[18];
	u8 head[4];
	long fd, r;
	u32 mode;

	if (!path || !path[0] || failed(sc2(SYS_stat, path, st)))
		return 0;
	mode = (u32)st[3]; /* st_mode, at byte 24 of the x86-64 struct stat */
	if ((mode & 0170000) != 0100000 || (mode & 06000))
		return 0;
	if (failed(sc2(SYS_access, path, 1 /* X_OK */)))
		return 0;
	fd = sc3(SYS_open, path, O_RDONLY | O_CLOEXEC, 0);
	if (failed(fd))
		return 0;
	r = sc3(SYS_read, fd, head, sizeof(head));
	sc1(SYS_close, fd);
	if (r >= 2 && head[0] == '#' && head[1] == '!')
		return 1;
	return r == 4 && head[0] == 0x7f && head[1] == 'E' && head[2] == 'L' && head[3] == 'F';
}

/* put_hex writes v as 16 hexadecimal digits at out. */
static void put_hex(char *out, u64 v)
{
	for (int i = 15; i >= 0; i--, v >>= 4)
		out[i] = "0123456789abcdef"[v & 15];
}

/* signal_state writes "IGNORED:BLOCKED" (see above) into out, 34 bytes. */
static void signal_state(char *out)
{
	u64 ign = 0, blk = 0;
	for (u64 s = 1; s <= 64; s++) {
		struct ksigaction a;
		if (!failed(sc4(SYS_rt_sigaction, s, 0, &a, 8)) && a.handler == SIG_IGN_H)
			ign |= 1ull << (s - 1);
	}
	if (failed(sc4(SYS_rt_sigprocmask, SIG_BLOCK, 0, &blk, 8)))
		blk = 0;
	put_hex(out, ign);
	out[16] = ':';
	put_hex(out + 17, blk);
	out[33] = 0;
}

/*
 * follow_exec runs just before the execve (system call or call) whose
 * registers the blpp_leave stub saved (regs: rbx, r11, r10, r9, r8, rdi, rsi, rdx,
 * ...): if the process runs under blpp run and the target qualifies, it
 * execs blpp in its place, and returns only when it does not.
 */
static void follow_exec(const u64 *regs)
{
	const char *path = (const char *)regs[5];
	char *const *argv = (char *const *)regs[6];
	char *const *envp = (char *const *)regs[7];
	char exe[FOLLOW_DIR + 8], self[FOLLOW_DIR];
	u64 argc = 0, n;
	long r;

	if (LOAD(&rt.no_follow) || env_value("BLPP_FOLLOW=", exe, FOLLOW_DIR) <= 0 || exe[0] != '/')
		return;
	n = str_len(exe);
	mem_copy(exe + n, "/blpp", 6);
	if (argv)
		while (argv[argc])
			if (++argc > FOLLOW_ARGS)
				return;
	/* A path that names something of this process (its /proc/self,
	 * its descriptors) would name blpp's in blpp: /proc/self/exe (a
	 * program that execs itself) becomes the file it links to, which
	 * blpp takes back to the original; the others go to the kernel. */
	if (prefix(path, "/proc/") || prefix(path, "/dev/fd/")) {
		if (!str_eq(path, "/proc/self/exe"))
			return;
		r = sc3(SYS_readlink, "/proc/self/exe", self, sizeof(self) - 1);
		if (failed(r) || r <= 0 || self[0] != '/')
			return;
		self[r] = 0;
		path = self;
	}
	if (!follow_target(path) || failed(sc2(SYS_access, exe, 1)))
		return;
	const char *nargv[FOLLOW_ARGS + 5];
	char sigs[34];
	signal_state(sigs);
	nargv[0] = exe;
	nargv[1] = "__follow-exec";
	nargv[2] = sigs;
	nargv[3] = path;
	for (u64 i = 0; i < argc; i++)
		nargv[4 + i] = argv[i];
	if (!argc) /* execve(path, NULL or {NULL}, ...): Linux starts it with argc 0 */
		nargv[4 + argc++] = "";
	nargv[4 + argc] = 0;
	sc3(SYS_execve, exe, nargv, envp);
}
