/*
 * Unit tests for tool/symbols.c and tool/elfinfo.c.
 *
 * Usage: test_symbols FIXTURE_O0 FIXTURE_O2_PIE FIXTURE_O2_PIE_STRIPPED FIXTURE_INSTRUMENTED
 * (all built from fixture_syms.c + fixture_syms2.c; see the Makefile).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "elfinfo.h"
#include "symbols.h"

#define LIBSTDCXX "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"

static const char *fx_o0, *fx_o2, *fx_stripped, *fx_instr;
static char text_file[] = "/tmp/sonde-test-symbols-XXXXXX";

/* Lines of the definitions (the line holding the name) in the fixture sources. */
static const struct fx_func {
	const char *name, *file;
	int line;
} fx_funcs[] = {
	{ "fx_static", "fixture_syms.c", 14 },
	{ "fx_alpha", "fixture_syms.c", 19 },
	{ "main", "fixture_syms.c", 28 },
	{ "fx_beta", "fixture_syms2.c", 6 },
	{ "sonde_fixture_marker", "fixture_syms2.c", 12 },
};

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* If the DWARF source path is readable, its line 'line' must mention the function. */
static void check_source_line(const char *path, int line, const char *name)
{
	char buf[512];
	FILE *f = fopen(path, "r");
	int n = 0;

	if (!f)
		return;
	while (fgets(buf, sizeof(buf), f) && ++n < line)
		;
	fclose(f);
	assert_int_equal(n, line);
	assert_non_null(strstr(buf, name));
}

/* Entry and a few bytes inside each fixture function resolve to the same name/file/line. */
static void check_fixture(const char *module)
{
	struct symtab *st = symtab__new();
	struct sym_info si, again;
	size_t i;
	uint64_t v;
	int off;

	assert_non_null(st);
	for (i = 0; i < sizeof(fx_funcs) / sizeof(fx_funcs[0]); i++) {
		v = symtab__lookup(st, module, fx_funcs[i].name);
		assert_true(v != 0);
		for (off = 0; off < 3; off++) {
			assert_int_equal(symtab__resolve(st, module, v + (uint64_t)off, &si), 0);
			assert_string_equal(si.func, fx_funcs[i].name);
			assert_string_equal(si.file, fx_funcs[i].file);
			assert_string_equal(base_name(si.path), fx_funcs[i].file);
			assert_int_equal(si.line, fx_funcs[i].line);
		}
		check_source_line(si.path, si.line, fx_funcs[i].name);
		/* cached: the very same strings come back */
		assert_int_equal(symtab__resolve(st, module, v, &again), 0);
		assert_ptr_equal(again.func, si.func);
		assert_ptr_equal(again.path, si.path);
	}
	symtab__delete(st);
}

static void test_resolve_o0(void **state)
{
	(void)state;
	check_fixture(fx_o0);
}

static void test_resolve_o2_pie(void **state)
{
	(void)state;
	check_fixture(fx_o2);
}

/* Stripped copy: no symbol, falls back to "<module>+0x<vaddr>" and the module as file. */
static void test_resolve_stripped(void **state)
{
	struct symtab *st = symtab__new();
	struct sym_info si;
	char expect[512];
	uint64_t v;

	(void)state;
	v = symtab__lookup(st, fx_o2, "fx_static");
	assert_true(v != 0);
	assert_int_equal(symtab__lookup(st, fx_stripped, "fx_static"), 0);
	assert_int_equal(symtab__resolve(st, fx_stripped, v, &si), -1);
	snprintf(expect, sizeof(expect), "%s+0x%" PRIx64, base_name(fx_stripped), v);
	assert_string_equal(si.func, expect);
	assert_string_equal(si.file, base_name(fx_stripped));
	assert_string_equal(si.path, fx_stripped);
	assert_int_equal(si.line, 0);
	symtab__delete(st);
}

/* Missing, non-ELF and NULL modules: -1 with non-NULL fallbacks, repeatedly. */
static void test_resolve_bad_modules(void **state)
{
	struct symtab *st = symtab__new();
	struct sym_info si;
	int i;

	(void)state;
	for (i = 0; i < 2; i++) {
		assert_int_equal(symtab__resolve(st, "/nonexistent/libfoo.so", 0x1234, &si), -1);
		assert_string_equal(si.func, "libfoo.so+0x1234");
		assert_string_equal(si.file, "libfoo.so");
		assert_string_equal(si.path, "/nonexistent/libfoo.so");
		assert_int_equal(si.line, 0);
		assert_int_equal(symtab__lookup(st, "/nonexistent/libfoo.so", "main"), 0);

		assert_int_equal(symtab__resolve(st, text_file, 0x10, &si), -1);
		assert_string_equal(si.file, base_name(text_file));
		assert_int_equal(symtab__lookup(st, text_file, "main"), 0);

		assert_int_equal(symtab__resolve(st, NULL, 0xabc, &si), -1);
		assert_string_equal(si.func, "0xabc");
		assert_non_null(si.file);
		assert_non_null(si.path);
	}
	symtab__delete(st);
}

/* Many distinct addresses force cache growth; earlier strings must stay valid. */
static void test_resolve_many(void **state)
{
	struct symtab *st = symtab__new();
	struct sym_info first, si;
	uint64_t v, a;

	(void)state;
	v = symtab__lookup(st, fx_o0, "fx_alpha");
	assert_int_equal(symtab__resolve(st, fx_o0, v, &first), 0);
	for (a = 0; a < 5000; a++)
		symtab__resolve(st, fx_o0, a * 3, &si);
	assert_string_equal(first.func, "fx_alpha");
	assert_string_equal(first.file, "fixture_syms.c");
	assert_int_equal(symtab__resolve(st, fx_o0, v, &si), 0);
	assert_ptr_equal(si.func, first.func);
	symtab__delete(st);
}

/* A shared library without debug info, with C++ demangling. */
static void test_resolve_shared_cxx(void **state)
{
	struct symtab *st;
	struct sym_info si;
	uint64_t v;

	(void)state;
	if (access(LIBSTDCXX, R_OK))
		skip();
	st = symtab__new();
	v = symtab__lookup(st, LIBSTDCXX, "_ZSt9terminatev");
	assert_true(v != 0);
	assert_int_equal(symtab__resolve(st, LIBSTDCXX, v, &si), 0);
	assert_string_equal(si.func, "std::terminate()");
	assert_non_null(si.file);
	assert_non_null(si.path);
	symtab__delete(st);
}

static void test_elfinfo_fixtures(void **state)
{
	struct elf_info o0, o2, stripped, instr;

	(void)state;
	assert_int_equal(elfinfo__read(fx_o0, &o0), 0);
	assert_int_equal(elfinfo__read(fx_o2, &o2), 0);
	assert_int_equal(elfinfo__read(fx_stripped, &stripped), 0);
	assert_int_equal(elfinfo__read(fx_instr, &instr), 0);
#ifdef __x86_64__
	assert_true(o0.is_elf64_x86_64);
#endif
	assert_true(o0.has_debug_info);
	assert_false(o0.is_static);
	assert_false(o0.has_instrument_hooks);
	assert_true(o0.has_sonde_api);
	assert_false(o0.has_patchable_entry);
	assert_true(o2.is_pie);
	assert_true(o2.has_debug_info);
	assert_false(stripped.has_debug_info);
	assert_true(stripped.is_pie);
	assert_true(o2.build_id_len > 0);
	assert_int_equal(stripped.build_id_len, o2.build_id_len);
	assert_memory_equal(stripped.build_id, o2.build_id, (size_t)o2.build_id_len);
	assert_true(instr.has_instrument_hooks);
}

static void test_elfinfo_system_and_errors(void **state)
{
	struct elf_info info;

	(void)state;
	assert_int_equal(elfinfo__read("/bin/sh", &info), 0);
	assert_false(info.has_debug_info);
	assert_false(info.is_static);
	assert_int_equal(elfinfo__read(text_file, &info), ELFK_NOT_ELF);
	errno = 0;
	assert_int_equal(elfinfo__read("/nonexistent/file", &info), ELFK_ERROR);
	assert_int_equal(errno, ENOENT);
	errno = 0;
	assert_int_equal(elfinfo__read("/tmp", &info), ELFK_ERROR);
	assert_int_equal(errno, EISDIR);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolve_o0),
		cmocka_unit_test(test_resolve_o2_pie),
		cmocka_unit_test(test_resolve_stripped),
		cmocka_unit_test(test_resolve_bad_modules),
		cmocka_unit_test(test_resolve_many),
		cmocka_unit_test(test_resolve_shared_cxx),
		cmocka_unit_test(test_elfinfo_fixtures),
		cmocka_unit_test(test_elfinfo_system_and_errors),
	};
	static const char script[] = "#!/bin/sh\necho not an ELF file\n";
	int fd, ret;

	if (argc < 5) {
		fprintf(stderr, "usage: %s O0 O2_PIE O2_PIE_STRIPPED INSTRUMENTED\n", argv[0]);
		return 2;
	}
	fx_o0 = argv[1];
	fx_o2 = argv[2];
	fx_stripped = argv[3];
	fx_instr = argv[4];
	/* never go to the network for debug info from a unit test */
	unsetenv("DEBUGINFOD_URLS");
	fd = mkstemp(text_file);
	if (fd < 0 || write(fd, script, sizeof(script) - 1) != (ssize_t)(sizeof(script) - 1))
		return 2;
	close(fd);
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(text_file);
	return ret;
}
