/*
 * An instrumented shared library that plugin_host loads with dlopen after the runtime started:
 * its functions must be measured and named from the library's own symbols and source lines.
 */
int plug_leaf(int x);
int plug_work(int n);

int plug_leaf(int x)
{
	return x * 3;
}

int plug_work(int n)
{
	int s = 0, i;

	for (i = 0; i < n; i++)
		s += plug_leaf(i);
	return s;
}
