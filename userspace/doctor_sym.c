// SPDX-License-Identifier: GPL-2.0
/*
 * mrpinctl doctor: call sites, symbolized with elfutils' libdwfl.
 *
 * The module records a pin's call site as user addresses: the syscall's,
 * then return addresses, innermost first.  While the process that pinned
 * lives (and is still the one of that comm: pids are used again), each
 * address is named from its /proc/PID/maps: the object mapped there and the
 * offset into it as addr2line takes it, and, where there is debug info,
 * the function and line.  A return address is looked up at the byte
 * before it, in the call.  The caller is the first return address outside
 * the system's libraries (libc, libibverbs and its providers).
 */
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor.h"

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
};

/* A process's mappings, when it is still the process @comm. */
struct proc_maps {
	Dwfl *dwfl;
	const char *why;	/* no dwfl: why not */
	char exe[4096];
};

/*
 * The mappings of process @pid, to symbolize its addresses, when it is
 * still the process @comm; else no mappings, and why not.  Never NULL.
 */
struct proc_maps *maps_open(uint64_t pid, const char *comm)
{
	struct proc_maps *m = xmalloc(sizeof(*m));
	char path[64], name[64];
	ssize_t n;
	FILE *f;

	m->dwfl = NULL;
	m->why = "the process is gone";
	m->exe[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%llu/comm",
		 (unsigned long long)pid);
	f = pid <= INT32_MAX ? fopen(path, "re") : NULL;
	if (!f)
		return m;
	if (!fgets(name, sizeof(name), f))
		name[0] = '\0';
	fclose(f);
	name[strcspn(name, "\n")] = '\0';
	if (strcmp(name, comm))
		return m;	/* gone, and the pid used again */
	m->why = "its maps could not be read";
	snprintf(path, sizeof(path), "/proc/%llu/exe",
		 (unsigned long long)pid);
	n = readlink(path, m->exe, sizeof(m->exe) - 1);
	m->exe[n > 0 ? n : 0] = '\0';
	m->dwfl = dwfl_begin(&proc_callbacks);
	if (!m->dwfl)
		return m;
	dwfl_report_begin(m->dwfl);
	if (dwfl_linux_proc_report(m->dwfl, (pid_t)pid) ||
	    dwfl_report_end(m->dwfl, NULL, NULL)) {
		dwfl_end(m->dwfl);
		m->dwfl = NULL;
	}
	return m;
}

void maps_close(struct proc_maps *m)
{
	if (m->dwfl)
		dwfl_end(m->dwfl);
	free(m);
}

/* @file of compilation unit @cu, made absolute with its directory. */
static char *cu_path(Dwarf_Die *cu, const char *file)
{
	Dwarf_Attribute attr;
	const char *dir;

	dir = file[0] != '/' ?
	      dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr)) : NULL;
	return dir ? strfmt("%s/%s", dir, file) : xstrdup(file);
}

/*
 * The function at @pc as the source has it, from the DWARF scopes: the
 * innermost function that was not inlined there and, when functions were
 * inlined into it at @pc (ibv_reg_mr() is one), the line of that call.
 */
static void frame_scope(Dwfl_Module *mod, Dwarf_Addr pc, struct frame *fr)
{
	Dwarf_Die *cu, *scopes = NULL, inner;
	Dwarf_Word line = 0, idx = 0;
	Dwarf_Attribute attr;
	Dwarf_Files *files;
	const char *name, *file;
	Dwarf_Addr bias;
	int n, i, inl = -1;
	size_t nfiles;

	cu = dwfl_module_addrdie(mod, pc, &bias);
	n = cu ? dwarf_getscopes(cu, pc - bias, &scopes) : 0;
	/*
	 * Inside an inlined instance, dwarf_getscopes() follows it with the
	 * scopes of its abstract origin: the functions around it are wanted.
	 */
	if (n > 0 && dwarf_tag(&scopes[0]) == DW_TAG_inlined_subroutine) {
		inner = scopes[0];
		free(scopes);
		scopes = NULL;
		n = dwarf_getscopes_die(&inner, &scopes);
	}
	for (i = 0; i < n; i++) {
		if (dwarf_tag(&scopes[i]) == DW_TAG_subprogram)
			break;
		if (dwarf_tag(&scopes[i]) == DW_TAG_inlined_subroutine)
			inl = i;
	}
	if (i >= n)
		goto out;
	name = dwarf_formstring(dwarf_attr_integrate(&scopes[i], DW_AT_name,
						     &attr));
	if (name) {
		free(fr->function);
		fr->function = xstrdup(name);
	}
	if (inl < 0 ||
	    dwarf_formudata(dwarf_attr(&scopes[inl], DW_AT_call_line, &attr),
			    &line) || !line ||
	    dwarf_formudata(dwarf_attr(&scopes[inl], DW_AT_call_file, &attr),
			    &idx) ||
	    dwarf_getsrcfiles(cu, &files, &nfiles) || idx >= nfiles)
		goto out;
	file = dwarf_filesrc(files, idx, NULL, NULL);
	if (file) {
		free(fr->file);
		fr->file = cu_path(cu, file);
		fr->line = (int)line;
	}
out:
	free(scopes);
}

/*
 * Symbolize @fr; @ret: a return address, whose call is the byte before.
 */
static void frame_resolve(const struct proc_maps *m, struct frame *fr,
			  bool ret)
{
	Dwarf_Addr pc = fr->addr - (ret ? 1 : 0), rel = fr->addr;
	const char *name, *file, *dir;
	Dwfl_Module *mod;
	Dwfl_Line *line;
	GElf_Off off;
	GElf_Sym sym;
	int lineno;

	mod = m->dwfl ? dwfl_addrmodule(m->dwfl, pc) : NULL;
	if (!mod)
		return;
	name = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL,
				NULL);
	if (!name || dwfl_module_relocate_address(mod, &rel) < 0)
		return;
	fr->object = xstrdup(name);
	fr->offset = rel;
	name = dwfl_module_addrinfo(mod, pc, &off, &sym, NULL, NULL, NULL);
	if (name)
		fr->function = xstrdup(name);
	line = dwfl_module_getsrc(mod, pc);
	file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) :
		      NULL;
	if (file && lineno > 0) {
		dir = file[0] != '/' ? dwfl_line_comp_dir(line) : NULL;
		fr->file = dir ? strfmt("%s/%s", dir, file) : xstrdup(file);
		fr->line = lineno;
	}
	frame_scope(mod, pc, fr);
}

/* System libraries (libc, libibverbs, providers) are not the caller. */
static bool system_object(const char *path)
{
	static const char *const dirs[] = {
		"/lib/", "/lib32/", "/lib64/", "/usr/lib/", "/usr/lib32/",
		"/usr/lib64/",
	};
	size_t i;

	if (path[0] != '/')
		return true;		/* [vdso] */
	for (i = 0; i < ARRAY_SIZE(dirs); i++)
		if (!strncmp(path, dirs[i], strlen(dirs[i])))
			return true;
	return false;
}

/*
 * The frames of @frames ("0x7f..,0x55..": the syscall's address, then
 * return addresses), symbolized; the caller is the first return address in
 * the main executable or in a library outside the system's directories.
 */
struct site *site_resolve(const struct proc_maps *m, const char *frames)
{
	struct site *s = xmalloc(sizeof(*s));
	const char *p = frames;
	struct frame *fr;
	unsigned int i;
	char *end;

	memset(s, 0, sizeof(*s));
	s->why = m->dwfl ? NULL : m->why;
	while (*p && s->nframes < MAX_FRAMES) {
		fr = &s->frames[s->nframes];
		fr->addr = strtoull(p, &end, 16);
		if (end == p)
			break;
		frame_resolve(m, fr, s->nframes > 0);
		s->nframes++;
		p = end + strspn(end, ",");
	}
	for (i = 1; i < s->nframes; i++) {
		fr = &s->frames[i];
		if (fr->object && (!strcmp(fr->object, m->exe) ||
				   !system_object(fr->object))) {
			s->caller = i;
			return s;
		}
	}
	for (i = 1; i < s->nframes && !s->frames[i].object; i++)
		;
	s->caller = i < s->nframes ? i : 0;
	return s;
}

/* "fn at file.c:12 (obj+0x1a2b)", "fn (obj+0x1a2b)", "obj+0x1a2b", "0x..". */
char *frame_text(const struct frame *fr)
{
	const char *obj;

	if (!fr->object)
		return strfmt("0x%llx", (unsigned long long)fr->addr);
	obj = base_name(fr->object);
	if (fr->function && fr->file)
		return strfmt("%s at %s:%d (%s+0x%llx)", fr->function,
			      base_name(fr->file), fr->line, obj,
			      (unsigned long long)fr->offset);
	if (fr->function)
		return strfmt("%s (%s+0x%llx)", fr->function, obj,
			      (unsigned long long)fr->offset);
	return strfmt("%s+0x%llx", obj, (unsigned long long)fr->offset);
}

void site_free(struct site *s)
{
	unsigned int i;

	if (!s)
		return;
	for (i = 0; i < s->nframes; i++) {
		free(s->frames[i].object);
		free(s->frames[i].function);
		free(s->frames[i].file);
	}
	free(s);
}
