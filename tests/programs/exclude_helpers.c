/* The helpers of exclude.c, in their own file for --exclude-file. */
int leaf(int i);
int helper_a(int i);
int helper_b(int i);

int helper_a(int i)
{
	return leaf(i);
}

int helper_b(int i)
{
	return leaf(i) + leaf(i + 10);
}
