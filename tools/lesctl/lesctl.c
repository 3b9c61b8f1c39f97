// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * lesctl: Layered ESP control.
 *
 *   lesctl blob create ROLE [keylen 16|24|32] [dir i2r|r2i] [k2 HEX] [k1 HEX]
 *                           [kp HEX] [ko HEX] [pep-id N]
 *   lesctl blob show HEX
 *   lesctl blob derive HEX [pep-id N]...
 *   lesctl blob zone-key HEX spi SPI
 *   lesctl stats
 *   lesctl pep show | pep set [hook on|off] [max-flows N] [idle-timeout S]
 *                             [mark M] [encap-port P] [backlog N]
 *                             [accel on|off] [hop-dev DEV|none] [hop-rate KBIT]
 *                             [flow-buffer B] [buffer B] [peer-buffer B]
 *   lesctl flows [show | flush]
 *
 * A blob (version 2, docs/protocol.md section 1) goes into ip xfrm as the
 * key of an rfc4106(gcm(aes)) SA:
 *   ip xfrm state add ... proto esp spi 0x100 aead 'rfc4106(gcm(aes))' \
 *       $(lesctl blob create endpoint) 128
 * blob derive gives, from an endpoint blob, the pep-view blob and the
 * PEP-origin blobs a PEP may hold (section 6); blob zone-key prints the GCM
 * keys an SA of a blob derives for its SPI (section 2.1).  blob.c does the
 * blobs (les_wire.c, HKDF from libcrypto), pep.c the generic netlink ones.
 * Exit codes: 0 success, 1 failure, 2 usage.
 */
#include <stdio.h>
#include <string.h>

#include "les_wire.h"
#include "lesctl.h"

int json;

void usage(FILE *f)
{
	fprintf(f,
		"Usage: lesctl -V\n"
		"       lesctl [-j] blob create ROLE [keylen 16|24|32] [dir i2r|r2i] [k2 HEX] [k1 HEX]\n"
		"                               [kp HEX] [ko HEX] [pep-id N]\n"
		"       lesctl [-j] blob show HEX\n"
		"       lesctl [-j] blob derive HEX [pep-id N]...\n"
		"       lesctl [-j] blob zone-key HEX spi SPI\n"
		"       lesctl [-j] stats\n"
		"       lesctl [-j] pep show\n"
		"       lesctl pep set [hook on|off] [max-flows N] [idle-timeout SECONDS]\n"
		"                      [mark MARK] [encap-port PORT] [backlog N]\n"
		"                      [accel on|off] [hop-dev DEV|none] [hop-rate KBIT]\n"
		"                      [flow-buffer BYTES] [buffer BYTES] [peer-buffer BYTES]\n"
		"       lesctl [-j] flows [show | flush]\n"
		"ROLE := endpoint | pep-view | pep-origin-in | pep-origin-out\n"
		"k2, k1, ko are roots (an AES key and its 4-byte salt, keylen + 4 bytes),\n"
		"kp is 32 bytes; an endpoint carries k2 k1 kp, a pep-view k2, a pep-origin\n"
		"blob ko and a pep-id (1 to 4294967295).  Material not given is random.\n");
}

int main(int argc, char **argv)
{
	argc--;
	argv++;
	while (argc && argv[0][0] == '-') {
		if (!strcmp(argv[0], "-j") || !strcmp(argv[0], "-json")) {
			json = 1;
		} else if (!strcmp(argv[0], "-V") || !strcmp(argv[0], "-Version")) {
			printf("lesctl %s, wire format %d\n", LES_VERSION, LES_BLOB_VERSION);
			return 0;
		} else if (!strcmp(argv[0], "-h") || !strcmp(argv[0], "--help")) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "lesctl: unknown option \"%s\"\n", argv[0]);
			return 2;
		}
		argc--;
		argv++;
	}
	if (argc >= 1 && !strcmp(argv[0], "blob"))
		return lesctl_blob(argc - 1, argv + 1);
	if (argc >= 1)
		return lesctl_netlink(argc, argv);
	usage(stderr);
	return 2;
}
