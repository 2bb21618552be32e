/* SPDX-License-Identifier: MIT */
/* C++ names as their source spells them (symbols, sync objects, resources). */
#ifndef SONDE_DEMANGLE_H
#define SONDE_DEMANGLE_H

/*
 * The demangled form of a C++ symbol name ("_ZL3hot" -> "hot", "_ZN3app4lockE" ->
 * "app::lock"), malloc'd; NULL when the name is not mangled, cannot be demangled, or the
 * machine has no libstdc++ (the tool does not link it: it is dlopen()ed on first use).
 */
char *demangle(const char *name);

#endif
