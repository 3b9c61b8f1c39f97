/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef LESCTL_H
#define LESCTL_H

#include <stdio.h>

extern int json;
void usage(FILE *f);
/* blob create|show|derive|zone-key (blob.c); argv[0] is the subcommand. */
int lesctl_blob(int argc, char **argv);
/* stats, pep show|set, flows [show|flush]: the generic netlink commands. */
int lesctl_netlink(int argc, char **argv);

#endif
