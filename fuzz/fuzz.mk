# Fuzzing the trace reader with libFuzzer; included by the top-level Makefile.
#   make fuzz            fuzz format/trace_read.c for FUZZ_TIME seconds (default 60); new inputs go
#                        to $(BUILD)/fuzz/corpus, crashing ones to $(BUILD)/fuzz/crash-*
#   make check, unit     include a FUZZ_SMOKE_TIME (10 s) run from the seed corpus fuzz/corpus
# Needs clang with libFuzzer (Debian: clang, libclang-rt-N-dev). Without it the fuzzer is not
# built and the short run reports "skipped: clang with libFuzzer not installed".

FUZZ_CC ?= clang
FUZZ_TIME ?= 60
FUZZ_SMOKE_TIME ?= 10
FUZZ_BUILD := $(BUILD)/fuzz
FUZZ_TRACE := $(FUZZ_BUILD)/fuzz_trace
FUZZ_SRC := fuzz/fuzz_trace.c format/trace_read.c format/trace_read_mpi.c format/profile_codec.c
FUZZ_CFLAGS := -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=all -D_GNU_SOURCE -Iformat -Wall -Wextra
FUZZ_SMOKE := fuzz/fuzz_smoke.sh $(FUZZ_TRACE) $(FUZZ_SMOKE_TIME)

# Can $(FUZZ_CC) link a libFuzzer program? (a shell command: true or false)
FUZZ_PROBE = command -v $(FUZZ_CC) >/dev/null 2>&1 && \
	printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n);\nint LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return d[0] + (int)n; }\n' | \
	$(FUZZ_CC) -fsanitize=fuzzer -x c - -o $(FUZZ_BUILD)/probe >/dev/null 2>&1

.PHONY: fuzz
# Where the probe fails the fuzzer is left unbuilt: the short run then says it was skipped.
$(FUZZ_TRACE): $(FUZZ_SRC) format/trace_read.h format/trace.h format/profile.h
	@mkdir -p $(dir $@)
	@if $(FUZZ_PROBE); then \
		echo "$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(FUZZ_SRC)"; \
		$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(FUZZ_SRC); \
	else \
		echo "fuzz_trace skipped: clang with libFuzzer not installed"; rm -f $@; \
	fi

fuzz: $(FUZZ_TRACE)
	@test -x $(FUZZ_TRACE) || { echo "sonde: 'make fuzz' needs clang with libFuzzer" \
		"(apt-get install clang libclang-rt-dev)" >&2; exit 1; }
	@mkdir -p $(FUZZ_BUILD)/corpus
	$(FUZZ_TRACE) -max_total_time=$(FUZZ_TIME) -max_len=65536 -timeout=10 \
		-artifact_prefix=$(FUZZ_BUILD)/ $(FUZZ_BUILD)/corpus fuzz/corpus
