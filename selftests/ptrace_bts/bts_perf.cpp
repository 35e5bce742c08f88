// SPDX-License-Identifier: GPL-2.0
/*
 * ptrace BTS and perf share the DS buffers and the LBR/BTS exclusivity.
 *
 * While any task is traced with PTRACE_BTS_O_TRACE, perf events that need
 * BTS or the LBR fail with EBUSY (on any task); while such an event
 * exists, CONFIG with PTRACE_BTS_O_TRACE fails with EBUSY.  Scheduling
 * records alone take nothing from perf.
 *
 * The baseline comes first: with no ptrace BTS in use, the same events
 * must open.  If they do not, the environment is broken and the tests
 * fail (they do not skip).
 */

#include <linux/perf_event.h>
#include <sys/syscall.h>

#include "bts_common.hpp"

static const unsigned int TRACE = PTRACE_BTS_O_TRACE;
static const unsigned int SCHED = PTRACE_BTS_O_SCHED;

enum Kind { BTS, LBR };

static const char *kind_name(Kind k)
{
	return k == BTS ? "perf BTS event" : "perf branch-stack event";
}

static void make_attr(Kind k, struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_HARDWARE;
	a->disabled = 1;
	a->exclude_kernel = 1;
	if (k == BTS) {
		/* branch instructions, every one: perf's BTS */
		a->config = PERF_COUNT_HW_BRANCH_INSTRUCTIONS;
		a->sample_period = 1;
		a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_ADDR;
	} else {
		/* cycles with a branch stack: the LBR */
		a->config = PERF_COUNT_HW_CPU_CYCLES;
		a->sample_period = 100000;
		a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_BRANCH_STACK;
		a->branch_sample_type = PERF_SAMPLE_BRANCH_ANY |
					PERF_SAMPLE_BRANCH_USER;
	}
}

/* perf_event_open() of @k on @pid (0: ourselves), any CPU */
static Ret perf_open(Kind k, pid_t pid)
{
	struct perf_event_attr a;
	long fd;

	make_attr(k, &a);
	errno = 0;
	fd = syscall(__NR_perf_event_open, &a, pid, -1, -1, 0UL);
	return { fd, fd < 0 ? errno : 0 };
}

/* The event must open; it is closed again */
static bool expect_open(Check &ck, Kind k, pid_t pid, const char *when)
{
	Ret r = perf_open(k, pid);

	if (r.ret >= 0) {
		close(r.ret);
		return true;
	}
	return ck.fail("%s: %s on %s: expected success, got %s\n", when,
		       kind_name(k), pid ? "the tracee" : "another task",
		       errname(r.err));
}

static bool expect_busy(Check &ck, Kind k, pid_t pid, const char *when)
{
	Ret r = perf_open(k, pid);

	if (r.ret >= 0) {
		close(r.ret);
		return ck.fail("%s: %s on %s: expected EBUSY, it opened\n",
			       when, kind_name(k),
			       pid ? "the tracee" : "another task");
	}
	if (r.err != EBUSY)
		return ck.fail("%s: %s on %s: expected EBUSY, got %s\n", when,
			       kind_name(k), pid ? "the tracee" : "another task",
			       errname(r.err));
	return true;
}

static bool baseline(Kind k)
{
	Check ck;
	Tracee t;

	if (!t.spawn(seq_forever))
		return false;
	expect_open(ck, k, t.pid, "baseline, no ptrace BTS");
	expect_open(ck, k, 0, "baseline, no ptrace BTS");
	return ck.ok;
}

static bool test_baseline_bts(void) { return baseline(BTS); }
static bool test_baseline_lbr(void) { return baseline(LBR); }

/* A tracee traced with TRACE: perf events fail on it and on others */
static bool traced_busy(Kind k)
{
	Check ck;
	Tracee t;

	if (!spawn_configured(ck, t, seq_forever, 256 * REC, TRACE))
		return false;
	expect_busy(ck, k, t.pid, "configured");
	expect_busy(ck, k, 0, "configured");
	/* tracing goes on undisturbed */
	if (!t.run_seq())
		return false;
	expect_busy(ck, k, t.pid, "after running");
	expect_seq_tail(ck, t.pid, ALL_RECORDS, "traced");
	/* released: perf gets it back */
	ck.ret(bts_config(t.pid, 0, 0), 0, "release");
	expect_open(ck, k, t.pid, "after the release");
	expect_open(ck, k, 0, "after the release");
	return ck.ok;
}

static bool test_traced_bts(void) { return traced_busy(BTS); }
static bool test_traced_lbr(void) { return traced_busy(LBR); }

/* SCHED alone takes nothing from perf */
static bool test_sched_only(void)
{
	Check ck;
	Tracee t;

	if (!spawn_configured(ck, t, seq_forever, 256 * REC, SCHED,
			      "CONFIG SCHED"))
		return false;
	expect_open(ck, BTS, t.pid, "SCHED only");
	expect_open(ck, LBR, t.pid, "SCHED only");
	expect_open(ck, BTS, 0, "SCHED only");
	return ck.ok;
}

/* The tracee dies with its ring configured: perf gets it back */
static bool test_after_exit(void)
{
	unsigned long long end;
	int tries = 0;
	Check ck;
	Ret r;

	{
		Tracee t;

		if (!spawn_run_seq(ck, t, seq_forever, 256 * REC, TRACE))
			return false;
		expect_busy(ck, BTS, 0, "traced");
	}	/* killed and reaped here */
	/* freed when the tracee exits; allow a release deferred past reaping */
	end = now_ns() + 1000000000ULL;
	for (;;) {
		r = perf_open(BTS, 0);
		if (r.ret >= 0 || r.err != EBUSY || now_ns() > end)
			break;
		tries++;
		usleep(10000);
	}
	if (r.ret >= 0)
		close(r.ret);
	else
		ck.fail("after the tracee died: %s: %s\n", kind_name(BTS),
			errname(r.err));
	if (tries)
		ksft_print_msg("perf got BTS back only after %d retries\n",
			       tries);
	expect_open(ck, LBR, 0, "after the tracee died");
	return ck.ok;
}

/*
 * A perf event exists (on ourselves): CONFIG with TRACE fails with EBUSY
 * and leaves the tracee unconfigured; SCHED alone is fine; once the event
 * is closed, CONFIG with TRACE succeeds and records.
 */
static bool perf_first(Kind k)
{
	Check ck;
	Tracee t;
	Ret fd;

	/* the tracee is forked before the event exists: it holds no fd */
	if (!t.spawn(seq_forever))
		return false;
	fd = perf_open(k, 0);
	if (fd.ret < 0)
		return ck.fail("%s: %s\n", kind_name(k), errname(fd.err));
	ck.err(bts_config(t.pid, 256 * REC, TRACE), EBUSY,
	       "CONFIG TRACE while a perf event exists");
	expect_status(ck, t.pid, 0, 0, "after EBUSY");
	ck.err(bts_config(t.pid, 256 * REC, TRACE | SCHED), EBUSY,
	       "CONFIG TRACE|SCHED while a perf event exists");
	expect_status(ck, t.pid, 0, 0, "after EBUSY");
	ck.ret(bts_config(t.pid, 256 * REC, SCHED), 0,
	       "CONFIG SCHED while a perf event exists");
	expect_status(ck, t.pid, 256 * REC, SCHED, "SCHED");
	/* a failed reCONFIG keeps the SCHED configuration */
	ck.err(bts_config(t.pid, 128 * REC, TRACE), EBUSY,
	       "reCONFIG TRACE while a perf event exists");
	expect_status(ck, t.pid, 256 * REC, SCHED, "after the failed reCONFIG");
	close(fd.ret);

	ck.ret(bts_config(t.pid, 256 * REC, TRACE), 0,
	       "CONFIG TRACE after the event was closed");
	expect_status(ck, t.pid, 256 * REC, TRACE, "after the event was closed");
	if (!t.run_seq())
		return false;
	expect_seq_tail(ck, t.pid, ALL_RECORDS, "after the event was closed");
	ck.ret(bts_config(t.pid, 0, 0), 0, "release");
	return ck.ok;
}

static bool test_perf_first_bts(void) { return perf_first(BTS); }
static bool test_perf_first_lbr(void) { return perf_first(LBR); }

static const TestCase tests[] = {
	{ "baseline: perf BTS event opens without ptrace BTS", test_baseline_bts },
	{ "baseline: perf branch-stack event opens without ptrace BTS", test_baseline_lbr },
	{ "traced with TRACE: perf BTS event -> EBUSY (tracee and others)", test_traced_bts },
	{ "traced with TRACE: perf branch-stack event -> EBUSY (tracee and others)", test_traced_lbr },
	{ "traced with SCHED only: perf events open", test_sched_only },
	{ "tracee died: perf events open again", test_after_exit },
	{ "perf BTS event exists: CONFIG TRACE -> EBUSY, works after close", test_perf_first_bts },
	{ "perf branch-stack event exists: CONFIG TRACE -> EBUSY, works after close", test_perf_first_lbr },
};

int main(void)
{
	ksft_print_header();
	bts_require_hw();
	run_tests(tests);
}
