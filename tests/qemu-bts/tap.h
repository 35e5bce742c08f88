/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal TAP 13 output for the project's guest checks (the QEMU BTS
 * validation programs). The series' own tests use the kselftest harness.
 */
#ifndef BTS_TAP_H
#define BTS_TAP_H

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace tap {

inline int planned, count, failed;

inline void plan(int n)
{
	planned = n;
	std::printf("TAP version 13\n1..%d\n", n);
	std::fflush(stdout);
}

inline void diag(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	std::printf("# ");
	std::vprintf(fmt, ap);
	std::printf("\n");
	va_end(ap);
	std::fflush(stdout);
}

inline bool ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	std::printf("%sok %d ", cond ? "" : "not ", ++count);
	std::vprintf(fmt, ap);
	std::printf("\n");
	va_end(ap);
	std::fflush(stdout);
	if (!cond)
		failed++;
	return cond;
}

/* Abandon the run; the host judge fails it on the Bail out! line and on
 * the plan that no longer matches the results. */
[[noreturn]] inline void bail(const char *why)
{
	std::printf("Bail out! %s\n", why);
	std::fflush(stdout);
	std::exit(1);
}

inline int finish()
{
	if (count != planned)
		diag("planned %d results, ran %d", planned, count);
	return failed || count != planned ? 1 : 0;
}

} /* namespace tap */

#endif
