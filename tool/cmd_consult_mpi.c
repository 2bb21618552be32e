/* SPDX-License-Identifier: MIT */
/*
 * sonde consult -- mpirun -np N PROGRAM, sonde consult MPIRUN_PID: the ranks of an MPI program
 * found among the launcher's descendants and attached one by one (docs/consult.md, "MPI
 * programs live"), as Paradyn's front end reached each node's processes through a daemon of
 * its own. A rank is a process whose environment names its world rank (OpenMPI's
 * OMPI_COMM_WORLD_RANK, MPICH's PMI_RANK, PMIx's PMIX_RANK) and whose parent does not (a
 * program the rank started itself is no rank); it is attached once its libraries are mapped.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "consult_mpi.h"
#include "dyn/proc_state.h"
#include "util.h"

/* Ranks that have not all appeared in this long are an error (mpirun on a loaded machine can
 * take seconds to start them). */
#define FIND_S 60
/* A rank is attached once its libraries have not changed for this many looks 100 ms apart
 * (at most STABLE_S seconds). */
#define STABLE_LOOKS 4
#define STABLE_S 10

int consult_mpi_launcher(const char *name)
{
	const char *b = strrchr(name, '/');
	static const char *const launchers[] = { "mpirun", "mpiexec", "orterun", "prterun", NULL };
	size_t i;

	b = b ? b + 1 : name;
	for (i = 0; launchers[i]; i++)
		if (!strncmp(b, launchers[i], strlen(launchers[i])))
			return 1;
	return 0;
}

int consult_mpi_pid_is_launcher(pid_t pid)
{
	char path[64], comm[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = 0;
	fclose(f);
	comm[strcspn(comm, "\n")] = 0;
	return consult_mpi_launcher(comm);
}

static pid_t parent_of(pid_t pid)
{
	char state;
	pid_t ppid;

	return dyn_proc_stat(pid, &state, &ppid) == 0 ? ppid : 0;
}

static int descends_from(pid_t pid, pid_t root)
{
	int depth;

	for (depth = 0; depth < 32 && pid > 1; depth++) {
		pid = parent_of(pid);
		if (pid == root)
			return 1;
	}
	return 0;
}

/* The world rank and size a process's environment names: 0, or -1 when none. */
static int rank_of(pid_t pid, int32_t *rank, int32_t *size)
{
	static const char *const rk[] = { "OMPI_COMM_WORLD_RANK=", "PMI_RANK=", "PMIX_RANK=" };
	static const char *const sz[] = { "OMPI_COMM_WORLD_SIZE=", "PMI_SIZE=", "PMIX_SIZE=" };
	int32_t best_r = 3, best_s = 3; /* the first name of each list wins */
	char path[64], *env, *p;
	size_t len = 0, i;
	FILE *f;

	*rank = *size = -1;
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	env = NULL;
	if (getdelim(&env, &len, EOF, f) < 0) {
		free(env);
		fclose(f);
		return -1;
	}
	len = (size_t)ftell(f);
	fclose(f);
	for (p = env; p < env + len; p += strlen(p) + 1)
		for (i = 0; i < 3; i++) {
			if (!strncmp(p, rk[i], strlen(rk[i])) && (int32_t)i < best_r) {
				*rank = atoi(p + strlen(rk[i]));
				best_r = (int32_t)i;
			}
			if (!strncmp(p, sz[i], strlen(sz[i])) && (int32_t)i < best_s) {
				*size = atoi(p + strlen(sz[i]));
				best_s = (int32_t)i;
			}
		}
	free(env);
	return *rank >= 0 ? 0 : -1;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR && !stop_signal)
		;
}

/* The libraries' mappings of a process, counted (they change while the loader, or MPI_Init's
 * dlopen of the MPI library's components, maps them). */
static uint32_t lib_maps(pid_t pid)
{
	char path[64], line[4200];
	uint32_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, ".so") != NULL;
	fclose(f);
	return n;
}

/* Until every rank's libraries have stayed as they are for STABLE_LOOKS looks 100 ms apart (a
 * process caught while a library is half mapped would be read wrong), at most STABLE_S. */
static void settle(const struct consult_rank *r, uint32_t n)
{
	uint32_t *was = xcalloc(n, sizeof(uint32_t)), i, same = 0, k;
	uint64_t until = mono_now_ns() + (uint64_t)STABLE_S * 1000000000ull;

	while (same < STABLE_LOOKS && mono_now_ns() < until && !stop_signal) {
		sleep_ms(100);
		for (i = 0, k = 0; i < n; i++) {
			uint32_t now = lib_maps(r[i].pid);

			k += now == was[i];
			was[i] = now;
		}
		same = k == n ? same + 1 : 0;
	}
	free(was);
}

/* Whether the process has a library whose name starts with lib mapped. */
static int maps_has(pid_t pid, const char *lib)
{
	char path[64], line[4200], *b;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		b = strrchr(line, '/');
		found = b && !strncmp(b + 1, lib, strlen(lib));
	}
	fclose(f);
	return found;
}


int consult_mpi_rank(pid_t pid, int32_t *rank)
{
	int32_t size;

	return rank_of(pid, rank, &size) == 0 && maps_has(pid, "libmpi") ? 0 : -1;
}

/* One look at the launcher's descendants: the ranks found into r (by rank), their number. */
static uint32_t look(pid_t root, struct consult_rank *r, uint32_t cap, int32_t *size)
{
	struct dirent *d;
	uint32_t n = 0, i;
	int32_t rank, sz, prank, psz;
	DIR *dir = opendir("/proc");
	pid_t pid;

	while (dir && (d = readdir(dir))) {
		pid = (pid_t)strtol(d->d_name, NULL, 10);
		if (pid <= 0 || pid == root || rank_of(pid, &rank, &sz) != 0 ||
		    !descends_from(pid, root) || rank_of(parent_of(pid), &prank, &psz) == 0)
			continue;
		for (i = 0; i < n && r[i].rank != rank; i++)
			;
		if (i < n || n == cap)
			continue; /* a rank twice: the first seen */
		r[n++] = (struct consult_rank){ pid, rank };
		*size = sz > *size ? sz : *size;
	}
	if (dir)
		closedir(dir);
	return n;
}

static int by_rank(const void *a, const void *b)
{
	const struct consult_rank *x = a, *y = b;

	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static int launcher_gone(pid_t root, int child)
{
	int status;

	if (child)
		return waitpid(root, &status, WNOHANG) == root;
	return kill(root, 0) != 0;
}

int consult_mpi_find(pid_t root, int child, struct consult_rank **out, uint32_t *nout)
{
	struct consult_rank *r = xcalloc(4096, sizeof(*r));
	uint64_t until = mono_now_ns() + (uint64_t)FIND_S * 1000000000ull;
	int32_t size = -1;
	uint32_t n = 0, i, ready;

	*out = NULL;
	*nout = 0;
	for (;;) {
		if (stop_signal)
			return free(r), error("consult: stopped while waiting for the MPI ranks");
		if (launcher_gone(root, child))
			return free(r), error("consult: the MPI launcher (process %d) ended before "
					      "its ranks could be attached", (int)root);
		n = look(root, r, 4096, &size);
		for (i = 0, ready = 0; i < n; i++)
			ready += maps_has(r[i].pid, "libc.so") || maps_has(r[i].pid, "libc-");
		if (n && size > 0 && n >= (uint32_t)size && ready == n)
			break;
		if (mono_now_ns() >= until)
			return free(r), error("consult: %u of %d MPI ranks appeared under process %d "
					      "in %d s", n, size, (int)root, FIND_S);
		sleep_ms(50);
	}
	qsort(r, n, sizeof(*r), by_rank);
	settle(r, n);
	for (i = 0; i < n; i++)
		if (!maps_has(r[i].pid, "libmpi")) {
			error("consult: rank %d (process %d) has no MPI library (libmpi) mapped: "
			      "the live MPI search needs a program linked with MPI", (int)r[i].rank,
			      (int)r[i].pid);
			free(r);
			return -1;
		}
	*out = r;
	*nout = n;
	return 0;
}

pid_t consult_mpi_start(char *const argv[])
{
	pid_t pid = fork();

	if (pid < 0)
		return error("consult: fork: %s", strerror(errno)), -1;
	if (pid == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "sonde: consult: cannot run '%s': %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	return pid;
}
