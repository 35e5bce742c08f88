// SPDX-License-Identifier: GPL-2.0
//
// Validates our QEMU's BTS emulation with something we did not write: the
// guest kernel's stock perf BTS sampling (branch-instructions with
// sample_period 1, user only), which programs IA32_DS_AREA and DEBUGCTL,
// takes the threshold PMI and drains the hardware buffer into the perf ring.
//
// The traced code is a fixed instruction sequence with a global label on
// every branch and every target, so the expected (from, to) pairs come
// from this binary's own symbols, resolved by the loader at run time.

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tap.h"

extern "C" {
void bts_sequence(char *dst, const char *src);
extern const char bts_j_jmp[], bts_t_jmp[], bts_j_jz[], bts_t_jz[],
	bts_n_jz[], bts_j_call[], bts_f[], bts_j_fret[], bts_t_ret[],
	bts_n_rep[], bts_loop[], bts_j_ind[], bts_t_ind[], bts_j_c5[],
	bts_t_c5[], bts_j_out[], bts_n_jnz[];
}

// Every label is a global symbol; every branch in the sequence is labelled
// at its first byte ("bts_j_*", "bts_loop"), every target too ("bts_t_*",
// "bts_f"), and the branches that must not be recorded are "bts_n_*".
asm(R"(
	.text
	.globl bts_sequence
	.type bts_sequence, @function
	.p2align 4
bts_sequence:
	.globl bts_j_jmp, bts_t_jmp, bts_j_jz, bts_t_jz, bts_n_jz
	.globl bts_j_call, bts_f, bts_j_fret, bts_t_ret, bts_n_rep
	.globl bts_loop, bts_j_ind, bts_t_ind, bts_j_c5, bts_t_c5
	.globl bts_j_out, bts_n_jnz
bts_j_jmp:	jmp	bts_t_jmp		# near relative jmp, taken
	ud2
bts_t_jmp:	xorl	%eax, %eax		# ZF = 1
bts_j_jz:	jz	bts_t_jz		# Jcc, taken
	ud2
bts_t_jz:	cmpl	$1, %eax		# ZF = 0
bts_n_jz:	jz	bts_never		# Jcc, not taken: no record
bts_j_call:	call	bts_f			# near relative call
bts_t_ret:	movl	$64, %ecx
bts_n_rep:	rep movsb			# 64 iterations: no record
	movl	$3, %ecx
bts_loop:	loop	bts_loop		# taken twice, then falls through
	leaq	bts_t_ind(%rip), %rax
bts_j_ind:	jmp	*%rax			# near indirect jmp
	ud2
bts_t_ind:	xorl	%eax, %eax
bts_n_jnz:	jnz	bts_never		# not taken
bts_j_c5:	call	bts_t_c5		# call $+5: a taken branch
bts_t_c5:	popq	%rax
bts_j_out:	ret				# near ret to the caller
bts_f:	nop
bts_j_fret:	ret				# near ret to bts_t_ret
bts_never:	ud2
	.size bts_sequence, . - bts_sequence
)");

namespace {

struct Branch {
	uint64_t from, to;
};

long perf_event_open(perf_event_attr *attr, pid_t pid, int cpu, int group,
		     unsigned long flags)
{
	return syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

uint64_t addr(const void *p)
{
	return reinterpret_cast<uintptr_t>(p);
}

bool is_kernel(uint64_t a)
{
	return a >= 0x0000800000000000ULL;
}

constexpr size_t data_pages = 256;

// Reads every PERF_RECORD_SAMPLE (ip = from, addr = to) out of the ring.
std::vector<Branch> read_samples(void *ring, size_t page, uint64_t *lost)
{
	auto *meta = static_cast<perf_event_mmap_page *>(ring);
	auto *data = static_cast<char *>(ring) + page;
	size_t size = data_pages * page;
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	std::vector<Branch> out;

	for (uint64_t pos = meta->data_tail; pos < head;) {
		perf_event_header hdr;
		char rec[64];

		for (size_t i = 0; i < sizeof(hdr); i++)
			reinterpret_cast<char *>(&hdr)[i] = data[(pos + i) % size];
		if (hdr.size < sizeof(hdr) || hdr.size > sizeof(rec))
			tap::bail("malformed perf record");
		for (size_t i = 0; i < hdr.size; i++)
			rec[i] = data[(pos + i) % size];
		if (hdr.type == PERF_RECORD_SAMPLE) {
			Branch b;

			memcpy(&b.from, rec + sizeof(hdr), 8);
			memcpy(&b.to, rec + sizeof(hdr) + 8, 8);
			out.push_back(b);
		} else if (hdr.type == PERF_RECORD_LOST) {
			uint64_t n;

			memcpy(&n, rec + sizeof(hdr) + 8, 8);
			*lost += n;
		}
		pos += hdr.size;
	}
	return out;
}

} // namespace

int main()
{
	static char src[64], dst[64];
	long page = sysconf(_SC_PAGESIZE);
	perf_event_attr attr{};
	uint64_t lost = 0;

	tap::plan(8);

	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_HARDWARE;
	attr.config = PERF_COUNT_HW_BRANCH_INSTRUCTIONS;
	attr.sample_period = 1;
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_ADDR;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	attr.disabled = 1;

	long fd = perf_event_open(&attr, 0, -1, -1, 0);
	if (!tap::ok(fd >= 0, "perf_event_open(branch-instructions, period 1, user) for BTS sampling")) {
		tap::diag("perf_event_open: %s", strerror(errno));
		tap::bail("no perf BTS sampling in this guest");
	}
	void *ring = mmap(nullptr, (data_pages + 1) * page, PROT_READ | PROT_WRITE,
			  MAP_SHARED, fd, 0);
	if (ring == MAP_FAILED)
		tap::bail("mmap of the perf ring failed");

	ioctl(fd, PERF_EVENT_IOC_RESET, 0);
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	bts_sequence(dst, src);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);

	std::vector<Branch> got = read_samples(ring, page, &lost);
	tap::diag("%zu branch samples, %llu lost", got.size(),
		  (unsigned long long)lost);

	// The sequence's entry is the call into bts_sequence; what follows it
	// must be exactly the expected pairs, in order.
	const std::vector<Branch> want = {
		{ addr(bts_j_jmp), addr(bts_t_jmp) },
		{ addr(bts_j_jz), addr(bts_t_jz) },
		{ addr(bts_j_call), addr(bts_f) },
		{ addr(bts_j_fret), addr(bts_t_ret) },
		{ addr(bts_loop), addr(bts_loop) },
		{ addr(bts_loop), addr(bts_loop) },
		{ addr(bts_j_ind), addr(bts_t_ind) },
		{ addr(bts_j_c5), addr(bts_t_c5) },
	};
	size_t start = got.size();

	for (size_t i = 0; i < got.size(); i++) {
		if (got[i].to == addr(reinterpret_cast<const void *>(&bts_sequence))) {
			start = i + 1;
			break;
		}
	}
	tap::ok(start < got.size(), "the call into the sequence is recorded");

	bool in_order = start + want.size() < got.size();
	for (size_t i = 0; in_order && i < want.size(); i++) {
		const Branch &g = got[start + i], &w = want[i];

		if (g.from != w.from || g.to != w.to) {
			tap::diag("record %zu: got %#llx -> %#llx, want %#llx -> %#llx",
				  i, (unsigned long long)g.from,
				  (unsigned long long)g.to,
				  (unsigned long long)w.from,
				  (unsigned long long)w.to);
			in_order = false;
		}
	}
	tap::ok(in_order, "every taken branch of the sequence, in order, nothing between them");
	tap::ok(in_order && got[start + want.size()].from == addr(bts_j_out),
		"the final ret is recorded from its own address");

	bool not_taken = false, rep = false, kernel = false;
	size_t loops = 0;
	for (const Branch &b : got) {
		not_taken |= b.from == addr(bts_n_jz) || b.from == addr(bts_n_jnz);
		rep |= b.from == addr(bts_n_rep) || b.to == addr(bts_n_rep);
		kernel |= is_kernel(b.from) || is_kernel(b.to);
		loops += b.from == addr(bts_loop);
	}
	tap::ok(!not_taken, "no record for a not-taken Jcc");
	tap::ok(!rep, "no record for a REP string instruction's iterations");
	tap::ok(loops == 2, "LOOP recorded once per taken iteration (%zu, want 2)", loops);
	tap::ok(!kernel, "no record has a kernel address");
	return tap::finish();
}
