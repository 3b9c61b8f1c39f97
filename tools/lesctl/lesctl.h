/* SPDX-License-Identifier: GPL-2.0 */
#ifndef LESCTL_H
#define LESCTL_H

#include <stdio.h>

extern int json;
void usage(FILE *f);
/* stats, pep show|set, flows [show|flush]: the generic netlink commands. */
int lesctl_netlink(int argc, char **argv);

#endif
