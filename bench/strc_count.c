/* SPDX-License-Identifier: MIT */
/*
 * strc_count — counts the records of a sonde trace file (docs/format-trace.md) by walking its
 * chunks, for bench/trace_cost.sh and bench/trace_accuracy.sh. Independent of the tool's reader
 * on purpose: it checks the writer's output against the event counts the benchmark programs
 * know, and tells where the bytes of the file go. No validation beyond what the walk needs.
 *
 *   strc_count FILE    prints one line of key=value pairs:
 *     bytes       the file's size
 *     events      ENTER + EXIT + REGION_BEGIN + REGION_END records (one probe each)
 *     enter exit region_begin region_end   those four counts
 *     records     all records; other_words: words of records that are not those four
 *     chunks      chunk headers; chunk_bytes: bytes of chunk headers and unused chunk tails
 *     flush       FLUSH records; flush_ticks: their summed duration
 *     time        TIME records; def_func: DEF_FUNC records
 *     ticks_per_ns the header's estimate of the trace clock's rate
 *     span_ticks  first to last timed record of the file (all threads)
 *     calib       CALIB records; calib_tpn, calib_o_full_ns, calib_o_in_ns, calib_clock_ns: the
 *                 last one's ticks per ns and probe costs (docs/format-profile.md, CALIB)
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

int main(int argc, char **argv)
{
	uint64_t n[32] = { 0 }, words_of[32] = { 0 }, chunks = 0, chunk_bytes, flush_ticks = 0;
	uint64_t size, off, records = 0, t_first = UINT64_MAX, t_last = 0, calibs = 0;
	double cal[10] = { 0 };
	const unsigned char *m;
	struct stat st;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: strc_count FILE\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st) != 0) {
		perror(argv[1]);
		return 1;
	}
	size = (uint64_t)st.st_size;
	if (size < 64) {
		fprintf(stderr, "strc_count: %s: too short\n", argv[1]);
		return 1;
	}
	m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	madvise((void *)m, size, MADV_SEQUENTIAL);
	if (memcmp(m, "SONDETRC", 8) != 0) {
		fprintf(stderr, "strc_count: %s: not a sonde trace\n", argv[1]);
		return 1;
	}
	off = rd64(m + 48) ? rd64(m + 48) : 64;
	while (off + 32 <= size && rd32(m + off) == 0x4b484353u) {
		uint64_t cap = rd64(m + off + 16), used = rd64(m + off + 24), end, p;
		uint32_t flags = rd32(m + off + 12);

		if (cap < 32 || off + cap > size)
			cap = size - off; /* truncated: read what is there */
		end = (flags & 1u) ? off + 32 + used : off + cap;
		if (end > off + cap)
			end = off + cap;
		chunks++;
		uint64_t now = 0;
		int timed = 0;

		for (p = off + 32; p + 8 <= end;) {
			uint64_t w = rd64(m + p), len;
			unsigned type = (unsigned)(w & 31), lw = (unsigned)(w >> 5 & 7);

			if (type == 0)
				break; /* end of an open chunk */
			len = lw ? lw : (w >> 32) / 8;
			if (len == 0)
				break;
			n[type]++;
			words_of[type] += len;
			records++;
			if (type == 12 && p + 16 <= end)
				flush_ticks += rd64(m + p + 8);
			if (type == 6 && p + 16 <= end) { /* TIME: absolute ticks */
				now = rd64(m + p + 8);
				timed = 1;
			} else if (lw && timed) { /* an event record: delta in bits 28-63 */
				now += w >> 28;
				if (now < t_first)
					t_first = now;
				if (now > t_last)
					t_last = now;
			}
			if (type == 22 && len * 8 >= 8 + 8 + 88) { /* CALIB: when, 0, the 88 bytes */
				memcpy(cal, m + p + 24, sizeof cal); /* after clock_kind, batches */
				calibs++;
			}
			p += 8 * len;
		}
		off += cap;
	}
	{
		uint64_t rec_words = 0, ev = n[1] + n[2] + n[3] + n[4];
		double tpn;
		unsigned t;

		memcpy(&tpn, m + 40, 8); /* the header's first estimate of ticks per ns */
		for (t = 0; t < 32; t++)
			rec_words += words_of[t];
		chunk_bytes = size - 64 - 8 * rec_words; /* headers, unused tails, unread parts */
		printf("bytes=%llu events=%llu enter=%llu exit=%llu region_begin=%llu region_end=%llu "
		       "records=%llu other_words=%llu chunks=%llu chunk_bytes=%llu flush=%llu "
		       "flush_ticks=%llu time=%llu def_func=%llu ticks_per_ns=%.6f span_ticks=%llu calib=%llu "
		       "calib_tpn=%.6f calib_clock_ns=%.3f calib_o_in_ns=%.3f calib_o_full_ns=%.3f\n",
		       (unsigned long long)size, (unsigned long long)ev, (unsigned long long)n[1],
		       (unsigned long long)n[2], (unsigned long long)n[3], (unsigned long long)n[4],
		       (unsigned long long)records, (unsigned long long)(rec_words - ev),
		       (unsigned long long)chunks, (unsigned long long)chunk_bytes,
		       (unsigned long long)n[12], (unsigned long long)flush_ticks,
		       (unsigned long long)n[6], (unsigned long long)n[20], tpn,
		       (unsigned long long)(t_last >= t_first ? t_last - t_first : 0),
		       (unsigned long long)calibs, cal[0], cal[1], cal[4], cal[6]);
	}
	munmap((void *)m, size);
	close(fd);
	return 0;
}
