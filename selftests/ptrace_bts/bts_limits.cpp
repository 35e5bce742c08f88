// SPDX-License-Identifier: GPL-2.0
/*
 * ptrace BTS: memory limits.
 *
 * - RLIMIT_MEMLOCK: an unprivileged tracer is charged for its rings; the
 *   charge is refunded when a ring is freed.  A tracer with CAP_IPC_LOCK
 *   is not limited.
 * - /proc/sys/kernel/ptrace_bts_max_size: CONFIG above it fails with
 *   EINVAL, PTRACE_BTS_O_CUT_SIZE shrinks to it; the sysctl accepts 24 to
 *   1 GiB only.  The test restores the original value.
 */

#include <grp.h>
#include <sys/resource.h>

#include "bts_common.hpp"

static const unsigned int TRACE = PTRACE_BTS_O_TRACE;
static const unsigned int CUT = PTRACE_BTS_O_CUT_SIZE;

static const unsigned int K32 = 32 << 10, K48 = 48 << 10, K128 = 128 << 10;
static const unsigned int LIMIT = 64 << 10;	/* RLIMIT_MEMLOCK */
static const uid_t NOBODY = 65534;

static inline unsigned int rounded(unsigned int size)
{
	return size / REC * REC;
}

/* ------------------------------------------------------------------ */
/* RLIMIT_MEMLOCK, unprivileged                                        */
/* ------------------------------------------------------------------ */

enum { ML_32K, ML_128K, ML_BOTH, ML_CYCLES, ML_EXIT, ML_DETACH, ML_N };

static char ml_res[ML_N];
static bool ml_done;

/*
 * CONFIG of a 48 KiB ring on a new tracee right after another tracee with
 * such a ring was killed and reaped.  The ring is freed when the tracee
 * exits; allow a second for a release that is deferred past the reaping,
 * and say so.
 */
static Ret config_after_exit(pid_t pid)
{
	unsigned long long end = now_ns() + 1000000000ULL;
	int tries = 0;
	Ret r;

	for (;;) {
		r = bts_config(pid, K48, TRACE);
		if (r.ret == 0 || r.err != ENOMEM || now_ns() > end)
			break;
		tries++;
		usleep(10000);
	}
	if (tries)
		ksft_print_msg("the charge of an exited tracee came back only after %d retries\n",
			       tries);
	return r;
}

/*
 * Three rounds: tracee a gets a 48 KiB ring and loses it, killed with it
 * or, with @detach, through PTRACE_DETACH; then tracee b must get one.
 */
static bool ml_refund(bool detach)
{
	Check ck;

	for (int k = 0; k < 3 && ck.ok; k++) {
		Tracee a, b;

		/*
		 * PTRACE_DETACH delivers SIGSTOP: @a stays stopped, so the
		 * refund cannot wait until it runs again.
		 */
		if (!a.spawn(idle_forever) ||
		    !ck.ret(bts_config(a.pid, K48, TRACE), 0, "48 KiB CONFIG") ||
		    (detach &&
		     !ck.ret(xptrace(PTRACE_DETACH, a.pid, nullptr, SIGSTOP), 0,
			     "PTRACE_DETACH"))) {
			ck.ok = false;
			break;
		}
		if (!detach)
			a.reap();	/* with its ring configured */
		if (!b.spawn(idle_forever)) {
			ck.ok = false;
			break;
		}
		if (detach)
			ck.ret(bts_config(b.pid, K48, TRACE), 0,
			       "48 KiB CONFIG after PTRACE_DETACH of the previous tracee");
		else
			ck.ret(config_after_exit(b.pid), 0,
			       "48 KiB CONFIG after the previous tracee died");
		/* nothing stays charged into the next round */
		ck.ret(bts_config(b.pid, 0, 0), 0, "release");
	}
	return ck.ok;
}

/* Runs as user nobody with RLIMIT_MEMLOCK 64 KiB; reports to @wfd */
[[noreturn]] static void memlock_helper(int wfd)
{
	struct rlimit rl = { LIMIT, LIMIT };
	std::vector<Rec> before, after;

	memset(ml_res, 'F', sizeof(ml_res));
	if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgroups(0, nullptr) ||
	    setgid(NOBODY) || setuid(NOBODY)) {
		ksft_print_msg("cannot become an unprivileged user: %s\n",
			       strerror(errno));
		goto out;
	}
	/* setuid() made us non-dumpable; a user's debugger session is not */
	prctl(PR_SET_DUMPABLE, 1);

	{	/* a ring within the limit */
		Check ck;
		Tracee t;

		if (t.spawn(idle_forever) &&
		    ck.ret(bts_config(t.pid, K32, TRACE), 0, "32 KiB CONFIG")) {
			expect_status(ck, t.pid, rounded(K32), TRACE, "32 KiB");
			ck.ret(bts_config(t.pid, 0, 0), 0, "release");
		} else {
			ck.ok = false;
		}
		ml_res[ML_32K] = ck.ok ? 'P' : 'F';

		/* a ring above the limit */
		Check ck2;

		if (t.pid > 0) {
			ck2.err(bts_config(t.pid, K128, TRACE), ENOMEM,
				"128 KiB CONFIG");
			expect_status(ck2, t.pid, 0, 0, "after failed 128 KiB");
			/* and the limit still lets a smaller ring in */
			ck2.ret(bts_config(t.pid, K48, TRACE), 0,
				"48 KiB CONFIG after the failure");
			ck2.ret(bts_config(t.pid, 0, 0), 0, "release");
		} else {
			ck2.ok = false;
		}
		ml_res[ML_128K] = ck2.ok ? 'P' : 'F';
	}

	{	/* old and new ring are both charged while reconfiguring */
		Check ck;
		Tracee t;

		if (spawn_run_seq(ck, t, seq_then_idle, K48, TRACE,
				  "48 KiB CONFIG") &&
		    get_all(ck, t.pid, before)) {
			check_tail(ck, before, seq_pairs(), "48 KiB ring");
			ck.err(bts_config(t.pid, K32, TRACE), ENOMEM,
			       "32 KiB reCONFIG over a 48 KiB ring");
			expect_status(ck, t.pid, rounded(K48), TRACE,
				      "after the failed reCONFIG");
			if (get_all(ck, t.pid, after) &&
			    (after.size() != before.size() ||
			     memcmp(after.data(), before.data(),
				    after.size() * REC)))
				ck.fail("the ring changed with the failed reCONFIG\n");
			ck.ret(bts_config(t.pid, 0, 0), 0, "release");
			ck.ret(bts_config(t.pid, K32, TRACE), 0,
			       "32 KiB CONFIG after the release");
			ck.ret(bts_config(t.pid, 0, 0), 0, "release");
		} else {
			ck.fail("setting up the 48 KiB ring failed\n");
		}
		ml_res[ML_BOTH] = ck.ok ? 'P' : 'F';
	}

	{	/* CONFIG/release cycles: every charge comes back */
		Check ck;

		for (int k = 0; k < 3 && ck.ok; k++) {
			Tracee t;

			if (!t.spawn(idle_forever)) {
				ck.fail("cannot start tracee %d\n", k);
				break;
			}
			for (int i = 0; i < 10 && ck.ok; i++) {
				char what[64];

				snprintf(what, sizeof(what),
					 "tracee %d cycle %d: 48 KiB CONFIG", k, i);
				ck.ret(bts_config(t.pid, K48, TRACE), 0, what);
				snprintf(what, sizeof(what),
					 "tracee %d cycle %d: release", k, i);
				ck.ret(bts_config(t.pid, 0, 0), 0, what);
			}
		}
		ml_res[ML_CYCLES] = ck.ok ? 'P' : 'F';
	}

	/* the charge comes back when the tracee exits */
	ml_res[ML_EXIT] = ml_refund(false) ? 'P' : 'F';
	/* and at once at PTRACE_DETACH */
	ml_res[ML_DETACH] = ml_refund(true) ? 'P' : 'F';
out:
	if (write(wfd, ml_res, sizeof(ml_res)) != (ssize_t)sizeof(ml_res))
		_exit(2);
	_exit(0);
}

static bool ml_result(int which)
{
	if (!ml_done) {
		int p[2], st;
		size_t got = 0;
		pid_t h;

		ml_done = true;
		memset(ml_res, 'F', sizeof(ml_res));
		if (pipe(p)) {
			ksft_perror("pipe");
			return false;
		}
		fflush(stdout);
		h = fork();
		if (h < 0) {
			ksft_perror("fork");
			close(p[0]);
			close(p[1]);
			return false;
		}
		if (h == 0) {
			close(p[0]);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			memlock_helper(p[1]);
		}
		close(p[1]);
		while (got < sizeof(ml_res)) {
			ssize_t n = read(p[0], ml_res + got,
					 sizeof(ml_res) - got);

			if (n <= 0)
				break;
			got += n;
		}
		close(p[0]);
		if (got < sizeof(ml_res)) {
			memset(ml_res, 'F', sizeof(ml_res));
			ksft_print_msg("the unprivileged helper died\n");
		}
		while (waitpid(h, &st, 0) < 0 && errno == EINTR)
			;
	}
	return ml_res[which] == 'P';
}

static bool test_ml_32k(void) { return ml_result(ML_32K); }
static bool test_ml_128k(void) { return ml_result(ML_128K); }
static bool test_ml_both(void) { return ml_result(ML_BOTH); }
static bool test_ml_cycles(void) { return ml_result(ML_CYCLES); }
static bool test_ml_exit(void) { return ml_result(ML_EXIT); }
static bool test_ml_detach(void) { return ml_result(ML_DETACH); }

/* Root (CAP_IPC_LOCK) is not held to RLIMIT_MEMLOCK */
static bool test_ml_ipc_lock(void)
{
	pid_t h;
	int st;

	fflush(stdout);
	h = fork();
	if (h < 0)
		return false;
	if (h == 0) {
		struct rlimit rl = { LIMIT, LIMIT };
		Check ck;
		Tracee t;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (setrlimit(RLIMIT_MEMLOCK, &rl))
			_exit(2);
		if (!t.spawn(idle_forever))
			_exit(3);
		ck.ret(bts_config(t.pid, K128, TRACE), 0,
		       "root, RLIMIT_MEMLOCK 64 KiB: 128 KiB CONFIG");
		expect_status(ck, t.pid, rounded(K128), TRACE, "128 KiB");
		ck.ret(bts_config(t.pid, 512 << 10, TRACE), 0,
		       "root, RLIMIT_MEMLOCK 64 KiB: 512 KiB CONFIG");
		ck.ret(bts_config(t.pid, 0, 0), 0, "release");
		t.reap();
		_exit(ck.ok ? 0 : 1);
	}
	while (waitpid(h, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* ------------------------------------------------------------------ */
/* ptrace_bts_max_size                                                 */
/* ------------------------------------------------------------------ */

static char orig_max[32];	/* as read, for the restore */
static bool have_orig;

static bool set_max(Check &ck, unsigned long long v)
{
	char s[32];
	unsigned long long back = 0;
	int e;

	snprintf(s, sizeof(s), "%llu", v);
	e = write_str(BTS_SYSCTL, s);
	if (e)
		return ck.fail("writing %s to %s: %s\n", s, BTS_SYSCTL,
			       errname(e));
	if (!read_ull(BTS_SYSCTL, &back) || back != v)
		return ck.fail("%s reads %llu after writing %s\n", BTS_SYSCTL,
			       back, s);
	return true;
}

static void restore_max(void)
{
	if (have_orig)
		write_str(BTS_SYSCTL, orig_max);
}

static void on_signal(int sig)
{
	restore_max();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* The sysctl takes 24 .. 1 GiB and nothing else */
static bool test_sysctl_range(void)
{
	static const char *const bad[] = { "23", "0", "1", "-1",
					   "1073741825", "4294967295" };
	unsigned long long cur, back = 0;
	Check ck;

	if (!read_ull(BTS_SYSCTL, &cur))
		return ck.fail("cannot read %s\n", BTS_SYSCTL);
	if (cur < 24 || cur > (1ULL << 30))
		ck.fail("%s is %llu, outside [24, 1 GiB]\n", BTS_SYSCTL, cur);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		int e = write_str(BTS_SYSCTL, bad[i]);

		if (!e)
			ck.fail("writing %s to %s succeeded\n", bad[i],
				BTS_SYSCTL);
		if (!read_ull(BTS_SYSCTL, &back) || back != cur)
			ck.fail("after writing %s: %llu, expected %llu\n",
				bad[i], back, cur);
	}
	set_max(ck, 24);
	set_max(ck, 1ULL << 30);
	set_max(ck, cur);
	return ck.ok;
}

/* size above the limit fails with EINVAL; at the limit it is rounded */
static bool test_over_limit(void)
{
	const unsigned int lim = 24 * 100 + 5;
	Check ck;
	Tracee t;

	if (!set_max(ck, lim) || !t.spawn(idle_forever))
		return false;
	ck.err(bts_config(t.pid, lim + 1, TRACE), EINVAL, "limit + 1");
	ck.err(bts_config(t.pid, lim + REC, TRACE), EINVAL, "limit + 24");
	ck.err(bts_config(t.pid, 0xffffffffU, TRACE), EINVAL, "4 GiB - 1");
	expect_status(ck, t.pid, 0, 0, "after the failures");
	ck.ret(bts_config(t.pid, lim, TRACE), 0, "size == limit");
	expect_status(ck, t.pid, 2400, TRACE, "size == limit");
	ck.err(bts_config(t.pid, 2 * lim, TRACE), EINVAL, "2 * limit");
	expect_status(ck, t.pid, 2400, TRACE, "after a failure");
	return ck.ok;
}

/* CUT_SIZE: a size above the limit becomes the limit, in whole records */
static bool test_cut_size(void)
{
	const unsigned int lim = 24 * 100 + 5;
	std::vector<Rec> v;
	Check ck;
	Tracee t;

	if (!set_max(ck, lim) || !t.spawn(seq_forever))
		return false;
	ck.ret(bts_config(t.pid, 0xffffffffU, TRACE | CUT), 0, "4 GiB - 1, CUT");
	expect_status(ck, t.pid, 2400, TRACE | CUT, "4 GiB - 1, CUT");
	ck.ret(bts_config(t.pid, 2000, TRACE | CUT), 0, "2000 (below), CUT");
	expect_status(ck, t.pid, rounded(2000), TRACE | CUT, "2000, CUT");
	ck.ret(bts_config(t.pid, 1 << 20, TRACE | CUT), 0, "1 MiB, CUT");
	expect_status(ck, t.pid, 2400, TRACE | CUT, "1 MiB, CUT");
	if (!t.run_seq())
		return false;
	expect_seq_tail(ck, t.pid, v, ALL_RECORDS, "cut ring");
	if (v.size() > 100)
		ck.fail("%zu records in a ring of 100\n", v.size());
	return ck.ok;
}

/* The smallest limit: a ring of one record holds the newest branch */
static bool test_one_record(void)
{
	std::vector<Pair> exp = seq_pairs();
	std::vector<Rec> v;
	Check ck;
	Tracee t;
	Rec r;

	if (!set_max(ck, 24) || !t.spawn(seq_forever))
		return false;
	ck.err(bts_config(t.pid, 48, TRACE), EINVAL, "48 over a limit of 24");
	ck.ret(bts_config(t.pid, 4800, TRACE | CUT), 0, "4800, CUT");
	expect_status(ck, t.pid, 24, TRACE | CUT, "4800, CUT");
	ck.ret(bts_config(t.pid, 24, TRACE), 0, "24");
	expect_status(ck, t.pid, 24, TRACE, "24");
	for (int i = 0; i < 2; i++) {
		if (!t.run_seq())
			return false;
		expect_size(ck, t.pid, 1, "one-record ring");
		if (ck.ret(bts_get(t.pid, 0, &r), 0, "GET(0)") &&
		    !is_pair(r, exp.back())) {
			ck.fail("GET(0) of the one-record ring is not the last branch\n");
			print_rec("  got ", 0, r);
		}
		ck.err(bts_get(t.pid, 1, &r), EINVAL, "GET(1)");
		if (i == 0 && drain_all(ck, t.pid, 4, v))
			check_tail(ck, v, { exp.back() }, "DRAIN");
		expect_size(ck, t.pid, i == 0 ? 0 : 1,
			    i == 0 ? "after DRAIN" : "second stop, no DRAIN");
	}
	return ck.ok;
}

static const TestCase tests[] = {
	{ "memlock: unprivileged 32 KiB ring under RLIMIT_MEMLOCK 64 KiB", test_ml_32k },
	{ "memlock: unprivileged 128 KiB ring fails with ENOMEM", test_ml_128k },
	{ "memlock: reCONFIG charges old and new; the failure keeps the old ring", test_ml_both },
	{ "memlock: 48 KiB CONFIG/release x10 on 3 tracees", test_ml_cycles },
	{ "memlock: charge refunded when the tracee dies", test_ml_exit },
	{ "memlock: charge refunded at PTRACE_DETACH", test_ml_detach },
	{ "memlock: CAP_IPC_LOCK tracer is not limited", test_ml_ipc_lock },
	{ "sysctl ptrace_bts_max_size accepts 24 .. 1 GiB only", test_sysctl_range },
	{ "CONFIG above ptrace_bts_max_size fails with EINVAL", test_over_limit },
	{ "CUT_SIZE shrinks to ptrace_bts_max_size, STATUS reports it", test_cut_size },
	{ "ptrace_bts_max_size 24: a one-record ring", test_one_record },
};

int main(void)
{
	int fd;
	ssize_t n;

	ksft_print_header();
	fd = open(BTS_SYSCTL, O_RDONLY);
	if (fd >= 0) {
		n = read(fd, orig_max, sizeof(orig_max) - 1);
		close(fd);
		if (n > 0) {
			orig_max[n] = 0;
			have_orig = true;
		}
	}
	if (have_orig) {
		/* restored on any exit or kill */
		atexit(restore_max);
		signal(SIGTERM, on_signal);
		signal(SIGINT, on_signal);
		signal(SIGHUP, on_signal);
		/* the memlock tests need rings up to 512 KiB */
		write_str(BTS_SYSCTL, "1048576");
	} else {
		ksft_print_msg("cannot read %s: %s\n", BTS_SYSCTL,
			       strerror(errno));
	}
	bts_require_hw();
	run_tests(tests);
}
