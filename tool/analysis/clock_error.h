/* SPDX-License-Identifier: MIT */
/* Discretization error of a clock (seed 004, docs/measurement.md). */
#ifndef SONDE_CLOCK_ERROR_H
#define SONDE_CLOCK_ERROR_H

/*
 * The shortest measured interval t' whose relative error is at most emax when each reading can
 * be off by up to dt: |t' - t| <= dt and t >= t' - dt give t' >= dt/emax + dt.
 */
double clock_min_interval(double dt, double emax);

#endif
