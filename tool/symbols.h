/* Tool-side address -> symbol resolution (elfutils libdwfl). */
#ifndef SONDE_SYMBOLS_H
#define SONDE_SYMBOLS_H

#include <stdint.h>

struct sym_info {
	const char *func;	/* demangled-if-possible name, never NULL: falls back to
				 * "<module basename>+0x<hex vaddr>", or "0x<hex vaddr>" with no
				 * module path */
	const char *file;	/* source file basename from DWARF, else the module basename */
	const char *path;	/* full source file path as in DWARF, else the module path */
	int line;		/* DW_AT_decl_line of the function, else the line of its entry
				 * address; 0 if unknown */
};

struct symtab;

struct symtab *symtab__new(void);
void symtab__delete(struct symtab *st);

/*
 * Resolve a code address inside the ELF file at 'module_path'. 'vaddr' is the address as the ELF
 * file's own symbol table sees it (runtime address minus the module's load bias, i.e. minus
 * dl_iterate_phdr's dlpi_addr), so it works for ET_EXEC, PIE and shared libraries alike.
 * Fills *out with strings owned by st (valid until symtab__delete). Returns 0 when a symbol was
 * found, -1 when not (out still filled with the fallbacks). Modules are opened once and cached;
 * a module that cannot be opened is remembered as such (no repeated attempts).
 */
int symtab__resolve(struct symtab *st, const char *module_path, uint64_t vaddr,
		    struct sym_info *out);

/*
 * Source file (basename) and line of the instruction at 'vaddr' (as above), from the line table;
 * 0, or -1 when unknown. *file is owned by st (valid until symtab__delete).
 */
int symtab__srcline(struct symtab *st, const char *module_path, uint64_t vaddr,
		    const char **file, int *line);

/* Address of a function symbol by name in a module (vaddr as above), or 0. */
uint64_t symtab__lookup(struct symtab *st, const char *module_path, const char *func_name);

/* Call cb for each defined function symbol (name as in the symbol table, vaddr as above);
 * stops at the first non-zero return and returns it; -1 when the module cannot be read. */
int symtab__foreach(struct symtab *st, const char *module_path,
		    int (*cb)(const char *name, uint64_t vaddr, void *arg), void *arg);

/* The same with each symbol's size in bytes (0 when the symbol table does not say). */
int symtab__foreach_sized(struct symtab *st, const char *module_path,
			  int (*cb)(const char *name, uint64_t vaddr, uint64_t size, void *arg),
			  void *arg);

/* The same with whether the symbol is an IFUNC resolver (STT_GNU_IFUNC: its code picks the
 * implementation at load time; calls never run it). */
int symtab__foreach_func(struct symtab *st, const char *module_path,
			 int (*cb)(const char *name, uint64_t vaddr, uint64_t size, int ifunc,
				   void *arg),
			 void *arg);

#endif /* SONDE_SYMBOLS_H */
