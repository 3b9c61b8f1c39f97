// SPDX-License-Identifier: GPL-2.0
/* The kernel module's load-time self-test, built and run in user space. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef uint8_t u8;
typedef uint32_t u32;
typedef int32_t s32;
typedef uint64_t u64;
#define pr_err printf
#define pr_debug printf

#include "les_wire.h"
#include "selftest.c"

int main(void)
{
	int err = les_selftest();

	printf("les_selftest: %d\n", err);
	return err ? 1 : 0;
}
