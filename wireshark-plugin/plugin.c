// SPDX-License-Identifier: GPL-2.0-or-later
/* What Wireshark's plugin loader looks for (Wireshark 4.0's plugin ABI). */
#include <epan/proto.h>
#include <ws_symbol_export.h>
#include <ws_version.h>

void proto_register_les(void);
void proto_reg_handoff_les(void);

WS_DLL_PUBLIC_DEF const gchar plugin_version[] = LES_VERSION;
WS_DLL_PUBLIC_DEF const int plugin_want_major = WIRESHARK_VERSION_MAJOR;
WS_DLL_PUBLIC_DEF const int plugin_want_minor = WIRESHARK_VERSION_MINOR;

WS_DLL_PUBLIC void plugin_register(void);

void plugin_register(void)
{
	static proto_plugin plug;

	plug.register_protoinfo = proto_register_les;
	plug.register_handoff = proto_reg_handoff_les;
	proto_register_plugin(&plug);
}
