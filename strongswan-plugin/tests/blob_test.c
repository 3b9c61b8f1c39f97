// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * blob_test HEX [PEP_ID]...: what the plugin derives from an endpoint blob,
 * printed as `lesctl blob derive HEX pep-id N...` prints it, so that
 * tests/host.sh can hold the two implementations (charon's HMAC, OpenSSL's
 * HKDF) to the same bytes.  Exit 1 if a blob cannot be derived.
 */
#include "../les_blob.h"

#include <stdio.h>
#include <stdlib.h>

static int print(const char *role, uint32_t pep_id, chunk_t blob)
{
	chunk_t hex;

	if (!blob.len)
	{
		fprintf(stderr, "blob_test: no %s blob\n", role);
		return 1;
	}
	printf("%s ", role);
	if (pep_id)
	{
		printf("pep-id %u ", pep_id);
	}
	hex = chunk_to_hex(blob, NULL, FALSE);
	printf("0x%.*s\n", (int)hex.len, hex.ptr);
	chunk_free(&hex);
	chunk_clear(&blob);
	return 0;
}

int main(int argc, char *argv[])
{
	chunk_t hex, ep;
	uint32_t pep_id;
	int i, ret = 0;

	if (argc < 2 || !library_init(NULL, "les-blob-test") ||
		!lib->plugins->load(lib->plugins, "sha2 hmac"))
	{
		library_deinit();
		return 2;
	}
	hex = chunk_from_str(argv[1]);
	if (hex.len > 2 && hex.ptr[0] == '0' && hex.ptr[1] == 'x')
	{
		hex = chunk_skip(hex, 2);
	}
	ep = chunk_from_hex(hex, NULL);
	ret |= print("pep-view", 0, les_blob_pep_view(ep));
	for (i = 2; i < argc; i++)
	{
		pep_id = strtoul(argv[i], NULL, 10);
		ret |= print("pep-origin-in", pep_id, les_blob_pep_origin(ep, pep_id, FALSE));
		ret |= print("pep-origin-out", pep_id, les_blob_pep_origin(ep, pep_id, TRUE));
	}
	/* refusals: not an endpoint blob, pep_id 0 */
	if (les_blob_pep_view(chunk_skip(ep, 1)).len ||
		les_blob_pep_origin(ep, 0, TRUE).len)
	{
		fprintf(stderr, "blob_test: derived from what is no endpoint blob\n");
		ret = 1;
	}
	chunk_clear(&ep);
	library_deinit();
	return ret;
}
