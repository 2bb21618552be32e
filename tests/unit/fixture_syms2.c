/* Second compilation unit of the test_symbols fixture (see fixture_syms.c about line numbers). */

int fx_beta(int x);
int sonde_fixture_marker(void);

__attribute__((noinline, noclone)) int fx_beta(int x)
{
	return x ^ 0x5a;
}

/* Gives the fixture a "sonde_" symbol so elfinfo's has_sonde_api can be tested. */
__attribute__((noinline, noclone)) int sonde_fixture_marker(void)
{
	return 1;
}

#ifdef FIXTURE_HOOKS
/* Built with -finstrument-functions -DFIXTURE_HOOKS: trivial hooks keep the binary runnable. */
__attribute__((no_instrument_function)) void __cyg_profile_func_enter(void *fn, void *site);
__attribute__((no_instrument_function)) void __cyg_profile_func_exit(void *fn, void *site);

void __cyg_profile_func_enter(void *fn, void *site)
{
	(void)fn;
	(void)site;
}

void __cyg_profile_func_exit(void *fn, void *site)
{
	(void)fn;
	(void)site;
}
#endif
