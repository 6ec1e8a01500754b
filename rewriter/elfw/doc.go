// Package elfw writes the instrumented executable: it adds loadable
// segments for relocated code and runtime data, non-loaded sections for
// blpp's metadata, patches bytes of existing code, and changes the entry
// point and the DT_INIT and DT_FINI hooks (DESIGN decisions 1, 9, 10, 12).
//
// # What Write produces
//
// The original file's bytes stay at their offsets, so every existing
// address, offset, relocation, symbol and DWARF reference stays valid. Only
// the ELF header, the requested patches and, with Options.Init and Fini,
// up to three .dynamic entries change inside them. Appended after them,
// in order:
//
//   - a new program header table, in a read-only PT_LOAD of its own;
//   - the new segments (p_align PageSize, p_offset ≡ p_vaddr mod page);
//   - the non-loaded sections;
//   - a copy of the section name table with the new names added;
//   - a new section header table: every original header at its old index
//     (sh_link and sh_info references, symbol st_shndx stay right), the
//     name table's header pointing at the copy, then one header per new
//     segment (SHF_ALLOC, plus SHF_EXECINSTR or SHF_WRITE; a zero-filled
//     tail gets a SHT_NOBITS header), or one per Segment.Sections entry
//     when the segment is cut into named parts, one (.blpp.phdr) for the
//     program header table's segment, and one per non-loaded section.
//
// The old program header table stays, unused, where it was.
//
// With Options.Symbols, the new .symtab and .strtab follow the non-loaded
// sections, and a read-only PT_LOAD of Write's own (no section header of
// its own) holds the new dynamic symbol tables.
//
// # Symbols for relocated code
//
// gdb names a pc without debug information after the closest function
// symbol below it (its "minimal symbols", read from .symtab and .dynsym);
// glibc's backtrace_symbols calls dladdr, which reads only the dynamic
// symbol table, through the hash tables. Options.Symbols adds function
// symbols to both:
//
//   - .symtab: the original table, unchanged entry by entry (same indices:
//     relocations in debug sections and anything else that refers to a
//     symbol by number stay right), then the new symbols, STB_GLOBAL so
//     that the locals-first rule holds with sh_info unchanged [gABI ch.4
//     "Symbol Table"]; .strtab gets the new names appended. The original
//     .symtab and .strtab headers, at their indices, point at the copies.
//     A file without .symtab gets new .symtab and .strtab holding the null
//     symbol and the new ones: gdb then names the relocated code even in
//     a stripped program whose original code it cannot name.
//   - .dynsym (Symbol.Dynamic): dladdr (glibc elf/dl-addr.c,
//     determine_info) enumerates the symbols reachable through the
//     DT_GNU_HASH buckets and chains, or the first nchain of DT_HASH when
//     there is no GNU hash. Write copies .dynsym with the new entries
//     appended (st_name sharing the .dynstr offset of the original symbol
//     of that name, so .dynstr, which the loader and DT_STRSZ describe,
//     does not move), .gnu.version with their versions appended,
//     .gnu.hash with the last chain extended over them and DT_HASH with
//     nchain counting them, points DT_SYMTAB, DT_VERSYM, DT_GNU_HASH and
//     DT_HASH at the copies, and repoints the original section headers
//     (same indices, so every sh_link stays right). Old entries keep their
//     indices, so relocations still name the same symbols. The new chain
//     words hold each name's hash with bit 1 flipped and no SysV bucket
//     reaches the new entries, so name lookups (symbol binding, dlsym)
//     never return them: they still find the original function, whose
//     entry jumps to the copy.
//
// # Replacing sections by name
//
// A new section header may carry the name of an original one: the
// rewriter's .eh_frame, .eh_frame_hdr and .gcc_except_table for relocated
// code replace the originals. Tools find sections by name (gdb reads
// .eh_frame and .debug_frame so; readelf --debug-dump=frames too), so the
// original header is renamed, ".eh_frame" becoming ".blpp.orig.eh_frame";
// its bytes and everything else in it stay, and code that reaches the old
// bytes by address still does. Two new headers may not share a name.
//
// The unwinders used at run time do not read section headers: libgcc
// (unwind-dw2-fde-dispatch.c) finds .eh_frame_hdr through PT_GNU_EH_FRAME,
// by dl_iterate_phdr or glibc 2.35's _dl_find_object, which reads the
// entry from the program header table AT_PHDR names. Options.EHFrameHdr
// points that entry at a new .eh_frame_hdr, adding one when the input has
// none (gcc links static non-PIE programs without --eh-frame-hdr; their
// unwinder finds .eh_frame through crtbegin's __register_frame_info, which
// a new entry does not change). The new .eh_frame_hdr must then index
// every FDE the program needs, old and new [LSB 5.0 "The .eh_frame_hdr
// section"]: the old one is no longer found.
//
// # The program header table
//
// New segments need new program header entries, and the table at e_phoff
// usually has no room (.interp follows it), so Write writes a larger table
// at the end of the file, maps it with a new PT_LOAD, points e_phoff at it
// and makes PT_PHDR describe it. The entries are ordered the way the
// loaders need:
//
//   - PT_PHDR first. [gABI ch.5 "Program Header"] says PT_PHDR precedes
//     every loadable segment entry, and glibc's rtld depends on it: dl_main
//     (elf/rtld.c) walks the table in order, sets the main program's load
//     bias l_addr = AT_PHDR - PT_PHDR.p_vaddr at PT_PHDR, and uses l_addr
//     for the PT_LOAD, PT_DYNAMIC and PT_INTERP entries that follow.
//   - PT_LOAD entries in ascending p_vaddr order [gABI ch.5]: the new ones
//     go right after the last original PT_LOAD. Linux sizes the mapping of
//     a PIE from the lowest and highest PT_LOAD; glibc's _dl_map_segments
//     (used when ld.so is run as a command) maps the first and places the
//     rest relative to it.
//   - Everything else (PT_INTERP, PT_DYNAMIC, PT_NOTE, PT_TLS,
//     PT_GNU_PROPERTY, PT_GNU_EH_FRAME, PT_GNU_STACK, PT_GNU_RELRO) is
//     copied unchanged, in its original order.
//
// Where the table goes decides AT_PHDR, the address the kernel hands to
// the program and from which glibc finds its program headers (the dynamic
// loader to compute the PIE load bias; static glibc, through _dl_aux_init
// and GL(dl_phdr), to find PT_TLS in __libc_setup_tls):
//
//   - Linux 5.18 and later (fs/binfmt_elf.c, load_elf_binary, since the
//     change "fs/binfmt_elf: Fix AT_PHDR for unusual ELF files") report the
//     address at which the PT_LOAD whose file range holds e_phoff maps it,
//     plus the load bias. PT_PHDR plays no part.
//   - Earlier kernels reported (p_vaddr - p_offset of the first PT_LOAD) +
//     e_phoff + load bias, which is right only when the table's address and
//     file offset are the same distance from that base. Static glibc, when
//     AT_PHDR is missing, computes the same from __ehdr_start.
//
// Write therefore "mirrors" the table when it can (Layout.Mirrored): it
// puts it at file offset O and address base+O, above every existing
// segment, padding the file with zeros up to O when the original image's
// memory size exceeds its file size (a large .bss). The padding is bounded
// (64 MiB); beyond it, or when the base is not page-aligned, the table goes
// on the first free page and the binary needs Linux 5.18 or later. The
// table's page never shares a page with an existing segment: the kernel
// maps each PT_LOAD page by page with MAP_FIXED and would replace the
// other segment's page.
//
// NextFreeAddr (Layout.FreeAddr) lies above the table, leaving one
// unmapped page, and the table reserves room for MaxSegments new entries,
// so callers can fix code addresses before building the segments.
//
// # Exit hook
//
// For dynamic executables Options.Fini sets DT_FINI. glibc's _dl_fini runs,
// at exit(), each object's DT_FINI_ARRAY entries and then its DT_FINI,
// adding the load bias (DT_FINI is a d_ptr [gABI ch.5 "Dynamic Section"]),
// so a PIE needs no relocation for it; the hook ends by jumping to the old
// DT_FINI (OrigFini). Replacing DT_FINI_ARRAY instead would need a new
// array whose entries, in a PIE, must be covered by new R_X86_64_RELATIVE
// relocations; Write does not do that. Without a DT_FINI entry Write turns
// the first DT_NULL into one, provided a slot after it remains as the
// terminator (GNU ld leaves spare DT_NULL entries). _dl_fini runs after the
// program's own atexit handlers, which may already have closed stdout and
// stderr (coreutils' close_stdout does).
//
// A shared object's hooks are its DT_INIT (Options.Init) and DT_FINI: the
// dynamic loader calls DT_INIT when it maps the object, before its
// DT_INIT_ARRAY (glibc's call_init, with argc, argv and envp), and
// DT_FINI after its DT_FINI_ARRAY at exit or dlclose. Both are d_ptr
// values, biased by the loader. Missing entries take spare DT_NULL slots
// in order (DT_INIT, then DT_FINI), so two new entries need two spare
// slots besides the terminator (ErrNoInitSlot, ErrNoFiniSlot).
//
// Static executables, static-pie included, are refused with ErrStatic:
// their exit path (csu/libc-start.c call_fini) walks __fini_array_start
// and calls _fini by symbol, never reading .dynamic. The caller hooks them
// another way (patching _fini or the fini array's code).
//
// # Entry
//
// Options.Entry replaces e_entry. The new entry code runs before anything
// else in the process with the registers and stack the kernel set up
// [SysV x86-64 ABI 3.4.1 "Initial Stack and Register State"]: %rsp at
// argc, %rdx the function the dynamic loader wants registered with atexit
// (zero for static programs). It must preserve both (and the stack) and
// jump to the old entry.
//
// # What it trusts and checks
//
// Input is hostile: the ELF header, the program header table, the section
// header table and name table, and .dynamic are bounds-checked before use;
// PT_LOAD entries must be sorted, non-overlapping, inside the file and
// consistent modulo the page size. Other sections are copied, not
// interpreted. Write builds the whole file in memory, re-parses the result
// and checks the kernel's AT_PHDR rule on it; on any error it returns no
// output. A panic is turned into an error at the Write boundary.
//
// strip and objcopy lay a rewritten file out again from its sections, so
// every new loadable segment has a section header, the program header
// table's included (.blpp.phdr, decision 80). Write does not build unwind
// tables; the caller passes them as sections of a new segment (see above).
//
// # Verified on this machine
//
// Linux 6.18, glibc 2.36 (Debian 12), gcc 12, clang 14: every fixture of
// the fixture matrix (gcc and clang; -O0, -O2, -O3; PIE and non-PIE;
// static; stripped) plus static-pie, and Debian's /bin/true, /bin/ls,
// /usr/bin/python3.11 (non-PIE), /bin/bash and /bin/gzip run unchanged
// after rewriting, directly and (dynamic ones) under ld.so run as a
// command. AT_PHDR, read with LD_SHOW_AUXV=1 or gdb's "info auxv", equals
// the load bias plus the new table's address for mirrored and unmirrored
// layouts alike, which confirms the 5.18+ kernel rule; the DT_FINI hook
// runs at exit. readelf -aW reports nothing new on the output; objdump and
// gdb see the new sections.
package elfw
