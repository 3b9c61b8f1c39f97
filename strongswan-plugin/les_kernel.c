// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * charon uses the first kernel_ipsec_t registered; this plugin loads before
 * kernel-netlink and registers this one.  add_sa, update_sa and del_sa
 * tell the listener of LES SAs (the PEPs' keys come from them); add_sa and
 * update_sa (les_xfrm.c) change what passes:
 * kernel-netlink sends any encryption ID outside its AEAD table as a plain
 * cipher, so an LES SA must reach it as ENCR_AES_GCM_ICV16 with the blob as
 * its key (les.ko takes such SAs, esp4 could never).
 */
#include "les_kernel.h"
#include "les_blob.h"
#include "les_listener.h"
#include "les_xfrm.h"

#include <daemon.h>

typedef struct private_les_kernel_t private_les_kernel_t;

struct private_les_kernel_t {

	kernel_ipsec_t public;

	/* kernel-netlink's object, which does all the work */
	kernel_ipsec_t *inner;

	/* who announced LES (owned by the plugin) */
	les_listener_t *listener;
};

METHOD(kernel_ipsec_t, get_features, kernel_feature_t,
	private_les_kernel_t *this)
{
	return this->inner->get_features(this->inner);
}

METHOD(kernel_ipsec_t, get_spi, status_t,
	private_les_kernel_t *this, host_t *src, host_t *dst, uint8_t protocol,
	uint32_t *spi)
{
	return this->inner->get_spi(this->inner, src, dst, protocol, spi);
}

METHOD(kernel_ipsec_t, get_cpi, status_t,
	private_les_kernel_t *this, host_t *src, host_t *dst, uint16_t *cpi)
{
	return this->inner->get_cpi(this->inner, src, dst, cpi);
}

static status_t add_les_sa(private_les_kernel_t *this,
						   kernel_ipsec_sa_id_t *id,
						   kernel_ipsec_add_sa_t *data, u_int key_len)
{
	kernel_ipsec_add_sa_t les = *data;
	ike_sa_t *ike_sa;
	status_t status;
	bool r2i;

	/* add_sa runs in the thread that has the IKE_SA checked out */
	ike_sa = charon->bus->get_sa(charon->bus);
	if (!ike_sa || !this->listener->peer_version(this->listener, ike_sa))
	{	/* e.g. accept_private_algs let a peer pick it without the notify */
		DBG1(DBG_KNL, "refusing LES SA %.8x: the peer did not announce LES",
			 ntohl(id->spi));
		return FAILED;
	}
	if (data->int_alg != AUTH_UNDEFINED)
	{
		DBG1(DBG_KNL, "refusing LES SA %.8x: LES takes no integrity "
			 "algorithm", ntohl(id->spi));
		return FAILED;
	}
	/* the blob of the initiator-to-responder direction has R2I clear */
	r2i = data->initiator == data->inbound;
	les.enc_key = les_blob_endpoint(data->enc_key, key_len, r2i);
	if (!les.enc_key.len)
	{
		DBG1(DBG_KNL, "refusing LES SA %.8x: %zu bytes of keymat make no "
			 "valid LES%u blob", ntohl(id->spi), data->enc_key.len,
			 key_len * 8);
		return FAILED;
	}
	les.enc_alg = ENCR_AES_GCM_ICV16;
	status = this->inner->add_sa(this->inner, id, &les);
	if (status == SUCCESS)
	{	/* kept for the PEPs' keys until the CHILD_SA is up */
		this->listener->sa_added(this->listener, id, data, les.enc_key);
	}
	chunk_clear(&les.enc_key);
	if (status == SUCCESS)
	{
		DBG1(DBG_KNL, "installed %s LES endpoint SA %.8x (AES-%u, %s)",
			 data->inbound ? "inbound" : "outbound", ntohl(id->spi),
			 key_len * 8, r2i ? "r2i" : "i2r");
	}
	else
	{
		DBG1(DBG_KNL, "installing LES SA %.8x failed: is les.ko loaded?",
			 ntohl(id->spi));
	}
	return status;
}

METHOD(kernel_ipsec_t, add_sa, status_t,
	private_les_kernel_t *this, kernel_ipsec_sa_id_t *id,
	kernel_ipsec_add_sa_t *data)
{
	u_int key_len = les_alg_key_len(data->enc_alg);

	if (key_len)
	{
		return add_les_sa(this, id, data, key_len);
	}
	return this->inner->add_sa(this->inner, id, data);
}

METHOD(kernel_ipsec_t, update_sa, status_t,
	private_les_kernel_t *this, kernel_ipsec_sa_id_t *id,
	kernel_ipsec_update_sa_t *data)
{
	kernel_ipsec_update_sa_t esp = *data;
	status_t status;

	if (data->cpi)
	{	/* the IPComp SA first, as kernel-netlink moves it */
		kernel_ipsec_sa_id_t ipcomp_id = *id;
		kernel_ipsec_update_sa_t ipcomp = {
			.new_src = data->new_src,
			.new_dst = data->new_dst,
			.new_reqid = data->new_reqid,
		};

		ipcomp_id.spi = htonl(ntohs(data->cpi));
		ipcomp_id.proto = IPPROTO_COMP;
		this->inner->update_sa(this->inner, &ipcomp_id, &ipcomp);
		esp.cpi = 0;
	}
	/* an LES SA its own way (les_xfrm.c), any other kernel-netlink's */
	status = les_xfrm_update_sa(id, &esp);
	if (status == NOT_SUPPORTED)
	{
		status = this->inner->update_sa(this->inner, id, &esp);
	}
	if (status == SUCCESS)
	{
		this->listener->sa_updated(this->listener, id, data);
	}
	return status;
}

METHOD(kernel_ipsec_t, query_sa, status_t,
	private_les_kernel_t *this, kernel_ipsec_sa_id_t *id,
	kernel_ipsec_query_sa_t *data, uint64_t *bytes, uint64_t *packets,
	time_t *time)
{
	return this->inner->query_sa(this->inner, id, data, bytes, packets, time);
}

METHOD(kernel_ipsec_t, del_sa, status_t,
	private_les_kernel_t *this, kernel_ipsec_sa_id_t *id,
	kernel_ipsec_del_sa_t *data)
{
	this->listener->sa_deleted(this->listener, id);
	return this->inner->del_sa(this->inner, id, data);
}

METHOD(kernel_ipsec_t, flush_sas, status_t,
	private_les_kernel_t *this)
{
	return this->inner->flush_sas(this->inner);
}

METHOD(kernel_ipsec_t, add_policy, status_t,
	private_les_kernel_t *this, kernel_ipsec_policy_id_t *id,
	kernel_ipsec_manage_policy_t *data)
{
	return this->inner->add_policy(this->inner, id, data);
}

METHOD(kernel_ipsec_t, query_policy, status_t,
	private_les_kernel_t *this, kernel_ipsec_policy_id_t *id,
	kernel_ipsec_query_policy_t *data, time_t *use_time)
{
	return this->inner->query_policy(this->inner, id, data, use_time);
}

METHOD(kernel_ipsec_t, del_policy, status_t,
	private_les_kernel_t *this, kernel_ipsec_policy_id_t *id,
	kernel_ipsec_manage_policy_t *data)
{
	return this->inner->del_policy(this->inner, id, data);
}

METHOD(kernel_ipsec_t, flush_policies, status_t,
	private_les_kernel_t *this)
{
	return this->inner->flush_policies(this->inner);
}

METHOD(kernel_ipsec_t, bypass_socket, bool,
	private_les_kernel_t *this, int fd, int family)
{
	return this->inner->bypass_socket(this->inner, fd, family);
}

METHOD(kernel_ipsec_t, enable_udp_decap, bool,
	private_les_kernel_t *this, int fd, int family, uint16_t port)
{
	return this->inner->enable_udp_decap(this->inner, fd, family, port);
}

METHOD(kernel_ipsec_t, destroy, void,
	private_les_kernel_t *this)
{
	this->inner->destroy(this->inner);
	free(this);
}

/*
 * kernel-netlink's kernel_ipsec_t constructor, as its plugin announces it:
 * plugins are dlopen()ed without RTLD_GLOBAL, so dlsym() cannot find it.
 */
static kernel_ipsec_constructor_t find_netlink(void)
{
	kernel_ipsec_constructor_t found = NULL;
	enumerator_t *enumerator;
	plugin_feature_t *f;
	plugin_t *plugin;
	int i, n;

	enumerator = lib->plugins->create_plugin_enumerator(lib->plugins);
	while (!found && enumerator->enumerate(enumerator, &plugin, NULL))
	{
		if (!streq(plugin->get_name(plugin), "kernel-netlink"))
		{
			continue;
		}
		n = plugin->get_features(plugin, &f);
		for (i = 0; i + 1 < n; i++)
		{
			if (f[i].kind == FEATURE_CALLBACK &&
				f[i].arg.cb.f == kernel_ipsec_register &&
				f[i + 1].kind == FEATURE_PROVIDE &&
				f[i + 1].type == FEATURE_CUSTOM &&
				streq(f[i + 1].arg.custom, "kernel-ipsec"))
			{
				found = f[i].arg.cb.data;
				break;
			}
		}
	}
	enumerator->destroy(enumerator);
	return found;
}

kernel_ipsec_t *les_kernel_create(void)
{
	private_les_kernel_t *this;
	kernel_ipsec_constructor_t netlink;
	les_listener_t *listener;
	kernel_ipsec_t *inner;

	listener = lib->get(lib, LES_LISTENER_NAME);
	netlink = find_netlink();
	if (!listener || !netlink)
	{
		DBG1(DBG_KNL, "LES needs the kernel-netlink plugin loaded");
		return NULL;
	}
	inner = netlink();
	if (!inner)
	{
		return NULL;
	}
	INIT(this,
		.public = {
			.get_features = _get_features,
			.get_spi = _get_spi,
			.get_cpi = _get_cpi,
			.add_sa = _add_sa,
			.update_sa = _update_sa,
			.query_sa = _query_sa,
			.del_sa = _del_sa,
			.flush_sas = _flush_sas,
			.add_policy = _add_policy,
			.query_policy = _query_policy,
			.del_policy = _del_policy,
			.flush_policies = _flush_policies,
			.bypass_socket = _bypass_socket,
			.enable_udp_decap = _enable_udp_decap,
			.destroy = _destroy,
		},
		.inner = inner,
		.listener = listener,
	);
	DBG1(DBG_KNL, "LES wraps kernel-netlink's IPsec interface");
	return &this->public;
}
