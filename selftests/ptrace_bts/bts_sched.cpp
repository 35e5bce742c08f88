// SPDX-License-Identifier: GPL-2.0
/*
 * ptrace BTS: scheduling records (PTRACE_BTS_O_SCHED).
 *
 * A tracee that sleeps and yields leaves the CPU and comes back: its ring
 * holds ARRIVES/DEPARTS records that alternate, with CLOCK_MONOTONIC times
 * that do not decrease (the guest clock may be tick-based, so never a
 * strict increase) and a valid CPU.  A tracee that moves itself between
 * CPU 0 and CPU 1 arrives on both.
 */

#include <sched.h>

#include "bts_common.hpp"

static const unsigned int TRACE = PTRACE_BTS_O_TRACE;
static const unsigned int SCHED = PTRACE_BTS_O_SCHED;

/* Allowed distance between a record's time and the tracer's clock reads */
static const unsigned long long SLACK_NS = 50ULL * 1000 * 1000;

static const int SLEEPS = 5;

/*
 * The scheduling records of @v (oldest first): they alternate, starting
 * with an ARRIVES (the tracee was off the CPU when it was configured) and
 * ending with a DEPARTS (it left the CPU to stop), and the newest record
 * of all is that DEPARTS.  A DEPARTS is on the CPU of the ARRIVES before
 * it.  Times do not decrease and lie within [t0, t1], the tracer's clock
 * before PTRACE_CONT and after waitpid(), give or take SLACK_NS.
 */
static bool check_sched(Check &ck, const std::vector<Rec> &v, bool trace,
			unsigned long long t0, unsigned long long t1,
			long min_arrivals, const char *what)
{
	const long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	unsigned long long last_time = 0;
	long arrivals = 0, n = 0;
	unsigned int cpu = 0;
	bool good = true;

	for (size_t i = 0; i < v.size(); i++) {
		const Rec &r = v[i];
		unsigned int want;

		if (r.qualifier == PTRACE_BTS_BRANCH) {
			if (!trace) {
				ck.fail("%s: BRANCH record without PTRACE_BTS_O_TRACE\n",
					what);
				print_rec("  ", i, r);
				return false;
			}
			continue;
		}
		want = n % 2 ? PTRACE_BTS_TASK_DEPARTS : PTRACE_BTS_TASK_ARRIVES;
		if (r.qualifier != want) {
			ck.fail("%s: scheduling record %ld: expected %s\n", what,
				n, qname(want));
			good = false;
		} else if (want == PTRACE_BTS_TASK_ARRIVES) {
			arrivals++;
			cpu = r.cpu;
		} else if (r.cpu != cpu) {
			ck.fail("%s: DEPARTS from CPU %u after ARRIVES on CPU %u\n",
				what, r.cpu, cpu);
			good = false;
		}
		if (r.cpu >= ncpu) {
			ck.fail("%s: CPU %u, only %ld CPUs\n", what, r.cpu, ncpu);
			good = false;
		}
		if (r.sched.reserved != 0) {
			ck.fail("%s: sched.reserved is %#llx\n", what,
				(unsigned long long)r.sched.reserved);
			good = false;
		}
		if (r.sched.time < last_time) {
			ck.fail("%s: time goes backwards: %llu after %llu\n",
				what, (unsigned long long)r.sched.time,
				last_time);
			good = false;
		}
		if (r.sched.time + SLACK_NS < t0 || r.sched.time > t1 + SLACK_NS) {
			ck.fail("%s: time %llu outside the run [%llu, %llu]\n",
				what, (unsigned long long)r.sched.time, t0, t1);
			good = false;
		}
		last_time = r.sched.time;
		n++;
		if (!good) {
			dump_recs("  ", v, (long)i - 3, i + 2);
			return false;
		}
	}
	if (n == 0 || n % 2)
		good = ck.fail("%s: %ld scheduling records, expected a non-zero even number\n",
			       what, n);
	if (v.empty() || v.back().qualifier != PTRACE_BTS_TASK_DEPARTS) {
		ck.fail("%s: the newest record is not DEPARTS\n", what);
		if (!v.empty())
			print_rec("  newest ", v.size() - 1, v.back());
		good = false;
	}
	if (arrivals < min_arrivals)
		good = ck.fail("%s: %ld ARRIVES records, expected at least %ld\n",
			       what, arrivals, min_arrivals);
	return good;
}

/*
 * Continues the tracee to the int3 of bts_seq() and reads its whole ring
 * into @v; *@t0 and *@t1 are the tracer's clock before PTRACE_CONT and
 * after waitpid().
 */
static bool timed_run(Check &ck, Tracee &t, std::vector<Rec> &v,
		      unsigned long long *t0, unsigned long long *t1)
{
	*t0 = now_ns();
	if (!t.run_seq())
		return false;
	*t1 = now_ns();
	return get_all(ck, t.pid, v);
}

/* The tracee sleeps and yields SLEEPS times, then stops in bts_seq() */
static void sleeper(void)
{
	for (int i = 0; i < SLEEPS; i++) {
		usleep(2000);
		sched_yield();
	}
	seq_forever();
}

static bool sleeper_test(unsigned int flags)
{
	std::vector<Rec> v;
	unsigned long long t0, t1;
	Check ck;
	Tracee t;

	if (!spawn_configured(ck, t, sleeper, 4096 * REC, flags) ||
	    !timed_run(ck, t, v, &t0, &t1))
		return false;
	/*
	 * One arrival after PTRACE_CONT and one after (almost) every sleep:
	 * a sleep whose timer fires before the task got off the CPU does not
	 * switch, so allow two such.
	 */
	check_sched(ck, v, flags & TRACE, t0, t1, 1 + SLEEPS - 2,
		    "sleeping tracee");
	if (flags & TRACE)
		check_tail(ck, branches_only(v), seq_pairs(), "branches");

	/* a second run continues the same rules after the stop */
	ck.ret(bts_clear(t.pid), 0, "CLEAR");
	if (!timed_run(ck, t, v, &t0, &t1))
		return false;
	check_sched(ck, v, flags & TRACE, t0, t1, 1, "second run");
	if (flags & TRACE)
		check_tail(ck, branches_only(v), seq_pairs(),
			   "second run branches");
	return ck.ok;
}

static bool test_sched_only(void) { return sleeper_test(SCHED); }
static bool test_sched_trace(void) { return sleeper_test(SCHED | TRACE); }

static const int SPIN = 200;	/* bts_spin(SPIN): SPIN - 1 records */
static const int HOPS = 4;	/* CPU 0, 1, 0, 1 */

/* The tracee pins itself to CPU 0, then CPU 1, twice, and spins on each */
static void hopper(void)
{
	for (int i = 0; i < HOPS; i++) {
		cpu_set_t s;

		CPU_ZERO(&s);
		CPU_SET(i % 2, &s);
		if (sched_setaffinity(0, sizeof(s), &s))
			_exit(5);
		usleep(1000);
		bts_spin(SPIN);
	}
	seq_forever();
}

/*
 * The hopper arrives on both CPUs, every spin record follows an ARRIVES on
 * the CPU it was pinned to, and no spin record is lost when it moves.
 */
static bool test_migration(void)
{
	const Pair spin = { A(bts_p_jnz), A(bts_p_top) };
	bool seen[2] = { false, false };
	long spins = 0, last_arrive = -1;
	std::vector<Rec> v;
	unsigned long long t0, t1;
	cpu_set_t mine;
	Check ck;
	Tracee t;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return ck.fail("needs CPUs 0 and 1 online, %ld online\n",
			       sysconf(_SC_NPROCESSORS_ONLN));
	if (sched_getaffinity(0, sizeof(mine), &mine) ||
	    !CPU_ISSET(0, &mine) || !CPU_ISSET(1, &mine))
		return ck.fail("needs CPUs 0 and 1 in the affinity mask\n");

	if (!spawn_configured(ck, t, hopper, 1 << 20,
			      TRACE | SCHED | PTRACE_BTS_O_CUT_SIZE) ||
	    !timed_run(ck, t, v, &t0, &t1))
		return false;
	check_sched(ck, v, true, t0, t1, 1 + HOPS / 2, "migrating tracee");
	check_tail(ck, branches_only(v), seq_pairs(), "branches");

	for (size_t i = 0; i < v.size(); i++) {
		const Rec &r = v[i];

		if (r.qualifier == PTRACE_BTS_TASK_ARRIVES) {
			last_arrive = r.cpu;
			if (r.cpu < 2)
				seen[r.cpu] = true;
		}
		if (!is_pair(r, spin))
			continue;
		long want = (spins / (SPIN - 1)) % 2;

		if (last_arrive != want) {
			ck.fail("spin record %ld (pinned to CPU %ld) after ARRIVES on CPU %ld\n",
				spins, want, last_arrive);
			dump_recs("  ", v, (long)i - 3, i + 1);
			break;
		}
		spins++;
	}
	if (ck.ok && spins != (long)HOPS * (SPIN - 1))
		ck.fail("%ld spin records, expected %d\n", spins,
			HOPS * (SPIN - 1));
	if (!seen[0] || !seen[1])
		ck.fail("ARRIVES on CPU 0: %s, on CPU 1: %s\n",
			seen[0] ? "yes" : "no", seen[1] ? "yes" : "no");
	if (last_arrive != 1)
		ck.fail("the last ARRIVES is on CPU %ld, the tracee ends pinned to CPU 1\n",
			last_arrive);
	return ck.ok;
}

static const TestCase tests[] = {
	{ "SCHED: sleeping tracee, alternating ARRIVES/DEPARTS, valid time and CPU", test_sched_only },
	{ "SCHED|TRACE: same, with the labelled branches", test_sched_trace },
	{ "SCHED|TRACE: tracee pinned to CPU 0 then 1 arrives on both", test_migration },
};

int main(void)
{
	ksft_print_header();
	bts_require_hw();
	run_tests(tests);
}
