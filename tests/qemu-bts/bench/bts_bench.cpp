// SPDX-License-Identifier: GPL-2.0
//
// Guest side of 'scripts/bts bench': times a branchy loop (data-dependent
// Jcc, taken and not taken, plus a call and a ret per iteration) with BTS
// off and, when asked, with BTS on: TR|BTS|BTS_OFF_OS into a circular
// buffer in this process's memory, through the test-only module, so that
// only the emulator's per-branch cost is measured (no PMI, no drain).
//
// Prints one line per measurement: "BTS-BENCH <mode> <iterations> <ticks>",
// ticks from RDTSC: the guest kernel has no usable clocksource under TCG
// without ACPI (it falls back to jiffies), while TCG's RDTSC follows the
// host clock at full resolution; the benchmark only reports ratios.

#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <x86intrin.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../kmod/bts_emu_test.h"

namespace {

__attribute__((noinline)) uint64_t step(uint64_t x)
{
	asm volatile("" : "+r"(x));
	return x * 6364136223846793005ULL + 1442695040888963407ULL;
}

__attribute__((noinline)) uint64_t loop(uint64_t n)
{
	uint64_t x = 1, a = 0, b = 0;

	for (uint64_t i = 0; i < n; i++) {
		x = step(x);
		if (x >> 63)
			a++;
		else
			b += 3;
		asm volatile("" : "+r"(a), "+r"(b));
	}
	return a ^ b;
}

void measure(const char *mode, uint64_t n, int dev, const bts_emu_user *on)
{
	uint64_t t0, t1, sink;
	bts_emu_user u;

	if (on)
		u = *on;
	if (on && ioctl(dev, BTS_EMU_USER_ON, &u)) {
		perror("BTS_EMU_USER_ON");
		exit(1);
	}
	t0 = __rdtsc();
	sink = loop(n);
	t1 = __rdtsc();
	if (on && ioctl(dev, BTS_EMU_USER_OFF, &u)) {
		perror("BTS_EMU_USER_OFF");
		exit(1);
	}
	printf("BTS-BENCH %s %llu %llu %llu\n", mode, (unsigned long long)n,
	       (unsigned long long)(t1 - t0), (unsigned long long)(sink & 1));
	fflush(stdout);
}

} // namespace

int main(int argc, char **argv)
{
	// bts_bench REPS N_OFF [N_ON]: N_ON given = also measure with BTS on.
	int reps = argc > 1 ? atoi(argv[1]) : 5;
	uint64_t n_off = argc > 2 ? strtoull(argv[2], nullptr, 0) : 20000000;
	uint64_t n_on = argc > 3 ? strtoull(argv[3], nullptr, 0) : 0;
	int dev = -1;
	bts_emu_user u{};
	cpu_set_t cpu0;

	CPU_ZERO(&cpu0);
	CPU_SET(0, &cpu0);
	sched_setaffinity(0, sizeof(cpu0), &cpu0);
	if (n_on) {
		std::string self(argv[0]);
		std::string ko = self.substr(0, self.rfind('/') + 1) + "bts_emu_test.ko";
		int fd = open(ko.c_str(), O_RDONLY);

		if (fd < 0 || syscall(SYS_finit_module, fd, "", 0)) {
			perror(ko.c_str());
			return 1;
		}
		dev = open(BTS_EMU_DEV, O_RDWR);
		const size_t len = 1 << 20;
		auto *mem = static_cast<char *>(mmap(nullptr, len, PROT_READ | PROT_WRITE,
						     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
						     -1, 0));
		if (dev < 0 || mem == MAP_FAILED || mlock(mem, len)) {
			perror("bench setup");
			return 1;
		}
		auto *ds = reinterpret_cast<uint64_t *>(mem);
		ds[0] = reinterpret_cast<uint64_t>(mem + 4096);
		ds[1] = ds[0];
		ds[2] = ds[0] + (len - 4096) / 24 * 24;
		ds[3] = ds[2] + 24;	/* beyond the maximum: no PMI */
		u.ds_area = reinterpret_cast<uint64_t>(ds);
		u.debugctl = BTS_EMU_DEBUGCTL_TR | BTS_EMU_DEBUGCTL_BTS |
			     BTS_EMU_DEBUGCTL_OFF_OS;
	}
	measure("warmup", n_off / 10, dev, nullptr);
	for (int r = 0; r < reps; r++) {
		measure("off", n_off, dev, nullptr);
		if (n_on)
			measure("on", n_on, dev, &u);
	}
	return 0;
}
