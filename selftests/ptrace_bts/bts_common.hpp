/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared helpers of the ptrace Branch Trace Store selftests.
 *
 * - Labelled code: small assembly functions whose every branch and every
 *   branch target carries a global label, so that a tracer knows the exact
 *   (from, to) pair each taken branch must produce.  The tracee is a fork()
 *   of the tracer, so the addresses are the same in both.
 * - Tracee: a forked child that asked to be traced and stopped itself; its
 *   destructor kills and reaps it, so no test leaves a tracee behind.
 * - Thin wrappers around the PTRACE_BTS_* requests that keep errno.
 * - Check: collects failures and prints expected-versus-got diagnostics.
 * - Common steps: start and configure a tracee, check that the ring ends
 *   with the labelled branches.
 *
 * Every test binary includes this header from exactly one translation unit
 * (it defines the labelled assembly).
 */
#ifndef BTS_COMMON_HPP
#define BTS_COMMON_HPP

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <vector>

#include <asm/ptrace-bts.h>

#include "../kselftest.h"

typedef struct ptrace_bts_record Rec;
typedef struct ptrace_bts_config Cfg;

static_assert(sizeof(Rec) == 24, "struct ptrace_bts_record is 24 bytes");
static_assert(sizeof(Cfg) == PTRACE_BTS_CONFIG_SIZE_VER0,
	      "struct ptrace_bts_config is the first version");

static const unsigned int REC = sizeof(Rec);
static const unsigned long long USER_TOP = 0x0000800000000000ULL;
static const char BTS_SYSCTL[] = "/proc/sys/kernel/ptrace_bts_max_size";

/* ------------------------------------------------------------------ */
/* Labelled code                                                       */
/* ------------------------------------------------------------------ */

/*
 * The few instructions that differ between the 64-bit build and the 32-bit
 * one (compat tracer and tracee, built non-PIE): argument passing, system
 * call, the indirect jump's target.  None of them is a branch.
 */
#ifdef __x86_64__
#define BTS_AX		"rax"
#define BTS_CX		"rcx"
#define BTS_ARG1_CX	"movq %rdi, %rcx"
#define BTS_IND_TARGET	"leaq bts_s_ind_t(%rip), %rax"
#define BTS_SYSCALL	"movq %rdi, %rax; syscall"
#define BTS_TOUCH	"movb $1, (%rdi)"
#else
#define BTS_AX		"eax"
#define BTS_CX		"ecx"
#define BTS_ARG1_CX	"movl 4(%esp), %ecx"
#define BTS_IND_TARGET	"movl $bts_s_ind_t, %eax"
#define BTS_SYSCALL	"movl 4(%esp), %eax; int $0x80"
#define BTS_TOUCH	"movl 4(%esp), %eax; movb $1, (%eax)"
#endif

/*
 * bts_seq: one taken branch of each kind, then int3.  Taken branches, in
 * order (from -> to):
 *   bts_s_jmp  -> bts_s_jmp_t    near relative jmp
 *   bts_s_jz   -> bts_s_jz_t     taken jcc
 *                                (bts_s_jnz is a not-taken jcc: no record)
 *   bts_s_call -> bts_s_fn       near call
 *   bts_s_fn   -> bts_s_call_r   near ret
 *   bts_s_ind  -> bts_s_ind_t    near indirect jmp
 * then bts_s_trap: int3 (a kernel entry: never recorded), and bts_s_ret:
 * ret to the caller.  A tracer that sees the SIGTRAP finds the five pairs
 * as the five newest records; the record before them is the caller's call
 * (or jmp) whose target is bts_seq.
 *
 * bts_loop(n), n >= 1: per iteration bts_l_jmp -> bts_l_mid, and, for all
 * iterations but the last, bts_l_jnz -> bts_l_top.  So 2n - 1 records,
 * alternating, the newest being bts_l_jmp -> bts_l_mid; then int3 at
 * bts_l_trap and ret at bts_l_ret.
 *
 * bts_spin(n), n >= 1: n - 1 records bts_p_jnz -> bts_p_top, no int3.
 *
 * bts_sys(nr): raw system call nr without arguments, then
 * bts_y_jmp -> bts_y_t, then ret.
 *
 * bts_touch(p): stores one byte at p (may page-fault), then
 * bts_f_jmp -> bts_f_t, then ret.
 */
asm(R"(
	.text
	.p2align 4
	.globl	bts_seq, bts_s_jmp, bts_s_jmp_t, bts_s_jz, bts_s_jz_t
	.globl	bts_s_jnz, bts_s_call, bts_s_call_r, bts_s_ind, bts_s_ind_t
	.globl	bts_s_trap, bts_s_ret, bts_s_fn, bts_s_bad
	.hidden	bts_seq, bts_s_jmp, bts_s_jmp_t, bts_s_jz, bts_s_jz_t
	.hidden	bts_s_jnz, bts_s_call, bts_s_call_r, bts_s_ind, bts_s_ind_t
	.hidden	bts_s_trap, bts_s_ret, bts_s_fn, bts_s_bad
	.type	bts_seq, @function
bts_seq:
bts_s_jmp:	jmp	bts_s_jmp_t
	ud2
bts_s_jmp_t:	xorl	%eax, %eax
bts_s_jz:	jz	bts_s_jz_t
	ud2
bts_s_jz_t:
bts_s_jnz:	jnz	bts_s_bad
bts_s_call:	call	bts_s_fn
bts_s_call_r:	)" BTS_IND_TARGET R"(
bts_s_ind:	jmp	*%)" BTS_AX R"(
	ud2
bts_s_ind_t:
bts_s_trap:	int3
bts_s_ret:	ret
bts_s_fn:	ret
bts_s_bad:	ud2
	.size	bts_seq, . - bts_seq

	.p2align 4
	.globl	bts_loop, bts_l_top, bts_l_jmp, bts_l_mid, bts_l_jnz
	.globl	bts_l_trap, bts_l_ret
	.hidden	bts_loop, bts_l_top, bts_l_jmp, bts_l_mid, bts_l_jnz
	.hidden	bts_l_trap, bts_l_ret
	.type	bts_loop, @function
bts_loop:	)" BTS_ARG1_CX R"(
bts_l_top:
bts_l_jmp:	jmp	bts_l_mid
	ud2
bts_l_mid:	dec	%)" BTS_CX R"(
bts_l_jnz:	jnz	bts_l_top
bts_l_trap:	int3
bts_l_ret:	ret
	.size	bts_loop, . - bts_loop

	.p2align 4
	.globl	bts_spin, bts_p_top, bts_p_jnz
	.hidden	bts_spin, bts_p_top, bts_p_jnz
	.type	bts_spin, @function
bts_spin:	)" BTS_ARG1_CX R"(
bts_p_top:	dec	%)" BTS_CX R"(
bts_p_jnz:	jnz	bts_p_top
	ret
	.size	bts_spin, . - bts_spin

	.p2align 4
	.globl	bts_sys, bts_y_jmp, bts_y_t
	.hidden	bts_sys, bts_y_jmp, bts_y_t
	.type	bts_sys, @function
bts_sys:	)" BTS_SYSCALL R"(
bts_y_jmp:	jmp	bts_y_t
	ud2
bts_y_t:	ret
	.size	bts_sys, . - bts_sys

	.p2align 4
	.globl	bts_touch, bts_f_jmp, bts_f_t
	.hidden	bts_touch, bts_f_jmp, bts_f_t
	.type	bts_touch, @function
bts_touch:	)" BTS_TOUCH R"(
bts_f_jmp:	jmp	bts_f_t
	ud2
bts_f_t:	ret
	.size	bts_touch, . - bts_touch
)");

#pragma GCC visibility push(hidden)
extern "C" {
void bts_seq(void);
void bts_loop(unsigned long n);
void bts_spin(unsigned long n);
long bts_sys(long nr);
void bts_touch(volatile char *p);
extern char bts_s_jmp[], bts_s_jmp_t[], bts_s_jz[], bts_s_jz_t[], bts_s_jnz[];
extern char bts_s_call[], bts_s_call_r[], bts_s_ind[], bts_s_ind_t[];
extern char bts_s_trap[], bts_s_ret[], bts_s_fn[], bts_s_bad[];
extern char bts_l_top[], bts_l_jmp[], bts_l_mid[], bts_l_jnz[];
extern char bts_l_trap[], bts_l_ret[];
extern char bts_p_top[], bts_p_jnz[];
extern char bts_y_jmp[], bts_y_t[], bts_f_jmp[], bts_f_t[];
}
#pragma GCC visibility pop

static inline unsigned long long A(const void *p)
{
	return (unsigned long long)(uintptr_t)p;
}

struct Pair {
	unsigned long long from, to;
};

/* The addresses of bts_seq's labels, in one image */
struct SeqLabels {
	unsigned long long entry, jmp, jmp_t, jz, jz_t, call, fn, call_r;
	unsigned long long ind, ind_t, trap, ret;
};

static inline SeqLabels seq_labels(void)
{
	SeqLabels l;

	l.entry = A((const void *)bts_seq);
	l.jmp = A(bts_s_jmp);
	l.jmp_t = A(bts_s_jmp_t);
	l.jz = A(bts_s_jz);
	l.jz_t = A(bts_s_jz_t);
	l.call = A(bts_s_call);
	l.fn = A(bts_s_fn);
	l.call_r = A(bts_s_call_r);
	l.ind = A(bts_s_ind);
	l.ind_t = A(bts_s_ind_t);
	l.trap = A(bts_s_trap);
	l.ret = A(bts_s_ret);
	return l;
}

/* The records one bts_seq() call produces, oldest first */
static inline std::vector<Pair> seq_pairs(const SeqLabels &l)
{
	return {
		{ l.jmp, l.jmp_t },
		{ l.jz, l.jz_t },
		{ l.call, l.fn },
		{ l.fn, l.call_r },
		{ l.ind, l.ind_t },
	};
}

static inline std::vector<Pair> seq_pairs(void)
{
	return seq_pairs(seq_labels());
}

static inline Pair loop_jmp(void) { return { A(bts_l_jmp), A(bts_l_mid) }; }
static inline Pair loop_jnz(void) { return { A(bts_l_jnz), A(bts_l_top) }; }

/* A name for a labelled address, for diagnostics */
static inline const char *label_name(unsigned long long a)
{
	static const struct {
		const char *name;
		const void *addr;
	} tab[] = {
		{ "bts_s_jmp", bts_s_jmp }, { "bts_s_jmp_t", bts_s_jmp_t },
		{ "bts_s_jz", bts_s_jz }, { "bts_s_jz_t", bts_s_jz_t },
		{ "bts_s_jnz", bts_s_jnz }, { "bts_s_call", bts_s_call },
		{ "bts_s_call_r", bts_s_call_r }, { "bts_s_ind", bts_s_ind },
		{ "bts_s_ind_t", bts_s_ind_t }, { "bts_s_trap", bts_s_trap },
		{ "bts_s_ret", bts_s_ret }, { "bts_s_fn", bts_s_fn },
		{ "bts_l_jmp", bts_l_jmp }, { "bts_l_mid", bts_l_mid },
		{ "bts_l_jnz", bts_l_jnz }, { "bts_l_trap", bts_l_trap },
		{ "bts_l_ret", bts_l_ret }, { "bts_p_top", bts_p_top },
		{ "bts_p_jnz", bts_p_jnz }, { "bts_y_jmp", bts_y_jmp },
		{ "bts_y_t", bts_y_t }, { "bts_f_jmp", bts_f_jmp },
		{ "bts_f_t", bts_f_t },
		{ "bts_spin", (const void *)bts_spin },
		{ "bts_sys", (const void *)bts_sys },
		{ "bts_touch", (const void *)bts_touch },
	};

	for (size_t i = 0; i < ARRAY_SIZE(tab); i++)
		if (A(tab[i].addr) == a)
			return tab[i].name;
	return "";
}

/* ------------------------------------------------------------------ */
/* Diagnostics                                                         */
/* ------------------------------------------------------------------ */

static inline const char *errname(int e)
{
	switch (e) {
	case 0: return "no error";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case ESRCH: return "ESRCH";
	case EINTR: return "EINTR";
	case EIO: return "EIO";
	case E2BIG: return "E2BIG";
	case ECHILD: return "ECHILD";
	case ENOMEM: return "ENOMEM";
	case EACCES: return "EACCES";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case ENODEV: return "ENODEV";
	case EINVAL: return "EINVAL";
	case ENOSPC: return "ENOSPC";
	case ENOSYS: return "ENOSYS";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	}
	return strerror(e);
}

static inline const char *qname(unsigned int q)
{
	switch (q) {
	case PTRACE_BTS_BRANCH: return "BRANCH";
	case PTRACE_BTS_TASK_ARRIVES: return "ARRIVES";
	case PTRACE_BTS_TASK_DEPARTS: return "DEPARTS";
	}
	return "?";
}

static inline void print_rec(const char *prefix, long idx, const Rec &r)
{
	if (r.qualifier == PTRACE_BTS_BRANCH)
		ksft_print_msg("%s[%ld] BRANCH cpu %u from %#llx%s%s to %#llx%s%s\n",
			       prefix, idx, r.cpu,
			       (unsigned long long)r.branch.from,
			       *label_name(r.branch.from) ? " " : "",
			       label_name(r.branch.from),
			       (unsigned long long)r.branch.to,
			       *label_name(r.branch.to) ? " " : "",
			       label_name(r.branch.to));
	else
		ksft_print_msg("%s[%ld] %s(%u) cpu %u time %llu reserved %#llx\n",
			       prefix, idx, qname(r.qualifier), r.qualifier,
			       r.cpu, (unsigned long long)r.sched.time,
			       (unsigned long long)r.sched.reserved);
}

/* Prints records [lo, hi) of v, clamped */
static inline void dump_recs(const char *prefix, const std::vector<Rec> &v,
			     long lo, long hi)
{
	if (lo < 0)
		lo = 0;
	if (hi > (long)v.size())
		hi = (long)v.size();
	for (long i = lo; i < hi; i++)
		print_rec(prefix, i, v[i]);
}

/* Result of a system call: its return value and errno when it failed */
struct Ret {
	long ret;
	int err;
};

class Check {
public:
	bool ok = true;

	__printf(2, 3) bool fail(const char *fmt, ...)
	{
		va_list ap;

		va_start(ap, fmt);
		printf("# ");
		vprintf(fmt, ap);
		va_end(ap);
		ok = false;
		return false;
	}

	/* The call must have succeeded with return value @want */
	bool ret(const Ret &r, long want, const char *what)
	{
		if (r.ret == want)
			return true;
		if (r.ret < 0)
			return fail("%s: expected %ld, got -1 (%s)\n", what,
				    want, errname(r.err));
		return fail("%s: expected %ld, got %ld\n", what, want, r.ret);
	}

	/* The call must have failed with errno @want */
	bool err(const Ret &r, int want, const char *what)
	{
		if (r.ret == -1 && r.err == want)
			return true;
		if (r.ret == -1)
			return fail("%s: expected -1 (%s), got -1 (%s)\n", what,
				    errname(want), errname(r.err));
		return fail("%s: expected -1 (%s), got %ld\n", what,
			    errname(want), r.ret);
	}

	bool eq(unsigned long long got, unsigned long long want,
		const char *what)
	{
		if (got == want)
			return true;
		return fail("%s: expected %llu (%#llx), got %llu (%#llx)\n",
			    what, want, want, got, got);
	}

	bool yes(bool cond, const char *what)
	{
		if (cond)
			return true;
		return fail("%s\n", what);
	}
};

/* ------------------------------------------------------------------ */
/* ptrace                                                              */
/* ------------------------------------------------------------------ */

/*
 * The raw system call: glibc's ptrace() takes an enum that C++ will not
 * convert from the PTRACE_BTS_* integers.  Not for PTRACE_PEEK*.
 */
static inline Ret xptrace(long req, pid_t pid, const void *addr,
			  unsigned long data)
{
	long r;

	errno = 0;
	r = syscall(SYS_ptrace, req, (long)pid, addr, data);
	return { r, r < 0 ? errno : 0 };
}

static inline Ret bts_config(pid_t pid, unsigned int size, unsigned int flags,
			     unsigned int signal = 0)
{
	Cfg c;

	c.size = size;
	c.flags = flags;
	c.signal = signal;
	c.record_size = 0;
	return xptrace(PTRACE_BTS_CONFIG, pid, &c, sizeof(c));
}

static inline Ret bts_status(pid_t pid, Cfg *c)
{
	memset(c, 0xa5, sizeof(*c));
	return xptrace(PTRACE_BTS_STATUS, pid, c, sizeof(*c));
}

static inline Ret bts_size(pid_t pid)
{
	return xptrace(PTRACE_BTS_SIZE, pid, nullptr, 0);
}

static inline Ret bts_get(pid_t pid, unsigned long idx, Rec *r)
{
	return xptrace(PTRACE_BTS_GET, pid, r, idx);
}

static inline Ret bts_clear(pid_t pid)
{
	return xptrace(PTRACE_BTS_CLEAR, pid, nullptr, 0);
}

static inline Ret bts_drain(pid_t pid, Rec *buf, unsigned long bytes)
{
	return xptrace(PTRACE_BTS_DRAIN, pid, buf, bytes);
}

/* STATUS must succeed and report exactly (size, flags, signal 0, 24) */
static inline bool expect_status(Check &ck, pid_t pid, unsigned int size,
				 unsigned int flags, const char *what)
{
	Cfg c;
	Ret r = bts_status(pid, &c);
	bool good = true;

	if (!ck.ret(r, 0, what))
		return false;
	if (c.size != size || c.flags != flags || c.signal != 0 ||
	    c.record_size != REC) {
		ck.fail("%s: STATUS expected size %u flags %#x signal 0 record_size %u, got size %u flags %#x signal %u record_size %u\n",
			what, size, flags, REC, c.size, c.flags, c.signal,
			c.record_size);
		good = false;
	}
	return good;
}

static inline bool expect_size(Check &ck, pid_t pid, long n, const char *what)
{
	char buf[160];

	snprintf(buf, sizeof(buf), "%s: PTRACE_BTS_SIZE", what);
	return ck.ret(bts_size(pid), n, buf);
}

/* The @n newest records, newest first (GET 0, 1, ...) */
static inline bool get_newest(Check &ck, pid_t pid, size_t n,
			      std::vector<Rec> &out)
{
	out.assign(n, Rec());
	for (size_t i = 0; i < n; i++) {
		Ret r = bts_get(pid, i, &out[i]);

		if (r.ret != 0)
			return ck.fail("GET(%zu): expected 0, got %ld (%s)\n",
				       i, r.ret, errname(r.err));
	}
	return true;
}

/* Every record through GET, oldest first */
static inline bool get_all(Check &ck, pid_t pid, std::vector<Rec> &out)
{
	std::vector<Rec> nf;
	Ret n = bts_size(pid);

	if (n.ret < 0)
		return ck.fail("SIZE: %s\n", errname(n.err));
	if (!get_newest(ck, pid, n.ret, nf))
		return false;
	out.assign(nf.rbegin(), nf.rend());
	return true;
}

/* DRAIN everything into a buffer of @cap records; oldest first */
static inline bool drain_all(Check &ck, pid_t pid, size_t cap,
			     std::vector<Rec> &out)
{
	Ret r;

	out.assign(cap, Rec());
	r = bts_drain(pid, out.data(), cap * REC);
	if (r.ret < 0 || (size_t)r.ret > cap)
		return ck.fail("DRAIN of %zu records: got %ld (%s)\n", cap,
			       r.ret, errname(r.err));
	out.resize(r.ret);
	return true;
}

static inline bool same_rec(const Rec &a, const Rec &b)
{
	return memcmp(&a, &b, sizeof(a)) == 0;
}

static inline bool is_pair(const Rec &r, const Pair &p)
{
	return r.qualifier == PTRACE_BTS_BRANCH && r.cpu == 0 &&
	       r.branch.from == p.from && r.branch.to == p.to;
}

static inline std::vector<Rec> branches_only(const std::vector<Rec> &v)
{
	std::vector<Rec> b;

	for (const Rec &r : v)
		if (r.qualifier == PTRACE_BTS_BRANCH)
			b.push_back(r);
	return b;
}

/*
 * The last exp.size() records of @v (oldest first) must be exactly @exp:
 * BRANCH records, cpu 0, in that order.
 */
static inline bool check_tail(Check &ck, const std::vector<Rec> &v,
			      const std::vector<Pair> &exp, const char *what)
{
	size_t base;
	bool good = true;

	if (v.size() < exp.size())
		return ck.fail("%s: %zu records, expected at least %zu\n",
			       what, v.size(), exp.size());
	base = v.size() - exp.size();
	for (size_t i = 0; i < exp.size(); i++)
		if (!is_pair(v[base + i], exp[i]))
			good = false;
	if (good)
		return true;
	ck.fail("%s: the newest %zu records are not the expected branches\n",
		what, exp.size());
	for (size_t i = 0; i < exp.size(); i++)
		ksft_print_msg("  expected [%zu] BRANCH cpu 0 from %#llx %s to %#llx %s\n",
			       base + i, exp[i].from, label_name(exp[i].from),
			       exp[i].to, label_name(exp[i].to));
	dump_recs("  got ", v, (long)base - 3, v.size());
	return false;
}

/* Index of the last occurrence of @exp as a contiguous run in @v, or -1 */
static inline long find_run(const std::vector<Rec> &v,
			    const std::vector<Pair> &exp)
{
	if (v.size() < exp.size())
		return -1;
	for (long s = (long)(v.size() - exp.size()); s >= 0; s--) {
		size_t i;

		for (i = 0; i < exp.size(); i++)
			if (!is_pair(v[s + i], exp[i]))
				break;
		if (i == exp.size())
			return s;
	}
	return -1;
}

/* ------------------------------------------------------------------ */
/* Tracee                                                              */
/* ------------------------------------------------------------------ */

static inline unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline void describe_status(const char *what, pid_t pid, int st)
{
	if (WIFEXITED(st))
		ksft_print_msg("%s: task %d exited with %d\n", what, pid,
			       WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		ksft_print_msg("%s: task %d killed by signal %d\n", what, pid,
			       WTERMSIG(st));
	else if (WIFSTOPPED(st))
		ksft_print_msg("%s: task %d stopped by signal %d, event %d\n",
			       what, pid, WSTOPSIG(st), st >> 16);
	else
		ksft_print_msg("%s: task %d: wait status %#x\n", what, pid, st);
}

/*
 * A forked child that runs body() under ptrace.  spawn() returns once the
 * child is in its initial SIGSTOP stop.  The destructor (or reap()) kills
 * and reaps it, whatever state it is in.
 */
class Tracee {
public:
	pid_t pid = -1;

	Tracee() = default;
	Tracee(const Tracee &) = delete;
	Tracee &operator=(const Tracee &) = delete;
	~Tracee() { reap(); }

	template <typename F> bool spawn(F body)
	{
		pid_t parent = getpid();
		pid_t p;

		fflush(stdout);
		fflush(stderr);
		p = fork();
		if (p < 0) {
			ksft_perror("fork");
			return false;
		}
		if (p == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(90);
			if (xptrace(PTRACE_TRACEME, 0, nullptr, 0).ret)
				_exit(91);
			raise(SIGSTOP);
			body();
			_exit(0);
		}
		pid = p;
		return wait_stop(SIGSTOP);
	}

	/* waitpid() for this task, retrying on EINTR; reaped -> pid = -1 */
	bool wait_raw(int *st)
	{
		pid_t r;

		/* never waitpid(-1): that would reap someone else's child */
		if (pid <= 0) {
			ksft_print_msg("no tracee to wait for\n");
			return false;
		}
		do {
			r = waitpid(pid, st, __WALL);
		} while (r < 0 && errno == EINTR);
		if (r != pid) {
			ksft_print_msg("waitpid(%d): %s\n", pid,
				       errname(errno));
			return false;
		}
		if (WIFEXITED(*st) || WIFSIGNALED(*st))
			pid = -1;
		return true;
	}

	/* The next report must be a stop with @sig and ptrace event @event */
	bool wait_stop(int sig, int event = 0)
	{
		pid_t p = pid;
		int st;

		if (!wait_raw(&st))
			return false;
		if (!WIFSTOPPED(st) || WSTOPSIG(st) != sig ||
		    (st >> 16) != event) {
			char what[96];

			snprintf(what, sizeof(what),
				 "expected a stop with signal %d event %d",
				 sig, event);
			describe_status(what, p, st);
			return false;
		}
		return true;
	}

	bool ip(unsigned long long *out)
	{
		struct user_regs_struct regs;
		Ret r = xptrace(PTRACE_GETREGS, pid, nullptr,
				(unsigned long)&regs);

		if (r.ret) {
			ksft_print_msg("PTRACE_GETREGS: %s\n", errname(r.err));
			return false;
		}
#ifdef __x86_64__
		*out = regs.rip;
#else
		*out = regs.eip;
#endif
		return true;
	}

	/* A SIGTRAP stop with the instruction pointer at @at */
	bool wait_trap(unsigned long long at)
	{
		unsigned long long rip;

		if (!wait_stop(SIGTRAP) || !ip(&rip))
			return false;
		if (rip != at) {
			ksft_print_msg("SIGTRAP stop at %#llx %s, expected %#llx %s\n",
				       rip, label_name(rip), at,
				       label_name(at));
			return false;
		}
		return true;
	}

	bool cont(int sig = 0)
	{
		Ret r = xptrace(PTRACE_CONT, pid, nullptr, sig);

		if (r.ret) {
			ksft_print_msg("PTRACE_CONT(%d): %s\n", pid,
				       errname(r.err));
			return false;
		}
		return true;
	}

	/* Continue until the int3 of bts_seq() */
	bool run_seq(void) { return cont() && wait_trap(A(bts_s_ret)); }

	/* Continue until the int3 of bts_loop() */
	bool run_loop(void) { return cont() && wait_trap(A(bts_l_ret)); }

	/* The next report must be the exit of the task with @code */
	bool wait_exit(int code)
	{
		pid_t p = pid;
		int st;

		if (!wait_raw(&st))
			return false;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != code) {
			char what[64];

			snprintf(what, sizeof(what), "expected exit %d", code);
			describe_status(what, p, st);
			return false;
		}
		return true;
	}

	void reap(void)
	{
		int st;

		if (pid <= 0)
			return;
		kill(pid, SIGKILL);
		for (;;) {
			pid_t r = waitpid(pid, &st, __WALL);

			if (r < 0) {
				if (errno == EINTR)
					continue;
				break;
			}
			if (WIFEXITED(st) || WIFSIGNALED(st))
				break;
			/* a stop reported before SIGKILL took effect */
			xptrace(PTRACE_CONT, pid, nullptr, 0);
		}
		pid = -1;
	}
};

/* ------------------------------------------------------------------ */
/* Common steps                                                        */
/* ------------------------------------------------------------------ */

/* Tracee bodies */
static inline void seq_forever(void)
{
	for (;;)
		bts_seq();
}

static inline void idle_forever(void)
{
	for (;;)
		pause();
}

static inline void seq_then_idle(void)
{
	bts_seq();
	idle_forever();
}

/*
 * Starts @body as a tracee and configures it with (@size, @flags): CONFIG
 * (@what in diagnostics) must succeed.  Every failure is recorded in @ck.
 */
template <typename F>
static inline bool spawn_configured(Check &ck, Tracee &t, F body,
				    unsigned int size, unsigned int flags,
				    const char *what = "CONFIG")
{
	if (!t.spawn(body))
		return ck.fail("%s: cannot start the tracee\n", what);
	return ck.ret(bts_config(t.pid, size, flags), 0, what);
}

/* spawn_configured(), then continue to the int3 of bts_seq() */
template <typename F>
static inline bool spawn_run_seq(Check &ck, Tracee &t, F body,
				 unsigned int size, unsigned int flags,
				 const char *what = "CONFIG")
{
	if (!spawn_configured(ck, t, body, size, flags, what))
		return false;
	if (!t.run_seq())
		return ck.fail("%s: the tracee did not stop in bts_seq\n", what);
	return true;
}

/* STATUS reports no configuration and the ring is empty */
static inline void expect_unconfigured(Check &ck, pid_t pid, const char *what)
{
	expect_status(ck, pid, 0, 0, what);
	expect_size(ck, pid, 0, what);
}

/* The ring holds at least one record */
static inline bool expect_records(Check &ck, pid_t pid, const char *what)
{
	Ret n = bts_size(pid);

	if (n.ret > 0)
		return true;
	return ck.fail("%s: SIZE %ld (%s), expected records\n", what, n.ret,
		       errname(n.err));
}

/* Which records of the ring expect_seq_tail() looks at */
enum TailOf { ALL_RECORDS, BRANCHES_ONLY };

/*
 * Reads the whole ring (GET) into @v, oldest first: its newest records, or
 * with BRANCHES_ONLY its newest BRANCH records, must be the branches of one
 * bts_seq() call.
 */
static inline bool expect_seq_tail(Check &ck, pid_t pid, std::vector<Rec> &v,
				   TailOf of, const char *what)
{
	if (!get_all(ck, pid, v))
		return false;
	return check_tail(ck, of == BRANCHES_ONLY ? branches_only(v) : v,
			  seq_pairs(), what);
}

static inline bool expect_seq_tail(Check &ck, pid_t pid, TailOf of,
				   const char *what)
{
	std::vector<Rec> v;

	return expect_seq_tail(ck, pid, v, of, what);
}

/* ------------------------------------------------------------------ */
/* Files                                                               */
/* ------------------------------------------------------------------ */

static inline bool read_ull(const char *path, unsigned long long *v)
{
	char buf[64];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	*v = strtoull(buf, nullptr, 0);
	return true;
}

/* Writes @s to @path in one write(); 0 or the errno */
static inline int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;
	int e;

	if (fd < 0)
		return errno;
	n = write(fd, s, strlen(s));
	e = n < 0 ? errno : ((size_t)n == strlen(s) ? 0 : EIO);
	close(fd);
	return e;
}

static inline unsigned long long bts_max_size(void)
{
	unsigned long long v = 0;

	if (!read_ull(BTS_SYSCTL, &v))
		ksft_print_msg("cannot read %s: %s\n", BTS_SYSCTL,
			       strerror(errno));
	return v;
}

/* ------------------------------------------------------------------ */
/* Test driver                                                         */
/* ------------------------------------------------------------------ */

/*
 * Skips the whole binary when the CPU has no usable BTS: CONFIG with
 * PTRACE_BTS_O_TRACE fails with ENODEV.  Any other failure is an error.
 */
static inline void bts_require_hw(void)
{
	Tracee t;
	Ret r;

	if (!t.spawn(idle_forever))
		ksft_exit_fail_msg("cannot start a tracee\n");
	r = bts_config(t.pid, 16 * REC, PTRACE_BTS_O_TRACE);
	if (r.ret == -1 && r.err == ENODEV) {
		t.reap();
		ksft_exit_skip("no usable BTS: PTRACE_BTS_CONFIG with PTRACE_BTS_O_TRACE fails with ENODEV\n");
	}
	if (r.ret != 0) {
		t.reap();
		ksft_exit_fail_msg("PTRACE_BTS_CONFIG with PTRACE_BTS_O_TRACE: %ld (%s)\n",
				   r.ret, errname(r.err));
	}
	r = bts_config(t.pid, 0, 0);
	t.reap();
	if (r.ret != 0)
		ksft_exit_fail_msg("PTRACE_BTS_CONFIG release: %ld (%s)\n",
				   r.ret, errname(r.err));
}

struct TestCase {
	const char *name;
	bool (*fn)(void);
};

template <size_t N>
[[noreturn]] static inline void run_tests(const TestCase (&tests)[N])
{
	ksft_set_plan(N);
	for (size_t i = 0; i < N; i++) {
		bool ok;

		fflush(stdout);
		ok = tests[i].fn();
		ksft_test_result(ok, "%s\n", tests[i].name);
	}
	ksft_finished();
}

#endif /* BTS_COMMON_HPP */
