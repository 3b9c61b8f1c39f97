// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The plugin: a version check, the two private transforms, the listener and
 * the kernel wrapper.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <glob.h>
#include <stdio.h>

#include "les_plugin.h"
#include "les_blob.h"
#include "les_kernel.h"
#include "les_listener.h"

#include <daemon.h>

/* strongSwan version of the source this plugin was compiled against. */
#ifndef LES_BUILT_FOR
#define LES_BUILT_FOR VERSION
#endif

#define DPKG_INFO	"/var/lib/dpkg/info"
#define DPKG_STATUS	"/var/lib/dpkg/status"

typedef struct private_les_plugin_t private_les_plugin_t;

struct private_les_plugin_t {

	les_plugin_t public;

	les_listener_t *listener;
};

METHOD(plugin_t, get_name, char*,
	private_les_plugin_t *this)
{
	return "les";
}

static bool register_listener(private_les_plugin_t *this,
							  plugin_feature_t *feature, bool reg, void *data)
{
	if (reg)
	{
		charon->bus->add_listener(charon->bus, &this->listener->listener);
	}
	else
	{
		charon->bus->remove_listener(charon->bus, &this->listener->listener);
	}
	return TRUE;
}

METHOD(plugin_t, get_features, int,
	private_les_plugin_t *this, plugin_feature_t *features[])
{
	static plugin_feature_t f[] = {
		PLUGIN_CALLBACK((plugin_feature_callback_t)register_listener, NULL),
			PLUGIN_PROVIDE(CUSTOM, "les"),
		/* first registered wins: this plugin loads before kernel-netlink */
		PLUGIN_CALLBACK(kernel_ipsec_register, les_kernel_create),
			PLUGIN_PROVIDE(CUSTOM, "kernel-ipsec"),
				PLUGIN_DEPENDS(CUSTOM, "les"),
	};
	*features = f;
	return countof(f);
}

/* swanctl --reload-settings */
METHOD(plugin_t, reload, bool,
	private_les_plugin_t *this)
{
	this->listener->reload(this->listener);
	return TRUE;
}

METHOD(plugin_t, destroy, void,
	private_les_plugin_t *this)
{
	lib->set(lib, LES_LISTENER_NAME, NULL);
	this->listener->destroy(this->listener);
	free(this);
}

/* Does dpkg's file list @list name @path? */
static bool list_has(const char *list, const char *path)
{
	char line[PATH_MAX];
	bool found = FALSE;
	FILE *f;

	f = fopen(list, "r");
	if (!f)
	{
		return FALSE;
	}
	while (!found && fgets(line, sizeof(line), f))
	{
		line[strcspn(line, "\n")] = '\0';
		found = streq(line, path);
	}
	fclose(f);
	return found;
}

/* The Version: of package @pkg in dpkg's status file, into @buf. */
static bool dpkg_version(const char *pkg, char *buf, size_t len)
{
	char line[512], want[256];
	bool in = FALSE, found = FALSE;
	FILE *f;

	snprintf(want, sizeof(want), "Package: %s", pkg);
	f = fopen(DPKG_STATUS, "r");
	if (!f)
	{
		return FALSE;
	}
	while (!found && fgets(line, sizeof(line), f))
	{
		line[strcspn(line, "\n")] = '\0';
		if (strpfx(line, "Package: "))
		{
			in = streq(line, want);
		}
		else if (in && strpfx(line, "Version: "))
		{
			found = strlen(line + strlen("Version: ")) < len;
			if (found)
			{
				strcpy(buf, line + strlen("Version: "));
			}
		}
	}
	fclose(f);
	return found;
}

/*
 * The version of the libcharon this process runs, as its package says:
 * libcharon has no version string of its own, and its ABI is what matters.
 * Writes the package's full version to @pkg_version and returns the
 * upstream part ("5.9.8" of "5.9.8-5+deb12u6"), or NULL if unknown.
 */
static char *running_version(char *pkg_version, size_t len)
{
	char lib_path[PATH_MAX], *name, *upstream = NULL;
	glob_t lists;
	Dl_info info;
	size_t i;

	if (!dladdr((void*)&charon, &info) || !info.dli_fname ||
		!realpath(info.dli_fname, lib_path))
	{
		return NULL;
	}
	if (glob(DPKG_INFO "/*charon*.list", 0, NULL, &lists))
	{
		return NULL;
	}
	for (i = 0; i < lists.gl_pathc && !upstream; i++)
	{
		if (!list_has(lists.gl_pathv[i], lib_path))
		{
			continue;
		}
		name = strdup(lists.gl_pathv[i] + strlen(DPKG_INFO "/"));
		name[strlen(name) - strlen(".list")] = '\0';
		/* multi-arch lists are named pkg:arch, the status has pkg */
		name[strcspn(name, ":")] = '\0';
		if (dpkg_version(name, pkg_version, len))
		{
			upstream = strchr(pkg_version, ':') ?
					   strchr(pkg_version, ':') + 1 : pkg_version;
			upstream = strndup(upstream, strcspn(upstream, "-"));
		}
		free(name);
	}
	globfree(&lists);
	return upstream;
}

/* Refuse any libcharon but the one built against: there is no ABI promise. */
static bool version_ok(void)
{
	char pkg_version[128] = "", *running;
	bool ok;

	running = running_version(pkg_version, sizeof(pkg_version));
	ok = running && streq(running, LES_BUILT_FOR);
	if (!ok)
	{
		DBG1(DBG_LIB, "les plugin built for strongSwan %s (Debian source "
			 "%s), running on %s (%s): not loading", LES_BUILT_FOR,
			 LES_SW_DEB_VERSION, running ?: "an unknown version",
			 pkg_version[0] ? pkg_version : "no dpkg package owns libcharon");
	}
	else
	{
		DBG2(DBG_LIB, "les plugin built for strongSwan %s, running on %s",
			 LES_BUILT_FOR, pkg_version);
	}
	free(running);
	return ok;
}

plugin_t *les_plugin_create(void)
{
	private_les_plugin_t *this;

	if (!version_ok())
	{
		return NULL;
	}
	INIT(this,
		.public = {
			.plugin = {
				.get_name = _get_name,
				.get_features = _get_features,
				.reload = _reload,
				.destroy = _destroy,
			},
		},
		.listener = les_listener_create(),
	);
	if (!lib->set(lib, LES_LISTENER_NAME, this->listener))
	{
		DBG1(DBG_LIB, "les plugin loaded twice");
		this->listener->destroy(this->listener);
		free(this);
		return NULL;
	}
	/* key sizes are what prf+ gives per direction: K2, K1 roots and KP */
	lib->proposal->register_token(lib->proposal, "les128",
					ENCRYPTION_ALGORITHM, LES_ENCR_LES128,
					les_alg_keymat_bits(les_alg_key_len(LES_ENCR_LES128)));
	lib->proposal->register_token(lib->proposal, "les256",
					ENCRYPTION_ALGORITHM, LES_ENCR_LES256,
					les_alg_keymat_bits(les_alg_key_len(LES_ENCR_LES256)));
	return &this->public.plugin;
}
