/*
 * Loads ./libplugin_lib.so (argv[1]) with dlopen and calls plug_work(10) 3 times: the profile
 * must hold host/main -> plug_work (3 calls) -> plug_leaf (30 calls), with the library's names.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	void *h = dlopen(argc > 1 ? argv[1] : "./libplugin_lib.so", RTLD_NOW);
	int (*work)(int);
	int i, s = 0;

	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	*(void **)&work = dlsym(h, "plug_work");
	for (i = 0; i < 3; i++)
		s += work(10);
	printf("%d\n", s);
	return 0;
}
