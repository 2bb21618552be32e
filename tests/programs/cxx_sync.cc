/*
 * C++ sync objects for tests/integration (t_cxx_sync, t_watch_cxx_sync): std::mutex at file
 * scope, in a namespace, in an anonymous namespace, as a class's static member and as a
 * function's static; a std::recursive_mutex, a std::shared_mutex and a
 * std::condition_variable. Each is named as its source spells it ("app::queue_lock",
 * "S::m", "tick()::local"), in profiles and as watch resources.
 *
 * Says "ready" on stderr, then does one phase per line of stdin, acknowledged "done N" on
 * stderr; at the end of its input prints "shared N" on stdout. A phase: THREADS threads, each
 *   hot             locked HOT times
 *   app::queue_lock OTHER times
 *   (anonymous namespace)::anon_lock, S::m, tick()::local   FEW times each
 *   rec             locked FEW times, twice over (recursively)
 *   rw              read-locked FEW times, write-locked once
 * then each notifies cv once (notify_all) under done_lock, and the main thread waits on cv
 * until every thread of the phase has (its waits, and done_lock's locks, are what the
 * scheduler makes them).
 */
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <unistd.h>

enum { THREADS = 2, HOT = 1000, OTHER = 100, FEW = 7 };

namespace app {
std::mutex queue_lock;
}

namespace {
std::mutex anon_lock;
}

struct S {
	static std::mutex m;
};
std::mutex S::m;

static std::mutex hot;
static std::recursive_mutex rec;
static std::shared_mutex rw;
static std::mutex done_lock;
static std::condition_variable cv;
static unsigned long shared_count; /* added to under different locks: atomically */
static int finished;

static void add()
{
	__atomic_fetch_add(&shared_count, 1, __ATOMIC_RELAXED);
}

static void tick()
{
	static std::mutex local;
	std::lock_guard<std::mutex> g(local);

	add();
}

template <typename M> static void lock_n(M &m, int n)
{
	for (int i = 0; i < n; i++) {
		std::lock_guard<M> g(m);
		add();
	}
}

static void worker()
{
	lock_n(hot, HOT);
	lock_n(app::queue_lock, OTHER);
	lock_n(anon_lock, FEW);
	lock_n(S::m, FEW);
	for (int i = 0; i < FEW; i++)
		tick();
	for (int i = 0; i < FEW; i++) {
		std::lock_guard<std::recursive_mutex> outer(rec);
		std::lock_guard<std::recursive_mutex> inner(rec);
		add();
	}
	for (int i = 0; i < FEW; i++) {
		std::shared_lock<std::shared_mutex> r(rw);
		add();
	}
	{
		std::unique_lock<std::shared_mutex> w(rw);
		add();
	}
	std::lock_guard<std::mutex> g(done_lock);
	finished++;
	cv.notify_all();
}

static void phase()
{
	std::thread t[THREADS];

	for (auto &x : t)
		x = std::thread(worker);
	{
		std::unique_lock<std::mutex> g(done_lock);
		cv.wait(g, [] { return finished == THREADS; });
		finished = 0;
	}
	for (auto &x : t)
		x.join();
}

int main()
{
	char c;
	int n = 0;

	fprintf(stderr, "ready\n");
	while (read(0, &c, 1) == 1) {
		if (c != '\n')
			continue;
		phase();
		fprintf(stderr, "done %d\n", ++n);
	}
	printf("shared %lu\n", shared_count);
	return 0;
}
