// SPDX-License-Identifier: GPL-2.0
/*
 * ptrace BTS: what is recorded and how it is read back.
 *
 * The tracee runs labelled assembly (bts_common.hpp) and stops on an int3
 * placed right after it, so the newest records are known exactly from the
 * labels: the expected values never come from the implementation.
 */

#include <sched.h>
#include <sys/syscall.h>

#include "bts_common.hpp"

static const unsigned int TRACE = PTRACE_BTS_O_TRACE;
static const unsigned int SCHED = PTRACE_BTS_O_SCHED;
static const unsigned int CUT = PTRACE_BTS_O_CUT_SIZE;

/* A tracee that calls bts_loop(@iters) forever, configured */
static bool loop_configured(Check &ck, Tracee &t, unsigned long iters,
			    unsigned int size, unsigned int flags)
{
	return spawn_configured(ck, t, [iters] {
		for (;;)
			bts_loop(iters);
	}, size, flags);
}

/*
 * @nf holds the newest records, newest first (GET 0, 1, ...): it must
 * begin with the labelled branches of bts_seq(), newest first.
 */
static bool check_seq_newest(Check &ck, const std::vector<Rec> &nf,
			     const char *what)
{
	std::vector<Pair> exp = seq_pairs();
	bool good = true;

	for (size_t i = 0; i < exp.size(); i++) {
		const Pair &p = exp[exp.size() - 1 - i];

		if (!is_pair(nf[i], p)) {
			good = ck.fail("%s: GET(%zu): expected BRANCH cpu 0 from %#llx %s to %#llx %s\n",
				       what, i, p.from, label_name(p.from),
				       p.to, label_name(p.to));
			print_rec("  got ", i, nf[i]);
		}
	}
	return good;
}

/* GET: the five newest records are the labelled branches, newest first */
static bool test_labelled_get(void)
{
	std::vector<Rec> g;
	Check ck;
	Tracee t;
	Ret n;

	if (!spawn_run_seq(ck, t, seq_forever, 1024 * REC, TRACE))
		return false;
	n = bts_size(t.pid);
	if (n.ret < 6 || n.ret > 1024)
		return ck.fail("SIZE: expected 6..1024 records, got %ld (%s)\n",
			       n.ret, errname(n.err));
	if (!get_newest(ck, t.pid, 6, g))
		return false;
	check_seq_newest(ck, g, "labelled sequence");
	/* the call into bts_seq precedes the sequence */
	if (g[5].qualifier != PTRACE_BTS_BRANCH ||
	    g[5].branch.to != A((const void *)bts_seq)) {
		ck.fail("GET(5): expected the branch into bts_seq (to %#llx)\n",
			A((const void *)bts_seq));
		print_rec("  got ", 5, g[5]);
	}
	return ck.ok;
}

/*
 * DRAIN: the tail is the labelled branches, oldest first; the ring is
 * empty afterwards, and the first record after resuming is the ret that
 * follows the int3.
 */
static bool test_labelled_drain(void)
{
	std::vector<Rec> d;
	Check ck;
	Tracee t;
	Ret n;

	if (!spawn_configured(ck, t, seq_forever, 1024 * REC, TRACE))
		return false;
	for (int pass = 0; pass < 2; pass++) {
		if (!t.run_seq())
			return false;
		n = bts_size(t.pid);
		if (!drain_all(ck, t.pid, 1024, d))
			return false;
		if ((long)d.size() != n.ret)
			ck.fail("pass %d: DRAIN returned %zu records, SIZE said %ld\n",
				pass, d.size(), n.ret);
		check_tail(ck, d, seq_pairs(),
			   pass ? "second DRAIN" : "first DRAIN");
		expect_size(ck, t.pid, 0, "after DRAIN");
		if (pass == 1 && !d.empty() &&
		    (d[0].qualifier != PTRACE_BTS_BRANCH ||
		     d[0].branch.from != A(bts_s_ret))) {
			ck.fail("second DRAIN: the oldest record must be the ret after the int3 (from %#llx)\n",
				A(bts_s_ret));
			print_rec("  got ", 0, d[0]);
		}
	}
	return ck.ok;
}

/*
 * ptrace_check_attach: the first request after waitpid() reported the stop
 * already sees the branches executed just before the stop.
 */
static bool test_complete_at_stop(void)
{
	std::vector<Rec> g;
	Check ck;
	Tracee t;

	if (!spawn_configured(ck, t, seq_forever, 256 * REC, TRACE))
		return false;
	for (int i = 0; i < 10 && ck.ok; i++) {
		unsigned long long rip;
		char what[64];

		if (!t.cont() || !t.wait_stop(SIGTRAP))
			return false;
		/* no other ptrace request before these */
		if (!get_newest(ck, t.pid, seq_pairs().size(), g))
			return false;
		snprintf(what, sizeof(what), "stop %d, right after waitpid", i);
		check_seq_newest(ck, g, what);
		if (!t.ip(&rip))
			return false;
		if (rip != A(bts_s_ret))
			return ck.fail("stop %d at %#llx, not after the int3\n",
				       i, rip);
	}
	return ck.ok;
}

/* A never configured tracee: empty ring, STATUS size 0, record_size 24 */
static bool test_unconfigured(void)
{
	Rec buf[16];
	Check ck;
	Tracee t;
	Rec r;

	if (!t.spawn(seq_forever))
		return false;
	expect_unconfigured(ck, t.pid, "unconfigured");
	ck.ret(bts_drain(t.pid, buf, sizeof(buf)), 0, "unconfigured: DRAIN");
	ck.ret(bts_clear(t.pid), 0, "unconfigured: CLEAR");
	ck.err(bts_get(t.pid, 0, &r), EINVAL, "unconfigured: GET(0)");
	/* it runs labelled code: still nothing */
	if (!t.run_seq())
		return false;
	expect_unconfigured(ck, t.pid, "unconfigured, after running");
	return ck.ok;
}

/* STATUS reports what CONFIG set, rounded to whole records */
static bool test_status_roundtrip(void)
{
	static const struct {
		unsigned int size, flags, record_size, want_size;
	} tab[] = {
		{ 100 * 24, TRACE, 0, 100 * 24 },
		{ 10 * 24 + 5, TRACE | SCHED, 12345, 10 * 24 },
		{ 24, SCHED, 24, 24 },
		{ 47, TRACE, 0, 24 },
		{ 200 * 24, TRACE | CUT, 0, 200 * 24 },
		{ 200 * 24 + 23, SCHED | CUT, 1, 200 * 24 },
		{ 64 * 24, TRACE | SCHED | CUT, 0, 64 * 24 },
	};
	std::vector<Rec> v;
	Check ck;
	Tracee t;

	if (!t.spawn(seq_forever))
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(tab); i++) {
		char what[96];
		Cfg c = { tab[i].size, tab[i].flags, 0, tab[i].record_size };

		snprintf(what, sizeof(what), "CONFIG size %u flags %#x",
			 tab[i].size, tab[i].flags);
		if (!ck.ret(xptrace(PTRACE_BTS_CONFIG, t.pid, &c, sizeof(c)),
			    0, what))
			continue;
		expect_status(ck, t.pid, tab[i].want_size, tab[i].flags, what);
		expect_size(ck, t.pid, 0, what);
	}
	/* the last configuration records */
	if (!t.run_seq())
		return false;
	expect_seq_tail(ck, t.pid, v, BRANCHES_ONLY, "after the last CONFIG");
	if (v.size() > 64)
		ck.fail("%zu records in a ring of 64\n", v.size());
	return ck.ok;
}

/*
 * A larger struct with a zeroed tail is accepted, up to a page; STATUS
 * zeroes the bytes it does not know and writes nothing beyond DATA.
 */
static bool test_config_extensible(void)
{
	const size_t page = sysconf(_SC_PAGESIZE);
	unsigned char *buf;
	Check ck;
	Tracee t;
	Cfg c;

	if (!t.spawn(seq_forever))
		return false;
	buf = (unsigned char *)malloc(page);
	if (!buf)
		return ck.fail("malloc\n");

	static const size_t sizes[] = { 17, 24, 64, 0 /* page */ };
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t sz = sizes[i] ? sizes[i] : page;
		unsigned int want = (unsigned int)(40 + i) * REC;
		char what[64];
		size_t k;

		snprintf(what, sizeof(what), "%zu-byte config", sz);
		memset(buf, 0, page);
		c = { want, TRACE, 0, 0 };
		memcpy(buf, &c, sizeof(c));
		ck.ret(xptrace(PTRACE_BTS_CONFIG, t.pid, buf, sz), 0, what);

		memset(buf, 0xa5, page);
		if (!ck.ret(xptrace(PTRACE_BTS_STATUS, t.pid, buf, sz), 0,
			    what))
			continue;
		memcpy(&c, buf, sizeof(c));
		if (c.size != want || c.flags != TRACE || c.signal != 0 ||
		    c.record_size != REC)
			ck.fail("%s: STATUS got size %u flags %#x signal %u record_size %u, expected %u %#x 0 %u\n",
				what, c.size, c.flags, c.signal, c.record_size,
				want, TRACE, REC);
		for (k = sizeof(c); k < sz; k++)
			if (buf[k] != 0)
				break;
		if (k < sz)
			ck.fail("%s: STATUS left byte %zu = %#x, expected 0\n",
				what, k, buf[k]);
		for (k = sz; k < page; k++)
			if (buf[k] != 0xa5)
				break;
		if (k < page)
			ck.fail("%s: STATUS wrote byte %zu beyond DATA\n", what,
				k);
	}

	/* DATA 16 exactly: nothing written beyond it */
	memset(buf, 0xa5, 64);
	if (ck.ret(xptrace(PTRACE_BTS_STATUS, t.pid, buf, 16), 0,
		   "STATUS DATA 16")) {
		for (size_t k = 16; k < 64; k++)
			if (buf[k] != 0xa5) {
				ck.fail("STATUS DATA 16 wrote byte %zu\n", k);
				break;
			}
	}
	free(buf);

	/* and the configuration is in force */
	if (!t.run_seq())
		return false;
	expect_seq_tail(ck, t.pid, ALL_RECORDS, "page-sized config");
	return ck.ok;
}

/* A new CONFIG discards the records of the previous one */
static bool test_reconfig_discards(void)
{
	std::vector<Rec> v;
	Check ck;
	Tracee t;
	Ret n;

	if (!spawn_run_seq(ck, t, seq_forever, 512 * REC, TRACE))
		return false;
	n = bts_size(t.pid);
	if (n.ret < 5)
		return ck.fail("SIZE after running: %ld (%s)\n", n.ret,
			       errname(n.err));
	ck.ret(bts_config(t.pid, 256 * REC, TRACE | SCHED), 0, "reCONFIG");
	expect_size(ck, t.pid, 0, "after reCONFIG");
	expect_status(ck, t.pid, 256 * REC, TRACE | SCHED, "after reCONFIG");
	if (!t.run_seq())
		return false;
	if (get_all(ck, t.pid, v)) {
		check_tail(ck, branches_only(v), seq_pairs(), "after reCONFIG");
		/* first record: the task arrives; then the ret after int3 */
		if (v.size() < 2 || v[0].qualifier != PTRACE_BTS_TASK_ARRIVES)
			ck.fail("after reCONFIG: the oldest record must be an ARRIVES\n");
		std::vector<Rec> b = branches_only(v);
		if (b.empty() || b[0].branch.from != A(bts_s_ret))
			ck.fail("after reCONFIG: the oldest branch must be the ret after the int3 (%#llx)\n",
				A(bts_s_ret));
		if (ck.ok == false)
			dump_recs("  ", v, 0, 4);
	}
	return ck.ok;
}

/* size 0 releases: STATUS size 0, SIZE 0, nothing recorded; CONFIG again */
static bool test_release(void)
{
	Rec buf[8];
	Check ck;
	Tracee t;

	if (!spawn_run_seq(ck, t, seq_forever, 128 * REC, TRACE | SCHED))
		return false;
	if (bts_size(t.pid).ret < 5)
		ck.fail("nothing recorded before the release\n");
	ck.ret(bts_config(t.pid, 0, 0), 0, "CONFIG size 0");
	expect_unconfigured(ck, t.pid, "released");
	ck.ret(bts_drain(t.pid, buf, sizeof(buf)), 0, "released: DRAIN");
	if (!t.run_seq())
		return false;
	expect_unconfigured(ck, t.pid, "released, after running");
	/* release twice is harmless */
	ck.ret(bts_config(t.pid, 0, 0), 0, "second CONFIG size 0");
	/* and tracing can start again */
	ck.ret(bts_config(t.pid, 128 * REC, TRACE), 0, "CONFIG after release");
	if (!t.run_seq())
		return false;
	expect_seq_tail(ck, t.pid, ALL_RECORDS, "CONFIG after release");
	return ck.ok;
}

/* A CONFIG that fails leaves the configuration and the ring unchanged */
static bool test_failed_config_keeps_old(void)
{
	unsigned long long max = bts_max_size();
	unsigned int over = max && max < 0xffffffffULL - 24 ?
			    (unsigned int)max + 24 : 0xffffffffU;
	struct {
		Cfg c;
		unsigned char tail[16];
	} big;
	std::vector<Rec> before, after, v;
	Check ck;
	Tracee t;

	if (!spawn_run_seq(ck, t, seq_forever, 100 * REC, TRACE))
		return false;
	if (!get_all(ck, t.pid, before))
		return false;

	memset(&big, 0, sizeof(big));
	big.c = { 50 * REC, TRACE, 0, 0 };
	big.tail[7] = 1;

	struct {
		const char *what;
		Ret r;
		int err;
	} fails[] = {
		{ "over the limit", bts_config(t.pid, over, TRACE), EINVAL },
		{ "unknown flag", bts_config(t.pid, 50 * REC, TRACE | 0x100),
		  EINVAL },
		{ "O_SIGNAL", bts_config(t.pid, 50 * REC,
					 TRACE | PTRACE_BTS_O_SIGNAL, SIGUSR1),
		  EOPNOTSUPP },
		{ "size 1", bts_config(t.pid, 1, TRACE), EINVAL },
		{ "no TRACE/SCHED", bts_config(t.pid, 50 * REC, 0), EINVAL },
		{ "non-zero tail", xptrace(PTRACE_BTS_CONFIG, t.pid, &big,
					   sizeof(big)), E2BIG },
		{ "NULL", xptrace(PTRACE_BTS_CONFIG, t.pid, nullptr, 16),
		  EFAULT },
	};
	for (size_t i = 0; i < ARRAY_SIZE(fails); i++)
		ck.err(fails[i].r, fails[i].err, fails[i].what);

	expect_status(ck, t.pid, 100 * REC, TRACE, "after failed CONFIGs");
	if (get_all(ck, t.pid, after)) {
		bool same = after.size() == before.size();

		for (size_t i = 0; same && i < after.size(); i++)
			same = same_rec(after[i], before[i]);
		if (!same)
			ck.fail("the ring changed: %zu records before, %zu after\n",
				before.size(), after.size());
	}
	/* still recording into the same ring */
	if (!t.run_seq())
		return false;
	expect_seq_tail(ck, t.pid, v, ALL_RECORDS, "after failed CONFIGs");
	if (v.size() > 100)
		ck.fail("%zu records in a ring of 100\n", v.size());
	return ck.ok;
}

/*
 * The loop pattern: the ring holds only loop records, newest first
 * alternating bts_l_jmp -> bts_l_mid and bts_l_jnz -> bts_l_top.
 * @nf is newest first.
 */
static bool check_loop_pattern(Check &ck, const std::vector<Rec> &nf,
			       const char *what)
{
	const Pair pj = loop_jmp(), pn = loop_jnz();

	for (size_t i = 0; i < nf.size(); i++) {
		const Pair &p = i % 2 ? pn : pj;

		if (!is_pair(nf[i], p)) {
			ck.fail("%s: newest-first record %zu: expected from %#llx %s to %#llx %s\n",
				what, i, p.from, label_name(p.from), p.to,
				label_name(p.to));
			dump_recs("  got ", nf, (long)i - 2, i + 3);
			return false;
		}
	}
	return true;
}

/*
 * Wrap a ring of @cap records: the loop runs more iterations than the
 * ring holds.  GET, SIZE and DRAIN agree; a partial DRAIN takes the oldest
 * records; CLEAR empties; recording goes on after all of them.
 */
static bool wrap_test(unsigned long cap)
{
	const unsigned long iters = cap + 100;	/* 2 * iters - 1 > cap */
	std::vector<Rec> g, d, d2;
	const unsigned long k = 10;
	Check ck;
	Tracee t;
	Ret r;
	Rec one;

	if (!loop_configured(ck, t, iters, cap * REC, TRACE))
		return false;
	expect_status(ck, t.pid, cap * REC, TRACE, "CONFIG");
	if (!t.run_loop())
		return false;

	/* full ring, newest records are the last iterations */
	if (!expect_size(ck, t.pid, cap, "wrapped"))
		return false;
	if (!get_newest(ck, t.pid, cap, g))
		return false;
	if (!check_loop_pattern(ck, g, "GET after wrap"))
		return false;
	ck.err(bts_get(t.pid, cap, &one), EINVAL, "GET(SIZE)");

	/* partial DRAIN: room for k records and 23 bytes */
	d.assign(k + 1, Rec());
	r = bts_drain(t.pid, d.data(), k * REC + REC - 1);
	if (ck.ret(r, k, "partial DRAIN")) {
		for (unsigned long j = 0; j < k; j++)
			if (!same_rec(d[j], g[cap - 1 - j])) {
				ck.fail("partial DRAIN[%lu] is not GET(%lu)\n",
					j, cap - 1 - j);
				print_rec("  drained ", j, d[j]);
				print_rec("  GET ", cap - 1 - j, g[cap - 1 - j]);
				break;
			}
	}
	expect_size(ck, t.pid, cap - k, "after partial DRAIN");
	if (ck.ret(bts_get(t.pid, 0, &one), 0, "GET(0) after partial DRAIN") &&
	    !same_rec(one, g[0]))
		ck.fail("GET(0) changed after partial DRAIN\n");
	if (ck.ret(bts_get(t.pid, cap - k - 1, &one), 0,
		   "GET(oldest) after partial DRAIN") &&
	    !same_rec(one, g[cap - k - 1]))
		ck.fail("GET(%lu) changed after partial DRAIN\n", cap - k - 1);
	ck.err(bts_get(t.pid, cap - k, &one), EINVAL,
	       "GET(SIZE) after partial DRAIN");

	/* DRAIN the rest: the remaining records, oldest first */
	if (drain_all(ck, t.pid, cap, d2)) {
		if (d2.size() != cap - k)
			ck.fail("DRAIN of the rest: %zu records, expected %lu\n",
				d2.size(), cap - k);
		for (size_t j = 0; j < d2.size() && j < cap - k; j++)
			if (!same_rec(d2[j], g[cap - k - 1 - j])) {
				ck.fail("DRAIN[%zu] is not GET(%lu)\n", j,
					cap - k - 1 - j);
				break;
			}
	}
	expect_size(ck, t.pid, 0, "after full DRAIN");
	ck.err(bts_get(t.pid, 0, &one), EINVAL, "GET(0) of an empty ring");

	/* again: wraps, then CLEAR */
	if (!t.run_loop())
		return false;
	expect_size(ck, t.pid, cap, "wrapped again");
	if (ck.ret(bts_get(t.pid, 0, &one), 0, "GET(0)") &&
	    !is_pair(one, loop_jmp()))
		ck.fail("GET(0) after the second wrap is not the last jmp\n");
	ck.ret(bts_clear(t.pid), 0, "CLEAR");
	expect_size(ck, t.pid, 0, "after CLEAR");
	ck.ret(bts_drain(t.pid, d.data(), REC), 0, "DRAIN after CLEAR");
	ck.err(bts_get(t.pid, 0, &one), EINVAL, "GET(0) after CLEAR");
	expect_status(ck, t.pid, cap * REC, TRACE, "after CLEAR");

	/* recording goes on after CLEAR; DRAIN alone gives the pattern */
	if (!t.run_loop())
		return false;
	if (drain_all(ck, t.pid, cap + 1, d)) {
		if (d.size() != cap)
			ck.fail("DRAIN after CLEAR and a wrap: %zu records, expected %lu\n",
				d.size(), cap);
		std::vector<Rec> nf(d.rbegin(), d.rend());
		check_loop_pattern(ck, nf, "DRAIN after CLEAR");
	}
	return ck.ok;
}

static bool test_wrap_64(void) { return wrap_test(64); }
static bool test_wrap_4096(void) { return wrap_test(4096); }

/*
 * More branches than the per-CPU hardware buffer holds, into a 1 MiB ring:
 * no record is lost at the buffer's interrupt threshold.
 */
static bool test_no_gap(void)
{
	const unsigned long iters = 10000;
	const size_t need = 2 * iters - 1;
	const Pair pj = loop_jmp(), pn = loop_jnz();
	std::vector<Rec> d;
	unsigned long jmps = 0, jnzs = 0;
	Check ck;
	Tracee t;
	Cfg c;
	size_t cap;

	if (!loop_configured(ck, t, iters, 1 << 20, TRACE | CUT))
		return false;
	if (!ck.ret(bts_status(t.pid, &c), 0, "STATUS"))
		return false;
	cap = c.size / REC;
	if (cap < need + 100)
		return ck.fail("ring of %zu records is too small for %zu (ptrace_bts_max_size?)\n",
			       cap, need);
	if (!t.run_loop())
		return false;
	if (!drain_all(ck, t.pid, cap, d))
		return false;
	if (d.size() < need)
		return ck.fail("%zu records, expected at least %zu\n", d.size(),
			       need);
	for (const Rec &r : d) {
		jmps += is_pair(r, pj);
		jnzs += is_pair(r, pn);
	}
	if (jmps != iters || jnzs != iters - 1)
		ck.fail("counted %lu jmp and %lu jnz records, expected %lu and %lu\n",
			jmps, jnzs, iters, iters - 1);
	for (size_t i = 0; i < need; i++) {
		size_t at = d.size() - need + i;

		if (!is_pair(d[at], i % 2 ? pn : pj)) {
			ck.fail("loop record %zu of %zu (DRAIN index %zu) is wrong\n",
				i, need, at);
			dump_recs("  got ", d, at - 2, at + 3);
			break;
		}
	}
	return ck.ok;
}

/*
 * System calls, page faults and yields: no record carries a kernel
 * address, and the branch right after each of them is still recorded,
 * right after the call that led into the system call or the fault.
 */
static bool test_no_kernel_address(void)
{
	const int iters = 20, pages = 4;
	unsigned long bad = 0, ys = 0, fs = 0, after_call_y = 0, after_call_f = 0;
	const long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	std::vector<Rec> d, b;
	Check ck;
	Tracee t;
	Cfg c;

	if (!t.spawn([iters, pages] {
		const long pg = sysconf(_SC_PAGESIZE);
		int fd = open("/dev/null", O_WRONLY);

		for (int i = 0; i < iters; i++) {
			char *p;

			bts_sys(SYS_getpid);
			bts_sys(SYS_sched_yield);
			if (write(fd, &i, sizeof(i)) < 0)
				_exit(3);
			p = (char *)mmap(nullptr, pages * pg,
					 PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED)
				_exit(4);
			for (int k = 0; k < pages; k++)
				bts_touch(p + k * pg);
			munmap(p, pages * pg);
			sched_yield();
		}
		for (;;)
			bts_seq();
	}))
		return false;
	if (!ck.ret(bts_config(t.pid, 1 << 20, TRACE | SCHED | CUT), 0,
		    "CONFIG"))
		return false;
	if (!ck.ret(bts_status(t.pid, &c), 0, "STATUS"))
		return false;
	if (!t.run_seq())
		return false;
	if (!drain_all(ck, t.pid, c.size / REC, d))
		return false;
	for (size_t i = 0; i < d.size(); i++) {
		const Rec &r = d[i];
		bool ok;

		switch (r.qualifier) {
		case PTRACE_BTS_BRANCH:
			ok = r.cpu == 0 && r.branch.from && r.branch.to &&
			     r.branch.from < USER_TOP && r.branch.to < USER_TOP;
			break;
		case PTRACE_BTS_TASK_ARRIVES:
		case PTRACE_BTS_TASK_DEPARTS:
			ok = r.sched.reserved == 0 && (long)r.cpu < ncpu &&
			     r.sched.time != 0;
			break;
		default:
			ok = false;
		}
		if (!ok && bad++ < 10)
			print_rec("bad record ", i, r);
	}
	if (bad)
		ck.fail("%lu of %zu records are invalid or carry a kernel address\n",
			bad, d.size());

	b = branches_only(d);
	for (size_t i = 0; i < b.size(); i++) {
		bool y = b[i].branch.from == A(bts_y_jmp) &&
			 b[i].branch.to == A(bts_y_t);
		bool f = b[i].branch.from == A(bts_f_jmp) &&
			 b[i].branch.to == A(bts_f_t);

		ys += y;
		fs += f;
		if (i && y && b[i - 1].branch.to == A((const void *)bts_sys))
			after_call_y++;
		if (i && f && b[i - 1].branch.to == A((const void *)bts_touch))
			after_call_f++;
	}
	if (ys != 2UL * iters || after_call_y != ys)
		ck.fail("branches after system calls: %lu (%lu right after the call), expected %d\n",
			ys, after_call_y, 2 * iters);
	if (fs != (unsigned long)iters * pages || after_call_f != fs)
		ck.fail("branches after page faults: %lu (%lu right after the call), expected %d\n",
			fs, after_call_f, iters * pages);
	check_tail(ck, b, seq_pairs(), "end of the run");
	return ck.ok;
}

static const TestCase tests[] = {
	{ "labelled sequence: exact (from, to) pairs via GET", test_labelled_get },
	{ "labelled sequence: exact (from, to) pairs via DRAIN", test_labelled_drain },
	{ "check_attach: records complete when waitpid reports the stop", test_complete_at_stop },
	{ "unconfigured tracee: STATUS size 0 record_size 24, empty ring", test_unconfigured },
	{ "STATUS round-trips CONFIG (rounded to whole records)", test_status_roundtrip },
	{ "larger config struct with zero tail; STATUS zeroes the tail", test_config_extensible },
	{ "reCONFIG starts a new empty ring", test_reconfig_discards },
	{ "size 0 releases: STATUS size 0, SIZE 0, no recording", test_release },
	{ "failed CONFIG leaves the old configuration and ring", test_failed_config_keeps_old },
	{ "wrap 64: GET, SIZE, DRAIN agree; partial DRAIN; CLEAR", test_wrap_64 },
	{ "wrap 4096 (larger than the hardware buffer)", test_wrap_4096 },
	{ "10000 loop iterations into 1 MiB: no record lost", test_no_gap },
	{ "no kernel address across syscalls, page faults, yields", test_no_kernel_address },
};

int main(void)
{
	ksft_print_header();
	bts_require_hw();
	run_tests(tests);
}
