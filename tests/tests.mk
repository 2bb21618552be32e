# Tests, included by the top-level Makefile.
#   make check        build everything, run unit and integration tests; last line "N passed, M failed"
#   make unit         the cmocka unit tests only
#   make integration  the integration tests only (tests/integration/run.sh, programs in tests/programs)
# Unit tests compile the sources they test directly; test binaries go to build/tests/.

TEST_BUILD := $(BUILD)/tests
TEST_CFLAGS := $(BASE_CFLAGS) -Iformat -Itool -Itool/analysis
TEST_LIBS := -lcmocka -ldw -lelf -lm

UNIT_FORMAT := $(TEST_BUILD)/test_format
UNIT_COMPENSATE := $(TEST_BUILD)/test_compensate
UNIT_SYMBOLS := $(TEST_BUILD)/test_symbols
UNIT_CALIB := $(TEST_BUILD)/test_calib_math
UNIT_TRACE_FORMAT := $(TEST_BUILD)/test_trace_format
UNIT_TRACE_PROFILE := $(TEST_BUILD)/test_trace_profile
FIXTURE_SRC := tests/unit/fixture_syms.c tests/unit/fixture_syms2.c
FIXTURES := $(TEST_BUILD)/fixture_syms_O0 $(TEST_BUILD)/fixture_syms_O2 \
	$(TEST_BUILD)/fixture_syms_O2_stripped $(TEST_BUILD)/fixture_syms_instr
UNIT_BINS := $(UNIT_FORMAT) $(UNIT_COMPENSATE) $(UNIT_SYMBOLS) $(UNIT_CALIB) $(FIXTURES) \
	$(UNIT_TRACE_PROFILE) $(UNIT_TRACE_FORMAT) $(FUZZ_TRACE)

# Memory errors and leaks in the format reader and the compensation count as failures
# (under valgrind when it is installed; ASAN=1 builds check themselves).
VALGRIND := $(shell command -v valgrind 2>/dev/null)
ifneq ($(VALGRIND),)
ifneq ($(ASAN),1)
UNIT_VG := valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
endif
endif
UNIT_CMDS := --unit "$(UNIT_VG) $(UNIT_FORMAT)" --unit "$(UNIT_VG) $(UNIT_COMPENSATE)" \
	--unit "$(UNIT_CALIB)" --unit "$(UNIT_VG) $(UNIT_TRACE_PROFILE)" \
	--unit "$(UNIT_SYMBOLS) $(FIXTURES)" --unit "$(UNIT_VG) $(UNIT_TRACE_FORMAT)" \
	--unit "$(FUZZ_SMOKE)"

# Trace perturbation analysis (tool/analysis/perturb*.c, trace_compare.c) on hand-built traces.
UNIT_PERTURB := $(TEST_BUILD)/test_perturb
UNIT_BINS += $(UNIT_PERTURB)
UNIT_CMDS += --unit "$(UNIT_VG) $(UNIT_PERTURB)"

$(UNIT_PERTURB): tests/unit/test_perturb.c tool/analysis/perturb.c \
		tool/analysis/perturb_events.c tool/analysis/trace_compare.c tool/util.c \
		format/trace_read.c format/trace_read_mpi.c format/profile_codec.c tool/analysis/perturb.h \
		tool/analysis/trace_compare.h format/trace_read.h format/trace.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c,$^) $(TEST_LIBS)

# MPI events: their records, their matching across a run's traces, message edges.
UNIT_MPI_TRACE := $(TEST_BUILD)/test_mpi_trace
UNIT_BINS += $(UNIT_MPI_TRACE)
UNIT_CMDS += --unit "$(UNIT_VG) $(UNIT_MPI_TRACE)"

$(UNIT_MPI_TRACE): tests/unit/test_mpi_trace.c tool/mpi_match.c tool/analysis/perturb.c \
		tool/analysis/perturb_events.c tool/util.c format/trace_read.c \
		format/trace_read_mpi.c format/profile_codec.c tool/mpi_match.h \
		tool/analysis/perturb.h format/trace_read.h format/trace_read_mpi.h format/trace.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c,$^) $(TEST_LIBS)

# --sync: the compensation rule on synthetic delays, the SYNC/SYNC_COMP records' reader.
UNIT_SYNC := $(TEST_BUILD)/test_sync
UNIT_BINS += $(UNIT_SYNC)
UNIT_CMDS += --unit "$(UNIT_VG) $(UNIT_SYNC)"

$(UNIT_SYNC): tests/unit/test_sync.c format/profile_read.c format/profile_read_sync.c format/profile_read_insitu.c format/profile_read_mpi.c \
		format/profile_read_io.c format/profile_codec.c format/trace_read.c format/trace_read_mpi.c runtime/sync_rule.h \
		format/profile_sync.h format/profile_read.h format/trace_read.h tool/sync_price.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c,$^) $(TEST_LIBS)

# --insitu: the in-situ price's estimator, a thread's delay at its own price, the INSITU reader.
UNIT_INSITU := $(TEST_BUILD)/test_insitu
UNIT_BINS += $(UNIT_INSITU)
UNIT_CMDS += --unit "$(UNIT_VG) $(UNIT_INSITU)"

$(UNIT_INSITU): tests/unit/test_insitu.c format/profile_read.c format/profile_read_sync.c \
		format/profile_read_insitu.c format/profile_read_mpi.c format/profile_read_io.c \
		format/profile_codec.c runtime/insitu_est.h runtime/sync_rule.h \
		format/profile_insitu.h format/profile_read.h tool/sync_price.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c,$^) $(TEST_LIBS)

# Process control of a running target (tool/inject/): a forked child stopped, called, let go.
UNIT_INJECT := $(TEST_BUILD)/test_inject
UNIT_INJECT_LIB := $(TEST_BUILD)/libattach_unit.so
UNIT_BINS += $(UNIT_INJECT) $(UNIT_INJECT_LIB)
UNIT_CMDS += --unit "$(UNIT_INJECT) $(abspath $(UNIT_INJECT_LIB))"

$(UNIT_INJECT): tests/unit/test_inject.c $(wildcard tool/inject/*.c tool/inject/*.h) tool/util.c
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c,$^) $(TEST_LIBS) -lpthread

$(UNIT_INJECT_LIB): tests/programs/attach_lib.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -shared -fPIC -o $@ $<

# Metric Description Language, plans, time histograms, aggregation, cost model (tool/mdl/).
UNIT_MDL := $(TEST_BUILD)/test_mdl
UNIT_BINS += $(UNIT_MDL)
UNIT_CMDS += --unit "$(UNIT_VG) $(UNIT_MDL)"

$(UNIT_MDL): tests/unit/test_mdl.c $(wildcard tool/mdl/*.c tool/mdl/*.h) tool/util.c \
		share/sonde/metrics.mdl
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -DMDL_BUILTIN='"$(CURDIR)/share/sonde/metrics.mdl"' -o $@ \
		$(filter %.c,$^) $(TEST_LIBS)

# The sync objects and files of a process (tool/dyn/resources.c, sync_vars.c), on the test's own.
UNIT_RESOURCES := $(TEST_BUILD)/test_resources
UNIT_BINS += $(UNIT_RESOURCES)
UNIT_CMDS += --unit "$(UNIT_RESOURCES)"

$(UNIT_RESOURCES): tests/unit/test_resources.c tool/dyn/resources.c tool/dyn/sync_vars.c \
		$(wildcard tool/inject/*.c tool/inject/*.h) tool/dyn/resources.h tool/dyn/sync_vars.h \
		tool/util.c tool/sync_names.c tool/demangle.c tool/sync_names.h tool/demangle.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c,$^) $(TEST_LIBS) -lpthread -ldl

# Whether a measured process has ended (tool/dyn/proc_state.c): children, threads, /proc.
UNIT_PROC_STATE := $(TEST_BUILD)/test_proc_state
UNIT_BINS += $(UNIT_PROC_STATE)
UNIT_CMDS += --unit "$(UNIT_PROC_STATE)"

$(UNIT_PROC_STATE): tests/unit/test_proc_state.c tool/dyn/proc_state.c tool/dyn/proc_state.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c,$^) $(TEST_LIBS) -lpthread

# The tool's side of the control connection (tool/dyn/client.c): messages that arrive in one
# read, SAMPLE starts that follow the previous end (protocol version 5).
UNIT_CLIENT := $(TEST_BUILD)/test_client
UNIT_BINS += $(UNIT_CLIENT)
UNIT_CMDS += --unit "$(UNIT_VG) $(UNIT_CLIENT)"

$(UNIT_CLIENT): tests/unit/test_client.c tool/dyn/client.c tool/dyn/client.h format/protocol.c \
		format/protocol.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c,$^) $(TEST_LIBS)

# Which procedure a call instruction reaches (tool/dyn/callees.c: symbols, PLT stubs, GOT).
UNIT_CALLEES := $(TEST_BUILD)/test_callees
UNIT_BINS += $(UNIT_CALLEES)
UNIT_CMDS += --unit "$(UNIT_VG) $(UNIT_CALLEES)"

$(UNIT_CALLEES): tests/unit/test_callees.c tool/dyn/callees.c tool/dyn/callees.h tool/util.c
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c,$^) $(TEST_LIBS)

# Dynamic instrumentation: the protocol codec; the runtime's points, primitives, timers and
# shadow stack through hand-written trampolines (tests/unit/dyn_tramp.S); its control server
# with a client; libsonde.so opened with dlopen (attached) and preloaded with SONDE_DYNAMIC=1.
# The runtime's dyn code is compiled as in libsonde.so (DYN_CFLAGS, Makefile).
UNIT_PROTOCOL := $(TEST_BUILD)/test_protocol
UNIT_DYN := $(TEST_BUILD)/test_dyn
UNIT_DYN_SERVER := $(TEST_BUILD)/test_dyn_server
UNIT_DYN_OBJECTS := $(TEST_BUILD)/test_dyn_objects
UNIT_DYN_ATTACH := $(TEST_BUILD)/test_dyn_attach
DYN_BENCH := $(TEST_BUILD)/dyn_bench
DYN_TEST_OBJ := $(patsubst %.c,$(TEST_BUILD)/dyn/%.o,$(wildcard runtime/dyn/*.c)) \
	$(TEST_BUILD)/dyn/dyn_ret.o $(TEST_BUILD)/dyn/dyn_tramp.o
DYN_TEST_SRC := tests/unit/dyn_support.c runtime/clock.c runtime/util.c runtime/modinfo.c \
	format/protocol.c runtime/calib_dyn.c runtime/stats.c runtime/arch/x86_64/dyn_calib_code.c
UNIT_BINS += $(UNIT_PROTOCOL) $(UNIT_DYN) $(UNIT_DYN_SERVER) $(UNIT_DYN_ATTACH) $(DYN_BENCH) \
	$(UNIT_DYN_OBJECTS)
UNIT_CMDS += --unit "$(UNIT_VG) $(UNIT_PROTOCOL)" --unit "$(UNIT_DYN)" --unit "$(UNIT_DYN_OBJECTS)" \
	--unit "$(UNIT_DYN_SERVER)" --unit "$(UNIT_DYN_ATTACH) $(BUILD)/lib/libsonde.so"

$(UNIT_PROTOCOL): tests/unit/test_protocol.c format/protocol.c format/protocol.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c,$^) $(TEST_LIBS)

$(TEST_BUILD)/dyn/%.o: %.c $(wildcard runtime/*.h runtime/dyn/*.h format/protocol.h)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) $(DYN_CFLAGS) -c $< -o $@
$(TEST_BUILD)/dyn/dyn_ret.o: runtime/arch/x86_64/dyn_ret.S runtime/dyn/unwind_layout.h
	@mkdir -p $(dir $@)
	$(CC) -c $< -o $@
$(TEST_BUILD)/dyn/dyn_tramp.o: tests/unit/dyn_tramp.S
	@mkdir -p $(dir $@)
	$(CC) -c $< -o $@

$(UNIT_DYN) $(UNIT_DYN_SERVER) $(DYN_BENCH) $(UNIT_DYN_OBJECTS): $(TEST_BUILD)/%: tests/unit/%.c $(DYN_TEST_OBJ) \
		$(DYN_TEST_SRC) tests/unit/dyn_test.h
	$(CC) $(TEST_CFLAGS) -Iruntime -o $@ $(filter %.c %.o,$^) $(TEST_LIBS) -lpthread -ldl

$(UNIT_DYN_ATTACH): tests/unit/test_dyn_attach.c format/protocol.c format/protocol.h \
		| $(BUILD)/lib/libsonde.so
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c,$^) $(TEST_LIBS) -ldl

$(UNIT_FORMAT): tests/unit/test_format.c format/profile_codec.c format/profile_read.c \
		format/profile_read_sync.c format/profile_read_insitu.c format/profile_read_mpi.c \
		format/profile_read_io.c \
		format/profile.h format/profile_read.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c,$^) $(TEST_LIBS)

$(UNIT_COMPENSATE): tests/unit/test_compensate.c tool/analysis/compensate.c \
		tool/analysis/compensate.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c,$^) $(TEST_LIBS)

$(UNIT_TRACE_PROFILE): tests/unit/test_trace_profile.c tool/trace_profile.c tool/util.c \
		format/trace_read.c format/trace_read_mpi.c format/profile_read.c format/profile_read_sync.c format/profile_read_insitu.c format/profile_read_mpi.c \
		format/profile_read_io.c format/profile_codec.c \
		tool/trace_profile.h format/trace_read.h format/profile_read.h format/profile.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c,$^) $(TEST_LIBS)

$(UNIT_TRACE_FORMAT): tests/unit/test_trace_format.c format/trace_read.c format/trace_read_mpi.c format/profile_codec.c \
		format/trace_read.h format/trace.h format/profile.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c,$^) $(TEST_LIBS)

$(UNIT_CALIB): tests/unit/test_calib_math.c runtime/stats.c tool/analysis/clock_error.c \
		tool/analysis/clock_error.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -Iruntime -o $@ $(filter %.c,$^) $(TEST_LIBS)

# test_symbols.c defines _GNU_SOURCE itself: -U keeps the command line's from clashing with it.
$(TEST_BUILD)/test_symbols.o: tests/unit/test_symbols.c tool/symbols.h tool/elfinfo.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -U_GNU_SOURCE -c -o $@ $<

$(UNIT_SYMBOLS): $(TEST_BUILD)/test_symbols.o tool/symbols.c tool/elfinfo.c tool/demangle.c \
		tool/symbols.h tool/elfinfo.h tool/demangle.h
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.o %.c,$^) $(TEST_LIBS)

# The symbol fixtures are built exactly as test_symbols expects (not with the strict flags).
$(TEST_BUILD)/fixture_syms_O0: $(FIXTURE_SRC)
	@mkdir -p $(dir $@)
	$(CC) -g -O0 -o $@ $^
$(TEST_BUILD)/fixture_syms_O2: $(FIXTURE_SRC)
	@mkdir -p $(dir $@)
	$(CC) -g -O2 -fPIE -pie -o $@ $^
$(TEST_BUILD)/fixture_syms_O2_stripped: $(TEST_BUILD)/fixture_syms_O2
	strip -o $@ $<
$(TEST_BUILD)/fixture_syms_instr: $(FIXTURE_SRC)
	@mkdir -p $(dir $@)
	$(CC) -g -O0 -finstrument-functions -DFIXTURE_HOOKS -o $@ $^


# Binary patcher (tool/patch/): a corpus of functions built by gcc and clang at -O0..-O3 in four
# flavours (plain, frame pointers, a 5-byte NOP sled, endbr64), each patched in-process.
UNIT_PATCH := $(TEST_BUILD)/test_patch
PATCH_SRC := $(wildcard tool/patch/x86_64/*.c)
PATCH_HDR := tool/patch/patch.h $(wildcard tool/patch/x86_64/*.h)
PATCH_CLANG := $(shell command -v clang 2>/dev/null)
PATCH_COMPILERS := gcc $(if $(PATCH_CLANG),clang)
PATCH_FLAVOURS := plain fp pfe cet
PATCH_FLAGS_plain :=
PATCH_FLAGS_fp := -fno-omit-frame-pointer
PATCH_FLAGS_pfe := -fpatchable-function-entry=5
PATCH_FLAGS_cet := -fcf-protection=full
PATCH_CORPUS := $(foreach c,$(PATCH_COMPILERS),$(foreach l,O0 O1 O2 O3,\
	$(foreach f,$(PATCH_FLAVOURS),$(TEST_BUILD)/patch_corpus_$(c)_$(l)_$(f).so)))
UNIT_BINS += $(UNIT_PATCH) $(PATCH_CORPUS)
UNIT_CMDS += --unit "$(UNIT_PATCH) $(if $(PATCH_CLANG),,--no-clang) $(PATCH_CORPUS)"

$(UNIT_PATCH): tests/unit/test_patch.c tests/unit/patch_live.c tests/unit/patch_live.h \
		$(PATCH_SRC) $(PATCH_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c,$^) -lZydis $(TEST_LIBS) -ldl

# Inserting and removing points (tool/dyn/install.c) against a fake stopped process.
UNIT_DYN_INSTALL := $(TEST_BUILD)/test_dyn_install
UNIT_BINS += $(UNIT_DYN_INSTALL)
UNIT_CMDS += --unit "$(UNIT_DYN_INSTALL)"

$(UNIT_DYN_INSTALL): tests/unit/test_dyn_install.c tool/dyn/install.c $(PATCH_SRC) $(PATCH_HDR) \
		tool/dyn/dyn.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c,$^) -lZydis $(TEST_LIBS)

# patch_corpus_COMPILER_LEVEL_FLAVOUR.so
patch_word = $(word $(1),$(subst _, ,$*))
$(TEST_BUILD)/patch_corpus_%.so: tests/unit/patch_corpus.c tests/unit/patch_corpus_asm.S
	@mkdir -p $(dir $@)
	$(call patch_word,1) -$(call patch_word,2) $(PATCH_FLAGS_$(call patch_word,3)) -fPIC \
		-shared -o $@ $^

# The runtime's calibration trampolines against the patcher's bytes.
UNIT_CALIB_CODE := $(TEST_BUILD)/test_calib_code
UNIT_BINS += $(UNIT_CALIB_CODE)
UNIT_CMDS += --unit "$(UNIT_CALIB_CODE)"

$(UNIT_CALIB_CODE): tests/unit/test_calib_code.c runtime/arch/x86_64/dyn_calib_code.c \
		$(PATCH_SRC) $(PATCH_HDR) runtime/dyn/dyn.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -Iruntime -o $@ $(filter %.c,$^) -lZydis $(TEST_LIBS)

# The I/O, OS and hardware-counter records (format/profile_read_io.c): round trip, hostile input.
UNIT_FORMAT_IO := $(TEST_BUILD)/test_format_io
UNIT_BINS += $(UNIT_FORMAT_IO)
UNIT_CMDS += --unit "$(UNIT_VG) $(UNIT_FORMAT_IO)"

$(UNIT_FORMAT_IO): tests/unit/test_format_io.c format/profile_codec.c format/profile_read.c \
		format/profile_read_sync.c format/profile_read_insitu.c format/profile_read_mpi.c format/profile_read_io.c format/profile.h \
		format/profile_read.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c,$^) $(TEST_LIBS)

# Statistical sampling: the runtime's table of stacks under concurrent inserts and when full; the
# SAMPLES record read back and refused when hostile.
UNIT_SAMPLE := $(TEST_BUILD)/test_sample
UNIT_BINS += $(UNIT_SAMPLE)
UNIT_CMDS += --unit "$(UNIT_VG) $(UNIT_SAMPLE)"

$(UNIT_SAMPLE): tests/unit/test_sample.c runtime/sample_table.c format/profile_codec.c \
		format/profile_read.c format/profile_read_sync.c format/profile_read_insitu.c format/profile_read_mpi.c format/profile_read_io.c \
		runtime/sample.h format/profile.h format/profile_read.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -Iruntime -o $@ $(filter %.c,$^) $(TEST_LIBS) -lpthread

# The Performance Consultant (tool/consult/): the hypothesis language, and the W3 search engine
# on a synthetic data source (exact Search History Graphs).
UNIT_CONSULT := $(TEST_BUILD)/test_consult
UNIT_BINS += $(UNIT_CONSULT)
UNIT_CMDS += --unit "$(UNIT_VG) $(UNIT_CONSULT)"

$(UNIT_CONSULT): tests/unit/test_consult.c tool/consult/engine.c tool/consult/focus.c \
		tool/consult/hyp.c tool/consult/trigger.c tool/mdl/lex.c tool/util.c $(wildcard tool/consult/*.h) \
		tool/mdl/mdl_lex.h share/sonde/hypotheses.hyp
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -DHYP_BUILTIN='"$(CURDIR)/share/sonde/hypotheses.hyp"' -o $@ \
		$(filter %.c,$^) $(TEST_LIBS)

# The consultant's post-mortem source over an MPI run's ranks: waits known exactly.
UNIT_CONSULT_MPI := $(TEST_BUILD)/test_consult_mpi
UNIT_BINS += $(UNIT_CONSULT_MPI)
UNIT_CMDS += --unit "$(UNIT_VG) $(UNIT_CONSULT_MPI)"

$(UNIT_CONSULT_MPI): tests/unit/test_consult_mpi.c tool/consult/trace_source.c \
		tool/consult/trace_sync.c tool/consult/trace_mpi.c tool/consult/focus.c \
		tool/consult/hyp.c tool/mdl/lex.c tool/mdl/cost.c tool/trace_profile.c tool/symbols.c \
		tool/model_sync.c tool/sync_names.c tool/demangle.c tool/mpi_match.c tool/util.c \
		format/trace_read.c format/trace_read_mpi.c format/profile_codec.c \
		$(wildcard tool/consult/*.h) \
		tool/mpi_match.h format/trace_read.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c,$^) $(TEST_LIBS) -ldl

# The consultant's live search of an MPI program's ranks together, over synthetic ranks.
UNIT_CONSULT_LIVE_MPI := $(TEST_BUILD)/test_consult_live_mpi
UNIT_BINS += $(UNIT_CONSULT_LIVE_MPI)
UNIT_CMDS += --unit "$(UNIT_VG) $(UNIT_CONSULT_LIVE_MPI)"

$(UNIT_CONSULT_LIVE_MPI): tests/unit/test_consult_live_mpi.c tool/consult/live_mpi.c \
		tool/util.c $(wildcard tool/consult/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c,$^) $(TEST_LIBS)

# MPI: the compensation rules on synthetic timelines, the MPI_CALL/MPI_PEER/MPI_COMP records.
UNIT_MPI := $(TEST_BUILD)/test_mpi
UNIT_BINS += $(UNIT_MPI)
UNIT_CMDS += --unit "$(UNIT_VG) $(UNIT_MPI)"

$(UNIT_MPI): tests/unit/test_mpi.c format/profile_read.c format/profile_read_sync.c format/profile_read_insitu.c \
		format/profile_read_mpi.c format/profile_read_io.c format/profile_codec.c \
		runtime/sync_rule.h runtime/mpi/mpi_rule.h format/profile_mpi.h format/profile_read.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c,$^) $(TEST_LIBS)

# MPI: the piggyback's type table against fake PMPI_Type_ routines (libmpi lends MPI_INT64_T).
UNIT_MPI_PBTYPES := $(TEST_BUILD)/test_mpi_pbtypes
UNIT_BINS += $(UNIT_MPI_PBTYPES)
UNIT_CMDS += --unit "$(UNIT_VG) $(UNIT_MPI_PBTYPES)"

$(UNIT_MPI_PBTYPES): tests/unit/test_mpi_pbtypes.c runtime/mpi/mpi_pbtypes.c runtime/mpi/mpi_pbtypes.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) $(MPI_CFLAGS) -o $@ $(filter %.c,$^) $(TEST_LIBS) $(MPI_LIBS)

# Last: their prerequisites are expanded when read, so every UNIT_BINS += must come first.
unit: $(UNIT_BINS)
	tests/integration/run.sh --no-integration $(UNIT_CMDS)

integration: all
	tests/integration/run.sh

check-built: all $(UNIT_BINS)
	tests/integration/run.sh $(UNIT_CMDS)
