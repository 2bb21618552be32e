# sonde — build, test, benchmark, install. `make help` lists the targets.
PREFIX ?= /usr/local
CC ?= gcc
BUILD := build
VERSION := 0.1.0

WARN := -Wall -Wextra -Wshadow -Wmissing-prototypes -Wstrict-prototypes -Wpointer-arith \
	-Wformat=2 -Wcast-qual -Wundef -Wvla -Wnull-dereference -Wdouble-promotion \
	-Wmissing-declarations -Wold-style-definition -Wwrite-strings
OPT := -O2 -g
ifeq ($(DEBUG),1)
OPT := -O0 -g -Werror
endif
ifeq ($(ASAN),1)
OPT += -fsanitize=address,undefined -fno-omit-frame-pointer
endif
BASE_CFLAGS := -std=gnu11 $(OPT) $(WARN) -D_GNU_SOURCE -Iinclude -Iformat -DSONDE_VERSION='"$(VERSION)"'

# The runtime lives in someone else's process: position independent, hidden by default,
# no builtins that could be swapped for libc calls behind our back, no undefined symbols.
RT_CFLAGS := $(BASE_CFLAGS) -fPIC -fvisibility=hidden -fno-omit-frame-pointer -ftls-model=initial-exec
RT_LDFLAGS := -shared -Wl,--no-undefined -Wl,-z,now -ldl -lpthread -lm -lgcc_s
TOOL_CFLAGS := $(BASE_CFLAGS) -Itool -Itool/analysis $(shell pkg-config --cflags otf2)
TOOL_LIBS := -ldw -lelf -lm -ldl -lZydis $(shell pkg-config --libs otf2)

RT_SRC := $(wildcard runtime/*.c runtime/dyn/*.c runtime/arch/x86_64/*.c) format/profile_codec.c format/protocol.c
RT_ASM := $(wildcard runtime/arch/x86_64/*.S)
TOOL_SRC := $(wildcard tool/*.c tool/*/*.c tool/patch/x86_64/*.c) format/profile_codec.c \
	format/profile_read.c format/profile_read_io.c format/trace_read.c format/trace_read_mpi.c
TOOL_SRC += format/protocol.c
TOOL_SRC += format/profile_read_sync.c format/profile_read_mpi.c format/profile_read_insitu.c
RT_OBJ := $(patsubst %.c,$(BUILD)/rt/%.o,$(RT_SRC)) $(patsubst %.S,$(BUILD)/rt/%.o,$(RT_ASM))
TOOL_OBJ := $(patsubst %.c,$(BUILD)/tool/%.o,$(TOOL_SRC))
LIB_OBJ := $(filter-out $(BUILD)/tool/tool/main.o,$(TOOL_OBJ))

.PHONY: all check check-built demo bench install clean help unit integration deps man
all: $(BUILD)/bin/sonde $(BUILD)/lib/libsonde.so $(BUILD)/lib/libsonde-mpi.so

$(BUILD)/rt/%.o: %.c $(wildcard runtime/*.h runtime/dyn/*.h format/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(RT_CFLAGS) -c $< -o $@

$(BUILD)/rt/%.o: %.S runtime/dyn/unwind_layout.h
	@mkdir -p $(dir $@)
	$(CC) -c $< -o $@

$(BUILD)/tool/%.o: %.c $(wildcard tool/*.h tool/*/*.h tool/patch/x86_64/*.h format/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TOOL_CFLAGS) -c $< -o $@

# the probes need no frame pointer (they read the stack pointer themselves): 1 ns per call
$(BUILD)/rt/runtime/probe.o: RT_CFLAGS += -fomit-frame-pointer

# the sync wrappers are on every lock's path: no frame pointer either (unwinding uses .eh_frame)
$(BUILD)/rt/runtime/sync_wrap.o: RT_CFLAGS += -fomit-frame-pointer

# dynamic instrumentation is entered from trampolines that save no vector register
DYN_CFLAGS := -mgeneral-regs-only -fno-tree-loop-distribute-patterns
$(BUILD)/rt/runtime/dyn/%.o: RT_CFLAGS += $(DYN_CFLAGS)
$(BUILD)/rt/runtime/dyn/entry.o: RT_CFLAGS += -fomit-frame-pointer

# the calibration's stand-ins for the program's functions are instrumented like them
$(BUILD)/rt/runtime/calib_target.o: runtime/calib_target.c
	@mkdir -p $(dir $@)
	$(CC) $(RT_CFLAGS) -finstrument-functions -c $< -o $@

$(BUILD)/lib/libsonde.so: $(RT_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(OPT) -o $@ $^ $(RT_LDFLAGS)

# libsonde-mpi.so: the PMPI wrappers (runtime/mpi/, docs/mpi.md), preloaded with libsonde.so
# into MPI programs; it calls libsonde.so (runtime/mpi_link.h), found next to it.
MPI_CFLAGS := $(shell mpicc --showme:compile 2>/dev/null)
MPI_LIBS := $(shell mpicc --showme:link 2>/dev/null)
MPI_RT_SRC := $(wildcard runtime/mpi/*.c)
MPI_RT_OBJ := $(patsubst %.c,$(BUILD)/rt/%.o,$(MPI_RT_SRC))
$(MPI_RT_OBJ): RT_CFLAGS += $(MPI_CFLAGS)
$(MPI_RT_OBJ): $(wildcard runtime/mpi/*.h)

$(BUILD)/lib/libsonde-mpi.so: $(MPI_RT_OBJ) $(BUILD)/rt/format/profile_codec.o $(BUILD)/lib/libsonde.so
	@mkdir -p $(dir $@)
	$(CC) $(OPT) -o $@ $(filter %.o,$^) -shared -Wl,--no-undefined -Wl,-z,now \
		-L$(BUILD)/lib -lsonde -Wl,-rpath,'$$ORIGIN' $(MPI_LIBS) -ldl

$(BUILD)/bin/sonde: $(TOOL_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(OPT) -o $@ $^ $(TOOL_LIBS)

# The Debian packages first, then a new make: the pkg-config flags above were read when this
# make started, before a fresh machine had otf2.
check: deps
	$(MAKE) check-built
include fuzz/fuzz.mk
include tests/tests.mk
include bench/bench.mk

# Debian packages for building and testing (quick no-op when all are installed)
deps:
	@./scripts/bootstrap.sh

demo: deps
	$(MAKE) all
	./examples/demo.sh

# Man pages made from the one source of the usage text, each command's --help (scripts/man.py)
man: $(BUILD)/bin/sonde
	python3 scripts/man.py $(BUILD)/bin/sonde man

install: all man
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include \
		$(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/share/sonde \
		$(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 755 $(BUILD)/bin/sonde $(DESTDIR)$(PREFIX)/bin/sonde
	install -m 755 $(BUILD)/lib/libsonde.so $(DESTDIR)$(PREFIX)/lib/libsonde.so
	install -m 755 $(BUILD)/lib/libsonde-mpi.so $(DESTDIR)$(PREFIX)/lib/libsonde-mpi.so
	install -m 644 include/sonde.h $(DESTDIR)$(PREFIX)/include/sonde.h
	install -m 644 share/sonde/metrics.mdl $(DESTDIR)$(PREFIX)/share/sonde/metrics.mdl
	install -m 644 share/sonde/hypotheses.hyp $(DESTDIR)$(PREFIX)/share/sonde/hypotheses.hyp
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' sonde.pc.in \
		> $(DESTDIR)$(PREFIX)/lib/pkgconfig/sonde.pc

clean:
	rm -rf $(BUILD) man

help:
	@echo "make            build build/bin/sonde and build/lib/libsonde.so"
	@echo "make check      build and run every test"
	@echo "make bench      run the benchmarks (figures, not pass/fail)"
	@echo "make demo       install missing Debian packages, build, profile the bundled example"
	@echo "make install    PREFIX=/usr/local: tool, runtime, header, pkg-config file, metrics, hypotheses, man pages"
	@echo "make man        man/sonde.1 and man/sonde-COMMAND.1 from each command's --help"
	@echo "DEBUG=1 (-O0 -Werror), ASAN=1 (address+undefined sanitizers)"
