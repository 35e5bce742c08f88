// SPDX-License-Identifier: GPL-2.0
/*
 * ptrace BTS: bad input for every request, each with its documented errno.
 *
 * Most tests use one fixture tracee, configured and stopped with records
 * in its ring; a failing request must leave both its configuration and
 * its ring exactly as they were.
 */

#include <sys/syscall.h>

#include "bts_common.hpp"

static const unsigned int TRACE = PTRACE_BTS_O_TRACE;
static const unsigned int SCHED = PTRACE_BTS_O_SCHED;
static const unsigned int CUT = PTRACE_BTS_O_CUT_SIZE;
static const unsigned int SIG = PTRACE_BTS_O_SIGNAL;

static const unsigned int FX_SIZE = 1024 * 24;

static long page;
static unsigned char *rw2;	/* two zeroed read-write pages */
static unsigned char *ro;	/* a read-only page */
static unsigned char *guard;	/* a read-write page followed by PROT_NONE */
static unsigned char *unmapped;	/* a page that was unmapped */

static Tracee fx;		/* configured, stopped, with records */
static Cfg fx_cfg;
static std::vector<Rec> fx_recs;

/* A forked child nobody traces */
struct Plain {
	pid_t pid = -1;
	~Plain()
	{
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, nullptr, 0);
		}
	}
};
static Plain untraced;
static Tracee runner;		/* traced, configured, running */

/*
 * (Re)configures the fixture tracee, lets it run bts_seq() once and takes
 * a snapshot of its configuration and ring.
 */
static bool fixture(void)
{
	Check ck;

	if (!ck.ret(bts_config(fx.pid, FX_SIZE, TRACE), 0, "fixture CONFIG") ||
	    !fx.run_seq() ||
	    !ck.ret(bts_status(fx.pid, &fx_cfg), 0, "fixture STATUS") ||
	    !expect_seq_tail(ck, fx.pid, fx_recs, ALL_RECORDS, "fixture"))
		return false;
	if (fx_recs.size() < 6)
		return ck.fail("fixture: only %zu records\n", fx_recs.size());
	return true;
}

static void setup(void)
{
	unsigned char *p;

	page = sysconf(_SC_PAGESIZE);
	rw2 = (unsigned char *)mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro = (unsigned char *)mmap(nullptr, page, PROT_READ,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	p = (unsigned char *)mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (rw2 == MAP_FAILED || ro == MAP_FAILED || p == MAP_FAILED ||
	    mprotect(p + page, page, PROT_NONE))
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	guard = p + page;
	unmapped = (unsigned char *)mmap(nullptr, page, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (unmapped == MAP_FAILED || munmap(unmapped, page))
		ksft_exit_fail_msg("mmap/munmap: %s\n", strerror(errno));

	if (!fx.spawn(seq_forever))
		ksft_exit_fail_msg("cannot start the fixture tracee\n");
	if (!fixture())
		ksft_exit_fail_msg("fixture tracee setup failed\n");
}

static bool changed(Check &ck, const char *what)
{
	std::vector<Rec> now;
	Cfg c;

	if (!ck.ret(bts_status(fx.pid, &c), 0, "STATUS"))
		return true;
	if (memcmp(&c, &fx_cfg, sizeof(c))) {
		ck.fail("%s: the configuration changed: size %u flags %#x signal %u, was %u %#x %u\n",
			what, c.size, c.flags, c.signal, fx_cfg.size,
			fx_cfg.flags, fx_cfg.signal);
		return true;
	}
	if (!get_all(ck, fx.pid, now))
		return true;
	if (now.size() != fx_recs.size() ||
	    memcmp(now.data(), fx_recs.data(), now.size() * REC)) {
		ck.fail("%s: the ring changed (%zu records, was %zu)\n", what,
			now.size(), fx_recs.size());
		return true;
	}
	return false;
}

/*
 * The fixture's configuration and ring are as they were.  If not, the
 * fixture is rebuilt so that the following tests start from a known state.
 */
static bool unchanged(Check &ck, const char *what)
{
	if (!changed(ck, what))
		return true;
	if (!fixture())
		ksft_print_msg("rebuilding the fixture failed\n");
	return false;
}

static bool still_unmapped(Check &ck)
{
	unsigned char vec;

	if (mincore(unmapped, page, &vec) == -1 && errno == ENOMEM)
		return true;
	return ck.fail("the unmapped page %p got mapped again\n", unmapped);
}

/*
 * Request @req on the fixture with @addr and @data must fail with @err and
 * leave the fixture unchanged.
 */
static bool rejected(long req, void *addr, unsigned long data, int err,
		     const char *what)
{
	Check ck;

	ck.err(xptrace(req, fx.pid, addr, data), err, what);
	unchanged(ck, what);
	return ck.ok;
}

/* The same with ADDR the unmapped page, which must still be unmapped */
static bool rejected_unmapped(long req, unsigned long data, const char *what)
{
	Check ck;

	return still_unmapped(ck) &&
	       rejected(req, unmapped, data, EFAULT, what);
}

/* ------------------------------------------------------------------ */
/* PTRACE_BTS_CONFIG                                                   */
/* ------------------------------------------------------------------ */

static bool config_fields(unsigned int size, unsigned int flags,
			  unsigned int signal, int err, const char *what)
{
	Cfg c = { size, flags, signal, 0 };

	return rejected(PTRACE_BTS_CONFIG, &c, sizeof(c), err, what);
}

/* rw2 holds a valid 100-record config followed by zeroes */
static void valid_config_in_rw2(void)
{
	Cfg c = { 100 * REC, TRACE, 0, 0 };

	memset(rw2, 0, 2 * page);
	memcpy(rw2, &c, sizeof(c));
}

/* CONFIG from the valid config in rw2, with DATA @data */
static bool config_rw2(unsigned long data, int err, const char *what)
{
	valid_config_in_rw2();
	return rejected(PTRACE_BTS_CONFIG, rw2, data, err, what);
}

/* The same with byte @at of the zeroed tail set to @val; rw2 is restored */
static bool config_rw2_tail(unsigned long data, size_t at, unsigned char val,
			    const char *what)
{
	bool ok;

	valid_config_in_rw2();
	rw2[at] = val;
	ok = rejected(PTRACE_BTS_CONFIG, rw2, data, E2BIG, what);
	valid_config_in_rw2();
	return ok;
}

static bool test_config_null(void)
{
	return rejected(PTRACE_BTS_CONFIG, nullptr, sizeof(Cfg), EFAULT,
			"CONFIG NULL");
}

static bool test_config_unmapped(void)
{
	return rejected_unmapped(PTRACE_BTS_CONFIG, sizeof(Cfg),
				 "CONFIG unmapped");
}

static bool test_config_data_0(void)
{
	return config_rw2(0, EINVAL, "CONFIG DATA 0");
}

static bool test_config_data_15(void)
{
	return config_rw2(15, EINVAL, "CONFIG DATA 15");
}

static bool test_config_data_big(void)
{
	return config_rw2(page + 1, E2BIG, "CONFIG DATA page + 1");
}

static bool test_config_tail(void)
{
	return config_rw2_tail(32, 20, 1, "CONFIG DATA 32, byte 20 set");
}

static bool test_config_tail_page(void)
{
	return config_rw2_tail(page, page - 1, 0x80,
			       "CONFIG DATA page, last byte set");
}

static bool test_config_flag_0x10(void)
{
	return config_fields(100 * REC, TRACE | 0x10, 0, EINVAL,
			     "CONFIG flags TRACE|0x10");
}

static bool test_config_flag_high(void)
{
	return config_fields(100 * REC, TRACE | 0x80000000U, 0, EINVAL,
			     "CONFIG flags TRACE|0x80000000");
}

static bool test_config_o_signal(void)
{
	return config_fields(100 * REC, TRACE | SIG, SIGUSR1, EOPNOTSUPP,
			     "CONFIG TRACE|SIGNAL, SIGUSR1") &&
	       config_fields(100 * REC, SCHED | SIG, SIGUSR1, EOPNOTSUPP,
			     "CONFIG SCHED|SIGNAL, SIGUSR1");
}

static bool test_config_signal_no_flag(void)
{
	return config_fields(100 * REC, TRACE, SIGUSR1, EINVAL,
			     "CONFIG TRACE, signal SIGUSR1");
}

static bool test_config_signal_1000(void)
{
	return config_fields(100 * REC, TRACE, 1000, EINVAL,
			     "CONFIG TRACE, signal 1000");
}

/*
 * Both errors apply: a signal above _NSIG is EINVAL "even with
 * PTRACE_BTS_O_SIGNAL", so EINVAL takes precedence over EOPNOTSUPP.
 */
static bool test_config_o_signal_1000(void)
{
	return config_fields(100 * REC, TRACE | SIG, 1000, EINVAL,
			     "CONFIG TRACE|SIGNAL, signal 1000");
}

static bool test_config_size_1(void)
{
	return config_fields(1, TRACE, 0, EINVAL, "CONFIG size 1");
}

static bool test_config_size_23(void)
{
	return config_fields(23, TRACE | SCHED, 0, EINVAL, "CONFIG size 23") &&
	       config_fields(23, TRACE | CUT, 0, EINVAL,
			     "CONFIG size 23, CUT_SIZE");
}

static bool test_config_size_0_flags(void)
{
	return config_fields(0, TRACE, 0, EINVAL, "CONFIG size 0, TRACE") &&
	       config_fields(0, SCHED, 0, EINVAL, "CONFIG size 0, SCHED") &&
	       config_fields(0, CUT, 0, EINVAL, "CONFIG size 0, CUT_SIZE") &&
	       config_fields(0, TRACE | SCHED, 0, EINVAL,
			     "CONFIG size 0, TRACE|SCHED");
}

static bool test_config_size_0_signal(void)
{
	return config_fields(0, 0, SIGUSR1, EINVAL,
			     "CONFIG size 0, signal SIGUSR1");
}

static bool test_config_no_kind(void)
{
	return config_fields(100 * REC, 0, 0, EINVAL, "CONFIG flags 0") &&
	       config_fields(100 * REC, CUT, 0, EINVAL,
			     "CONFIG flags CUT_SIZE");
}

static bool test_config_over_limit(void)
{
	unsigned long long max = bts_max_size();
	Check ck;

	if (!max)
		return ck.fail("cannot read %s\n", BTS_SYSCTL);
	if (max + REC <= 0xffffffffULL &&
	    !config_fields(max + REC, TRACE, 0, EINVAL,
			   "CONFIG limit + 24"))
		return false;
	return config_fields(0xffffffffU, TRACE, 0, EINVAL,
			     "CONFIG size 4 GiB - 1");
}

/* ------------------------------------------------------------------ */
/* PTRACE_BTS_STATUS                                                   */
/* ------------------------------------------------------------------ */

static bool status_raw(void *addr, unsigned long data, int err,
		       const char *what)
{
	return rejected(PTRACE_BTS_STATUS, addr, data, err, what);
}

static bool test_status_null(void)
{
	return status_raw(nullptr, sizeof(Cfg), EFAULT, "STATUS NULL");
}

static bool test_status_unmapped(void)
{
	return rejected_unmapped(PTRACE_BTS_STATUS, sizeof(Cfg),
				 "STATUS unmapped");
}

static bool test_status_readonly(void)
{
	return status_raw(ro, sizeof(Cfg), EFAULT, "STATUS read-only");
}

static bool test_status_small(void)
{
	return status_raw(rw2, 0, EINVAL, "STATUS DATA 0") &&
	       status_raw(rw2, 15, EINVAL, "STATUS DATA 15");
}

static bool test_status_big(void)
{
	return status_raw(rw2, page + 1, E2BIG, "STATUS DATA page + 1");
}

/* ------------------------------------------------------------------ */
/* PTRACE_BTS_GET                                                      */
/* ------------------------------------------------------------------ */

static bool get_raw(void *addr, unsigned long idx, int err, const char *what)
{
	return rejected(PTRACE_BTS_GET, addr, idx, err, what);
}

static bool test_get_null(void)
{
	return get_raw(nullptr, 0, EFAULT, "GET(0) NULL");
}

static bool test_get_unmapped(void)
{
	return rejected_unmapped(PTRACE_BTS_GET, 0, "GET(0) unmapped");
}

static bool test_get_readonly(void)
{
	return get_raw(ro, 0, EFAULT, "GET(0) read-only");
}

static bool test_get_index_size(void)
{
	Rec r{};

	return get_raw(&r, fx_recs.size(), EINVAL, "GET(SIZE)") &&
	       get_raw(&r, fx_recs.size() + 1, EINVAL, "GET(SIZE + 1)");
}

static bool test_get_index_huge(void)
{
	Rec r{};

#ifdef __x86_64__
	return get_raw(&r, 1UL << 32, EINVAL, "GET(1 << 32)") &&
	       get_raw(&r, (1UL << 32) + 1, EINVAL, "GET((1 << 32) + 1)") &&
	       get_raw(&r, ~0UL, EINVAL, "GET(ULONG_MAX)") &&
	       get_raw(&r, 1UL << 63, EINVAL, "GET(1 << 63)");
#else
	return get_raw(&r, ~0UL, EINVAL, "GET(ULONG_MAX)") &&
	       get_raw(&r, 1UL << 31, EINVAL, "GET(1 << 31)");
#endif
}

/* ------------------------------------------------------------------ */
/* PTRACE_BTS_DRAIN                                                    */
/* ------------------------------------------------------------------ */

static bool drain_raw(void *addr, unsigned long data, int err,
		      const char *what)
{
	return rejected(PTRACE_BTS_DRAIN, addr, data, err, what);
}

static bool test_drain_null(void)
{
	return drain_raw(nullptr, FX_SIZE, EFAULT, "DRAIN NULL");
}

static bool test_drain_unmapped(void)
{
	return rejected_unmapped(PTRACE_BTS_DRAIN, page, "DRAIN unmapped");
}

static bool test_drain_readonly(void)
{
	return drain_raw(ro, page, EFAULT, "DRAIN read-only");
}

/* The first two records fit, the third one faults: nothing is removed */
static bool test_drain_partial_fault(void)
{
	return drain_raw(guard - 2 * REC, fx_recs.size() * REC, EFAULT,
			 "DRAIN into a buffer that ends in a PROT_NONE page");
}

static bool test_drain_small(void)
{
	return drain_raw(rw2, 0, EINVAL, "DRAIN DATA 0") &&
	       drain_raw(rw2, REC - 1, EINVAL, "DRAIN DATA 23");
}

/* ------------------------------------------------------------------ */
/* ESRCH                                                               */
/* ------------------------------------------------------------------ */

enum { R_CONFIG, R_STATUS, R_SIZE, R_GET, R_CLEAR, R_DRAIN };

/* Request @which with valid arguments */
static Ret request(int which, pid_t pid)
{
	static Rec recs[16];
	Cfg c = { 64 * REC, TRACE | SCHED, 0, 0 };
	Rec r{};

	switch (which) {
	case R_CONFIG:
		return xptrace(PTRACE_BTS_CONFIG, pid, &c, sizeof(c));
	case R_STATUS:
		return xptrace(PTRACE_BTS_STATUS, pid, &c, sizeof(c));
	case R_SIZE:
		return bts_size(pid);
	case R_GET:
		return bts_get(pid, 0, &r);
	case R_CLEAR:
		return bts_clear(pid);
	default:
		return bts_drain(pid, recs, sizeof(recs));
	}
}

static pid_t untraced_pid(void)
{
	if (untraced.pid <= 0) {
		pid_t parent = getpid();

		fflush(stdout);
		untraced.pid = fork();
		if (untraced.pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(1);
			for (;;)
				pause();
		}
	}
	return untraced.pid;
}

/* Spins in user mode, with a system call now and then */
/* Counts the runner's loops, in memory shared with the tracer */
static volatile unsigned long *spins;

static void spinner(void)
{
	for (;;) {
		bts_spin(1000);
		(*spins)++;
		syscall(SYS_getppid);
	}
}

static pid_t runner_pid(void)
{
	if (runner.pid <= 0) {
		Check ck;

		if (!spins) {
			void *p = mmap(nullptr, sizeof(*spins),
				       PROT_READ | PROT_WRITE,
				       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

			if (p == MAP_FAILED)
				return -1;
			spins = (volatile unsigned long *)p;
		}

		if (!spawn_configured(ck, runner, spinner, 256 * REC, TRACE,
				      "runner CONFIG") ||
		    !runner.cont())
			runner.reap();
	}
	return runner.pid;
}

static bool esrch(pid_t pid, int which, const char *what)
{
	Check ck;

	if (pid <= 0)
		return ck.fail("%s: no task\n", what);
	return ck.err(request(which, pid), ESRCH, what);
}

static bool test_untraced_config(void) { return esrch(untraced_pid(), R_CONFIG, "untraced: CONFIG"); }
static bool test_untraced_status(void) { return esrch(untraced_pid(), R_STATUS, "untraced: STATUS"); }
static bool test_untraced_size(void) { return esrch(untraced_pid(), R_SIZE, "untraced: SIZE"); }
static bool test_untraced_get(void) { return esrch(untraced_pid(), R_GET, "untraced: GET"); }
static bool test_untraced_clear(void) { return esrch(untraced_pid(), R_CLEAR, "untraced: CLEAR"); }
static bool test_untraced_drain(void) { return esrch(untraced_pid(), R_DRAIN, "untraced: DRAIN"); }

static bool test_running_config(void) { return esrch(runner_pid(), R_CONFIG, "running: CONFIG"); }
static bool test_running_status(void) { return esrch(runner_pid(), R_STATUS, "running: STATUS"); }
static bool test_running_size(void) { return esrch(runner_pid(), R_SIZE, "running: SIZE"); }
static bool test_running_get(void) { return esrch(runner_pid(), R_GET, "running: GET"); }
static bool test_running_clear(void) { return esrch(runner_pid(), R_CLEAR, "running: CLEAR"); }
static bool test_running_drain(void) { return esrch(runner_pid(), R_DRAIN, "running: DRAIN"); }

/* Stopped again, the runner kept its configuration and recorded */
static bool test_running_unchanged(void)
{
	pid_t pid = runner_pid();
	Check ck;

	if (pid <= 0)
		return ck.fail("no running tracee\n");
	/* the runner must have run some loops: a loaded host may be slow */
	for (int i = 0; i < 1000 && *spins < 2; i++)
		usleep(10000);
	if (*spins < 2)
		ck.fail("the running tracee did not run for 10 s\n");
	kill(pid, SIGSTOP);
	if (!runner.wait_stop(SIGSTOP))
		return ck.fail("the running tracee did not stop\n");
	expect_status(ck, pid, 256 * REC, TRACE, "runner after ESRCH requests");
	expect_records(ck, pid, "runner");
	runner.reap();
	return ck.ok;
}

static const TestCase tests[] = {
	{ "CONFIG: NULL ADDR -> EFAULT", test_config_null },
	{ "CONFIG: unmapped ADDR -> EFAULT", test_config_unmapped },
	{ "CONFIG: DATA 0 -> EINVAL", test_config_data_0 },
	{ "CONFIG: DATA 15 -> EINVAL", test_config_data_15 },
	{ "CONFIG: DATA larger than a page -> E2BIG", test_config_data_big },
	{ "CONFIG: DATA 32 with a non-zero tail -> E2BIG", test_config_tail },
	{ "CONFIG: DATA page with a non-zero last byte -> E2BIG", test_config_tail_page },
	{ "CONFIG: unknown flag 0x10 -> EINVAL", test_config_flag_0x10 },
	{ "CONFIG: unknown flag 0x80000000 -> EINVAL", test_config_flag_high },
	{ "CONFIG: PTRACE_BTS_O_SIGNAL -> EOPNOTSUPP", test_config_o_signal },
	{ "CONFIG: signal without O_SIGNAL -> EINVAL", test_config_signal_no_flag },
	{ "CONFIG: signal 1000 -> EINVAL", test_config_signal_1000 },
	{ "CONFIG: O_SIGNAL with signal 1000 -> EINVAL", test_config_o_signal_1000 },
	{ "CONFIG: size 1 -> EINVAL", test_config_size_1 },
	{ "CONFIG: size 23 -> EINVAL", test_config_size_23 },
	{ "CONFIG: size 0 with flags -> EINVAL", test_config_size_0_flags },
	{ "CONFIG: size 0 with a signal -> EINVAL", test_config_size_0_signal },
	{ "CONFIG: size without TRACE or SCHED -> EINVAL", test_config_no_kind },
	{ "CONFIG: size above ptrace_bts_max_size -> EINVAL", test_config_over_limit },
	{ "STATUS: NULL ADDR -> EFAULT", test_status_null },
	{ "STATUS: unmapped ADDR -> EFAULT", test_status_unmapped },
	{ "STATUS: read-only ADDR -> EFAULT", test_status_readonly },
	{ "STATUS: DATA 0 and 15 -> EINVAL", test_status_small },
	{ "STATUS: DATA larger than a page -> E2BIG", test_status_big },
	{ "GET: NULL ADDR -> EFAULT", test_get_null },
	{ "GET: unmapped ADDR -> EFAULT", test_get_unmapped },
	{ "GET: read-only ADDR -> EFAULT", test_get_readonly },
	{ "GET: index SIZE and SIZE + 1 -> EINVAL", test_get_index_size },
	{ "GET: huge index -> EINVAL", test_get_index_huge },
	{ "DRAIN: NULL ADDR -> EFAULT, ring unchanged", test_drain_null },
	{ "DRAIN: unmapped ADDR -> EFAULT, ring unchanged", test_drain_unmapped },
	{ "DRAIN: read-only ADDR -> EFAULT, ring unchanged", test_drain_readonly },
	{ "DRAIN: fault after two records -> EFAULT, nothing removed", test_drain_partial_fault },
	{ "DRAIN: DATA 0 and 23 -> EINVAL", test_drain_small },
	{ "untraced task: CONFIG -> ESRCH", test_untraced_config },
	{ "untraced task: STATUS -> ESRCH", test_untraced_status },
	{ "untraced task: SIZE -> ESRCH", test_untraced_size },
	{ "untraced task: GET -> ESRCH", test_untraced_get },
	{ "untraced task: CLEAR -> ESRCH", test_untraced_clear },
	{ "untraced task: DRAIN -> ESRCH", test_untraced_drain },
	/*
	 * CONFIG last: a kernel that let it at a running tracee would free
	 * the ring under the tracee and might crash before the others ran.
	 */
	{ "running tracee: STATUS -> ESRCH", test_running_status },
	{ "running tracee: SIZE -> ESRCH", test_running_size },
	{ "running tracee: GET -> ESRCH", test_running_get },
	{ "running tracee: CLEAR -> ESRCH", test_running_clear },
	{ "running tracee: DRAIN -> ESRCH", test_running_drain },
	{ "running tracee: CONFIG -> ESRCH", test_running_config },
	{ "running tracee: configuration kept, records collected", test_running_unchanged },
};

int main(void)
{
	ksft_print_header();
	bts_require_hw();
	setup();
	run_tests(tests);
}
