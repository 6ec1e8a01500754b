//go:build ignore

/*
 * blpp_pfile.c: the profile's file: its name from the template (%p, %h, %%; a fork
 * child's own), the writer's lock, the files it writes in place (a
 * device or FIFO), waiting for threads mid-update, and the MODULES
 * section's list of the process's modules (decision 81).
 *
 * Part of the runtime's unity build (blpp_rt.c), before blpp_writer.c.
 * Async-signal-safe, as the writer is.
 */

/* put appends s (len bytes) to the name being built in out (cap bytes);
 * 0 when it does not fit. */
static int put(char *out, u64 cap, u64 *n, const char *s, u64 len)
{
	if (*n + len + 1 > cap)
		return 0;
	mem_copy(out + *n, s, len);
	*n += len;
	out[*n] = 0;
	return 1;
}

/*
 * profile_name expands the template into out (cap bytes): %p is the pid,
 * %h the host name, %% a percent sign (set_template took %c out). A fork
 * child (pid differs from the one blpp_init saw) whose template has no %p
 * appends ".<pid>", so it never overwrites its parent's profile.
 */
static int profile_name(u64 pid, char *out, u64 cap)
{
	char num[24], *p = utoa(num + sizeof(num), pid);
	u64 plen = (u64)(num + sizeof(num) - p), n = 0;
	int has_pid = 0;
	out[0] = 0;
	for (const char *s = rt.tmpl; *s; s++) {
		int ok;
		if (s[0] == '%' && s[1] == 'p') {
			ok = put(out, cap, &n, p, plen);
			has_pid = 1;
			s++;
		} else if (s[0] == '%' && s[1] == 'h') {
			char uts[6 * 65];
			const char *host = "localhost";
			if (!failed(sc1(SYS_uname, uts))) {
				uts[2 * 65 - 1] = 0;
				host = uts + 65; /* struct utsname.nodename */
			}
			ok = put(out, cap, &n, host, str_len(host));
			s++;
		} else if (s[0] == '%' && s[1] == '%') {
			ok = put(out, cap, &n, "%", 1);
			s++;
		} else {
			ok = put(out, cap, &n, s, 1);
		}
		if (!ok)
			return 0;
	}
	return pid == rt.init_pid || has_pid || (put(out, cap, &n, ".", 1) && put(out, cap, &n, p, plen));
}

/* profile_names expands the template into rt.name and the temporary
 * file's name, "<name>.tmp.<pid>", into rt.tmp. */
static int profile_names(u64 pid)
{
	char num[24], *p = utoa(num + sizeof(num), pid);
	u64 plen = (u64)(num + sizeof(num) - p), n;
	if (!profile_name(pid, rt.name, sizeof(rt.name)))
		return 0;
	n = str_len(rt.name);
	if (n + 5 + plen + 1 > sizeof(rt.tmp))
		return 0;
	mem_copy(rt.tmp, rt.name, n);
	mem_copy(rt.tmp + n, ".tmp.", 5);
	mem_copy(rt.tmp + n + 5, p, plen);
	rt.tmp[n + 5 + plen] = 0;
	return 1;
}

static int lock_writer(u64 tid, int wait)
{
	for (int i = 0;; i++) {
		u64 cur;
		if (CAS(&rt.write_lock, 0, tid))
			return 1;
		cur = LOAD(&rt.write_lock);
		if (cur == tid || !wait || i >= 2000)
			return 0;
		struct {
			long s, ns;
		} ts = {0, 1000000};
		sc2(SYS_nanosleep, &ts, 0);
	}
}

/*
 * write_profile writes the whole profile to "<name>.tmp.<pid>" and renames
 * it to <name>. why is 0 (exit), BLPP_FLAG_FATAL_SIGNAL or
 * BLPP_FLAG_DUMP_SIGNAL; wait says whether to wait (a while) for another
 * thread's write to finish rather than give up.
 */
/*
 * special_file: path exists and is not a regular file (a device such as
 * /dev/null, a FIFO). A profile is written into it in place: renaming the
 * temporary file over it would replace the device (BLPP_PROFILE=/dev/null
 * run as root). st_mode is at byte 24 of the x86-64 struct stat.
 */
static int special_file(const char *path)
{
	u64 st[18];
	if (failed(sc2(SYS_stat, path, st)))
		return 0;
	return ((u32)st[3] & 0170000) != 0100000;
}

static int maps_path(u64 addr, char *out, u64 cap); /* blpp_start.c */

/* thread_waits says whether thread tid of this process sleeps in the
 * kernel (state S or D in /proc/self/task/TID/stat [proc(5)]), so that its
 * shadow frames stay as they are while the writer reads them. */
static int thread_waits(u64 tid)
{
	char path[64] = "/proc/self/task/", num[24], buf[512], *d = utoa(num + sizeof(num), tid);
	u64 n = str_len(path);
	long fd, r;
	while (d < num + sizeof(num) && n < sizeof(path) - 8)
		path[n++] = *d++;
	mem_copy(path + n, "/stat", 6);
	if (failed(fd = sc3(SYS_open, path, O_RDONLY | O_CLOEXEC, 0)))
		return 0;
	r = sc3(SYS_read, fd, buf, sizeof(buf) - 1);
	sc1(SYS_close, fd);
	if (failed(r) || r <= 0)
		return 0;
	/* "tid (comm) S ...": the state follows the last ')'. */
	for (long i = r - 1; i > 0; i--)
		if (buf[i] == ')')
			return i + 2 < r && (buf[i + 2] == 'S' || buf[i + 2] == 'D');
	return 0;
}

/*
 * write_modules encodes the MODULES section (decision 81): per registered
 * module its tag, flags, load bias, file and build-id. A module whose
 * DT_FINI has run and whose file is no longer mapped where it was was
 * unloaded by dlclose: its file is the one mod_keep noted.
 */
static void write_modules(struct obuf *out)
{
	u64 n = 0;
	char path[512];
	for (u64 tag = 0; tag <= BLPP_MAX_MODULE_TAG; tag++)
		n += LOAD(&rt.mods[tag]) != 0;
	ob_uv(out, n);
	for (u64 tag = 0; tag <= BLPP_MAX_MODULE_TAG; tag++) {
		struct mod *m = LOAD(&rt.mods[tag]);
		u64 flags = tag == 0 ? BLPP_MODULE_FLAG_EXECUTABLE : 0;
		int mapped;
		if (!m)
			continue;
		/* The module whose exit hook writes this profile is where
		 * mod_keep found it a moment ago: one read of
		 * /proc/self/maps fewer (decision 136). */
		if (m == LOAD(&rt.just_kept) && m->path[0]) {
			mem_copy(path, m->path, sizeof(path));
			mapped = 1;
		} else {
			mapped = maps_path(m->cfg, path, sizeof(path));
		}
		if (LOAD(&m->kept) && (!mapped || !str_eq(path, m->path))) {
			flags |= BLPP_MODULE_FLAG_UNLOADED;
			mem_copy(path, m->path, sizeof(path));
		}
		ob_uv(out, tag);
		ob_uv(out, flags);
		ob_uv(out, m->bias);
		ob_str(out, path);
		ob_uv(out, m->build_id_len);
		ob_put(out, m->build_id, m->build_id_len);
	}
}
