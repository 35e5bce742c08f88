// SPDX-License-Identifier: GPL-2.0
/*
 * ptrace BTS: the lifetime of a configuration.
 *
 * fork() does not inherit it; exec keeps it; tracee exit, SIGKILL,
 * PTRACE_DETACH and the tracer's exit all end it cleanly (leaks are found
 * by kmemleak in the harness), and a new tracee can be configured after
 * each of them.
 *
 * This binary is its own exec target: "bts_lifecycle --exec-child FD"
 * writes the addresses of its labels to FD and stops in bts_seq().
 */

#include <sched.h>

#include "bts_common.hpp"

static const unsigned int TRACE = PTRACE_BTS_O_TRACE;
static const unsigned int SCHED = PTRACE_BTS_O_SCHED;

static const int ROUNDS = 3;

static char self_exe[4096];

/* A new tracee can be configured and records the labelled branches */
static bool fresh_tracee_works(Check &ck, const char *after)
{
	Tracee t;
	char what[96];

	snprintf(what, sizeof(what), "fresh tracee after %s", after);
	if (!spawn_run_seq(ck, t, seq_forever, 256 * REC, TRACE | SCHED, what))
		return false;
	return expect_seq_tail(ck, t.pid, BRANCHES_ONLY, what);
}

/* No child of ours is left unreaped: @pid is gone for good */
static bool no_zombie(Check &ck, pid_t pid, const char *what)
{
	int st;

	if (waitpid(pid, &st, WNOHANG | __WALL) == -1 && errno == ECHILD)
		return true;
	return ck.fail("%s: task %d can still be waited for\n", what, pid);
}

/*
 * A new tracer (ourselves, through PTRACE_SEIZE and PTRACE_INTERRUPT)
 * attaches to @t and waits for its stop: @t must be unconfigured.
 */
static bool reattach_unconfigured(Check &ck, Tracee &t, const char *what)
{
	if (!ck.ret(xptrace(PTRACE_SEIZE, t.pid, nullptr, 0), 0,
		    "PTRACE_SEIZE") ||
	    !ck.ret(xptrace(PTRACE_INTERRUPT, t.pid, nullptr, 0), 0,
		    "PTRACE_INTERRUPT"))
		return false;
	if (!t.wait_stop(SIGTRAP, PTRACE_EVENT_STOP))
		return ck.fail("%s: no stop after PTRACE_INTERRUPT\n", what);
	expect_unconfigured(ck, t.pid, what);
	return true;
}

/* One bts_seq() call, then spins */
static void seq_then_spin(void)
{
	bts_seq();
	for (;;)
		bts_spin(1000);
}

/*
 * fork(): the child of a traced task is not traced, even after it runs
 * the labelled code; the parent goes on recording.
 */
static bool test_fork_child_untraced(void)
{
	unsigned long msg = 0;
	Rec buf[8];
	Check ck;
	Tracee t, c;

	if (!t.spawn([] {
		pid_t p = fork();

		if (p == 0) {
			bts_seq();
			_exit(0);
		}
		for (;;)
			bts_seq();
	}))
		return false;
	if (!ck.ret(xptrace(PTRACE_SETOPTIONS, t.pid, nullptr,
			    PTRACE_O_TRACEFORK), 0, "PTRACE_SETOPTIONS"))
		return false;
	if (!ck.ret(bts_config(t.pid, 1024 * REC, TRACE | SCHED), 0, "CONFIG"))
		return false;
	if (!t.cont() || !t.wait_stop(SIGTRAP, PTRACE_EVENT_FORK))
		return ck.fail("no fork event\n");
	if (!ck.ret(xptrace(PTRACE_GETEVENTMSG, t.pid, nullptr,
			    (unsigned long)&msg), 0, "PTRACE_GETEVENTMSG"))
		return false;
	c.pid = (pid_t)msg;
	/* the new child starts attached, in a SIGSTOP stop */
	if (!c.wait_stop(SIGSTOP))
		return ck.fail("the forked child did not stop\n");
	expect_unconfigured(ck, c.pid, "forked child");
	if (!c.run_seq())
		return ck.fail("the forked child did not reach bts_seq\n");
	expect_unconfigured(ck, c.pid, "forked child after bts_seq");
	ck.ret(bts_drain(c.pid, buf, sizeof(buf)), 0, "forked child: DRAIN");

	/* the parent is still configured and records */
	expect_status(ck, t.pid, 1024 * REC, TRACE | SCHED, "parent after fork");
	if (!t.run_seq())
		return ck.fail("the parent did not reach bts_seq\n");
	expect_seq_tail(ck, t.pid, BRANCHES_ONLY, "parent after fork");

	/* the child is ours to kill as tracer, then ours as subreaper */
	pid_t cpid = c.pid;
	c.reap();
	t.reap();
	waitpid(cpid, nullptr, __WALL);
	no_zombie(ck, cpid, "forked child");
	fresh_tracee_works(ck, "fork");
	return ck.ok;
}

/* The tracee exits while traced */
static bool test_tracee_exit(void)
{
	Check ck;

	for (int i = 0; i < ROUNDS && ck.ok; i++) {
		Tracee t;
		pid_t pid;

		/* one bts_seq() call, then _exit(0) */
		if (!spawn_run_seq(ck, t, bts_seq, 512 * REC, TRACE | SCHED))
			return false;
		pid = t.pid;
		if (bts_size(t.pid).ret < 5)
			ck.fail("round %d: nothing recorded\n", i);
		/* returns from bts_seq, then _exit(0) */
		if (!t.cont() || !t.wait_exit(0))
			return ck.fail("round %d: the tracee did not exit\n", i);
		no_zombie(ck, pid, "exited tracee");
		fresh_tracee_works(ck, "tracee exit");
	}
	return ck.ok;
}

/* SIGKILL, while the tracee runs (with BTS on) and while it is stopped */
static bool test_tracee_sigkill(void)
{
	Check ck;

	for (int i = 0; i < 2 * ROUNDS && ck.ok; i++) {
		bool running = i % 2 == 0;
		Tracee t;
		pid_t pid;
		int st;

		if (!spawn_run_seq(ck, t, seq_then_spin, 4096 * REC,
				   TRACE | SCHED))
			return false;
		pid = t.pid;
		if (running) {
			if (!t.cont())
				return false;
			usleep(30000);
		}
		kill(t.pid, SIGKILL);
		if (!t.wait_raw(&st))
			return false;
		if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL) {
			describe_status("expected death by SIGKILL", pid, st);
			return ck.fail("round %d\n", i);
		}
		no_zombie(ck, pid, "killed tracee");
		fresh_tracee_works(ck, running ? "SIGKILL while running" :
						 "SIGKILL while stopped");
	}
	return ck.ok;
}

/*
 * PTRACE_DETACH: tracing stops and the ring is freed at once; a new
 * tracer (ourselves, through PTRACE_SEIZE) finds the task unconfigured.
 */
static bool test_detach(void)
{
	Check ck;

	for (int i = 0; i < ROUNDS && ck.ok; i++) {
		Rec buf[4];
		Tracee t;

		if (!spawn_run_seq(ck, t, seq_then_idle, 1024 * REC,
				   TRACE | SCHED))
			return false;
		if (bts_size(t.pid).ret < 5)
			ck.fail("round %d: nothing recorded\n", i);
		if (!ck.ret(xptrace(PTRACE_DETACH, t.pid, nullptr, 0), 0,
			    "PTRACE_DETACH"))
			return false;
		/* not traced any more */
		ck.err(bts_size(t.pid), ESRCH, "SIZE after PTRACE_DETACH");
		if (!reattach_unconfigured(ck, t, "re-attached after detach"))
			return false;
		ck.ret(bts_drain(t.pid, buf, sizeof(buf)), 0,
		       "re-attached: DRAIN");
		/* the new tracer can configure it */
		ck.ret(bts_config(t.pid, 64 * REC, TRACE), 0,
		       "CONFIG by the new tracer");
		expect_status(ck, t.pid, 64 * REC, TRACE, "new tracer");
		t.reap();
		fresh_tracee_works(ck, "PTRACE_DETACH");
	}
	return ck.ok;
}

struct Shared {
	long counter;	/* bumped by the tracee in user mode */
	pid_t tracee;
	int stage;	/* how far the middle process got */
};

static long counter_of(Shared *sh)
{
	return __atomic_load_n(&sh->counter, __ATOMIC_SEQ_CST);
}

/* Waits until the counter passed @target; false after 20 s */
static bool wait_counter(Shared *sh, long target)
{
	unsigned long long end = now_ns() + 20ULL * 1000000000ULL;

	while (counter_of(sh) < target) {
		if (now_ns() > end)
			return false;
		usleep(1000);
	}
	return true;
}

/*
 * The tracer exits: a middle process traces and configures a tracee, lets
 * it run, and exits.  The tracee keeps running; once it has been back in
 * user mode, a new tracer finds it unconfigured.
 */
static bool tracer_exit_round(Check &ck, Shared *sh)
{
	pid_t top = getpid(), mid;
	Tracee t;
	int st;

	memset(sh, 0, sizeof(*sh));
	fflush(stdout);
	mid = fork();
	if (mid < 0)
		return ck.fail("fork: %s\n", strerror(errno));
	if (mid == 0) {
		pid_t me = getpid(), p;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != top)
			_exit(1);
		p = fork();
		if (p < 0)
			_exit(2);
		if (p == 0) {
			unsigned long long end = now_ns() + 120ULL * 1000000000ULL;

			/* no PDEATHSIG: it must outlive the middle process */
			if (xptrace(PTRACE_TRACEME, 0, nullptr, 0).ret)
				_exit(1);
			raise(SIGSTOP);
			for (unsigned long i = 0;; i++) {
				pid_t pp;

				bts_spin(100);
				pp = getppid();
				/* the test is gone: do not linger */
				if (pp != me && pp != top)
					_exit(0);
				if (i % 256 == 0 && now_ns() > end)
					_exit(0);
				__atomic_add_fetch(&sh->counter, 1,
						   __ATOMIC_SEQ_CST);
			}
		}
		sh->tracee = p;
		if (waitpid(p, &st, __WALL) != p || !WIFSTOPPED(st))
			_exit(3);
		sh->stage = 1;
		if (bts_config(p, 4096 * REC, TRACE | SCHED).ret)
			_exit(4);
		sh->stage = 2;
		if (xptrace(PTRACE_CONT, p, nullptr, 0).ret)
			_exit(5);
		if (!wait_counter(sh, 20))
			_exit(6);
		sh->stage = 3;
		_exit(0);	/* the tracer exits, the tracee runs on */
	}

	if (waitpid(mid, &st, 0) != mid)
		return ck.fail("waitpid(middle): %s\n", strerror(errno));
	/* the tracee is ours now, as subreaper */
	t.pid = sh->tracee;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		describe_status("middle process", mid, st);
		return ck.fail("the middle process failed at stage %d\n",
			       sh->stage);
	}
	if (t.pid <= 0)
		return ck.fail("no tracee pid\n");
	/* the tracee has returned to user mode since its tracer exited */
	if (!wait_counter(sh, counter_of(sh) + 5))
		return ck.fail("the tracee stopped running after its tracer exited\n");
	if (!reattach_unconfigured(ck, t, "after the tracer exited"))
		return false;
	/* the new tracer can configure it, and it records */
	if (ck.ret(bts_config(t.pid, 256 * REC, TRACE), 0,
		   "CONFIG by the new tracer") && t.cont()) {
		long c0 = counter_of(sh);

		if (!wait_counter(sh, c0 + 5))
			ck.fail("the tracee does not run under the new tracer\n");
		kill(t.pid, SIGSTOP);
		if (t.wait_stop(SIGSTOP))
			expect_records(ck, t.pid, "new tracer");
		else
			ck.fail("the tracee did not stop for SIGSTOP\n");
	}
	pid_t tp = t.pid;
	t.reap();
	no_zombie(ck, tp, "tracee of the exited tracer");
	return ck.ok;
}

static bool test_tracer_exit(void)
{
	Shared *sh;
	Check ck;

	sh = (Shared *)mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return ck.fail("mmap: %s\n", strerror(errno));
	for (int i = 0; i < ROUNDS && ck.ok; i++) {
		tracer_exit_round(ck, sh);
		if (ck.ok)
			fresh_tracee_works(ck, "tracer exit");
	}
	munmap(sh, sizeof(Shared));
	return ck.ok;
}

/* The exec'ed image: report the labels, stop in bts_seq */
static int exec_child(int fd)
{
	SeqLabels l = seq_labels();

	if (write(fd, &l, sizeof(l)) != (ssize_t)sizeof(l))
		return 1;
	close(fd);
	for (;;)
		bts_seq();
}

/*
 * execve() keeps the configuration: the records from before the exec stay
 * in the ring, and the new program's labelled branches are recorded.
 */
static bool test_exec(void)
{
	std::vector<Rec> v;
	SeqLabels l;
	char fdarg[16];
	int pfd[2];
	Check ck;
	Tracee t;
	ssize_t n;

	if (pipe(pfd))
		return ck.fail("pipe: %s\n", strerror(errno));
	snprintf(fdarg, sizeof(fdarg), "%d", pfd[1]);
	if (!t.spawn([&] {
		char *argv[] = { self_exe, (char *)"--exec-child", fdarg,
				 nullptr };

		close(pfd[0]);
		bts_seq();
		execv(self_exe, argv);
		_exit(127);
	})) {
		close(pfd[0]);
		close(pfd[1]);
		return false;
	}
	close(pfd[1]);
	if (!ck.ret(xptrace(PTRACE_SETOPTIONS, t.pid, nullptr,
			    PTRACE_O_TRACEEXEC), 0, "PTRACE_SETOPTIONS") ||
	    !ck.ret(bts_config(t.pid, 4096 * REC, TRACE | SCHED), 0, "CONFIG")) {
		close(pfd[0]);
		return false;
	}
	if (!t.run_seq()) {
		close(pfd[0]);
		return ck.fail("no stop before the exec\n");
	}
	expect_seq_tail(ck, t.pid, BRANCHES_ONLY, "before exec");

	if (!t.cont() || !t.wait_stop(SIGTRAP, PTRACE_EVENT_EXEC)) {
		close(pfd[0]);
		return ck.fail("no exec event\n");
	}
	expect_status(ck, t.pid, 4096 * REC, TRACE | SCHED, "at the exec event");
	if (get_all(ck, t.pid, v) &&
	    find_run(branches_only(v), seq_pairs()) < 0)
		ck.fail("at the exec event: the branches from before the exec are gone (%zu records)\n",
			v.size());

	if (!t.cont() || !t.wait_stop(SIGTRAP)) {
		close(pfd[0]);
		return ck.fail("the new program did not stop in bts_seq\n");
	}
	n = read(pfd[0], &l, sizeof(l));
	close(pfd[0]);
	if (n != (ssize_t)sizeof(l))
		return ck.fail("the new program did not report its labels (%zd)\n",
			       n);
	{
		unsigned long long rip;

		if (t.ip(&rip) && rip != l.ret)
			ck.fail("the new program stopped at %#llx, expected %#llx\n",
				rip, l.ret);
	}
	expect_status(ck, t.pid, 4096 * REC, TRACE | SCHED, "after exec");
	if (get_all(ck, t.pid, v)) {
		std::vector<Rec> b = branches_only(v);
		std::vector<Pair> exp = seq_pairs(l);

		check_tail(ck, b, exp, "in the new program");
		if (b.size() > exp.size() &&
		    b[b.size() - exp.size() - 1].branch.to != l.entry)
			ck.fail("in the new program: the branch before the sequence does not enter bts_seq (%#llx)\n",
				l.entry);
	}
	return ck.ok;
}

static const TestCase tests[] = {
	{ "fork: the child of a tracee is not traced", test_fork_child_untraced },
	{ "tracee exit tears down; a new tracee works", test_tracee_exit },
	{ "SIGKILL (running and stopped) tears down; a new tracee works", test_tracee_sigkill },
	{ "PTRACE_DETACH frees at once; re-attached task is unconfigured", test_detach },
	{ "tracer exit: the tracee is unconfigured after it ran", test_tracer_exit },
	{ "exec keeps the configuration and the records", test_exec },
};

int main(int argc, char **argv)
{
	ssize_t n;

	if (argc == 3 && !strcmp(argv[1], "--exec-child"))
		return exec_child(atoi(argv[2]));

	ksft_print_header();
	n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	if (n <= 0)
		ksft_exit_fail_msg("readlink /proc/self/exe: %s\n",
				   strerror(errno));
	self_exe[n] = 0;
	/* tracees whose parent exits are reparented to us, and reaped */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1))
		ksft_exit_fail_msg("PR_SET_CHILD_SUBREAPER: %s\n",
				   strerror(errno));
	bts_require_hw();
	run_tests(tests);
}
