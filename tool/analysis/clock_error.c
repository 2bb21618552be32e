/* SPDX-License-Identifier: MIT */
#include "clock_error.h"

double clock_min_interval(double dt, double emax)
{
	return emax > 0 ? dt / emax + dt : 0;
}
