// SPDX-License-Identifier: GPL-2.0
//
// MSR-level checks of our QEMU's BTS emulation against the hardware
// contract (SDM Vol. 3B, Branch Trace Store), through the test-only module
// kmod/bts_emu_test.ko: CPUID bits, MSR behaviour, circular wrap with
// BTINT=0, one PMI at the threshold with BTINT=1 and nothing written past
// the absolute maximum, the LVTPC mask bit, the OFF_OS / OFF_USR filters,
// and the user-to-kernel SYSCALL record that hardware writes even with
// OFF_OS set.
//
// Expected values come from the contract and from the module's own
// instruction addresses, never from the emulator.

#include <cpuid.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "kmod/bts_emu_test.h"
#include "tap.h"

extern "C" {
long bts_user_off(int fd, unsigned long cmd, void *arg);
long bts_user_branches(void);
extern const char bts_u_sys[], bts_u_j1[], bts_u_t1[], bts_u_j2[], bts_u_t2[];
}

// bts_user_off: ioctl(fd, cmd, arg) through a SYSCALL at a known address.
// bts_user_branches: two taken jumps at known addresses.
asm(R"(
	.text
	.globl bts_user_off, bts_u_sys, bts_user_branches
	.globl bts_u_j1, bts_u_t1, bts_u_j2, bts_u_t2
	.type bts_user_off, @function
bts_user_off:
	movl	$16, %eax			# SYS_ioctl
bts_u_sys:
	syscall
	ret
	.size bts_user_off, . - bts_user_off
	.type bts_user_branches, @function
bts_user_branches:
bts_u_j1:	jmp	bts_u_t1
	ud2
bts_u_t1:	xorl	%eax, %eax
bts_u_j2:	jz	bts_u_t2
	ud2
bts_u_t2:	ret
	.size bts_user_branches, . - bts_user_branches
)");

namespace {

constexpr uint64_t TR = BTS_EMU_DEBUGCTL_TR, BTS = BTS_EMU_DEBUGCTL_BTS,
		   BTINT = BTS_EMU_DEBUGCTL_BTINT,
		   OFF_OS = BTS_EMU_DEBUGCTL_OFF_OS,
		   OFF_USR = BTS_EMU_DEBUGCTL_OFF_USR;

int dev = -1;

bool run(bts_emu_run &r, uint64_t debugctl, uint32_t nr, uint32_t threshold,
	 uint32_t branches)
{
	memset(&r, 0, sizeof(r));
	r.debugctl = debugctl;
	r.nr_records = nr;
	r.threshold = threshold;
	r.branches = branches;
	if (ioctl(dev, BTS_EMU_RUN, &r)) {
		tap::diag("BTS_EMU_RUN: %s", strerror(errno));
		return false;
	}
	tap::diag("run debugctl %#llx nr %u thr %u branches %u: index %llu, pmis %u at %llu, lvtpc masked %u",
		  (unsigned long long)debugctl, nr, threshold, branches,
		  (unsigned long long)r.index, r.pmis,
		  (unsigned long long)r.index_at_pmi, r.lvtpc_masked);
	return true;
}

bool guard_intact(const bts_emu_run &r, uint32_t from)
{
	const auto *p = reinterpret_cast<const unsigned char *>(&r.rec[from]);
	size_t n = (BTS_EMU_RECS_MAX + BTS_EMU_GUARD - from) * sizeof(r.rec[0]);

	for (size_t i = 0; i < n; i++)
		if (p[i] != 0xa5)
			return false;
	return true;
}

bool records_are_loop(const bts_emu_run &r, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (r.rec[i].from != r.branch_from || r.rec[i].to != r.branch_to ||
		    r.rec[i].flags != 0) {
			tap::diag("rec[%u] = %#llx -> %#llx flags %#llx, want %#llx -> %#llx",
				  i, (unsigned long long)r.rec[i].from,
				  (unsigned long long)r.rec[i].to,
				  (unsigned long long)r.rec[i].flags,
				  (unsigned long long)r.branch_from,
				  (unsigned long long)r.branch_to);
			return false;
		}
	}
	return true;
}

void load_module(const char *self)
{
	std::string path(self);

	path = path.substr(0, path.rfind('/') + 1) + "bts_emu_test.ko";
	int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0 || (syscall(SYS_finit_module, fd, "", 0) && errno != EEXIST)) {
		tap::diag("%s: %s", path.c_str(), strerror(errno));
		tap::bail("cannot load the test module");
	}
	close(fd);
}

} // namespace

int main(int argc, char **argv)
{
	unsigned int a, b, c, d;
	bts_emu_run r;
	cpu_set_t cpu0;

	(void)argc;
	tap::plan(19);

	__cpuid(1, a, b, c, d);
	tap::ok((d >> 21) & 1, "CPUID.01H:EDX[21] DS is set");
	tap::ok((c >> 2) & 1, "CPUID.01H:ECX[2] DTES64 is set");
	tap::ok((c >> 4) & 1, "CPUID.01H:ECX[4] DS-CPL is set");

	CPU_ZERO(&cpu0);
	CPU_SET(0, &cpu0);
	if (sched_setaffinity(0, sizeof(cpu0), &cpu0))
		tap::bail("cannot pin to CPU 0");
	load_module(argv[0]);
	dev = open(BTS_EMU_DEV, O_RDWR | O_CLOEXEC);
	if (dev < 0)
		tap::bail("cannot open " BTS_EMU_DEV);

	bts_emu_msrs m{};
	if (ioctl(dev, BTS_EMU_MSRS, &m))
		tap::bail("BTS_EMU_MSRS failed");
	tap::ok(!(m.misc_enable & (1ULL << 11)) && (m.misc_enable & (1ULL << 12)),
		"IA32_MISC_ENABLE: bit 11 (BTS unavailable) clear, bit 12 (PEBS unavailable) set");
	tap::ok(((m.misc_enable ^ m.misc_enable_after) & (3ULL << 11)) == 0,
		"IA32_MISC_ENABLE bits 11 and 12 are read-only");
	tap::ok(m.ds_area_noncanonical != 0, "IA32_DS_AREA: a non-canonical address raises #GP");
	tap::ok(m.debugctl_reserved != 0, "IA32_DEBUGCTL: a reserved bit raises #GP");
	tap::ok(m.debugctl_roundtrip == (TR | BTS | BTINT | OFF_OS | OFF_USR),
		"IA32_DEBUGCTL holds TR, BTS, BTINT, BTS_OFF_OS, BTS_OFF_USR (%#llx)",
		(unsigned long long)m.debugctl_roundtrip);

	// BTINT=0, threshold beyond the maximum: 20 records into 8 slots.
	bool ok = run(r, TR | BTS | OFF_USR, 8, 10, 20);
	tap::ok(ok && r.index == 20 % 8 && records_are_loop(r, 8) &&
		guard_intact(r, 8) && r.pmis == 0,
		"BTINT=0: the buffer wraps at the absolute maximum, nothing written past it, no PMI");

	// The PMI is an NMI taken at CPL 0, so with OFF_USR its delivery is a
	// record too: from the instruction about to run (the loop's target)
	// to the NMI entry point. Its slot tells when the PMI came; the NMI
	// handler's own CPL 0 branches may follow it until the buffer is full.
	ok = run(r, TR | BTS | BTINT | OFF_USR, 8, 5, 20);
	uint32_t k = 0;
	while (ok && k < 8 && r.rec[k].from == r.branch_from &&
	       r.rec[k].to == r.branch_to)
		k++;
	tap::diag("PMI delivery record in slot %u: %#llx -> %#llx (NMI entry %#llx)",
		  k, k < 8 ? (unsigned long long)r.rec[k].from : 0ULL,
		  k < 8 ? (unsigned long long)r.rec[k].to : 0ULL,
		  (unsigned long long)r.nmi_entry);
	tap::ok(ok && r.pmis == 1 && (k == 5 || k == 6) &&
		r.rec[k].from == r.branch_to && r.rec[k].to == r.nmi_entry,
		"BTINT=1: exactly one PMI, delivered when the index reaches the threshold, and recorded");
	tap::ok(ok && r.index == 8 && guard_intact(r, 8),
		"BTINT=1: records stop at the absolute maximum, nothing written past it");
	tap::ok(ok && r.lvtpc_masked, "the PMI sets the LVT performance-counter mask bit");

	ok = run(r, TR | BTS | BTINT | OFF_USR, 8, 8, 6);
	tap::ok(ok && r.pmis == 0 && r.index == 6 && records_are_loop(r, 6) &&
		guard_intact(r, 6),
		"BTINT=1 below the threshold: records, no PMI");

	ok = run(r, TR | BTS | OFF_OS, 8, 10, 10);
	tap::ok(ok && r.index == 0 && guard_intact(r, 0), "BTS_OFF_OS: no record for CPL 0 branches");
	ok = run(r, TR | BTS | OFF_OS | OFF_USR, 8, 10, 10);
	tap::ok(ok && r.index == 0 && guard_intact(r, 0), "BTS_OFF_OS and BTS_OFF_USR: nothing stored");
	ok = run(r, TR | OFF_USR, 8, 10, 10);
	bool tr_only = ok && r.index == 0 && guard_intact(r, 0);
	ok = run(r, BTS | OFF_USR, 8, 10, 10);
	tap::ok(tr_only && ok && r.index == 0 && guard_intact(r, 0),
		"TR without BTS, or BTS without TR: nothing stored");

	// User mode with OFF_OS: the DS area and buffer are in this process's
	// memory, mapped under every CR3 of this mm.
	const size_t len = 1 << 16;
	void *mem = mmap(reinterpret_cast<void *>(0x6b7500000000ULL), len,
			 PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_POPULATE,
			 -1, 0);
	if (mem == MAP_FAILED || mlock(mem, len))
		tap::bail("cannot map the user DS area");
	auto *ds = static_cast<uint64_t *>(mem);
	auto *buf = reinterpret_cast<bts_emu_record *>(static_cast<char *>(mem) + 4096);
	const size_t nr = (len - 4096) / sizeof(bts_emu_record);
	ds[0] = reinterpret_cast<uint64_t>(buf);
	ds[1] = ds[0];
	ds[2] = ds[0] + nr * sizeof(bts_emu_record);
	ds[3] = ds[2] + sizeof(bts_emu_record);

	bts_emu_user u{};
	u.ds_area = reinterpret_cast<uint64_t>(ds);
	u.debugctl = TR | BTS | OFF_OS;
	if (ioctl(dev, BTS_EMU_USER_ON, &u))
		tap::bail("BTS_EMU_USER_ON failed");
	bts_user_branches();
	long rc = bts_user_off(dev, BTS_EMU_USER_OFF, &u);
	size_t n = (ds[1] - ds[0]) / sizeof(bts_emu_record);
	tap::diag("user run: rc %ld, %zu records, lstar %#llx", rc, n,
		  (unsigned long long)u.lstar);

	bool sys = false, jumps = false, kfrom = false;
	for (size_t i = 0; i < n; i++) {
		const bts_emu_record &x = buf[i];

		sys |= x.from == reinterpret_cast<uint64_t>(bts_u_sys) && x.to == u.lstar;
		kfrom |= x.from >= 0x0000800000000000ULL;
		if (i + 1 < n)
			jumps |= x.from == reinterpret_cast<uint64_t>(bts_u_j1) &&
				 x.to == reinterpret_cast<uint64_t>(bts_u_t1) &&
				 buf[i + 1].from == reinterpret_cast<uint64_t>(bts_u_j2) &&
				 buf[i + 1].to == reinterpret_cast<uint64_t>(bts_u_t2);
	}
	tap::ok(rc == 0 && jumps, "user mode: taken branches recorded in order with BTS_OFF_OS");
	tap::ok(rc == 0 && sys,
		"BTS_OFF_OS: the SYSCALL itself is recorded, from the SYSCALL to the kernel entry (MSR_LSTAR)");
	tap::ok(rc == 0 && !kfrom && n > 0, "BTS_OFF_OS: no record starts at a kernel address");
	return tap::finish();
}
