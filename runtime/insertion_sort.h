/* SPDX-License-Identifier: MIT */
/*
 * An insertion sort for the runtime's few hundred values at most (calibration batches, in-situ
 * pairs, collision trials): no libc qsort inside the measured process (no callbacks, nothing
 * that allocates). RT_INSERTION_SORT(name, type) defines static void name(type *v, int n).
 */
#ifndef SONDE_RT_INSERTION_SORT_H
#define SONDE_RT_INSERTION_SORT_H

#define RT_INSERTION_SORT(name, type)                                        \
	static inline void name(type *v, int n)                             \
	{                                                                     \
		int i, j;                                                     \
                                                                              \
		for (i = 1; i < n; i++) {                                     \
			type x = v[i];                                        \
                                                                              \
			for (j = i; j > 0 && v[j - 1] > x; j--)               \
				v[j] = v[j - 1];                              \
			v[j] = x;                                             \
		}                                                             \
	}

#endif
