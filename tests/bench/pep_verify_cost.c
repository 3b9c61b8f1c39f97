// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What a PEP's header-zone check costs per packet, natively (OpenSSL EVP,
 * keyed once as an SA is): GCM open of a 58-byte header zone (IPv4 and TCP
 * with timestamps) with wire format 2's 16-byte AAD, against wire format
 * 3's, which holds the payload zone and ICV1 too (docs/protocol.md 3.1,
 * docs/benchmarks.md 3).  Blocks of each alternate, and the
 * medians are printed, so that a loaded host skews both alike.
 *
 *   cc -O2 -o /tmp/pep_verify_cost tests/bench/pep_verify_cost.c -lcrypto
 *   /tmp/pep_verify_cost [PAYLOAD_ZONE_BYTES]     (default 1370)
 */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return x < y ? -1 : x > y; }

static unsigned char aad[2048], pt[128], ct[128], tag[16], out[128], iv[12];

static void op(EVP_CIPHER_CTX *c, int aadlen, int n, int dec)
{
	int l;
	if (dec) {
		EVP_DecryptInit_ex(c, NULL, NULL, NULL, iv);
		EVP_DecryptUpdate(c, NULL, &l, aad, aadlen);
		EVP_DecryptUpdate(c, out, &l, ct, n);
		EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, 16, tag);
		if (EVP_DecryptFinal_ex(c, out + l, &l) != 1)
			exit(1);
	} else {
		EVP_EncryptInit_ex(c, NULL, NULL, NULL, iv);
		EVP_EncryptUpdate(c, NULL, &l, aad, aadlen);
		EVP_EncryptUpdate(c, ct, &l, pt, n);
		EVP_EncryptFinal_ex(c, ct + l, &l);
		EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, tag);
	}
}

int main(int argc, char **argv)
{
	static unsigned char key[32];
	int hz = 6 + 52, pz = argc > 1 ? atoi(argv[1]) : 1370, blocks = 41, per = 20000, b, k, v;
	int aadlen[2] = { 16, 16 + pz + 4 + 16 };
	double t[2][64];
	EVP_CIPHER_CTX *e = EVP_CIPHER_CTX_new(), *d[2] = { EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_new() };

	EVP_EncryptInit_ex(e, EVP_aes_256_gcm(), NULL, key, NULL);
	for (v = 0; v < 2; v++)
		EVP_DecryptInit_ex(d[v], EVP_aes_256_gcm(), NULL, key, NULL);
	for (b = 0; b < blocks; b++)
		for (v = 0; v < 2; v++) {
			double t0;
			op(e, aadlen[v], hz, 0);
			t0 = now();
			for (k = 0; k < per; k++)
				op(d[v], aadlen[v], hz, 1);
			t[v][b] = (now() - t0) / per * 1e9;
		}
	for (v = 0; v < 2; v++)
		qsort(t[v], blocks, sizeof(double), cmp);
	printf("header zone %d B; AAD %d B: %.0f ns; AAD %d B (payload zone %d B + ICV1): %.0f ns; +%.0f ns\n",
	       hz, aadlen[0], t[0][blocks / 2], aadlen[1], pz, t[1][blocks / 2],
	       t[1][blocks / 2] - t[0][blocks / 2]);
	return 0;
}
